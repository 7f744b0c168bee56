import { describe, expect, it } from 'vitest';
import type { FaultBroker } from '../support/faultBroker.js';
import { useFaultRuns } from '../support/faultFigures.js';
import { connectInBrowser, errorAsk, hostOp, legacyFinish, type HostOp } from '../support/faultHost.js';
import { initialize } from '../support/legacyFaultScenarios.js';
import type { FaultPoint } from '../../src/shared/faultPoints.js';

// The 2025-11-25 -32042 lineage (LEGACY_URL_ELICITATION=error) with a real broker killed (SIGKILL,
// from BROKER_FAULT_POINT) at each of its steps, then started again on the same database: the host
// retries the call on a new session once the user has connected; done once, the ledger intact.
describe.concurrent('-32042 retry (2025-11-25) killed at each step', () => {
  const { open, check } = useFaultRuns('-32042');

  async function armed(point: FaultPoint, title: string) {
    const broker = await open();
    await broker.start({ faultPoint: point, legacy: 'error' });
    const token = await broker.token('alice');
    const op = hostOp(title);
    return { broker, token, op, url: await errorAsk(broker, token, op) };
  }
  /** The host's retry once the user has connected: it dies with the broker. */
  const retryDies = async (broker: FaultBroker, token: string, op: HostOp) => {
    const session = await initialize(broker.stack, token);
    await expect(session.call('reports_create', op.args)).rejects.toThrow();
  };

  it('after the code exchange, before the callback commits: she opens her link again, the retry is done once', async () => {
    const { broker, token, op, url } = await armed('callback.before_commit', 'error-callback');
    await expect(connectInBrowser(broker, url)).rejects.toThrow();
    await broker.killedAt('callback.before_commit');
    await broker.start({ legacy: 'error' });
    await legacyFinish(broker, token, op, { linkToFinish: url });
    await check('-32042 callback.before_commit', broker, [op], 1);
  });

  it('after the receipt, before the business call: the host retries again and it is done once', async () => {
    const { broker, token, op, url } = await armed('operation.before_call', 'error-before-call');
    expect(await connectInBrowser(broker, url)).toBe(true);
    await retryDies(broker, token, op);
    await broker.killedAt('operation.before_call');
    expect((await broker.reportsSeen()).filter((r) => r.title === op.title)).toHaveLength(0);
    await broker.start({ legacy: 'error' });
    await legacyFinish(broker, token, op);
    await check('-32042 operation.before_call', broker, [op], 1);
  });

  it('after the business call, before its outcome is stored: the host retries again, not called twice', async () => {
    const { broker, token, op, url } = await armed('operation.before_outcome', 'error-before-outcome');
    expect(await connectInBrowser(broker, url)).toBe(true);
    await retryDies(broker, token, op);
    await broker.killedAt('operation.before_outcome');
    expect((await broker.reportsSeen()).filter((r) => r.title === op.title)).toHaveLength(1);
    await broker.start({ legacy: 'error' });
    await legacyFinish(broker, token, op);
    await check('-32042 operation.before_outcome', broker, [op], 1);
  });
});
