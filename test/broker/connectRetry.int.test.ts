import nock from 'nock';
import { afterEach, describe, expect, it } from 'vitest';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { mintAccessToken } from '../support/forgedTokens.js';
import { callTool } from '../support/mcpWire.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// The host's side of the MRTR connect lineage: its answers to the URL elicitation.
describe('the retry of a connection-needing tool', () => {
  const { stack, tokens } = useBrokerStack({ retryWaitMs: 200 }, { users: ['alice', 'bob', 'mallory'] });

  afterEach(() => {
    nock.cleanAll();
  });

  const statusOf = async (url: string) => {
    const handle = new URL(url).pathname.split('/').pop()!;
    const { digestOf } = await import('../../src/shared/tokens.js');
    return (
      await stack.db.pool.query<{ status: string }>(
        'SELECT status FROM elicitation_navigations WHERE handle_digest = $1',
        [digestOf(handle)],
      )
    ).rows[0]?.status;
  };
  const count = async (table: string) =>
    (await stack.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]!.n;

  it('answers -32021 naming {"elicitation":{"url":{}}} when a connection is needed and the request lacks URL mode, and starts nothing', async () => {
    const before = await count('elicitation_navigations');
    for (const capabilities of [{}, { elicitation: {} }, { elicitation: { form: {} } }]) {
      const response = await callTool(
        stack,
        tokens.bob,
        'reports_create',
        { title: 'No URL mode', body: '' },
        {},
        capabilities,
      );
      expect(response.status).toBe(400);
      expect(response.json.error).toEqual({
        code: -32021,
        message: expect.any(String),
        data: { requiredCapabilities: { elicitation: { url: {} } } },
      });
    }
    expect(await count('elicitation_navigations')).toBe(before);
  });

  it('treats decline as terminal: a complete non-error result, nothing created, and the link no longer works', async () => {
    const args = { title: 'Declined', body: '' };
    const elicited = await elicitConnection(stack, tokens.bob, 'reports_create', args);
    const declined = await retryConnection(stack, tokens.bob, 'reports_create', args, elicited.requestState, 'decline');
    expect(declined.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'declined' } });
    expect(declined.json.result?.['isError']).toBeUndefined();
    expect(await statusOf(elicited.url)).toBe('DECLINED');
    const page = await (await openConnectLink(stack, elicited.url, 'bob')).review;
    expect(page.status).toBe(410);
    expect(page.text).toContain('declined');
    const again = await retryConnection(stack, tokens.bob, 'reports_create', args, elicited.requestState, 'accept');
    expect(again.json.result).toMatchObject({ structuredContent: { status: 'declined' } });
    expect(await count('operation_receipts')).toBe(0);
  });

  it('treats cancel as resumable: nothing terminal, and the same state completes later', async () => {
    const args = { title: 'Cancelled, then done', body: '' };
    const elicited = await elicitConnection(stack, tokens.mallory, 'reports_create', args);
    const cancelled = await retryConnection(
      stack,
      tokens.mallory,
      'reports_create',
      args,
      elicited.requestState,
      'cancel',
    );
    expect(cancelled.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'cancelled' } });
    expect(await statusOf(elicited.url)).toBe('USER_REVIEW');
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'mallory'), 'mallory');
    const done = await retryConnection(stack, tokens.mallory, 'reports_create', args, elicited.requestState, 'accept');
    expect(done.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { status: 'created', report: { title: 'Cancelled, then done' } },
    });
  });

  it('answers a duplicate retry from the recorded outcome without calling the Report Service again', async () => {
    const args = { title: 'Exactly once', body: 'b' };
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_create', args);
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'alice'), 'alice');
    const first = await retryConnection(stack, tokens.alice, 'reports_create', args, elicited.requestState, 'accept');
    const id = (first.json.result?.['structuredContent'] as { report: { id: string } }).report.id;
    // From now on any POST to the Report Service API would fail loudly; a second call would show.
    const api = nock(stack.dev.reports.issuer, { allowUnmocked: true })
      .post('/api/reports')
      .reply(500, { error: 'must not be called' });
    const second = await retryConnection(
      stack,
      tokens.alice,
      'reports_create',
      args,
      elicited.requestState,
      'accept',
      stack.secondUrl,
    );
    expect((second.json.result?.['structuredContent'] as { report: { id: string } }).report.id).toBe(id);
    expect(api.isDone()).toBe(false);
    const receipts = await stack.db.pool.query(
      "SELECT r.outcome_status FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id WHERE n.subject_sub = 'alice'",
    );
    expect(receipts.rows).toEqual([{ outcome_status: 'succeeded' }]);
  });

  it('re-drives an accepted operation whose outcome is unknown with the same idempotency key, creating nothing twice', async () => {
    const args = { title: 'Lost answer', body: 'c' };
    // alice connected in the previous test: forget it, so this call goes through a flow.
    await stack.db.pool.query("DELETE FROM secrets WHERE subject_sub = 'alice'");
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_create', args);
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'alice'), 'alice');
    // The business call's answer is lost on the way back (the connection drops)...
    const lost = nock(stack.dev.reports.issuer, { allowUnmocked: true })
      .post('/api/reports')
      .replyWithError({ code: 'ECONNRESET', message: 'socket hang up' });
    const failed = await retryConnection(stack, tokens.alice, 'reports_create', args, elicited.requestState, 'accept');
    expect(lost.isDone()).toBe(true);
    expect(failed.json.result).toMatchObject({ isError: true });
    const pending = await stack.db.pool.query<{ id: string }>(
      "SELECT id FROM operation_receipts WHERE outcome_status = 'pending'",
    );
    expect(pending.rowCount).toBe(1);
    // ...after the Report Service had created the report under the receipt's idempotency key.
    const upstream = await stack.fetch(`${stack.dev.reports.apiUrl}/reports`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${await mintAccessToken(stack, { sub: 'rs-user-alice' })}`,
        'content-type': 'application/json',
        'idempotency-key': pending.rows[0]!.id,
      },
      body: JSON.stringify(args),
    });
    expect(upstream.status).toBe(201);
    const redriven = await retryConnection(
      stack,
      tokens.alice,
      'reports_create',
      args,
      elicited.requestState,
      'accept',
    );
    const createdId = ((await upstream.json()) as { report: { id: string } }).report.id;
    expect(redriven.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { status: 'created', report: { id: createdId, title: 'Lost answer' } },
    });
    const listed = await callTool(stack, tokens.alice, 'reports_list', {}, {}, {});
    expect(
      (listed.json.result?.['structuredContent'] as { reports: { title: string }[] }).reports.filter(
        (r) => r.title === 'Lost answer',
      ),
    ).toHaveLength(1);
  });
});
