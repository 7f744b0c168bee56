import { beforeAll, describe, expect, it } from 'vitest';
import {
  findFlowDetail,
  findFlows,
  findReconcileFindings,
  findStuckFlows,
} from '../../src/ledger/ledgerQueriesRepo.js';
import { operatorCli } from '../support/operatorCli.js';
import { navigationFixture } from '../support/navigationFixture.js';
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { advance } from '../../src/broker/advance.js';
import { insertNavigation } from '../../src/broker/navigationRepo.js';
import { insertReceiptOnce } from '../../src/broker/receiptRepo.js';
import { withTransaction } from '../../src/db/transaction.js';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

describe('ledger queries on real flows', () => {
  const { stack, tokens } = useBrokerStack({ retryWaitMs: 100 }, { users: ['alice', 'bob', 'mallory'] });
  const ids: Record<string, string> = {};

  const idOf = async (title: string) =>
    (
      await stack.db.pool.query<{ id: string }>('SELECT id FROM elicitation_navigations WHERE purpose LIKE $1', [
        `%${title}%`,
      ])
    ).rows[0]!.id;

  beforeAll(async () => {
    const { alice, bob, mallory } = tokens;
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

  it('lists flows with filters', async () => {
    const now = new Date();
    expect((await findFlows(stack.db.pool, { limit: 10 }, now)).map((f) => f.id).sort()).toEqual(
      Object.values(ids).sort(),
    );
    expect((await findFlows(stack.db.pool, { limit: 10, state: 'MRTR_RETRY_ACCEPTED' }, now)).map((f) => f.id)).toEqual(
      [ids['accepted']],
    );
    expect((await findFlows(stack.db.pool, { limit: 10, subject: 'bob' }, now)).map((f) => f.status)).toEqual([
      'REQUIREMENT_VERIFIED',
    ]);
    expect(await findFlows(stack.db.pool, { limit: 10, lineage: 'nested' }, now)).toEqual([]);
    expect(await findFlows(stack.db.pool, { limit: 10, olderThanSeconds: 3600 }, now)).toEqual([]);
    expect(
      await findFlows(stack.db.pool, { limit: 10, provider: 'reports', tool: 'reports_create' }, now),
    ).toHaveLength(3);
  });

  it('shows one flow with every event, its consent and its receipt', async () => {
    const detail = (await findFlowDetail(stack.db.pool, ids['accepted']!))!;
    expect(detail.events.map((e) => e.to)).toEqual([
      'CREATED',
      'USER_REVIEW',
      'NAVIGATION_ACCEPTED',
      'OUT_OF_BAND_PENDING',
      'COMPLETION_NOTIFIED',
      'REQUIREMENT_VERIFIED',
      'MRTR_RETRY_ACCEPTED',
    ]);
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
    const cli = await operatorCli(stack);
    const healthy = await cli('gates', '--json');
    expect(healthy.code).toBe(0);
    const gates = JSON.parse(healthy.output.trim().split('\n').at(-1)!) as {
      gate: string;
      figure: string;
      pass: boolean;
    }[];
    expect(gates.map((g) => g.gate)).toEqual([
      'navigations with a consent receipt',
      'completion → verified p50 / p99',
      'expired flows recoverable',
      'cross-user bindings',
      'completions that advanced a flow out of order',
      'operations accepted more than once across lineages',
    ]);
    expect(gates.every((g) => g.pass)).toBe(true);
    expect(gates[0]!.figure).toBe('100.0% (2/2)');

    // A consent receipt vanishes (a fault the ledger must surface): the consent gate is missed.
    await stack.db.pool.query('DELETE FROM consent_receipts WHERE navigation_id = $1', [ids['verified']]);
    const missed = await cli('gates');
    expect(missed.code).toBe(1);
    expect(missed.output).toMatch(/navigations with a consent receipt\s+50\.0% \(1\/2\)\s+100%\s+MISS/);
  });

  it('with --tokens-file, reads every table but the vault for the tokens and names where one is', async () => {
    const cli = await operatorCli(stack);
    const token = `canary-${randomUUID()}`;
    const file = join(stack.dataDir, 'tokens.txt');
    await writeFile(file, `${token}\n\n`);
    const clean = await cli('gates', '--tokens-file', file);
    expect(clean.output).toMatch(
      /third-party tokens outside the vault \(database\)\s+0 \(\d+ tables read\)\s+0\s+PASS/,
    );
    // A token kept where it must never be: in a ledger entry's evidence.
    await stack.db.pool.query(
      `INSERT INTO navigation_events (navigation_id, event, actor, from_status, to_status, evidence, created_at)
       SELECT id, 'present', 'test', status, status, jsonb_build_object('note', $1::text), now()
         FROM elicitation_navigations WHERE id = $2`,
      [`pasted ${token} here`, ids['verified']],
    );
    const found = await cli('gates', '--tokens-file', file);
    expect(found.code).toBe(1);
    expect(found.output).toMatch(
      /third-party tokens outside the vault \(database\)\s+1 \(navigation_events: 1\)\s+0\s+MISS/,
    );
    expect(found.output).not.toContain(token);
    expect((await cli('gates', '--tokens-file', join(stack.dataDir, 'missing.txt'))).code).toBe(2);
  });

  it('answers the same on the command line, as a table or as JSON', async () => {
    const cli = await operatorCli(stack);
    const table = await cli('flows', '--subject', 'alice');
    expect(table.code).toBe(0);
    expect(table.output).toMatch(/MRTR_RETRY_ACCEPTED\s+mrtr\s+alice/);
    const json = await cli('flow', ids['verified']!, '--json');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.output.trim().split('\n').at(-1)!)).toMatchObject({
      flow: { status: 'REQUIREMENT_VERIFIED', subject: 'bob' },
    });
    const bad = await cli('flows', '--limit', 'lots');
    expect(bad.code).toBe(2);
    expect(bad.output).toContain('--limit must be a whole number');
    const unknownState = await cli('flows', '--state', 'VERIFIED');
    expect(unknownState.code).toBe(2);
    expect(unknownState.output).toContain('--state must be one of: CREATED, USER_REVIEW');
  });

  it('refuses an --older-than too large for the database with exit 2 and the bound, and takes units', async () => {
    const cli = await operatorCli(stack);
    for (const age of ['999999d', '99999999999']) {
      const refused = await cli('flows', '--older-than', age);
      expect(refused.code, age).toBe(2);
      expect(refused.output, age).toContain(
        '--older-than must be a number of seconds, or of minutes, hours or days such as 90, 30m, 2h, 7d, up to 3650d',
      );
    }
    const recent = await cli('flows', '--older-than', '2h', '--json');
    expect(recent.code).toBe(0);
    expect(JSON.parse(recent.output.trim().split('\n').at(-1)!)).toEqual([]);
  });

  it('answers for flows of the 2025-11-25 lineages too, on the command line as well', async () => {
    // A nested flow accepted through its lineage's edges, and a -32042 flow left at the provider.
    const subject = { iss: stack.dev.idp.issuer, sub: 'bob' };
    const nested = navigationFixture('CREATED', {
      subject,
      lineage: 'nested',
      purpose: 'create the report "Nested one"',
    });
    const errorRetry = navigationFixture('CREATED', {
      subject,
      lineage: 'error_retry',
      purpose: 'create the report "Error retry one"',
      expiresAt: new Date(Date.now() + 1000),
    });
    const by = { actor: 'test:seed', now: new Date() };
    await withTransaction(stack.db.pool, async (tx) => {
      for (const n of [nested, errorRetry]) await insertNavigation(tx, n);
      const verified = await advance(
        tx,
        nested,
        ['present', 'browser_consent', 'browser_consent', 'callback_received', 'callback_verified'],
        by,
      );
      await insertReceiptOnce(tx, {
        id: randomUUID(),
        operationKey: `seed-${nested.id}`,
        navigationId: nested.id,
        lineage: 'nested',
        jsonrpcId: '7',
        retryGeneration: undefined,
        requirementReceipt: 'seed',
        createdAt: by.now,
      });
      await advance(tx, verified, ['nested_continue', 'nested_accept'], by);
      await advance(tx, errorRetry, ['present', 'browser_consent', 'browser_consent'], by);
    });
    const now = new Date();
    expect(
      (await findFlows(stack.db.pool, { limit: 10, lineage: 'nested' }, now)).map((f) => [f.id, f.status]),
    ).toEqual([[nested.id, 'ORIGINAL_RESPONSE_ACCEPTED']]);
    expect(
      (await findFlows(stack.db.pool, { limit: 10, lineage: 'error_retry' }, now)).map((f) => [f.id, f.status]),
    ).toEqual([[errorRetry.id, 'OUT_OF_BAND_PENDING']]);
    const detail = (await findFlowDetail(stack.db.pool, nested.id))!;
    expect(detail.events.map((e) => e.event)).toEqual([
      'present',
      'browser_consent',
      'browser_consent',
      'callback_received',
      'callback_verified',
      'nested_continue',
      'nested_accept',
    ]);
    expect(detail.receipt).toMatchObject({ lineage: 'nested', jsonrpcId: '7', outcomeStatus: 'pending' });
    expect((await findStuckFlows(stack.db.pool, new Date(Date.now() + 5000), 10)).map((f) => f.id)).toContain(
      errorRetry.id,
    );
    const findings = await findReconcileFindings(stack.db.pool, new Date(Date.now() + 600_000), 300);
    expect(findings.filter((f) => f.kind === 'accepted_without_outcome').map((f) => f.detail)).toContainEqual(
      expect.stringContaining(nested.id),
    );
    // (The gates test above took bob's consent receipt away: that flow is listed too.)
    expect(findings.filter((f) => f.kind === 'consent_missing').map((f) => f.id)).toEqual(
      expect.arrayContaining([errorRetry.id, nested.id]),
    );

    const cli = await operatorCli(stack);
    const listed = await cli('flows', '--lineage', 'error_retry', '--json');
    expect(JSON.parse(listed.output.trim().split('\n').at(-1)!)).toEqual([
      expect.objectContaining({ id: errorRetry.id, lineage: 'error_retry', status: 'OUT_OF_BAND_PENDING' }),
    ]);
    const closed = await cli('close', errorRetry.id, '--reason', 'user gave up on the legacy host');
    expect(closed.code).toBe(0);
    expect((await findFlowDetail(stack.db.pool, errorRetry.id))!.events.at(-1)).toMatchObject({
      event: 'operator_close',
      actor: 'cli:ops',
      to: 'EXPIRED',
    });
  });
});
