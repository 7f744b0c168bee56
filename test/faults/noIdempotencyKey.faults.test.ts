import { describe, expect, it } from 'vitest';
import { retryConnection } from '../support/connectFlow.js';
import { useFaultRuns } from '../support/faultFigures.js';
import { connectInBrowser, githubOp, mrtrAsk, mrtrFinish } from '../support/faultHost.js';

// A provider that honours no idempotency key (GitHub's REST API; the tool is not replayable): a
// broker killed after the business call, before its outcome is stored, may have done it, so no
// retry may send it again. The host is told its outcome is unknown and the receipt waits for an
// operator (`broker ledger reconcile`). The development GitHub dedupes by the key anyway, so what
// is asserted is that the broker did not send it again, not the number of issues alone.
describe('a provider without idempotency keys (GitHub) killed at each step', () => {
  const { open, check } = useFaultRuns('no key');

  it('after the business call, before its outcome is stored: recorded for an operator, never sent again', async () => {
    const broker = await open();
    await broker.start({ faultPoint: 'operation.before_outcome' });
    const token = await broker.token('alice');
    const op = githubOp('github-before-outcome');
    const asked = await mrtrAsk(broker, token, op);
    expect(await connectInBrowser(broker, asked.url, op.forms)).toBe(true);
    await expect(retryConnection(broker.stack, token, op.tool, op.args, asked.state, 'accept')).rejects.toThrow();
    await broker.killedAt('operation.before_outcome');
    expect((await broker.issuesSeen()).filter((i) => i.title === op.title)).toHaveLength(1);
    await broker.start();
    await mrtrFinish(broker, token, op, { state: asked.state, finishedLinks: [asked.url] });
    expect(op.done).toBe(false);
    const { rows } = await broker.db.query<{ unknown: boolean }>(
      "SELECT outcome_unknown_at IS NOT NULL AS unknown FROM operation_receipts WHERE outcome_status = 'pending'",
    );
    expect(rows).toEqual([{ unknown: true }]);
    await check('github operation.before_outcome', broker, [op], 1, 1);
  });
});
