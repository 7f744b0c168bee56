import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { recordUnansweredInput, takePerformLease } from '../../src/broker/receiptRepo.js';
import { createFetch } from '../../src/shared/httpClient.js';
import { consentAndAuthorize, elicitConnection, openConnectLink } from '../support/connectFlow.js';
import { callTool } from '../support/mcpWire.js';
import { startUpstreamMcp, type UpstreamMcp } from '../support/upstreamMcp.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// An accepted upstream operation whose upstream asked a question (input_required, relayed to the
// 2026-07-28 host) did nothing: if the host never answers before the question's requestState
// expires, the reconcile sweep records it as not answered (failed, nothing done), rather than
// holding it for an operator as an operation of unknown outcome. A perform that took the lease
// (the answer may have been sent) is never recorded so.

let notes: UpstreamMcp;
const BOTH = { elicitation: { url: {}, form: {} } };

describe('a relayed upstream question nobody answers', () => {
  const { stack, tokens } = useBrokerStack(
    {
      extraProviders: async ({ tls }) => {
        const fetch = createFetch({ extraCaPems: [tls.caPem] });
        notes = await startUpstreamMcp({ tls, fetch, registration: 'cimd', metadata: 'challenge', eliciting: true });
        return [
          { id: 'upnotes', kind: 'mcp', url: notes.url, prefix: 'up', registration: 'auto', displayName: 'Up Notes' },
        ];
      },
    },
    { users: ['alice', 'bob'] },
  );
  afterAll(async () => {
    await notes?.close();
  });

  const callsOf = (tool: string) => notes.calls.filter((c) => c.tool === tool).length;
  const receiptOf = async (sub: string) =>
    (
      await stack.db.pool.query<{
        id: string;
        outcome_status: string;
        outcome: { error?: string; message?: string } | null;
        awaiting: Date | null;
      }>(
        `SELECT r.id, r.outcome_status, r.outcome, r.awaiting_input_until AS awaiting
           FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id
          WHERE n.tool = 'up_ask_color' AND n.subject_sub = $1`,
        [sub],
      )
    ).rows;
  const eventsOf = async (receiptId: string) =>
    (
      await stack.db.pool.query<{ event: string }>(
        `SELECT e.event FROM navigation_events e JOIN operation_receipts r ON r.navigation_id = e.navigation_id
          WHERE r.id = $1 ORDER BY e.flow_seq`,
        [receiptId],
      )
    ).rows.map((e) => e.event);
  /** Connects `login` through up_ask_color's flow; its connect retry is asked the upstream's question. */
  const askedAfterConnecting = async (login: 'alice' | 'bob') => {
    const elicited = await elicitConnection(stack, tokens[login], 'up_ask_color', {});
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, login), login);
    const extra = { requestState: elicited.requestState, inputResponses: { connect: { action: 'accept' } } };
    const retried = await callTool(stack, tokens[login], 'up_ask_color', {}, extra, BOTH);
    expect((retried.json.result as { resultType: string }).resultType).toBe('input_required');
    const [receipt, ...others] = await receiptOf(login);
    expect(others).toEqual([]);
    expect(receipt).toMatchObject({ outcome_status: 'pending', awaiting: expect.any(Date) });
    return { extra, receipt: receipt! };
  };
  const expire = (id: string) =>
    stack.db.pool.query(
      `UPDATE operation_receipts SET awaiting_input_until = now() - interval '1 second',
              redrive_after = now() - interval '1 second' WHERE id = $1`,
      [id],
    );

  it('is recorded as not answered once its time is up: nothing done, nothing sent again, no operator asked', async () => {
    const before = callsOf('ask_color');
    const { extra, receipt } = await askedAfterConnecting('alice');
    // Within the question's time the sweep leaves it to the host's answer.
    await stack.reconcile(0, 10);
    expect(await receiptOf('alice')).toEqual([receipt]);

    await expire(receipt.id);
    await stack.reconcile(0, 10);
    expect(await receiptOf('alice')).toEqual([
      {
        id: receipt.id,
        outcome_status: 'failed',
        outcome: expect.objectContaining({ error: 'input_not_answered' }),
        awaiting: null,
      },
    ]);
    const events = await eventsOf(receipt.id);
    expect(events).toContain('input_unanswered');
    expect(events).not.toContain('redrive_withheld');
    const { rows: asked } = await stack.db.pool.query(
      `SELECT 1 FROM webhook_events WHERE type = 'operation.needs_operator' AND data->>'receiptId' = $1`,
      [receipt.id],
    );
    expect(asked).toEqual([]);
    expect(callsOf('ask_color') - before).toBe(1);

    // The host's connect retry reads the recorded outcome; the upstream is not asked again.
    const again = await callTool(stack, tokens.alice, 'up_ask_color', {}, extra, BOTH);
    const text = (again.json.result as { content: { text: string }[] }).content[0]!.text;
    expect(text).toContain('was not answered');
    expect(callsOf('ask_color') - before).toBe(1);
  });

  it('is not recorded so once a perform took its lease (the answer may have been sent), even if that perform died', async () => {
    const { receipt } = await askedAfterConnecting('bob');
    // The host's answer is being performed: its lease clears the mark.
    expect(
      await takePerformLease(stack.db.pool, receipt.id, randomUUID(), new Date(), new Date(Date.now() + 60_000)),
    ).toBe(true);
    expect(await receiptOf('bob')).toMatchObject([{ outcome_status: 'pending', awaiting: null }]);
    // That perform dies with its lease; the question's time is long past.
    await stack.db.pool.query(
      `UPDATE operation_receipts SET perform_lease_until = now() - interval '1 second',
              redrive_after = now() - interval '1 second' WHERE id = $1`,
      [receipt.id],
    );
    expect(
      await recordUnansweredInput(stack.db.pool, receipt.id, { error: 'input_not_answered' }, 'x', new Date()),
    ).toBe(false);
    await stack.reconcile(0, 10);
    // An unknown outcome at an upstream (no idempotency key): held for an operator, never closed as not answered.
    expect(await receiptOf('bob')).toMatchObject([{ outcome_status: 'pending', outcome: null }]);
    const events = await eventsOf(receipt.id);
    expect(events).toContain('redrive_withheld');
    expect(events).not.toContain('input_unanswered');
  });
});
