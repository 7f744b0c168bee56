import { afterEach, describe, expect, it } from 'vitest';
import {
  completeInBrowser,
  elicitationIdOf,
  startExtraInstance,
  useFaultStack,
  type ExtraInstance,
} from '../../support/legacyFaultScenarios.js';

// A nested 2025-11-25 call whose broker goes away while it waits for the user: stopped gracefully,
// or gone without a word (its process killed). The flow and its link live in Postgres, so the user
// can still finish connecting; what the host then does must not hang on the call that is gone.

const LONG_WAIT_MS = 60_000;

describe('a nested call outlived by its broker instance', () => {
  const { stack, db, aliceSession, nestedCall } = useFaultStack({ legacyWaitMs: LONG_WAIT_MS });
  let instance: ExtraInstance | undefined;
  afterEach(async () => {
    await instance?.close().catch(() => undefined);
    instance = undefined;
  });
  const legacy = { urlElicitation: 'nested', waitMs: LONG_WAIT_MS } as const;

  /** A nested reports_create on a third instance, accepted by the host. */
  const waitingCall = async (title: string) => {
    instance = await startExtraInstance(stack, { legacy });
    const call = await nestedCall(title, await aliceSession(instance.url));
    await call.accept();
    return call;
  };

  it('stopping the instance ends the waiting call with an answer at once, and nothing touches the pool after it is closed', async () => {
    const { answer, mark } = await waitingCall('Stopped while waiting');
    const stopped = Date.now();
    await instance!.close();
    const ended = await answer(10_000);
    expect(Date.now() - stopped).toBeLessThan(10_000);
    expect(ended.error?.message).toContain('the server is stopping');
    // Give anything still running after close() the time to fail, as it did on a pool already ended.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(instance!.logs.filter((line) => /"level":(40|50|60)/.test(line))).toEqual([]);
    expect(await db.newReceipts(mark)).toBe(0);
  });

  it("when the waiting call is gone (its session ended, as with a killed broker's), the host's identical call from a new session completes once the user connects, without waiting out LEGACY_WAIT_MS", async () => {
    const { args, asked, url, mark, session: first, answer } = await nestedCall('Caller gone');
    await first.end();
    expect((await answer(10_000)).error?.message).toContain('The session ended');
    await completeInBrowser(stack, url);

    const session = await aliceSession();
    const started = Date.now();
    const again = await session.start('tools/call', { name: 'reports_create', arguments: args });
    const final = await again.next((m) => m.id === again.requestId, 20_000);
    expect(Date.now() - started).toBeLessThan(LONG_WAIT_MS / 3);
    expect(final.result).toMatchObject({ structuredContent: { status: 'created' } });
    // The same operation, done once: one receipt on the flow the gone call started, one report.
    expect(await db.receiptsOf(elicitationIdOf(asked))).toEqual([expect.objectContaining({ lineage: 'nested' })]);
    expect(await db.newReceipts(mark)).toBe(1);
    expect(await db.reportsTitled(args.title)).toHaveLength(1);
  }, 60_000);
});
