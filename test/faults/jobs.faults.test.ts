import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { FaultBroker } from '../support/faultBroker.js';
import { useFaultRuns } from '../support/faultFigures.js';
import { connectInBrowser, hostOp, mrtrAsk, mrtrFinish } from '../support/faultHost.js';
import { callTool } from '../support/mcpWire.js';
import { URL_CAPS } from '../support/connectFlow.js';
import { sleep } from '../support/legacyFaultScenarios.js';

// Background work killed half-way (SIGKILL, from BROKER_FAULT_POINT): a token refresh, a sweep, a
// re-seal after a key rotation; the broker started again on the same database finishes the work,
// and the host's operations (2026-07-28) are done once, the ledger intact.
describe.concurrent('refresh, sweep and re-seal killed half-way', () => {
  const { open, check } = useFaultRuns('jobs');
  /** alice's first operation, connecting on the way. */
  const connectedOp = async (broker: FaultBroker, token: string, title: string) => {
    const op = hostOp(title);
    const asked = await mrtrAsk(broker, token, op);
    expect(await connectInBrowser(broker, asked.url)).toBe(true);
    await mrtrFinish(broker, token, op, { state: asked.state, finishedLinks: [asked.url] });
    return op;
  };
  const until = async (what: string, holds: () => Promise<boolean>) => {
    for (let i = 0; i < 300; i++) {
      if (await holds()) return;
      await sleep(100);
    }
    throw new Error(`timed out waiting until ${what}`);
  };

  it('during a refresh (the provider answered, the new tokens not stored): the next call still completes once', async () => {
    const broker = await open();
    await broker.start({ faultPoint: 'refresh.before_store' });
    const token = await broker.token('alice');
    const first = await connectedOp(broker, token, 'refresh-first');
    // The access token's end comes (as it would an hour later): the next call refreshes it first.
    await broker.db.query("UPDATE secrets SET expires_at = now() - interval '1 minute' WHERE kind = 'access_token'");
    const op = hostOp('refresh-second');
    await expect(callTool(broker.stack, token, 'reports_create', op.args, {}, URL_CAPS)).rejects.toThrow();
    await broker.killedAt('refresh.before_store');
    await broker.start();
    await mrtrFinish(broker, token, op);
    await check('jobs refresh.before_store', broker, [first, op], 1);
  });

  it('during a sweep (an overdue flow expired, not committed): the next sweep expires it, the open operation completes once', async () => {
    const broker = await open();
    await broker.start();
    const token = await broker.token('alice');
    // bob's flow, which he never opens (alice's callback settles her own open flows, not his).
    await mrtrAsk(broker, await broker.token('bob'), hostOp('sweep-abandoned'));
    const op = hostOp('sweep-open');
    const asked = await mrtrAsk(broker, token, op);
    expect(await connectInBrowser(broker, asked.url)).toBe(true);
    await broker.stop();
    // The abandoned flow's time runs out (NAVIGATION_TTL_SECONDS later). Just after its start, which may
    // be less than a second ago: a flow's expiry must stay after its creation (a CHECK).
    await broker.db.query(
      "UPDATE elicitation_navigations SET expires_at = created_at + interval '1 millisecond' WHERE subject_sub = 'bob'",
    );
    const expired = async () =>
      (await broker.db.query("SELECT count(*)::int AS n FROM elicitation_navigations WHERE status = 'EXPIRED'")).rows[0]
        .n as number;
    await broker.start({ faultPoint: 'sweep.before_commit', sweepIntervalMs: 1_000 });
    await broker.killedAt('sweep.before_commit');
    expect(await expired()).toBe(0);
    await broker.start({ sweepIntervalMs: 1_000 });
    await until('the sweep expired the abandoned flow', async () => (await expired()) === 1);
    await mrtrFinish(broker, token, op, { state: asked.state, finishedLinks: [asked.url] });
    await check('jobs sweep.before_commit', broker, [op], 1);
  });

  it('during a re-seal (a batch moved to the new key, not committed): the next pass finishes it, the tokens still work', async () => {
    const broker = await open();
    await broker.start();
    const token = await broker.token('alice');
    const first = await connectedOp(broker, token, 'reseal-first');
    await broker.stop();
    // A key rotation: a new active key, the development ones kept to open what they sealed.
    const dev = JSON.parse(await readFile(join(broker.dataDir, 'dev-secrets.json'), 'utf8')) as {
      secretKeys: { kid: string; key: string }[];
    };
    const secretKeys = [
      `rot1:${randomBytes(32).toString('base64url')}`,
      ...dev.secretKeys.map((k) => `${k.kid}:${k.key}`),
    ].join(',');
    const underOldKeys = async () =>
      (await broker.db.query("SELECT count(*)::int AS n FROM secrets WHERE key_id <> 'rot1'")).rows[0].n as number;
    expect(await underOldKeys()).toBeGreaterThan(0);
    await broker.start({ faultPoint: 'reseal.before_commit', secretKeys, sweepIntervalMs: 1_000 });
    await broker.killedAt('reseal.before_commit');
    expect(await underOldKeys()).toBeGreaterThan(0);
    await broker.start({ secretKeys, sweepIntervalMs: 1_000 });
    await until('every token is sealed under the new key', async () => (await underOldKeys()) === 0);
    const op = hostOp('reseal-second');
    await mrtrFinish(broker, token, op);
    await check('jobs reseal.before_commit', broker, [first, op], 1);
  });
});
