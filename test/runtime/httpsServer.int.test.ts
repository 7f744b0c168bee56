import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenHttps } from '../../src/runtime/httpsServer.js';
import { createFetch } from '../../src/shared/httpClient.js';
import { loadOrCreateLocalTls, type TlsMaterial } from '../../src/tls/localCa.js';
import { isPortClosed } from '../support/brokerProcess.js';

describe('listenHttps', () => {
  let dir: string;
  let tls: TlsMaterial;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'broker-https-'));
    tls = await loadOrCreateLocalTls(dir);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('lets a request in flight finish when it closes, then stops listening', async () => {
    let release: () => void = () => undefined;
    let reached: () => void = () => undefined;
    const handlerReached = new Promise<void>((resolve) => (reached = resolve));
    const server = await listenHttps(
      tls,
      (_req, res) => {
        release = () => res.end('finished');
        reached();
      },
      '127.0.0.1',
      0,
      'test',
    );
    const fetch = createFetch({ extraCaPems: [tls.caPem] });
    const inFlight = fetch(`https://127.0.0.1:${server.port}/slow`);
    // Closed only once the request is in the handler: a fixed pause lost that race on a loaded machine.
    await handlerReached;
    const closing = server.close(5_000);
    // No new connections while draining (the listening socket closes on the next turns of the loop).
    while (!(await isPortClosed(server.port))) await new Promise((r) => setTimeout(r, 10));
    release();
    expect(await (await inFlight).text()).toBe('finished');
    await closing;
  });

  it('cuts what is left once the grace period is over', async () => {
    const server = await listenHttps(tls, () => undefined, '127.0.0.1', 0, 'test');
    const fetch = createFetch({ extraCaPems: [tls.caPem] });
    const stuck = fetch(`https://127.0.0.1:${server.port}/never`).catch((err: unknown) => err);
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    await server.close(200);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await stuck).toBeInstanceOf(Error);
  });

  it('says which port is taken', async () => {
    const first = await listenHttps(tls, () => undefined, '127.0.0.1', 0, 'first');
    await expect(listenHttps(tls, () => undefined, '127.0.0.1', first.port, 'broker')).rejects.toThrow(
      `broker: port ${first.port} on 127.0.0.1 is already in use`,
    );
    await first.close(0);
  });
});
