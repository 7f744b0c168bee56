import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool as callMcpTool } from '../../bench/flowMcp.js';
import { expectPage } from '../../bench/flowServices.js';
import { fetchDevToken } from '../../src/cli/devToken.js';
import { loadOrCreateDevSecrets } from '../../src/dev/devSecrets.js';
import { startLocalDevStack, type DevStack } from '../../src/dev/devStack.js';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { createFetch, type Fetch } from '../../src/shared/httpClient.js';
import { createLogger } from '../../src/shared/logger.js';
import { loadOrCreateLocalTls, type TlsMaterial } from '../../src/tls/localCa.js';
import { createRender } from '../../src/web/render.js';
import { freePorts } from '../support/brokerProcess.js';
import { startBrokerInstances, stopBrokerInstances, type BrokerInstance } from '../support/brokerInstances.js';
import { GITHUB_FORMS } from '../support/connectFlow.js';
import { devGithubIssues, devGithubToken } from '../support/devGithubReader.js';
import { HAPROXY_BINARY, SERVED_BY, startHaproxy, waitForServers, type Balancer } from '../support/haproxy.js';
import { closeLegacy, LEGACY, until } from '../support/legacySdkClient.js';
import { connectSdkClient } from '../support/sdkClient.js';
import { createTestBrowser } from '../support/testBrowser.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

// Three broker processes (src/main.ts, each its own child process and DATA_DIR) on one
// Postgres schema, behind HAProxy running deploy/haproxy.cfg: one public origin (PUBLIC_URL is
// the balancer's), one identity provider, one GitHub-like provider, the same SECRET_KEYS and
// TLS material. 2026-07-28 requests go round-robin, so a flow's tool call, connect link,
// callback and MRTR retry land wherever the balancer sends them (half the retries are sent
// before the callback and wait on one instance while the callback lands on another); a
// 2025-11-25 session stays on the instance that created it (stick table on Mcp-Session-Id)
// while its nested call waits for a connect flow whose pages land anywhere. One instance is
// killed with SIGKILL mid-run. Every flow must end with exactly one issue at the provider and
// one succeeded receipt in the database, except one whose business call the victim held when it
// died: creating an issue cannot be deduped, so it is never sent again and is recorded for an
// operator, with at most the one issue the victim sent. (With BROKER_FAULT_POINT=
// operation.before_outcome on the victim that case happens every run; it did once in CI, where a
// retry that started the flow over made a second issue.)

if (!HAPROXY_BINARY)
  process.stdout.write(
    'test/scale/balancer.int.test.ts: SKIPPED, no haproxy binary (apt-get install haproxy); CI installs it\n',
  );

const USERS = ['alice', 'bob', 'mallory'] as const;
const FLOWS_PER_USER = 5;
const LEGACY_USER = 'ops';
const KILL_AFTER_COMPLETED = 4;
const TOOL = 'github_create_issue';
const URL_ELICITATION = { elicitation: { url: {} } };

interface Run {
  /** Responses by the instance that answered (X-Served-By), all requests through the balancer. */
  hits: Map<string, number>;
  /** Hits counted from the moment of the kill on. */
  hitsAfterKill: Map<string, number>;
  killedAt: number | undefined;
  /** Requests resent because the balancer answered for a dead instance, or the connection dropped. */
  resent: number;
}

interface FlowRecord {
  title: string;
  login: string;
  attempts: number;
  elicitOn: string[];
  linkOn: string[];
  callbackOn: string[];
  retryOn: string[];
  early: boolean;
  done: boolean;
  /** Its operation was accepted and its performer died with the victim: recorded for an operator, not done again. */
  forOperator: boolean;
  failures: string[];
}

const count = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The balancer's client side: every answer counted by the instance that gave it; an answer the
 * balancer made itself (no X-Served-By: 502/503/504 for a dead or unreachable instance) or a
 * dropped connection is resent after a pause, as a host's or a browser's retry would be. The
 * broker's own answers, errors included, are returned as they are.
 */
function balancedFetch(base: Fetch, run: Run, onServed?: (url: string, server: string) => void): Fetch {
  return (async (input: Parameters<Fetch>[0], init?: Parameters<Fetch>[1]) => {
    const url = input instanceof Request ? input.url : String(input);
    for (let attempt = 1; ; attempt++) {
      let response: Response | undefined;
      // Sent after the kill: the dead instance must never answer it. (One sent before may have been
      // answered just before the kill and be read after it.)
      const sentAfterKill = run.killedAt !== undefined;
      try {
        response = await base(input, init);
      } catch (err) {
        if (attempt >= 8) throw err;
      }
      const server = response?.headers.get(SERVED_BY) ?? undefined;
      if (response && (server !== undefined || ![502, 503, 504].includes(response.status))) {
        if (server !== undefined) {
          count(run.hits, server);
          if (sentAfterKill) count(run.hitsAfterKill, server);
          onServed?.(url, server);
        }
        return response;
      }
      if (attempt >= 8) return response!;
      await response?.body?.cancel().catch(() => undefined);
      run.resent++;
      await sleep(250);
    }
  }) as Fetch;
}

describe.skipIf(!HAPROXY_BINARY)('three broker processes behind HAProxy (deploy/haproxy.cfg), one Postgres', () => {
  let dir: string;
  let db: TestDb;
  let tls: TlsMaterial;
  let dev: DevStack;
  let balancer: Balancer;
  const instances: BrokerInstance[] = [];
  const direct = () => createFetch({ extraCaPems: [tls.caPem], timeoutMs: 60_000 });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'broker-balancer-'));
    await chmod(dir, 0o711);
    tls = await loadOrCreateLocalTls(join(dir, 'tls'));
    const secrets = await loadOrCreateDevSecrets(dir);
    db = await createTestDb();
    const [balancerPort, ...ports] = await freePorts(4);
    const balancerUrl = `https://127.0.0.1:${balancerPort}`;
    // The identity provider and the GitHub-like provider, each one for all instances.
    dev = await startLocalDevStack({
      tls,
      fetch: direct(),
      secrets,
      render: createRender({ cache: true }),
      logger: createLogger({ level: 'silent' }),
      brokerUrl: balancerUrl,
      github: true,
    });
    instances.push(
      ...(await startBrokerInstances({
        dir,
        secrets,
        dev,
        balancerUrl,
        ports,
        databaseUrl: db.url.reveal(),
        schema: db.schema,
        // In the PgBouncer pass (scripts/pgbouncer-pass.sh) through the pooler, LISTEN and migrations straight to Postgres.
        ...(db.pooledUrl ? { pooledUrl: db.pooledUrl.reveal() } : {}),
      })),
    );
    balancer = await startHaproxy({
      port: balancerPort!,
      instances: ports.map((p) => `127.0.0.1:${p}`),
      tls,
      dir,
    });
    await waitForServers(balancer, direct(), 3);
  }, 240_000);

  afterAll(async () => {
    await balancer?.stop();
    await stopBrokerInstances(instances);
    await dev?.close(0);
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  }, 60_000);

  it('connect links, callbacks and retries land on any instance, a 2025-11-25 session stays on one, an instance is killed, every flow completes once', async () => {
    const run: Run = { hits: new Map(), hitsAfterKill: new Map(), killedAt: undefined, resent: 0 };
    const base = direct();
    const prefix = `balancer ${Math.random().toString(36).slice(2, 8)} #`;
    const mcpUrl = `${balancer.url}/mcp`;
    const tokens = new Map<string, string>();
    for (const login of [...USERS, LEGACY_USER])
      tokens.set(
        login,
        await fetchDevToken({ issuer: dev.idp.issuer, resource: mcpUrl, login, password: DEV_PASSWORD, fetch: base }),
      );
    const github = dev.github!;

    const callTool = async (login: string, args: object, extra: Record<string, unknown>, record: string[]) => {
      let server = '?';
      const fetch = balancedFetch(base, run, (_url, s) => (server = s));
      const result = await callMcpTool(
        { fetch, brokerUrl: balancer.url },
        tokens.get(login)!,
        TOOL,
        args,
        extra,
        URL_ELICITATION,
      ).finally(() => record.push(server));
      return result as {
        resultType?: string;
        requestState?: string;
        inputRequests?: { connect?: { params?: { url?: string } } };
        structuredContent?: { status?: string; error?: string; message?: string; issue?: { title?: string } };
      };
    };

    // The browser leg, from the connect link to the done page: every hop through the balancer.
    const connect = async (link: string, login: string, record: FlowRecord, beforeCallback?: () => void) => {
      const browser = createTestBrowser({
        fetch: balancedFetch(base, run, (url, server) => {
          if (url.startsWith(`${balancer.url}/oauth/callback/github`)) record.callbackOn.push(server);
          else if (url.startsWith(`${balancer.url}/connect/`) && !url.includes('/connect/done'))
            record.linkOn.push(server);
        }),
      });
      const first = expectPage(await browser.get(link), 'Sign in to connect');
      const signInHref = /href="(\/login\?[^"]+)"/.exec(first.text)?.[1]?.replace(/&amp;/g, '&');
      if (!signInHref) throw new Error('no sign-in link on the connect page');
      const signInForm = expectPage(await browser.get(new URL(signInHref, balancer.url).href), 'name="password"');
      const review = await browser.submitForm(signInForm, { login, password: DEV_PASSWORD });
      const atGithub = await browser.submitForm(
        expectPage(review, `Continue to ${github.origin}`),
        {},
        {
          form: '/connect/',
        },
      );
      beforeCallback?.();
      let next = await browser.submitForm(expectPage(atGithub, 'name="password"'), { login, password: DEV_PASSWORD });
      if (next.url.startsWith(`${github.origin}/`))
        next = await browser.submitForm(expectPage(next, 'Authorize Connect Broker'), {}, { form: GITHUB_FORMS.allow });
      expectPage(next, 'is connected');
    };

    // The host's MRTR retry with `accept`, again with the new requestState while the flow is not verified yet.
    const retry = async (login: string, args: object, requestState: string, record: FlowRecord, rounds: number) => {
      let state = requestState;
      for (let round = 1; ; round++) {
        const answer = await callTool(
          login,
          args,
          { requestState: state, inputResponses: { connect: { action: 'accept' } } },
          record.retryOn,
        );
        if (answer.resultType !== 'input_required' || !answer.requestState || round >= rounds) return answer;
        state = answer.requestState;
      }
    };

    const victimOf = { name: undefined as string | undefined };
    let completed = 0;
    const kill = () => {
      const victim = instances.find((i) => i.name === victimOf.name)!;
      run.killedAt = Date.now();
      victim.process.child.kill('SIGKILL');
    };

    const flow = async (login: string, title: string, index: number): Promise<FlowRecord> => {
      const record: FlowRecord = {
        title,
        login,
        attempts: 0,
        elicitOn: [],
        linkOn: [],
        callbackOn: [],
        retryOn: [],
        early: index % 2 === 1,
        done: false,
        forOperator: false,
        failures: [],
      };
      const args = { repository: `${login}/demo`, title, body: `Balancer test issue ${index}.` };
      const isCreated = (answer: Awaited<ReturnType<typeof callTool>> | undefined) =>
        answer?.resultType === 'complete' &&
        answer.structuredContent?.status === 'created' &&
        answer.structuredContent.issue?.title === title;
      const inProgress = (answer: Awaited<ReturnType<typeof callTool>> | undefined) =>
        answer?.structuredContent?.error === 'conflict' &&
        answer.structuredContent.message?.includes('being performed by another request') === true;
      const recordedForOperator = (answer: Awaited<ReturnType<typeof callTool>> | undefined) =>
        answer?.structuredContent?.error === 'unavailable' &&
        answer.structuredContent.message?.includes('recorded for an operator') === true;
      // A flow broken by the kill (a page or callback that died with its instance) starts over,
      // as the user would; the first link's operation is only ever accepted through its own receipt.
      while (!record.done && !record.forOperator && record.attempts < 3) {
        record.attempts++;
        await db.pool.query('DELETE FROM secrets WHERE subject_iss = $1 AND subject_sub = $2 AND provider = $3', [
          dev.idp.issuer,
          login,
          'github',
        ]);
        const asked = await callTool(login, args, {}, record.elicitOn);
        const link = asked.inputRequests?.connect?.params?.url;
        if (asked.resultType !== 'input_required' || !link || !asked.requestState)
          throw new Error(`expected a connect link, got ${JSON.stringify(asked).slice(0, 300)}`);
        const state = asked.requestState;
        let early: Promise<Awaited<ReturnType<typeof callTool>>> | undefined;
        try {
          await connect(link, login, record, () => {
            // Sent before the callback: it waits on its instance until the callback's NOTIFY.
            if (record.early) early = retry(login, args, state, record, 3);
          });
          const answer = await (early ?? retry(login, args, state, record, 3));
          if (!isCreated(answer))
            throw new Error(`the retry did not create it: ${JSON.stringify(answer).slice(0, 300)}`);
          record.done = true;
        } catch (err) {
          record.failures.push(err instanceof Error ? err.message : String(err));
          // The callback may have been verified before its instance died: ask again on this link, as a
          // host does while the broker says the operation is being performed (its performer may be the
          // victim, whose lease must run out first). An accepted operation is never started over: that
          // would be a second operation, and a second issue if the victim had sent the first.
          let answer = await (early ?? retry(login, args, state, record, 1)).catch(() => undefined);
          for (const until = Date.now() + 60_000; inProgress(answer) && Date.now() < until;) {
            await sleep(2_000);
            answer = await retry(login, args, state, record, 1).catch(() => undefined);
          }
          if (isCreated(answer)) record.done = true;
          else if (recordedForOperator(answer)) record.forOperator = true;
        }
      }
      if (record.done && ++completed === KILL_AFTER_COMPLETED) kill();
      return record;
    };

    // The 2025-11-25 session, opened first so the victim can be an instance it is not on.
    const legacyOn: string[] = [];
    const legacyLinks: string[] = [];
    const legacy = await connectSdkClient({ mcpResourceUrl: mcpUrl, tls }, tokens.get(LEGACY_USER)!, {
      era: LEGACY,
      url: (params) => {
        legacyLinks.push(params.url);
        return { action: 'accept' };
      },
      fetch: balancedFetch(createFetch({ extraCaPems: [tls.caPem], timeoutMs: 120_000 }), run, (_url, server) =>
        legacyOn.push(server),
      ),
    });
    const sessionInstance = legacyOn[0]!;
    victimOf.name = instances.map((i) => i.name).find((name) => name !== sessionInstance);

    const legacyRecord: FlowRecord = {
      title: `${prefix}legacy`,
      login: LEGACY_USER,
      attempts: 1,
      elicitOn: [],
      linkOn: [],
      callbackOn: [],
      retryOn: [],
      early: false,
      done: false,
      forOperator: false,
      failures: [],
    };
    const legacyFlow = (async () => {
      await db.pool.query('DELETE FROM secrets WHERE subject_iss = $1 AND subject_sub = $2 AND provider = $3', [
        dev.idp.issuer,
        LEGACY_USER,
        'github',
      ]);
      const call = legacy.client.callTool({
        name: TOOL,
        arguments: { repository: `${LEGACY_USER}/demo`, title: legacyRecord.title, body: 'Balancer test, 2025-11-25.' },
      });
      const link = await until('the nested URL elicitation', () => legacyLinks[0], 30_000);
      await connect(link, LEGACY_USER, legacyRecord);
      const result = (await call) as { structuredContent?: { status?: string; issue?: { title?: string } } };
      legacyRecord.done =
        result.structuredContent?.status === 'created' && result.structuredContent.issue?.title === legacyRecord.title;
      // More calls on the session after the others' kill: still its instance.
      await legacy.client.listTools();
      return legacyRecord;
    })();

    const records = await Promise.all(
      USERS.map(async (login, u) => {
        const mine: FlowRecord[] = [];
        for (let i = 0; i < FLOWS_PER_USER; i++) {
          const index = u * FLOWS_PER_USER + i;
          mine.push(await flow(login, `${prefix}${index}`, index));
        }
        return mine;
      }),
    ).then((all) => all.flat());
    records.push(await legacyFlow);
    await closeLegacy(legacy);

    // Counted at the provider and in the database.
    const titles = new Map<string, number>();
    for (const login of [...USERS, LEGACY_USER]) {
      const reader = await devGithubToken(github, base, login);
      for (const issue of await devGithubIssues(github, base, reader, `${login}/demo`))
        if (issue.title.startsWith(prefix)) count(titles, issue.title);
    }
    const receipts = await db.pool.query<{ title: string; outcome_status: string; unknown: boolean }>(
      `SELECT r.outcome->'issue'->>'title' AS title, r.outcome_status, r.outcome_unknown_at IS NOT NULL AS unknown
         FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id WHERE n.tool = $1`,
      [TOOL],
    );
    const succeeded = new Map<string, number>();
    for (const r of receipts.rows) if (r.outcome_status === 'succeeded' && r.title) count(succeeded, r.title);
    const unknownReceipts = receipts.rows.filter((r) => r.outcome_status === 'pending' && r.unknown).length;
    const forOperator = records.filter((r) => r.forOperator);
    const lost = records.filter((r) => !r.forOperator && (titles.get(r.title) ?? 0) === 0);
    const doubled = records.filter((r) => (titles.get(r.title) ?? 0) > 1 || (succeeded.get(r.title) ?? 0) > 1);
    const crossed = records.filter(
      (r) => new Set([...r.elicitOn, ...r.linkOn, ...r.callbackOn, ...r.retryOn]).size > 1,
    );
    const callbackElsewhere = records.filter((r) => r.callbackOn.some((c) => !r.retryOn.includes(c)));
    const earlyCrossed = records.filter(
      (r) => r.early && r.done && r.callbackOn.length > 0 && r.retryOn.some((s) => !r.callbackOn.includes(s)),
    );
    const fmt = (map: Map<string, number>) =>
      [...map.entries()]
        .sort()
        .map(([k, v]) => `${k} ${v}`)
        .join(', ') || 'none';
    const byStep = (pick: (r: FlowRecord) => string[]) => {
      const m = new Map<string, number>();
      for (const r of records) for (const s of pick(r)) count(m, s);
      return fmt(m);
    };
    process.stdout.write(
      [
        `balancer: ${records.length} flows (${records.length - 1} on 2026-07-28, 1 on a 2025-11-25 session), 3 instances, 1 killed (SIGKILL, ${victimOf.name}, after ${KILL_AFTER_COMPLETED} flows completed)`,
        `  hits per instance: ${fmt(run.hits)}; after the kill: ${fmt(run.hitsAfterKill)}; resent after a balancer error: ${run.resent}`,
        `  tool calls: ${byStep((r) => r.elicitOn)}; connect pages: ${byStep((r) => r.linkOn)}; callbacks: ${byStep((r) => r.callbackOn)}; retries: ${byStep((r) => r.retryOn)}`,
        `  flows that crossed instances: ${crossed.length}; callback on an instance none of its retries used: ${callbackElsewhere.length}; retries sent before the callback and answered elsewhere: ${earlyCrossed.length}`,
        `  restarted after the kill: ${records.filter((r) => r.attempts > 1).length}; legacy session on ${sessionInstance}, its ${legacyOn.length} requests on ${[...new Set(legacyOn)].join(', ')}`,
        `  completed: ${records.filter((r) => r.done).length}/${records.length}; recorded for an operator (performer killed with its call's outcome unknown): ${forOperator.length}; issues made: ${[...titles.values()].reduce((a, b) => a + b, 0)}; succeeded receipts: ${[...succeeded.values()].reduce((a, b) => a + b, 0)}; lost: ${lost.length}; doubled: ${doubled.length}`,
        '',
      ].join('\n'),
    );
    for (const r of records.filter((r) => !r.done || r.failures.length > 0 || r.forOperator))
      process.stdout.write(`  ${r.title}: attempts ${r.attempts}, done ${r.done}; ${r.failures.join(' | ')}\n`);

    if (!records.every((r) => r.done || r.forOperator))
      for (const instance of instances)
        process.stdout.write(`${instance.name} logged:\n${instance.process.output().slice(-4_000)}\n`);
    // Each flow is done once, or, when the victim died holding its call (a provider that cannot
    // dedupe, so never sent again), recorded for an operator with at most the one issue it sent.
    expect(records.every((r) => r.done || r.forOperator)).toBe(true);
    for (const r of records) {
      if (r.forOperator) expect(titles.get(r.title) ?? 0, r.title).toBeLessThanOrEqual(1);
      else expect(titles.get(r.title), r.title).toBe(1);
      expect(succeeded.get(r.title) ?? 0, r.title).toBe(r.forOperator ? 0 : 1);
    }
    expect(unknownReceipts).toBe(forOperator.length);
    // Only calls in flight on the victim at its kill: at most one per user (each runs its flows in turn).
    expect(forOperator.length).toBeLessThanOrEqual(USERS.length);
    expect(lost).toEqual([]);
    expect(doubled).toEqual([]);
    // The legacy session never left its instance, and that instance was not the one killed.
    expect(new Set(legacyOn)).toEqual(new Set([sessionInstance]));
    expect(sessionInstance).not.toBe(victimOf.name);
    // Round-robin spread every kind of request, and nothing reached the victim after its kill.
    expect(new Set(records.flatMap((r) => r.callbackOn)).size).toBeGreaterThanOrEqual(2);
    expect(new Set(records.flatMap((r) => r.retryOn)).size).toBeGreaterThanOrEqual(2);
    expect(callbackElsewhere.length).toBeGreaterThan(0);
    expect(run.hits.get(victimOf.name!) ?? 0).toBeGreaterThan(0);
    expect(run.hitsAfterKill.get(victimOf.name!) ?? 0).toBe(0);
    const victim = instances.find((i) => i.name === victimOf.name)!;
    expect((await victim.process.exited).signal).toBe('SIGKILL');
  }, 240_000);
});
