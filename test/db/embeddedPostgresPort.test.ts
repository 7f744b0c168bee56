import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../src/db/embeddedPostgres.js';

// The broker picks its embedded Postgres port before it listens on its own ports; the system may
// hand out one of those (free until the broker binds it), as a CI run once saw.
describe('the embedded Postgres port', () => {
  it('is never one the broker will listen on, even when the system offers only those', async () => {
    const every = new Set(Array.from({ length: 65_535 }, (_, i) => i + 1));
    await expect(freePort(every)).rejects.toThrow(/no free loopback port outside the broker's own/);
  });

  it('skips the avoided ports and leaves every port it tried free again', async () => {
    const offered = await freePort(new Set());
    const avoided = new Set([offered]);
    for (let i = 0; i < 20; i += 1) {
      const port = await freePort(avoided);
      expect(avoided.has(port)).toBe(false);
      avoided.add(port);
    }
    // Every one is free: none is left held by the search.
    for (const port of avoided) {
      await new Promise<void>((resolve, reject) => {
        const server = createServer();
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => server.close(() => resolve()));
      });
    }
  });
});
