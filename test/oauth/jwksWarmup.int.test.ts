import { describe, expect, it } from 'vitest';
import type { Fetch } from '../../src/shared/httpClient.js';
import { authorizeUpToCallback, elicitConnection, openConnectLink } from '../support/connectFlow.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// The Report Service issues JWT access tokens, which a callback checks against the provider's key
// set. The keys are fetched while the user is at the provider, so the callback, whose answer the
// user waits for, fetches nothing but the token.
describe("a provider's key set", () => {
  const requested: URL[] = [];
  const { stack, tokens } = useBrokerStack(
    {
      brokerFetch: (inner) =>
        (async (input: Parameters<Fetch>[0], init?: Parameters<Fetch>[1]) => {
          requested.push(new URL(String(input instanceof Request ? input.url : input)));
          return inner(input, init);
        }) as Fetch,
    },
    { users: ['alice'] },
  );
  const keySetRequests = () =>
    requested.filter((u) => u.origin === new URL(stack.dev.reports.issuer).origin && u.pathname.endsWith('/jwks'));

  it('is fetched while the user is at the provider, and the callback sends only the code exchange', async () => {
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_create', { title: 'Keys', body: '' });
    expect(keySetRequests()).toEqual([]);
    const run = await openConnectLink(stack, elicited.url, 'alice');
    const callback = await authorizeUpToCallback(run, 'alice');
    await expect.poll(() => keySetRequests().length, { timeout: 5_000 }).toBe(1);

    const before = requested.length;
    const done = await run.browser.get(new URL(callback, stack.brokerUrl).href);
    expect(done.status).toBe(200);
    expect(done.text).toContain('is connected');
    const sent = requested.slice(before).map((u) => u.pathname);
    expect(sent).toEqual(['/token']);
    expect(keySetRequests()).toHaveLength(1);
  });
});
