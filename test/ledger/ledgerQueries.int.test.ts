import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findFlowDetail, findFlows, findReconcileFindings, findStuckFlows } from '../../src/ledger/ledgerQueriesRepo.js';
import { runTs } from '../support/brokerProcess.js';
import { startBrokerStack, type BrokerStack } from '../support/brokerStack.js';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { tokenFor } from '../support/mcpWire.js';

describe('ledger queries on real flows', () => {
  let stack: BrokerStack;
  const ids: Record<string, string> = {};

  const idOf = async (title: string) =>
    (await stack.db.pool.query<{ id: string }>('SELECT id FROM elicitation_navigations WHERE purpose LIKE $1', [`%${title}%`])).rows[0]!.id;

  beforeAll(async () => {
    stack = await startBrokerStack({ retryWaitMs: 100 });
    const [alice, bob, mallory] = await Promise.all([tokenFor(stack, 'alice'), tokenFor(stack, 'bob'), tokenFor(stack, 'mallory')]);
    // alice: accepted. bob: verified, never retried. mallory: never opened.
    const a = { title: 'Accepted flow', body: '' };
    const ea = await elicitConnection(stack, alice, 'reports_create', a);
    await consentAndAuthorize(stack, await openConnectLink(stack, ea.url, 'alice'), 'alice');
    await retryConnection(stack, alice, 'reports_create', a, ea.requestState, 'accept');
    const eb = await elicitConnection(stack, bob, 'reports_create', { title: 'Verified, never accepted', body: '' });
    await consentAndAuthorize(stack, await openConnectLink(stack, eb.url, 'bob'), 'bob');
    await elicitConnection(stack, mallory, 'reports_create', { title: 'Never opened', body: '' });
    ids['accepted'] = await idOf('Accepted flow');
    ids['verified'] = await idOf('Verified, never accepted');
    ids['open'] = await idOf('Never opened');
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('lists flows with filters', async () => {
    const now = new Date();
    expect((await findFlows(stack.db.pool, { limit: 10 }, now)).map((f) => f.id).sort()).toEqual(Object.values(ids).sort());
    expect((await findFlows(stack.db.pool, { limit: 10, state: 'MRTR_RETRY_ACCEPTED' }, now)).map((f) => f.id)).toEqual([ids['accepted']]);
    expect((await findFlows(stack.db.pool, { limit: 10, subject: 'bob' }, now)).map((f) => f.status)).toEqual(['REQUIREMENT_VERIFIED']);
    expect(await findFlows(stack.db.pool, { limit: 10, lineage: 'nested' }, now)).toEqual([]);
    expect(await findFlows(stack.db.pool, { limit: 10, olderThanSeconds: 3600 }, now)).toEqual([]);
    expect(await findFlows(stack.db.pool, { limit: 10, provider: 'reports', tool: 'reports_create' }, now)).toHaveLength(3);
  });

  it('shows one flow with every event, its consent and its receipt', async () => {
    const detail = (await findFlowDetail(stack.db.pool, ids['accepted']!))!;
    expect(detail.events.map((e) => e.to)).toEqual(['CREATED', 'USER_REVIEW', 'NAVIGATION_ACCEPTED', 'OUT_OF_BAND_PENDING', 'COMPLETION_NOTIFIED', 'REQUIREMENT_VERIFIED', 'MRTR_RETRY_ACCEPTED']);
    expect(detail.consent).toMatchObject({ browserSub: 'alice' });
    expect(detail.receipt).toMatchObject({ lineage: 'mrtr', outcomeStatus: 'succeeded' });
    expect(JSON.stringify(detail)).not.toMatch(/eyJ[\w-]+\.eyJ/);
  });

  it('finds open flows past their expiry as stuck', async () => {
    expect(await findStuckFlows(stack.db.pool, new Date(), 10)).toEqual([]);
    const later = new Date(Date.now() + 3600_000);
    expect((await findStuckFlows(stack.db.pool, later, 10)).map((f) => f.id)).toEqual([ids['open']]);
  });

  it('reconciles: a verified flow never accepted, and a receipt without an outcome', async () => {
    expect(await findReconcileFindings(stack.db.pool, new Date(), 300)).toEqual([]);
    await stack.db.pool.query("UPDATE operation_receipts SET outcome_status = 'pending', outcome = NULL");
    const findings = await findReconcileFindings(stack.db.pool, new Date(Date.now() + 600_000), 300);
    expect(findings.map((f) => f.kind).sort()).toEqual(['accepted_without_outcome', 'verified_never_accepted']);
    expect(findings.find((f) => f.kind === 'verified_never_accepted')?.id).toBe(ids['verified']);
  });

  it('prints the release-gate figures and exits 1 when a gate is missed', async () => {
    const url = new URL(stack.db.url.reveal());
    url.searchParams.set('options', `-c search_path=${stack.db.schema}`);
    const env = { DATABASE_URL: url.href };
    const healthy = runTs('src/cli/broker.ts', ['ledger', 'gates', '--json'], env);
    expect((await healthy.exited).code).toBe(0);
    const gates = JSON.parse(healthy.output().trim().split('\n').at(-1)!) as { gate: string; figure: string; pass: boolean }[];
    expect(gates.map((g) => g.gate)).toEqual([
      'navigations with a consent receipt',
      'completion → verified p50 / p99',
      'expired flows recoverable',
      'cross-user bindings',
      'completions that advanced a flow out of order',
    ]);
    expect(gates.every((g) => g.pass)).toBe(true);
    expect(gates[0]!.figure).toBe('100.0% (2/2)');

    // A consent receipt vanishes (a fault the ledger must surface): the consent gate is missed.
    await stack.db.pool.query('DELETE FROM consent_receipts WHERE navigation_id = $1', [ids['verified']]);
    const missed = runTs('src/cli/broker.ts', ['ledger', 'gates'], env);
    expect((await missed.exited).code).toBe(1);
    expect(missed.output()).toMatch(/navigations with a consent receipt\s+50\.0% \(1\/2\)\s+100%\s+MISS/);
  });

  it('answers the same on the command line, as a table or as JSON', async () => {
    const url = new URL(stack.db.url.reveal());
    url.searchParams.set('options', `-c search_path=${stack.db.schema}`);
    const env = { DATABASE_URL: url.href };
    const table = runTs('src/cli/broker.ts', ['ledger', 'flows', '--subject', 'alice'], env);
    expect((await table.exited).code).toBe(0);
    expect(table.output()).toMatch(/MRTR_RETRY_ACCEPTED\s+mrtr\s+alice/);
    const json = runTs('src/cli/broker.ts', ['ledger', 'flow', ids['verified']!, '--json'], env);
    expect((await json.exited).code).toBe(0);
    expect(JSON.parse(json.output().trim().split('\n').at(-1)!)).toMatchObject({ flow: { status: 'REQUIREMENT_VERIFIED', subject: 'bob' } });
    const bad = runTs('src/cli/broker.ts', ['ledger', 'flows', '--limit', 'lots'], env);
    expect((await bad.exited).code).toBe(2);
    expect(bad.output()).toContain('--limit must be a whole number');
  });
});
