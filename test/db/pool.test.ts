import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createPool } from '../../src/db/pool.js';
import { createLogger } from '../../src/shared/logger.js';
import { Secret } from '../../src/shared/secret.js';

describe('createPool', () => {
  it('logs an idle connection failure by its message and SQLSTATE, not the pg Client pg attaches to it', async () => {
    const lines: string[] = [];
    const logger = createLogger(
      { level: 'info' },
      new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(chunk.toString('utf8')), done()) }),
    );
    // Nothing connects: a pool opens connections only when asked for one.
    const pool = createPool({ url: new Secret('postgres://broker@127.0.0.1:1/broker'), poolMax: 1 }, logger);
    const err = Object.assign(new Error('terminating connection due to administrator command'), {
      code: '57P01',
      client: { connectionParameters: { user: 'CANARY-client-state' }, _queryQueue: [] },
    });
    pool.emit('error', err, {} as never);
    await pool.end();
    await new Promise((r) => setImmediate(r));
    const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(logged).toEqual([
      expect.objectContaining({
        level: 40,
        msg: 'idle database connection failed',
        error: 'terminating connection due to administrator command',
        sqlState: '57P01',
      }),
    ]);
    expect(lines.join('')).not.toContain('CANARY-client-state');
  });
});
