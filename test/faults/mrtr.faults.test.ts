import { describe, expect, it } from 'vitest';
import { retryConnection } from '../support/connectFlow.js';
import { useFaultRuns } from '../support/faultFigures.js';
import { connectInBrowser, hostOp, mrtrAsk, mrtrFinish } from '../support/faultHost.js';

// The 2026-07-28 MRTR lineage with a real broker killed (SIGKILL, from BROKER_FAULT_POINT) at each of
// its steps, then started again on the same database: the host retries, the user finishes or opens
// her link again, and the operation is done once at the Report Service, the ledger intact.
describe.concurrent('MRTR (2026-07-28) killed at each step', () => {
  const { open, check } = useFaultRuns('MRTR');

  it('after the code exchange, before the callback commits: the user opens her link again, done once', async () => {
    const broker = await open();
    await broker.start({ faultPoint: 'callback.before_commit' });
    const token = await broker.token('alice');
    const op = hostOp('mrtr-callback');
    const asked = await mrtrAsk(broker, token, op);
    await expect(connectInBrowser(broker, asked.url)).rejects.toThrow();
    await broker.killedAt('callback.before_commit');
    expect((await broker.db.query('SELECT count(*)::int AS n FROM secrets')).rows[0].n).toBe(0);
    await broker.start();
    await mrtrFinish(broker, token, op, { state: asked.state, linkToFinish: asked.url });
    await check('mrtr callback.before_commit', broker, [op], 1);
  });

  it('after the receipt, before the business call: the host retries and it is done once', async () => {
    const broker = await open();
    await broker.start({ faultPoint: 'operation.before_call' });
    const token = await broker.token('alice');
    const op = hostOp('mrtr-before-call');
    const asked = await mrtrAsk(broker, token, op);
    expect(await connectInBrowser(broker, asked.url)).toBe(true);
    await expect(
      retryConnection(broker.stack, token, 'reports_create', op.args, asked.state, 'accept'),
    ).rejects.toThrow();
    await broker.killedAt('operation.before_call');
    expect((await broker.reportsSeen()).filter((r) => r.title === op.title)).toHaveLength(0);
    await broker.start();
    await mrtrFinish(broker, token, op, { state: asked.state, finishedLinks: [asked.url] });
    await check('mrtr operation.before_call', broker, [op], 1);
  });

  it('after the business call, before its outcome is stored: the host retries, the provider is not called twice', async () => {
    const broker = await open();
    await broker.start({ faultPoint: 'operation.before_outcome' });
    const token = await broker.token('alice');
    const op = hostOp('mrtr-before-outcome');
    const asked = await mrtrAsk(broker, token, op);
    expect(await connectInBrowser(broker, asked.url)).toBe(true);
    await expect(
      retryConnection(broker.stack, token, 'reports_create', op.args, asked.state, 'accept'),
    ).rejects.toThrow();
    await broker.killedAt('operation.before_outcome');
    expect((await broker.reportsSeen()).filter((r) => r.title === op.title)).toHaveLength(1);
    await broker.start();
    await mrtrFinish(broker, token, op, { state: asked.state, finishedLinks: [asked.url] });
    await check('mrtr operation.before_outcome', broker, [op], 1);
  });
});
