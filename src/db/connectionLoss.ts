import pg from 'pg';

// What a database that went away looks like through pg, by its three shapes: the server's
// SQLSTATE (PostgreSQL, Appendix A), the socket's error code (Node's net), and pg's own errors,
// which carry no code, only these fixed messages (pg/lib/client.js, pg-pool/index.js).
const lostSqlStates = new Set([
  '57P01', // admin_shutdown: the server is stopping
  '57P02', // crash_shutdown: another backend crashed, every connection is ended
  '57P03', // cannot_connect_now: starting up, shutting down, or in recovery
  '53300', // too_many_connections: every instance reconnecting at once after an outage
]);
const lostSocketCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
]);
const lostMessages = new Set([
  'Connection terminated unexpectedly',
  'Connection terminated due to connection timeout',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error and is not queryable',
]);

/**
 * True when `err` says the database cannot be reached (refused, lost, stopping, starting), not
 * that a statement failed: nothing about the request is wrong, and the same request later may
 * succeed. Only the error itself is read, never its causes: an HTTP client's socket error arrives
 * wrapped (undici's "fetch failed"), and a provider's outage is not the database's.
 */
export function isConnectionLoss(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err instanceof pg.DatabaseError)
    return err.code !== undefined && (err.code.startsWith('08') || lostSqlStates.has(err.code));
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && lostSocketCodes.has(code)) return true;
  // Node's happy-eyeballs connect to a name with several addresses fails with every attempt's error.
  if (err instanceof AggregateError) return err.errors.length > 0 && err.errors.every(isConnectionLoss);
  return lostMessages.has(err.message);
}

/** True when a statement failed on a UNIQUE constraint (SQLSTATE 23505, unique_violation): it changed nothing. */
export const isUniqueViolation = (err: unknown): boolean => err instanceof pg.DatabaseError && err.code === '23505';
