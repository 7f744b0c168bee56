import { afterAll, beforeAll } from 'vitest';
import { startBrokerStack, type BrokerStack, type BrokerStackOptions } from './brokerStack.js';
import { tokenFor } from './mcpWire.js';

export interface UsedBrokerStack<User extends string> {
  /**
   * The suite's broker stack, started in its beforeAll and closed in its afterAll. Hooks and
   * tests use it as the stack itself; reading it while the suite is being declared throws.
   */
  stack: BrokerStack;
  /** An MCP access token for each of the `users`, signed in once the stack is up. */
  tokens: Readonly<Record<User, string>>;
}

/**
 * Registers, in the calling describe (or file), a beforeAll that starts a broker stack with
 * `options` (a function when they need what an earlier hook made) and signs `users` in, and an
 * afterAll that closes it. Call it first: hooks run in order and after-hooks in reverse
 * (vitest's `sequence.hooks: 'stack'`), so the suite's own hooks see the stack up.
 */
export function useBrokerStack<const User extends string = never>(
  options: BrokerStackOptions | (() => BrokerStackOptions | Promise<BrokerStackOptions>) = {},
  { users = [] }: { users?: readonly User[] } = {},
): UsedBrokerStack<User> {
  let started: BrokerStack | undefined;
  const signedIn = new Map<User, string>();
  beforeAll(async () => {
    const up = await startBrokerStack(typeof options === 'function' ? await options() : options);
    started = up;
    const values = await Promise.all(users.map((user) => tokenFor(up, user)));
    users.forEach((user, i) => signedIn.set(user, values[i]!));
  });
  afterAll(async () => {
    await started?.close();
  });

  const running = (): BrokerStack => {
    if (!started)
      throw new Error(
        'useBrokerStack: the stack is used before its beforeAll started it (read it inside a hook or a test)',
      );
    return started;
  };
  // A stand-in that forwards to the running stack, so that tests keep writing `stack.brokerUrl`
  // though the stack exists only from beforeAll on; the empty target is never read, hence the cast.
  const stack = new Proxy({} as BrokerStack, {
    get: (_target, key) => Reflect.get(running(), key),
    has: (_target, key) => Reflect.has(running(), key),
  });
  const tokens = {} as Record<User, string>; // each user's getter is defined just below
  for (const user of users) {
    Object.defineProperty(tokens, user, {
      enumerable: true,
      get: () => {
        const token = signedIn.get(user);
        if (token === undefined)
          throw new Error(`useBrokerStack: ${user}'s token is read before its beforeAll signed ${user} in`);
        return token;
      },
    });
  }
  return { stack, tokens };
}
