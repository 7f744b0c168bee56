import { describe, expect, it } from 'vitest';
import type { FaultBroker } from '../support/faultBroker.js';
import { useFaultRuns } from '../support/faultFigures.js';
import { connectInBrowser, hostOp, legacyFinish, nestedAsk } from '../support/faultHost.js';
import type { FaultPoint } from '../../src/shared/faultPoints.js';

// The 2025-11-25 nested lineage with a real broker killed (SIGKILL, from BROKER_FAULT_POINT) at each
// of its steps, then started again on the same database: its sessions died with it, so the host
// makes the identical call on a new session; the user finishes or opens her link again; the
// operation is done once at the Report Service and the ledger is intact.
describe.concurrent('nested elicitation (2025-11-25) killed at each step', () => {
  const { open, check } = useFaultRuns('nested');

  /** The nested call accepted by the host, the broker armed at `point`; `act` leads it there. */
  async function killedRun(point: FaultPoint, title: string, act: (b: FaultBroker, url: string) => Promise<void>) {
    const broker = await open();
    await broker.start({ faultPoint: point });
    const token = await broker.token('alice');
    const op = hostOp(title);
    const asked = await nestedAsk(broker, token, op);
    await act(broker, asked.url);
    await broker.killedAt(point);
    await expect(asked.answer(5_000)).rejects.toThrow();
    await broker.start();
    return { broker, token, op, url: asked.url };
  }

  // The waiting call accepts as soon as the callback commits: the broker may die before the
  // browser's last redirect (the done page) arrives, so only the receipt is asked of her flow.
  const connectsAndDies = async (b: FaultBroker, link: string) => {
    await connectInBrowser(b, link).catch(() => false);
  };
  const receipts = async (b: FaultBroker) =>
    (await b.db.query('SELECT count(*)::int AS n FROM operation_receipts')).rows[0].n as number;

  it('while the nested call waits for the user: she finishes the link, the identical call from a new session completes', async () => {
    const { broker, token, op, url } = await killedRun(
      'legacy.nested_waiting',
      'nested-waiting',
      async () => undefined,
    );
    expect(await connectInBrowser(broker, url)).toBe(true);
    await legacyFinish(broker, token, op);
    await check('nested legacy.nested_waiting', broker, [op], 1);
  });

  it('after the code exchange, before the callback commits: she opens her link again, done once', async () => {
    const { broker, token, op, url } = await killedRun('callback.before_commit', 'nested-callback', async (b, link) => {
      await expect(connectInBrowser(b, link)).rejects.toThrow();
    });
    await legacyFinish(broker, token, op, { linkToFinish: url });
    await check('nested callback.before_commit', broker, [op], 1);
  });

  it('after the receipt, before the business call: the identical call completes it once', async () => {
    const { broker, token, op } = await killedRun('operation.before_call', 'nested-before-call', connectsAndDies);
    expect(await receipts(broker)).toBe(1);
    expect((await broker.reportsSeen()).filter((r) => r.title === op.title)).toHaveLength(0);
    await legacyFinish(broker, token, op);
    await check('nested operation.before_call', broker, [op], 1);
  });

  it('after the business call, before its outcome is stored: the identical call completes it, not called twice', async () => {
    const { broker, token, op } = await killedRun('operation.before_outcome', 'nested-before-outcome', connectsAndDies);
    expect(await receipts(broker)).toBe(1);
    expect((await broker.reportsSeen()).filter((r) => r.title === op.title)).toHaveLength(1);
    await legacyFinish(broker, token, op);
    await check('nested operation.before_outcome', broker, [op], 1);
  });
});
