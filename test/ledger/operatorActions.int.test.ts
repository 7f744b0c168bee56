import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import nock from 'nock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyChain } from '../../src/ledger/chainVerifyRepo.js';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { mintAccessToken } from '../support/forgedTokens.js';
import { callTool } from '../support/mcpWire.js';
import { operatorCli } from '../support/operatorCli.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

type Cli = Awaited<ReturnType<typeof operatorCli>>;

describe('operators on the command line (broker ledger …)', () => {
  const { stack, tokens } = useBrokerStack({ retryWaitMs: 200 }, { users: ['alice'] });
  let ops: Cli;

  const one = async <T>(sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows[0] as T;
  const eventsOf = async (id: string) =>
    (
      await stack.db.pool.query<{ event: string; actor: string; to_status: string }>(
        'SELECT event, actor, to_status FROM navigation_events WHERE navigation_id = $1 ORDER BY flow_seq',
        [id],
      )
    ).rows;
  const reportsTitled = async (title: string) => {
    const listed = await callTool(stack, tokens.alice, 'reports_list', {}, {}, {});
    return (listed.json.result?.['structuredContent'] as { reports: { id: string; title: string }[] }).reports.filter(
      (r) => r.title === title,
    );
  };
  const connectAlice = async (args: { title: string; body: string }) => {
    await stack.db.pool.query("DELETE FROM secrets WHERE subject_sub = 'alice'");
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_create', args);
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'alice'), 'alice');
    return elicited;
  };

  beforeAll(async () => {
    ops = await operatorCli(stack);
  });
  afterAll(async () => {
    nock.cleanAll();
  });

  // Fourteen CLI processes, seven at a time: on two loaded cores their start-up alone nears the default bound.
  it(
    'refuses a non-operator on every command, changes nothing, and records each refusal',
    { timeout: 90_000 },
    async () => {
      const elicited = await elicitConnection(stack, tokens.alice, 'reports_create', {
        title: 'Refusal target',
        body: '',
      });
      const flow = await one<{ id: string; status: string }>(
        "SELECT id, status FROM elicitation_navigations WHERE purpose LIKE '%Refusal target%'",
      );
      expect(elicited.url).toContain('/connect/');
      const asAlice = await operatorCli(stack, 'alice');
      const commands = [
        ['verify'],
        ['flows'],
        ['flow', flow.id],
        ['stuck'],
        ['reconcile'],
        ['gates'],
        ['approvals'],
        ['pause-connections', '--reason', 'not mine to pull'],
        ['resume-connections', '--reason', 'not mine either'],
        ['close', flow.id, '--reason', 'trying anyway'],
        ['reissue', flow.id, '--reason', 'trying anyway'],
        ['redrive', flow.id, '--reason', 'trying anyway'],
        ['approve', flow.id, '--reason', 'trying anyway'],
        ['reject', flow.id, '--reason', 'trying anyway'],
      ];
      for (const batch of [commands.slice(0, 7), commands.slice(7)]) {
        const runs = await Promise.all(batch.map((args) => asAlice(...args)));
        for (const run of runs) {
          expect(run.code).toBe(3);
          expect(run.output).toContain('alice is not an operator');
        }
      }
      const refusals = await stack.db.pool.query<{ actor: string; reason: string }>(
        "SELECT actor, reason FROM operator_actions WHERE action = 'access_refused'",
      );
      expect(refusals.rows).toHaveLength(commands.length);
      expect(new Set(refusals.rows.map((r) => r.actor))).toEqual(new Set(['cli:alice']));
      expect(refusals.rows.map((r) => r.reason).sort()).toEqual(
        commands.map((c) => `not an operator: broker ledger ${c[0]}`).sort(),
      );
      expect(await one('SELECT status FROM elicitation_navigations WHERE id = $1', [flow.id])).toEqual({
        status: flow.status,
      });
      // The kill switch's row as the migration seeded it: never engaged, changed by nobody.
      expect((await stack.db.pool.query('SELECT engaged, actor FROM broker_switches')).rows).toEqual([
        { engaged: false, actor: 'system' },
      ]);

      // No token at all, or a token that is not this broker's: a clear message, exit 2, nothing recorded.
      const url = new URL(stack.db.url.reveal());
      url.searchParams.set('options', `-c search_path=${stack.db.schema}`);
      const { runTs } = await import('../support/brokerProcess.js');
      const bare = runTs('src/cli/broker.ts', ['ledger', 'flows'], {
        DATABASE_URL: url.href,
        DATA_DIR: stack.dataDir,
        OIDC_ISSUER: stack.dev.idp.issuer,
        PUBLIC_URL: stack.brokerUrl,
      });
      expect((await bare.exited).code).toBe(2);
      expect(bare.output()).toContain('BROKER_OPERATOR_TOKEN');
      const forged = runTs('src/cli/broker.ts', ['ledger', 'flows'], {
        DATABASE_URL: url.href,
        DATA_DIR: stack.dataDir,
        OIDC_ISSUER: stack.dev.idp.issuer,
        PUBLIC_URL: stack.brokerUrl,
        BROKER_OPERATOR_TOKEN: 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJvcHMiLCJyb2xlcyI6WyJvcGVyYXRvciJdfQ.',
      });
      expect((await forged.exited).code).toBe(2);
      expect(forged.output()).toContain('was not accepted');
      expect(await one("SELECT count(*)::int AS n FROM operator_actions WHERE action <> 'access_refused'")).toEqual({
        n: 0,
      });
    },
  );

  it('marks a flow nobody will finish as terminal, with the operator and the reason in the ledger', async () => {
    await elicitConnection(stack, tokens.alice, 'reports_create', { title: 'Abandoned', body: '' });
    const flow = await one<{ id: string }>("SELECT id FROM elicitation_navigations WHERE purpose LIKE '%Abandoned%'");
    expect((await ops('close', flow.id)).code).toBe(2);
    const closed = await ops('close', flow.id, '--reason', 'user left the company');
    expect(closed.code).toBe(0);
    expect(closed.output).toContain('is now EXPIRED');
    expect((await eventsOf(flow.id)).at(-1)).toEqual({
      event: 'operator_close',
      actor: 'cli:ops',
      to_status: 'EXPIRED',
    });
    expect(await one("SELECT action, reason, actor FROM operator_actions WHERE action = 'mark_terminal'")).toEqual({
      action: 'mark_terminal',
      reason: 'user left the company',
      actor: 'cli:ops',
    });
    const again = await ops('close', flow.id, '--reason', 'once more');
    expect(again.code).toBe(2);
    expect(again.output).toContain('A EXPIRED flow cannot be marked terminal');
  });

  it('re-issues the link of a stuck flow in its lineage; the host retry of the original call follows it and is accepted once', async () => {
    const args = { title: 'Re-issued', body: 'r' };
    await stack.db.pool.query("DELETE FROM secrets WHERE subject_sub = 'alice'");
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_create', args);
    const old = await one<{ id: string }>("SELECT id FROM elicitation_navigations WHERE purpose LIKE '%Re-issued%'");
    // Nobody opened the link and the sweep has not run yet: the flow is stuck past its expiry.
    await stack.db.pool.query(
      "UPDATE elicitation_navigations SET expires_at = created_at + interval '1 millisecond' WHERE id = $1",
      [old.id],
    );
    const reissued = await ops('reissue', old.id, '--reason', 'user lost the link', '--json');
    expect(reissued.code).toBe(0);
    const { id: freshId, connectUrl } = JSON.parse(reissued.output.trim().split('\n').at(-1)!) as {
      id: string;
      connectUrl: string;
    };
    expect(connectUrl).toMatch(new RegExp(`^${stack.brokerUrl}/connect/[A-Za-z0-9_-]{43}$`));
    expect(connectUrl).not.toBe(elicited.url);
    expect(
      await one(
        'SELECT status, lineage, reissued_from, tool, request_digest = (SELECT request_digest FROM elicitation_navigations WHERE id = $2) AS same_operation FROM elicitation_navigations WHERE id = $1',
        [freshId, old.id],
      ),
    ).toEqual({
      status: 'USER_REVIEW',
      lineage: 'mrtr',
      reissued_from: old.id,
      tool: 'reports_create',
      same_operation: true,
    });
    // The CLI seals the new link's handle with the deployment's keys, as the server does: an identical
    // call from the host while the flow is open is given this same link again, not a new flow.
    expect(
      await one('SELECT handle_sealed IS NOT NULL AS sealed FROM elicitation_navigations WHERE id = $1', [freshId]),
    ).toEqual({ sealed: true });
    expect((await elicitConnection(stack, tokens.alice, 'reports_create', args)).url).toBe(connectUrl);
    expect((await eventsOf(old.id)).slice(-2)).toEqual([
      { event: 'operator_close', actor: 'cli:ops', to_status: 'EXPIRED' },
      { event: 'operator_reissued', actor: 'cli:ops', to_status: 'EXPIRED' },
    ]);
    // The old link is dead; the new one works for alice.
    expect((await openConnectLink(stack, elicited.url, 'alice')).review.status).toBe(410);
    await consentAndAuthorize(stack, await openConnectLink(stack, connectUrl, 'alice'), 'alice');
    const done = await retryConnection(stack, tokens.alice, 'reports_create', args, elicited.requestState, 'accept');
    expect(done.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { status: 'created', report: { title: 'Re-issued' } },
    });
    const twice = await retryConnection(stack, tokens.alice, 'reports_create', args, elicited.requestState, 'accept');
    expect(twice.json.result).toMatchObject({ structuredContent: { report: { title: 'Re-issued' } } });
    expect(await reportsTitled('Re-issued')).toHaveLength(1);
    expect(await one('SELECT status FROM elicitation_navigations WHERE id = $1', [freshId])).toEqual({
      status: 'MRTR_RETRY_ACCEPTED',
    });
    const refused = await ops('reissue', old.id, '--reason', 'again');
    expect(refused.code).toBe(2);
    expect(refused.output).toContain(`already re-issued as ${freshId}`);
  });

  it('re-drives an operation cut off between its receipt and the business call: exactly one report', async () => {
    const args = { title: 'Crashed before the call', body: 'x' };
    const elicited = await connectAlice(args);
    // The business call never reaches the Report Service (the process died, the connection was refused).
    const down = nock(stack.dev.reports.issuer, { allowUnmocked: true })
      .post('/api/reports')
      .replyWithError({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED' });
    const failed = await retryConnection(stack, tokens.alice, 'reports_create', args, elicited.requestState, 'accept');
    expect(down.isDone()).toBe(true);
    expect(failed.json.result).toMatchObject({ isError: true });
    const receipt = await one<{ id: string; navigation_id: string }>(
      "SELECT id, navigation_id FROM operation_receipts WHERE outcome_status = 'pending'",
    );
    expect(await reportsTitled(args.title)).toHaveLength(0);

    // Not yet due by age: the sweep leaves it; the operator asks for it; the next sweep performs it.
    expect(await stack.reconcile(3_600_000, 10)).toEqual({ redriven: 0, waiting: 0 });
    const asked = await ops('redrive', receipt.id, '--reason', 'report service was down at 10:02');
    expect(asked.code).toBe(0);
    expect(asked.output).toContain('next reconcile sweep');
    expect(await stack.reconcile(3_600_000, 10)).toEqual({ redriven: 1, waiting: 0 });
    expect(await stack.reconcile(0, 10)).toEqual({ redriven: 0, waiting: 0 });
    expect(await reportsTitled(args.title)).toHaveLength(1);
    expect(await one('SELECT outcome_status FROM operation_receipts WHERE id = $1', [receipt.id])).toEqual({
      outcome_status: 'succeeded',
    });
    expect((await eventsOf(receipt.navigation_id)).slice(-2).map((e) => [e.event, e.actor])).toEqual([
      ['operator_redrive', 'cli:ops'],
      ['outcome_redriven', 'system:reconcile'],
    ]);
    // The host's retry answers the recorded outcome; nothing is created again, and a second re-drive is refused.
    const retried = await retryConnection(stack, tokens.alice, 'reports_create', args, elicited.requestState, 'accept');
    expect(retried.json.result).toMatchObject({
      structuredContent: { status: 'created', report: { title: args.title } },
    });
    expect(await reportsTitled(args.title)).toHaveLength(1);
    const again = await ops('redrive', receipt.id, '--reason', 'once more');
    expect(again.code).toBe(2);
    expect(again.output).toContain('already has its outcome (succeeded)');
  });

  it('reconciles on its own an operation whose answer was lost after the Report Service did it: still one report', async () => {
    const args = { title: 'Answer lost', body: 'y' };
    const elicited = await connectAlice(args);
    nock(stack.dev.reports.issuer, { allowUnmocked: true })
      .post('/api/reports')
      .replyWithError({ code: 'ECONNRESET', message: 'socket hang up' });
    await retryConnection(stack, tokens.alice, 'reports_create', args, elicited.requestState, 'accept');
    const receipt = await one<{ id: string }>("SELECT id FROM operation_receipts WHERE outcome_status = 'pending'");
    // The Report Service had in fact created it under the receipt's idempotency key.
    const upstream = await stack.fetch(`${stack.dev.reports.apiUrl}/reports`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${await mintAccessToken(stack, { sub: 'rs-user-alice' })}`,
        'content-type': 'application/json',
        'idempotency-key': receipt.id,
      },
      body: JSON.stringify(args),
    });
    expect(upstream.status).toBe(201);
    expect(await stack.reconcile(0, 10)).toEqual({ redriven: 1, waiting: 0 });
    expect(
      await one("SELECT outcome_status, outcome->'replayed' AS replayed FROM operation_receipts WHERE id = $1", [
        receipt.id,
      ]),
    ).toEqual({ outcome_status: 'succeeded', replayed: true });
    expect(await reportsTitled(args.title)).toHaveLength(1);
  });

  it('never prints token material, and verify names an altered and a deleted row', async () => {
    const flows = await ops('flows', '--json');
    const secrets = await stack.db.pool.query<{ ciphertext: Buffer }>('SELECT ciphertext FROM secrets');
    expect(secrets.rowCount).toBeGreaterThan(0);
    expect(flows.output).not.toMatch(/eyJ[\w-]+\.eyJ/);
    const intact = await ops('verify');
    expect(intact.code).toBe(0);
    const { rows, flows: flowCount } = await verifyChain(stack.db.pool);
    expect(intact.output).toContain(`Ledger intact: ${rows} rows in ${flowCount} flows`);

    // An exported anchor, kept in a file outside the database, is what verify --anchor checks against.
    const exported = await ops('anchor', 'export');
    expect(exported.code).toBe(0);
    const file = JSON.parse(exported.output.trim().split('\n').at(-1)!) as { seq: number };
    expect(file).toMatchObject({ format: 'connect-broker ledger anchor v1', seq: expect.any(Number) });
    const anchorPath = join(stack.dataDir, 'anchor.json');
    await writeFile(anchorPath, JSON.stringify(file));
    const pinned = await ops('verify', '--anchor', anchorPath);
    expect(pinned.code).toBe(0);
    expect(pinned.output).toContain(`the exported anchor ${file.seq} matches`);
    await writeFile(join(stack.dataDir, 'not-an-anchor.json'), '{"seq": 1}');
    const malformed = await ops('verify', '--anchor', join(stack.dataDir, 'not-an-anchor.json'));
    expect(malformed.code).toBe(2);
    expect(malformed.output).toContain('not an exported anchor: format');

    const tamper = async (sql: string, params: unknown[] = []) => {
      await stack.db.pool.query('ALTER TABLE navigation_events DISABLE TRIGGER navigation_events_no_update');
      await stack.db.pool.query(sql, params);
      await stack.db.pool.query('ALTER TABLE navigation_events ENABLE TRIGGER navigation_events_no_update');
    };
    const { navigation_id: flow } = await one<{ navigation_id: string }>(
      'SELECT navigation_id FROM ledger_heads WHERE seq >= 3 ORDER BY navigation_id LIMIT 1',
    );
    await tamper("UPDATE navigation_events SET actor = 'cli:nobody' WHERE navigation_id = $1 AND flow_seq = 2", [flow]);
    const altered = await ops('verify', '--json');
    expect(altered.code).toBe(1);
    expect(JSON.parse(altered.output.trim().split('\n').at(-1)!)).toMatchObject({
      intact: false,
      firstBreak: { navigationId: flow, flowSeq: 2, reason: 'hash' },
    });
    await tamper('DELETE FROM navigation_events WHERE navigation_id = $1 AND flow_seq <= 2', [flow]);
    const deleted = await ops('verify');
    expect(deleted.code).toBe(1);
    expect(deleted.output).toMatch(
      new RegExp(
        `Ledger BROKEN at event 3 of flow ${flow} \\(event id \\d+\\): the event before it in its flow is missing`,
      ),
    );
  });
});
