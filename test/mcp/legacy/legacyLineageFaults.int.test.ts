import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomToken } from '../../../src/shared/tokens.js';
import { openConnectLink } from '../../support/connectFlow.js';
import {
  authorizeUntilCallback,
  completeInBrowser,
  elicitationIdOf,
  isCompletion,
  isElicitation,
  reportOf,
  sleep,
  startErrorInstance,
  useFaultStack,
  WAIT_MS,
} from '../../support/legacyFaultScenarios.js';

// Lineage faults on the 2025-11-25 adapter, on raw HTTP: retries
// while a nested call is in flight, repeated -32042 retries, completion
// notifications that are duplicated or forged or come before consent, ended
// sessions, and the two lineages racing on two instances. Every test counts
// operation receipts (at most one per navigation) and reports at the Report
// Service (at most one per operation).

describe('legacy lineage faults: nested (LEGACY_URL_ELICITATION=nested)', () => {
  const { stack, db, aliceSession, nestedCall } = useFaultStack({ legacyWaitMs: WAIT_MS });

  it('does not let a retry sent while the nested call waits for the user cause a second effect', async () => {
    const { args, mark, original, asked, url, accept, answer, startAgain } = await nestedCall('Nested, retried early');
    await accept();

    // The host retries (same tool and arguments, new id) while the original is in flight: it joins the
    // original operation (no second link, no second effect) and answers its recorded outcome.
    // (Its answer opens only when it has one, so it is not awaited before the browser part.)
    const retrying = startAgain();
    await sleep(100);

    await completeInBrowser(stack, url);
    const first = await answer();
    const retry = await retrying;
    const second = await retry.next((m) => m.id === retry.requestId, WAIT_MS * 3);

    expect(first.result, JSON.stringify(first.result)).toMatchObject({ structuredContent: { status: 'created' } });
    expect(reportOf(second)).toBe(reportOf(first));
    expect(retry.messages.filter(isElicitation)).toEqual([]);
    expect(original.messages.filter(isCompletion)).toEqual([
      expect.objectContaining({ params: { elicitationId: elicitationIdOf(asked) } }),
    ]);
    expect(retry.messages.filter(isCompletion)).toEqual([]);
    expect(await db.receiptsOf(elicitationIdOf(asked))).toEqual([
      expect.objectContaining({ lineage: 'nested', jsonrpc_id: String(original.requestId) }),
    ]);
    expect(await db.newReceipts(mark)).toBe(1);
    expect(await db.reportsTitled(args.title)).toHaveLength(1);
  });

  it('does not let a retry sent after the browser completed, while the nested call still waits for the host, create a second report', async () => {
    const { args, mark, original, asked, url, accept, answer, again } = await nestedCall(
      'Nested, retried after the browser',
    );
    // The user finishes in the browser before the host has answered the elicitation.
    await completeInBrowser(stack, url);
    expect(await db.status(elicitationIdOf(asked))).toBe('REQUIREMENT_VERIFIED');

    // The host retries the in-flight call, then answers the original elicitation.
    const retrying = again();
    await sleep(100);
    await accept();
    const first = await answer();
    await original.ended;
    const retry = await retrying;
    expect(reportOf(retry.final)).toBe(reportOf(first));

    const created = new Set([reportOf(first), reportOf(retry.final)].filter((id) => id !== undefined));
    const reports = await db.reportsTitled(args.title);
    expect(
      {
        created: created.size,
        reports: reports.length,
        receipts: await db.receiptsOf(elicitationIdOf(asked)),
        newReceipts: await db.newReceipts(mark),
      },
      `the original answered ${JSON.stringify(first.result?.['structuredContent'])}, the retry ${JSON.stringify(retry.final.result?.['structuredContent'])}`,
    ).toEqual({
      created: 1,
      reports: 1,
      receipts: [expect.objectContaining({ lineage: 'nested', jsonrpc_id: String(original.requestId) })],
      newReceipts: 1,
    });
    expect((await db.receiptsPerNavigation()).every((n) => n <= 1)).toBe(true);
  });

  it('advances nothing on an elicitation/complete notification posted by the client', async () => {
    const { args, mark, session, original, navigationId, accept, answer } = await nestedCall('Forged completion');
    await accept();
    await db.until(navigationId, 'NAVIGATION_ACCEPTED');
    const before = await db.events(navigationId);

    const forged = await session.send({
      method: 'notifications/elicitation/complete',
      params: { elicitationId: navigationId },
    });
    expect(forged.status).toBe(202);
    // ...and a second answer to the same elicitation, as if it meant "done".
    const again = await accept();
    expect(again.status).toBe(202);

    const final = await answer(WAIT_MS * 3);
    expect(final.result).toMatchObject({ isError: true });
    expect(original.messages.filter(isCompletion)).toEqual([]);
    expect(await db.events(navigationId)).toEqual(before);
    expect(await db.status(navigationId)).toBe('NAVIGATION_ACCEPTED');
    expect(await db.newReceipts(mark)).toBe(0);
    expect(await db.reportsTitled(args.title)).toEqual([]);
  });

  it('advances nothing on a callback that arrives before consent, and the nested call does not continue', async () => {
    const { args, mark, original, navigationId, url, accept, answer } = await nestedCall('Callback before consent');
    await accept();
    await db.until(navigationId, 'NAVIGATION_ACCEPTED');
    // alice is on the review page, has not consented, and a callback lands.
    const run = await openConnectLink(stack, url, 'alice');
    const before = [await db.status(navigationId), await db.events(navigationId)];
    const early = new URL('/oauth/callback/reports', stack.brokerUrl);
    early.search = new URLSearchParams({
      code: randomToken(),
      state: randomToken(),
      iss: stack.dev.reports.issuer,
    }).toString();
    const page = await run.browser.get(early.href);

    expect(page.status).toBe(400);
    expect([await db.status(navigationId), await db.events(navigationId)]).toEqual(before);
    const final = await answer(WAIT_MS * 3);
    expect(final.result).toMatchObject({ isError: true });
    expect(original.messages.filter(isCompletion)).toEqual([]);
    expect(await db.newReceipts(mark)).toBe(0);
    expect(await db.reportsTitled(args.title)).toEqual([]);
  });

  it('sends no notification to, and accepts nothing for, a nested call whose session was ended while it waited', async () => {
    const { args, mark, session, original, navigationId, url, accept } = await nestedCall('Ended session, nested');
    await accept();
    expect(await session.end()).toBe(204);

    await completeInBrowser(stack, url);
    await Promise.race([original.ended, sleep(WAIT_MS + 1_000)]);
    original.close();

    // One assertion, so that a failure shows everything the ended session's call still did.
    expect({
      notified: original.messages.filter(isCompletion),
      succeeded: original.messages.filter(
        (m) => m.id === original.requestId && m.result !== undefined && m.result['isError'] !== true,
      ),
      receipts: await db.receiptsOf(navigationId),
      reports: await db.reportsTitled(args.title),
      newReceipts: await db.newReceipts(mark),
    }).toEqual({ notified: [], succeeded: [], receipts: [], reports: [], newReceipts: 0 });
    expect((await session.send({ method: 'notifications/initialized' })).status).toBe(404);
    expect((await session.start('tools/call', { name: 'reports_list', arguments: {} })).status).toBe(404);
  });

  it('lets a nested operation whose call gave up be finished by calling again after connecting, once', async () => {
    const { args, mark, asked, url, accept, answer, again: callAgain } = await nestedCall('Nested, gave up, recovered');
    await accept();
    // Nobody finishes in time: the call ends clearly, the flow stays recoverable.
    const gaveUp = await answer(WAIT_MS * 3);
    expect(gaveUp.result).toMatchObject({ isError: true });
    expect(await db.newReceipts(mark)).toBe(0);

    await completeInBrowser(stack, url);
    const again = await callAgain();
    const third = await callAgain();
    expect(again.final.result).toMatchObject({ structuredContent: { status: 'created' } });
    expect(reportOf(third.final)).toBe(reportOf(again.final));
    expect(await db.receiptsOf(elicitationIdOf(asked))).toEqual([expect.objectContaining({ lineage: 'nested' })]);
    expect(await db.reportsTitled(args.title)).toHaveLength(1);
  });

  describe('with a second instance that answers -32042 (a mixed LEGACY_URL_ELICITATION rollout)', () => {
    let errorInstance: { url: string; close(): Promise<void> };

    beforeAll(async () => {
      errorInstance = await startErrorInstance(stack);
    });
    afterAll(async () => {
      await errorInstance?.close();
    });

    it('leaves at most one receipt per navigation and one report when a nested request and a -32042 retry race for the same operation', async () => {
      const nested = await aliceSession();
      const viaError = await aliceSession(errorInstance.url);

      // Instance 1 asks on the call's stream; the host accepts.
      const { args, mark, url, accept, answer, original, again } = await nestedCall('Nested versus -32042', nested);
      await accept();
      // The same operation on the -32042 instance joins the nested one (no second link, no second effect).
      const joining = again(viaError);

      // The user completes the nested link; the -32042 host retries as the callback lands, racing the nested continuation.
      const { browser, callbackUrl } = await authorizeUntilCallback(stack, url);
      expect((await browser.get(callbackUrl)).status).toBe(200);
      const retried = await again(viaError);
      const first = await answer();
      await original.ended;
      const joined = await joining;
      expect(joined.final.error).toBeUndefined();

      const created = new Set(
        [reportOf(first), reportOf(retried.final), reportOf(joined.final)].filter((id) => id !== undefined),
      );
      const reports = await db.reportsTitled(args.title);
      expect(
        { created: created.size, reports: reports.length, newReceipts: await db.newReceipts(mark) },
        `nested answered ${JSON.stringify(first.result?.['structuredContent'] ?? first.error)}; the -32042 retry ${JSON.stringify(retried.final.result?.['structuredContent'] ?? retried.final.error)}`,
      ).toEqual({ created: 1, reports: 1, newReceipts: 1 });
      expect((await db.receiptsPerNavigation()).every((n) => n <= 1)).toBe(true);
    });
  });
});

describe('legacy lineage faults: -32042 (LEGACY_URL_ELICITATION=error)', () => {
  const { stack, db, aliceSession, errorCall } = useFaultStack({
    legacyUrlElicitation: 'error',
    legacyWaitMs: WAIT_MS,
  });

  it('creates one report when the -32042 flow is retried twice, including two retries racing on two instances', async () => {
    const two = await aliceSession(stack.secondUrl);
    const { args, mark, elicitationId, url, again } = await errorCall('Retried twice');
    await completeInBrowser(stack, url);

    const [a, b] = await Promise.all([again(), again(two)]);
    const c = await again();

    const ids = [a, b, c].map((r) => reportOf(r.final));
    expect(ids[0], JSON.stringify(a.final)).toBeDefined();
    expect(new Set(ids)).toEqual(new Set([ids[0]]));
    expect(await db.status(elicitationId)).toBe('RETRY_RESPONSE_ACCEPTED');
    expect(await db.receiptsOf(elicitationId)).toEqual([
      expect.objectContaining({ lineage: 'error_retry', outcome_status: 'succeeded' }),
    ]);
    expect(await db.newReceipts(mark)).toBe(1);
    expect(await db.reportsTitled(args.title)).toHaveLength(1);
  });

  it('sends the completion notification once, and not again for a replayed callback', async () => {
    const session = await aliceSession();
    const stream = await session.listen();
    expect(stream.status).toBe(200);
    const { args, mark, elicitationId, url, again } = await errorCall('Duplicate completion', session);

    const { browser, callbackUrl } = await authorizeUntilCallback(stack, url);
    expect((await browser.get(callbackUrl)).status).toBe(200);
    await stream.next(isCompletion);
    const replay = await browser.get(callbackUrl);
    expect(replay.status).toBe(400);
    // A replacement GET stream is not told again either.
    const replacement = await session.listen();
    await sleep(300);

    expect(stream.messages).toEqual([
      { jsonrpc: '2.0', method: 'notifications/elicitation/complete', params: { elicitationId } },
    ]);
    expect(replacement.messages).toEqual([]);
    expect((await db.events(elicitationId)).filter((e) => e.event === 'callback_verified')).toHaveLength(1);
    replacement.close();
    stream.close();

    const retried = await again();
    expect(retried.final.result).toMatchObject({ structuredContent: { status: 'created' } });
    expect(await db.newReceipts(mark)).toBe(1);
    expect(await db.reportsTitled(args.title)).toHaveLength(1);
  });

  it('does not make a -32042 retry eligible on an elicitation/complete notification posted by the client', async () => {
    const { args, mark, session, elicitationId, again } = await errorCall('Forged completion, -32042');
    const before = await db.events(elicitationId);

    expect(
      (await session.send({ method: 'notifications/elicitation/complete', params: { elicitationId } })).status,
    ).toBe(202);
    const retried = await again();

    expect(retried.final.error).toMatchObject({ code: -32042 });
    expect(await db.events(elicitationId)).toEqual(before);
    expect(await db.status(elicitationId)).toBe('USER_REVIEW');
    expect(await db.newReceipts(mark)).toBe(0);
    expect(await db.reportsTitled(args.title)).toEqual([]);
  });

  it('sends no notification to an ended session, which cannot be used, and accepts the retry from a new session once', async () => {
    const old = await aliceSession();
    const oldStream = await old.listen();
    const { args, mark, elicitationId, url, again, startAgain } = await errorCall('Ended session, -32042', old);
    expect(await old.end()).toBe(204);
    await Promise.race([oldStream.ended, sleep(2_000)]);

    const fresh = await aliceSession();
    const freshStream = await fresh.listen();
    await completeInBrowser(stack, url);
    await sleep(300);

    expect(oldStream.messages).toEqual([]);
    // The notification goes only to the session that got the elicitation.
    expect(freshStream.messages).toEqual([]);
    const reused = await startAgain();
    await reused.ended;
    expect(reused.status).toBe(404);
    expect(await db.newReceipts(mark)).toBe(0);

    const retried = await again(fresh);
    expect(retried.final.result).toMatchObject({ structuredContent: { status: 'created' } });
    expect(await db.receiptsOf(elicitationId)).toHaveLength(1);
    expect(await db.reportsTitled(args.title)).toHaveLength(1);
    oldStream.close();
    freshStream.close();
  });
});
