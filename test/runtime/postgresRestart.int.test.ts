import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../src/db/embeddedPostgres.js';
import { createLogger } from '../../src/shared/logger.js';
import { holdFlowWithWaitingRetry } from '../support/connectFlow.js';
import { callTool } from '../support/mcpWire.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// The embedded cluster itself stopped (Postgres' fast shutdown: 57P01 to every backend, the
// completion listener's included, then refused connections) and started again on its port, under
// a running broker: its own cluster, not the run's, which every other test file uses.

const OUTAGE = 'The service cannot reach its database at the moment. Try again in a few seconds.';
const NOTES = 'file:///work/notes/alice';

let dir: string | undefined;
let cluster: EmbeddedPostgres | undefined;
const logger = createLogger({ level: 'warn' });
// Registered before the stack's hooks, so it runs after the stack has closed.
afterAll(async () => {
  await cluster?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the embedded Postgres stopped and started again under a running broker', () => {
  const { stack, tokens } = useBrokerStack(
    async () => {
      dir = await mkdtemp(join(tmpdir(), 'broker-restart-pg-'));
      await chmod(dir, 0o711);
      cluster = await startEmbeddedPostgres(dir, logger);
      return { retryWaitMs: 20_000, database: { url: cluster.url.reveal() } };
    },
    { users: ['alice'] },
  );

  it('answers 503 while it is stopped, and serves again, LISTEN included, once it is back', async () => {
    const held = await holdFlowWithWaitingRetry(
      stack,
      tokens.alice,
      'alice',
      { title: 'Across a restart', body: 'r' },
      stack.secondUrl,
    );

    const port = Number(new URL(cluster!.url.reveal()).port);
    const mark = stack.logs.length;
    await cluster!.stop();
    const started = Date.now();
    const down = await callTool(stack, tokens.alice, 'notes_create', { workspaceUri: NOTES, title: 'Down', body: 'x' });
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toBe('5');
    expect(down.json.error).toEqual({ code: -32603, message: OUTAGE, data: { retryAfterSeconds: 5 } });
    const page = await held.run.browser.get(held.elicited.url);
    expect(page.status).toBe(503);
    expect(page.headers.get('retry-after')).toBe('5');
    expect(page.text).toContain(OUTAGE);
    expect((await stack.fetch(`${stack.secondUrl}/readyz`)).status).toBe(503);
    // What the stop told the instances: the server's shutdown (57P01) on the connections it ended.
    expect(stack.logs.slice(mark).join('')).toContain('"code":"57P01"');

    const stoppedMs = Date.now() - started;
    cluster = await startEmbeddedPostgres(dir!, logger, { port });
    const restarted = Date.now();
    for (const base of [stack.brokerUrl, stack.secondUrl])
      await expect
        .poll(async () => (await stack.fetch(`${base}/readyz`)).status, { timeout: 20_000, interval: 100 })
        .toBe(200);
    const readyMs = Date.now() - restarted;
    expect(held.answered()).toBeUndefined();
    await expect
      .poll(() => stack.logs.slice(mark).join('').includes('completion listener listening again'), { timeout: 10_000 })
      .toBe(true);

    const landed = Date.now();
    const callback = await held.run.browser.get(held.callbackUrl);
    expect(callback.text).toContain('Report Service is connected');
    const answer = await held.retry;
    expect(answer.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'created' } });
    const wokenMs = Date.now() - landed;
    expect(wokenMs).toBeLessThan(5_000);
    console.log(
      `postgres restart: down ${stoppedMs} ms (503 + Retry-After), both instances ready ${readyMs} ms after it started, the waiting retry done ${wokenMs} ms after the callback`,
    );
    const up = await callTool(stack, tokens.alice, 'notes_create', { workspaceUri: NOTES, title: 'Up', body: 'y' });
    expect(up.json.result).toMatchObject({ structuredContent: { note: { title: 'Up' } } });
    const notes = await stack.db.pool.query("SELECT title FROM notes WHERE title IN ('Down', 'Up')");
    expect(notes.rows).toEqual([{ title: 'Up' }]);
  });
});
