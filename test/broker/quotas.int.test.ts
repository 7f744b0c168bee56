import { describe, expect, it } from 'vitest';
import { digestOf } from '../../src/shared/tokens.js';
import { elicitConnection, openConnectLink, retryConnection, URL_CAPS } from '../support/connectFlow.js';
import { closeLegacy, connectLegacy, expectUrlElicitation } from '../support/legacySdkClient.js';
import { callTool } from '../support/mcpWire.js';
import { useBrokerStack } from '../support/useBrokerStack.js';
import { DEFAULT_QUOTAS } from '../../src/config/limits.js';

// Per-principal quotas (QUOTA_*): new flows per hour, open flows per provider,
// concurrent waits, refusal rows per flow. A refusal is a clear tool error with
// a retry hint and changes nothing; an identical call reuses its open flow.
type Stack = ReturnType<typeof useBrokerStack>['stack'];
/** How many flows the subject has, in any state. */
const flowsOfIn = async (stack: Stack, sub: string) =>
  (
    await stack.db.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM elicitation_navigations WHERE subject_sub = $1',
      [sub],
    )
  ).rows[0]!.n;
const refusal = (response: Awaited<ReturnType<typeof callTool>>) =>
  response.json.result as { isError?: boolean; structuredContent?: { error: string; message: string } };

describe('per-principal quotas', () => {
  const { stack, tokens } = useBrokerStack(
    {
      retryWaitMs: 1_500,
      legacyUrlElicitation: 'error',
      quotas: { navigationsPerHour: 4, openPerProvider: 2, waitsPerPrincipal: 1, refusalsPerFlow: 3 },
    },
    { users: ['alice', 'bob', 'mallory', 'ops'] },
  );

  const flowsOf = (sub: string) => flowsOfIn(stack, sub);

  it('gives an identical call its open flow and link again instead of a second flow (MRTR and -32042)', async () => {
    const args = { title: 'Asked twice', body: '' };
    const first = await elicitConnection(stack, tokens.mallory, 'reports_create', args);
    const again = await elicitConnection(stack, tokens.mallory, 'reports_create', args);
    expect(again.url).toBe(first.url);
    expect(await flowsOf('mallory')).toBe(1);
    // The new state refers to the same flow: consenting with either continues it.
    const handle = new URL(first.url).pathname.split('/').pop()!;
    const [flow] = (
      await stack.db.pool.query('SELECT id FROM elicitation_navigations WHERE handle_digest = $1', [digestOf(handle)])
    ).rows;
    expect(flow).toBeDefined();

    const legacy = await connectLegacy(stack, tokens.mallory, {});
    try {
      const a = await expectUrlElicitation(legacy, 'reports_list', {});
      const b = await expectUrlElicitation(legacy, 'reports_list', {});
      expect(b.elicitations[0]!.elicitationId).toBe(a.elicitations[0]!.elicitationId);
      expect(b.elicitations[0]!.url).toBe(a.elicitations[0]!.url);
      expect(await flowsOf('mallory')).toBe(2);
    } finally {
      await closeLegacy(legacy);
    }
  });

  it('refuses a third open flow for one provider with a retry hint, and creates nothing', async () => {
    await elicitConnection(stack, tokens.bob, 'reports_create', { title: 'Open one', body: '' });
    await elicitConnection(stack, tokens.bob, 'reports_create', { title: 'Open two', body: '' });
    const third = await callTool(stack, tokens.bob, 'reports_create', { title: 'Open three', body: '' }, {}, URL_CAPS);
    expect(refusal(third)).toMatchObject({
      isError: true,
      structuredContent: {
        error: 'rate_limited',
        message: expect.stringMatching(/2 unfinished links .* finish or decline one .* retry after/),
      },
    });
    expect(await flowsOf('bob')).toBe(2);
  });

  it('refuses new flows past the hourly quota, naming when to retry', async () => {
    // Each flow is ended by the user (declined), so only the hourly quota is in play.
    for (const title of ['Hour one', 'Hour two', 'Hour three', 'Hour four']) {
      const elicited = await elicitConnection(stack, tokens.alice, 'reports_create', { title, body: '' });
      await retryConnection(
        stack,
        tokens.alice,
        'reports_create',
        { title, body: '' },
        elicited.requestState,
        'decline',
      );
    }
    expect(await flowsOf('alice')).toBe(4);
    const fifth = await callTool(stack, tokens.alice, 'reports_create', { title: 'Hour five', body: '' }, {}, URL_CAPS);
    expect(refusal(fifth)).toMatchObject({
      isError: true,
      structuredContent: {
        error: 'rate_limited',
        message: expect.stringMatching(/4 connection flows in the last hour.*Retry in \d+ min/),
      },
    });
    expect(await flowsOf('alice')).toBe(4);
  });

  it('lets one call of a principal wait at a time and refuses the second with a retry hint', async () => {
    const args = { title: 'Waiting once', body: '' };
    const elicited = await elicitConnection(stack, tokens.ops, 'reports_create', args);
    // Two retries at once: one waits for the user (and gets a state-only answer), the other is refused at once.
    const answers = await Promise.all(
      [1, 2].map(() => retryConnection(stack, tokens.ops, 'reports_create', args, elicited.requestState, 'accept')),
    );
    const kinds = answers
      .map((a) =>
        refusal(a).structuredContent?.error === 'rate_limited'
          ? 'refused'
          : (a.json.result as { resultType: string }).resultType,
      )
      .sort();
    expect(kinds).toEqual(['input_required', 'refused']);
    const refused = answers.find((a) => refusal(a).structuredContent?.error === 'rate_limited')!;
    expect(refusal(refused).structuredContent?.message).toContain('calls waiting');
  });

  it('records at most QUOTA_REFUSALS_PER_FLOW refusals for one flow, and still refuses every time', async () => {
    const elicited = await elicitConnection(stack, tokens.ops, 'reports_list', {});
    const run = await openConnectLink(stack, elicited.url, 'bob');
    expect(run.review.status).toBe(403);
    for (let i = 0; i < 5; i++) expect((await run.browser.get(elicited.url)).status).toBe(403);
    const handle = new URL(elicited.url).pathname.split('/').pop()!;
    const rows = await stack.db.pool.query(
      "SELECT count(*)::int AS n FROM navigation_events e JOIN elicitation_navigations n ON n.id = e.navigation_id WHERE n.handle_digest = $1 AND e.event = 'subject_mismatch'",
      [digestOf(handle)],
    );
    expect(rows.rows[0].n).toBe(3);
  });
});

describe('per-principal quotas, asked at once', () => {
  const { stack, tokens } = useBrokerStack({ quotas: { ...DEFAULT_QUOTAS, openPerProvider: 2 } }, { users: ['alice'] });
  const flowsOf = (sub: string) => flowsOfIn(stack, sub);

  it('admits as many of concurrent new flows as the quota allows, and refuses the rest', async () => {
    // The admission is read in the statement that inserts each flow, under the principal's lock.
    const answers = await Promise.all(
      ['One', 'Two', 'Three', 'Four', 'Five', 'Six'].map((title) =>
        callTool(stack, tokens.alice, 'reports_create', { title: `At once ${title}`, body: '' }, {}, URL_CAPS),
      ),
    );
    const kinds = answers.map((a) =>
      refusal(a).isError ? refusal(a).structuredContent?.error : (a.json.result as { resultType?: string }).resultType,
    );
    expect(kinds.filter((k) => k === 'input_required')).toHaveLength(2);
    expect(kinds.filter((k) => k === 'rate_limited')).toHaveLength(4);
    expect(await flowsOf('alice')).toBe(2);
  });
});
