// A connection's life as data, like the navigation states (flow/navigationStates.ts), with the
// migrations' CHECK on connections.state holding the same states. This module names the states and
// decides the moves; connectionsRepo.ts applies them as compare-and-set updates.

export const connectionStates = ['active', 'refreshing', 'needs_reauth', 'revoked'] as const;
export type ConnectionState = (typeof connectionStates)[number];

export const connectionEvents = [
  'refresh_started', // one instance took the refresh lease (or took over one whose time ran out)
  'refreshed', // the provider answered the refresh; the new token set was stored with this move
  'refresh_failed', // the provider could not be reached or answered an error other than a refusal: try again later
  'refresh_refused', // the provider refused the refresh (invalid_grant): the grant is gone
  'token_refused', // the provider answered 401 to a call made with the stored token
  'expired', // the access token expired and there is no refresh token to renew it
  'key_missing', // a stored token was sealed under a key SECRET_KEYS no longer holds
  'issuer_changed', // discovery named another authorization server than the one the grant came from
  'connected', // a verified callback stored a new token set (a first connect or a reconnect in place)
  'revoked', // the user or an operator disconnected it
] as const;
export type ConnectionEvent = (typeof connectionEvents)[number];

interface Move {
  from: readonly ConnectionState[];
  to: ConnectionState;
}

const live = ['active', 'refreshing'] as const;
const moves: Readonly<Record<ConnectionEvent, Move>> = {
  refresh_started: { from: live, to: 'refreshing' },
  refreshed: { from: ['refreshing'], to: 'active' },
  refresh_failed: { from: ['refreshing'], to: 'active' },
  refresh_refused: { from: ['refreshing'], to: 'needs_reauth' },
  token_refused: { from: live, to: 'needs_reauth' },
  expired: { from: live, to: 'needs_reauth' },
  key_missing: { from: live, to: 'needs_reauth' },
  issuer_changed: { from: live, to: 'needs_reauth' },
  connected: { from: connectionStates, to: 'active' },
  revoked: { from: [...live, 'needs_reauth'], to: 'revoked' },
};

/** The states `event` may move a connection from (for SQL: `state = ANY($n)`). */
export const fromStatesOf = (event: ConnectionEvent): readonly ConnectionState[] => moves[event].from;
/** Where `event` moves a connection. */
export const toStateOf = (event: ConnectionEvent): ConnectionState => moves[event].to;

/** The states whose stored tokens may be used for a call (after a refresh where stale). */
export const usableStates: ReadonlySet<ConnectionState> = new Set(live);

/** The states only the user can end, by connecting again: the connections page offers a reconnect. */
export const reconnectableStates: ReadonlySet<ConnectionState> = new Set(['needs_reauth']);

/** The ledger event a connection's move is recorded under, on the flow that made it. */
export const ledgerEventOf = (event: ConnectionEvent): string => `connection_${event}`;

/** Where a disconnect leaves a connection: kept for the record, never used again. */
export const disconnectedState: ConnectionState = toStateOf('revoked');

/**
 * The states a user may connect again from the connections page, keeping the connection's id: one the
 * provider stopped accepting, and one they disconnected (a disconnect is not a goodbye to the provider).
 */
export const connectAgainStates: ReadonlySet<ConnectionState> = new Set([...reconnectableStates, disconnectedState]);
