import type { Principal } from '../auth/principal.js';
import type { Pool } from '../db/pool.js';
import { withTransaction } from '../db/transaction.js';
import { ConflictError, NotFoundError } from '../errors/appError.js';
import { choosePreferred, findConnectionById, type ConnectionRecord } from '../secrets/connectionsRepo.js';
import type { Clock } from '../shared/clock.js';
import { disconnectedState } from '../secrets/connectionStates.js';

/**
 * The signed-in user makes one of their connections their default for its provider ("Make
 * default" on the connections page): a call naming no account then runs on it without asking,
 * even with several accounts connected (broker/connectionChoice.ts). Another user's connection is
 * as unknown as one that does not exist; a disconnected one cannot be the default.
 */
export async function preferConnection(
  deps: { pool: Pool; clock: Clock },
  input: { principal: Principal; connectionId: string },
): Promise<ConnectionRecord> {
  return withTransaction(deps.pool, async (tx) => {
    const found = await findConnectionById(tx, input.connectionId);
    if (!found || found.subject.iss !== input.principal.iss || found.subject.sub !== input.principal.sub)
      throw new NotFoundError('You have no such connection.');
    if (found.state === disconnectedState)
      throw new ConflictError('This connection was disconnected: connect it again before making it your default.');
    const chosen = await choosePreferred(tx, input.principal, input.connectionId, deps.clock.now());
    if (!chosen) throw new NotFoundError('You have no such connection.');
    return chosen;
  });
}
