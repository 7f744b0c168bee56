import { usableStates } from '../secrets/connectionStates.js';
import { accountLabelOf, type ConnectionRecord } from '../secrets/connectionsRepo.js';

/** What names the connection a call runs on: the tool's `account` argument, or the choice the user made when asked. */
export interface ConnectionChoice {
  /** A label (the account's name or id at the provider) or a connection id, as the `account` argument gives it. */
  account?: string | undefined;
  /** The connection the user picked in the form elicitation, remembered for that call's retry only (requestState). */
  connectionId?: string | undefined;
  /** false once the operation is accepted (nobody to ask any more): the default runs it, else the oldest usable. */
  ask?: boolean;
}

/** Which connection a call runs on. */
export type ChosenConnection =
  /** This one (or, never connected, none: the connect flow makes the first). */
  | { kind: 'chosen'; connection: ConnectionRecord | undefined }
  /** Several usable connections and nothing says which: the user is asked, from these. */
  | { kind: 'ask'; candidates: ConnectionRecord[] }
  /** The `account` argument names none of the user's connections to the provider. */
  | { kind: 'unknown_account'; account: string; known: string[] };

const names = (c: ConnectionRecord, account: string) =>
  c.id === account || c.upstreamName === account || c.upstreamSubject === account;

/**
 * The one rule for which of a user's connections to a provider a call uses, in this order:
 * 1. the connection the `account` argument names (by id, account name or account id), whatever its state;
 * 2. the connection the user picked when asked, for that call's retry only;
 * 3. the only usable connection, when there is one (a needs_reauth or revoked one is not a candidate);
 * 4. the default, when the user chose it ("Make default" on the connections page);
 * 5. otherwise, with several usable connections, the user is asked which (a form elicitation), unless
 *    `ask` is false (an operation already accepted): then the default, else the oldest usable.
 * With no usable connection, the default (possibly needing a reconnect) is the one the connect flow targets.
 * `all` is the user's connections to the provider in findConnectionsFor's order (default first).
 */
export function chooseConnection(all: readonly ConnectionRecord[], choice: ConnectionChoice = {}): ChosenConnection {
  if (choice.account !== undefined) {
    const named = all.find((c) => names(c, choice.account!));
    if (named) return { kind: 'chosen', connection: named };
    return {
      kind: 'unknown_account',
      account: choice.account,
      known: all.map((c) => accountLabelOf(c) ?? c.id),
    };
  }
  const usable = all.filter((c) => usableStates.has(c.state));
  const picked = choice.connectionId === undefined ? undefined : usable.find((c) => c.id === choice.connectionId);
  if (picked) return { kind: 'chosen', connection: picked };
  if (usable.length <= 1) return { kind: 'chosen', connection: usable[0] ?? all[0] };
  const preferred = usable.find((c) => c.preferred && c.preferredChosen);
  if (preferred) return { kind: 'chosen', connection: preferred };
  if (choice.ask === false) return { kind: 'chosen', connection: usable.find((c) => c.preferred) ?? usable[0] };
  return { kind: 'ask', candidates: usable };
}
