import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { isConnectionLoss } from '../../src/db/connectionLoss.js';

// The shapes pg and Node give a database that went away, as they build them.
const sqlState = (code: string, message: string) => Object.assign(new pg.DatabaseError(message, 0, 'error'), { code });
const socket = (code: string, syscall = 'connect') =>
  Object.assign(new Error(`${syscall} ${code} 127.0.0.1:5432`), { code, syscall, address: '127.0.0.1', port: 5432 });

describe('isConnectionLoss', () => {
  it.each([
    [
      'the server stopping (57P01 admin_shutdown)',
      sqlState('57P01', 'terminating connection due to administrator command'),
    ],
    [
      'another backend crashing (57P02)',
      sqlState('57P02', 'terminating connection because of crash of another server process'),
    ],
    ['the server starting (57P03 cannot_connect_now)', sqlState('57P03', 'the database system is starting up')],
    ['a connection exception (class 08)', sqlState('08006', 'connection failure')],
    ['too many connections (53300)', sqlState('53300', 'sorry, too many clients already')],
    ['a refused connection', socket('ECONNREFUSED')],
    ['a reset connection', socket('ECONNRESET', 'read')],
    ['a broken pipe', socket('EPIPE', 'write')],
    ['an unreachable host', socket('EHOSTUNREACH')],
    ['a name that does not resolve for now', socket('EAI_AGAIN', 'getaddrinfo')],
    ['every address of a name refused', new AggregateError([socket('ECONNREFUSED'), socket('ECONNREFUSED')])],
    ['the connection ending under a query (pg)', new Error('Connection terminated unexpectedly')],
    ['no answer to the connect (pg)', new Error('Connection terminated due to connection timeout')],
    ['no pooled connection in time (pg-pool)', new Error('timeout exceeded when trying to connect')],
    [
      'a query on a client that lost its connection (pg)',
      new Error('Client has encountered a connection error and is not queryable'),
    ],
  ])('recognises %s', (_what, err) => {
    expect(isConnectionLoss(err)).toBe(true);
  });

  it.each([
    ['a unique violation', sqlState('23505', 'duplicate key value violates unique constraint')],
    ['a statement timeout', sqlState('57014', 'canceling statement due to statement timeout')],
    ['a serialization failure', sqlState('40001', 'could not serialize access')],
    ['a bug', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['a closed pool (the broker stopping)', new Error('Cannot use a pool after calling end on the pool')],
    // A provider that went away is not the database: undici wraps its socket errors.
    ['an HTTP client socket error', new TypeError('fetch failed', { cause: socket('ECONNRESET', 'read') })],
    ['an AggregateError of something else', new AggregateError([socket('ECONNREFUSED'), new Error('other')])],
    ['a string', 'ECONNREFUSED'],
    ['nothing', undefined],
  ])('does not take %s for one', (_what, err) => {
    expect(isConnectionLoss(err)).toBe(false);
  });
});
