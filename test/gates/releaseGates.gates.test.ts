import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devWorkspaceOf } from '../../src/dev/devSeed.js';
import type { GateResult } from '../../src/ledger/gates.js';
import { launchChromium } from '../support/chromium.js';
import { openConnectLink, consentAndAuthorize, retryConnection } from '../support/connectFlow.js';
import {
  authorizeUntilCallback,
  completeInBrowser,
  elicitationIdOf,
  initialize,
  isCompletion,
  isElicitation,
  reportOf,
  sleep,
  type Session,
} from '../support/legacyFaultScenarios.js';
import { closeLegacy, connectLegacy, expectUrlElicitation, until } from '../support/legacySdkClient.js';
import { callTool, tokenFor } from '../support/mcpWire.js';
import { connectSdkClient, type SdkClient } from '../support/sdkClient.js';
import {
  chromiumAt,
  connectInChromium,
  countFor,
  elicitFlow,
  eventsOf,
  flowOfLink,
  flowRow,
  forgetConnections,
  reportsTitled,
  signedInBrowser,
  type Flow,
} from './gatesFlows.js';
import { startGatesService, type GatesService } from './gatesService.js';
import { createWitness, gateTable, reportServiceTokens, type SuiteGate, type Witness } from './gatesWitness.js';

// `npm run gates`: the release gates. The service starts as the README starts it (its own process
// of src/main.ts, development mode, HTTPS, embedded Postgres or DATABASE_URL), and the fault list
// of a URL-mode connection is driven through it with the official MCP SDK client on both protocol
// eras, raw 2025-11-25 sessions where a host must misbehave, and Chromium. Each scenario checks
// what the fault must not do on the wire and in the ledger; the last step prints every gate, from
// `broker ledger gates` (the ledger and database, run as an operator would) and from what the
// suite saw (forms shown, tokens in logs and answers, links, the URL corpora), and fails naming
// each gate missed. GATES_SELF_TEST=1 injects a regression (a Report Service token written into
// the database and shown back) and must make the suite fail.
//
// One file, past 300 lines, because the scenarios are one run in order on one service: the flow
// left to expire starts first and is judged near the end, the -32042 scenarios need the restart
// the old session must outlive, and the gates read everything the run before them left.

const SELF_TEST = process.env['GATES_SELF_TEST'] === '1';
const NAVIGATION_TTL_SECONDS = 60; // the configuration's minimum: the expiry scenario waits it out
const LEGACY_WAIT_MS = 20_000;

describe('release gates', () => {
  let service: GatesService;
  let witness: Witness;
  let chromium: Browser;
  const tokens: Record<'alice' | 'bob' | 'ops', string> = { alice: '', bob: '', ops: '' };
  const clients: SdkClient[] = [];
  let neverCompleted: Flow;
  let oldSession: Session;

  beforeAll(async () => {
    service = await startGatesService({
      DEV_SECRET_FORM_TOOL: 'true',
      NAVIGATION_TTL_SECONDS: String(NAVIGATION_TTL_SECONDS),
      SWEEP_INTERVAL_MS: '1000',
      RETRY_WAIT_MS: '1000',
      LEGACY_WAIT_MS: String(LEGACY_WAIT_MS),
    });
    witness = createWitness(service.fetch);
    // Every helper's HTTP goes through the witness.
    Object.assign(service.stack, { fetch: witness.fetch });
    chromium = await launchChromium(service.certPem);
    for (const login of ['alice', 'bob', 'ops'] as const) tokens[login] = await tokenFor(service.stack, login);
  }, 120_000);

  afterAll(async () => {
    for (const c of clients) await c.client.close().catch(() => undefined);
    await chromium?.close();
    await service?.close();
  });

  const sdk = async (
    era: '2026-07-28' | '2025-11-25',
    token: string,
    onUrl: (url: string) => void = () => undefined,
  ) => {
    const client = await connectSdkClient(service.stack, token, {
      era,
      url: (params) => {
        witness.linkEmitted(params.url);
        onUrl(params.url);
        return { action: 'accept' };
      },
      form: (params) => {
        witness.formShown(params.requestedSchema);
        return { action: 'cancel' };
      },
      maxRounds: 60,
      fetch: witness.fetch,
    });
    clients.push(client);
    return client;
  };

  const untilStatus = async (id: string, status: string) => {
    for (let i = 0; i < 200 && (await flowRow(service, id)).status !== status; i++) await sleep(25);
    expect((await flowRow(service, id)).status).toBe(status);
  };

  /** The host's retry after the user connected: complete, one receipt, one report at the Report Service. */
  const expectAcceptedOnce = async (flow: Flow) => {
    const answer = await retryConnection(
      service.stack,
      tokens.alice,
      'reports_create',
      flow.args,
      flow.requestState,
      'accept',
    );
    expect(answer.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'created' } });
    expect(await countFor(service, 'operation_receipts', flow.id)).toBe(1);
    expect(await reportsTitled(service, flow.args.title)).toBe(1);
  };

  it('a flow accepted and never completed: started first, it expires while the rest runs', async () => {
    // bob's: he connects nowhere else, so no sibling flow's connection verifies it.
    neverCompleted = await elicitFlow(service, witness, tokens.bob, 'Never completed');
    const retry = await retryConnection(
      service.stack,
      tokens.bob,
      'reports_create',
      neverCompleted.args,
      neverCompleted.requestState,
      'accept',
    );
    // accept is consent to open the link, never completion: a state-only input_required.
    expect(retry.json.result).toMatchObject({ resultType: 'input_required' });
    expect(retry.json.result).not.toHaveProperty('inputRequests');
    expect((await flowRow(service, neverCompleted.id)).status).toBe('NAVIGATION_ACCEPTED');
  });

  it('a form asking for a password is refused on both eras; an ordinary form is shown', async () => {
    for (const era of ['2026-07-28', '2025-11-25'] as const) {
      const client = await sdk(era, tokens.alice);
      const result = await client.client.callTool({ name: 'dev_secret_form', arguments: { archive: 'a' } });
      expect(result, era).toMatchObject({ isError: true });
      expect(JSON.stringify(result.content)).toContain('was not shown');
      expect(client.formAsks, era).toEqual([]);
    }
    const host = await sdk('2026-07-28', tokens.alice);
    await host.client.callTool({
      name: 'notes_delete',
      arguments: { workspaceUri: devWorkspaceOf('alice'), title: 'TPS report' },
    });
    expect(host.formAsks).toHaveLength(1);
  });

  it('a URL with a token and lookalike domains are refused by broker url-check', async () => {
    const refused = [
      'https://reports.example.com/callback?access_token=ya29.a0AfH6SMBx3',
      'https://xn--gthub-zsa.com/login', // gíthub.com
      'https://github.com.evil.example/login/oauth/authorize',
      'https://раypal.com/signin', // Cyrillic а
    ];
    const { code, out } = await service.cli(['url-check', '--json', ...refused, 'https://bücher.de/']);
    expect(code).toBe(1);
    const verdicts = out
      .trim()
      .split('\n')
      .filter((line) => line.startsWith('{') || line.startsWith('['))
      .flatMap((line) => JSON.parse(line) as unknown);
    const byUrl = (verdicts as { url: string; verdict: string; rule?: string }[]).map((v) => [v.verdict, v.rule]);
    expect(byUrl.slice(0, 4).map(([v]) => v)).toEqual(['block', 'block', 'block', 'block']);
    expect(byUrl[4]![0]).toBe('allow');
    expect(out).not.toContain('ya29.a0AfH6SMBx3');
  });

  it('a client prefetching the link advances nothing; the user then connects in Chromium (2026-07-28 SDK client)', async () => {
    await forgetConnections(service);
    const args = { title: 'Chromium connect', body: 'b' };
    let link: string | undefined;
    const host = await sdk('2026-07-28', tokens.alice, (url) => (link ??= url));
    const call = host.client.callTool({ name: 'reports_create', arguments: args });
    const url = await until('the connect link', () => link);
    const id = await flowOfLink(service, url);
    // The host's accept (consent to open the link, nothing more) lands first.
    await untilStatus(id, 'NAVIGATION_ACCEPTED');
    const before = await flowRow(service, id);
    // A link scanner or a host's preview: signed out, twice, and a HEAD.
    for (const method of ['GET', 'GET', 'HEAD']) {
      const response = await witness.fetch(url, { method, redirect: 'manual' });
      await response.text();
      expect(response.status).toBeLessThan(500);
    }
    expect(await flowRow(service, id)).toEqual(before);
    expect(await countFor(service, 'consent_receipts', id)).toBe(0);

    const page = await chromiumAt(chromium, witness, service.stack, url, 'alice');
    // Fetched again signed in (a second tab), still nothing changes until the user consents.
    await page.reload();
    expect(await flowRow(service, id)).toEqual(before);
    expect(await connectInChromium(page, service.stack, 'alice')).toBe('Report Service is connected');
    await page.context().close();

    const result = await call;
    expect(result).toMatchObject({ structuredContent: { status: 'created' } });
    expect(await countFor(service, 'operation_receipts', id)).toBe(1);
    expect(await reportsTitled(service, args.title)).toBe(1);
  }, 60_000);

  it('a forwarded link opened by another user in Chromium is refused and binds nothing', async () => {
    await forgetConnections(service);
    const flow = await elicitFlow(service, witness, tokens.alice, 'Forwarded link');
    const before = await flowRow(service, flow.id);
    const page = await chromiumAt(chromium, witness, service.stack, flow.url, 'bob');
    expect(await page.textContent('body')).toContain('This link belongs to someone else');
    expect(await page.locator('form[action*="/connect/"]').count()).toBe(0);
    await page.context().close();
    expect(await flowRow(service, flow.id)).toEqual(before);
    expect(await countFor(service, 'consent_receipts', flow.id)).toBe(0);
    expect(await eventsOf(service, flow.id)).toContainEqual(expect.objectContaining({ event: 'subject_mismatch' }));
    // The link is still its owner's: alice connects on it, and the call completes once.
    await completeInBrowser(service.stack, flow.url);
    await expectAcceptedOnce(flow);
  }, 60_000);

  it('a subject mismatch at the callback stores nothing; a repeated callback changes nothing', async () => {
    await forgetConnections(service);
    const flow = await elicitFlow(service, witness, tokens.alice, 'Callback elsewhere');
    const { callbackUrl } = await authorizeUntilCallback(service.stack, flow.url);
    const bob = await signedInBrowser(service.stack, 'bob');
    const refused = await bob.get(callbackUrl);
    expect(refused.status).toBe(403);
    expect(await countFor(service, 'secrets', flow.id)).toBe(0);
    expect((await flowRow(service, flow.id)).status).toBe('OUT_OF_BAND_PENDING');

    // The callback's transaction is spent on the refusal: alice starts over on the same link.
    const again = await authorizeUntilCallback(service.stack, flow.url);
    const done = await again.browser.get(again.callbackUrl);
    expect(done.text).toContain('Report Service is connected');
    const verified = await flowRow(service, flow.id);
    // The provider's redirect delivered again (a reload, a replay): the transaction is spent.
    const replay = await again.browser.get(again.callbackUrl);
    expect(replay.status).toBeGreaterThanOrEqual(400);
    expect(await flowRow(service, flow.id)).toEqual(verified);
    await expectAcceptedOnce(flow);
  }, 60_000);

  it("a tampered state or another flow's code (PKCE verifier mismatch) at the callback is refused", async () => {
    await forgetConnections(service);
    const first = await elicitFlow(service, witness, tokens.alice, 'Bad state');
    const second = await elicitFlow(service, witness, tokens.alice, 'Bad verifier');
    const a = await authorizeUntilCallback(service.stack, first.url);
    const b = await authorizeUntilCallback(service.stack, second.url);

    const tampered = new URL(a.callbackUrl);
    tampered.searchParams.set('state', `${tampered.searchParams.get('state')!.slice(0, -2)}xx`);
    expect((await a.browser.get(tampered.href)).status).toBeGreaterThanOrEqual(400);
    // The first flow's state with the second flow's code: the code was issued for another PKCE challenge.
    const swapped = new URL(a.callbackUrl);
    swapped.searchParams.set('code', new URL(b.callbackUrl).searchParams.get('code')!);
    expect((await a.browser.get(swapped.href)).status).toBeGreaterThanOrEqual(400);
    for (const flow of [first, second]) {
      expect(await countFor(service, 'secrets', flow.id)).toBe(0);
      expect((await flowRow(service, flow.id)).status).toBe('OUT_OF_BAND_PENDING');
    }
    // The user starts over on the same link, and the call completes once.
    await completeInBrowser(service.stack, first.url);
    await expectAcceptedOnce(first);
    // The host declines the other one: it ends, nothing accepted.
    const declined = await retryConnection(
      service.stack,
      tokens.alice,
      'reports_create',
      second.args,
      second.requestState,
      'decline',
    );
    expect(declined.json.result).toMatchObject({ resultType: 'complete' });
    expect(await countFor(service, 'operation_receipts', second.id)).toBe(0);
  }, 60_000);

  it("a cross-domain redirect of the provider's answer, to another service's callback, is refused and stores nothing", async () => {
    await forgetConnections(service);
    const flow = await elicitFlow(service, witness, tokens.alice, 'Redirected elsewhere');
    const { browser, callbackUrl } = await authorizeUntilCallback(service.stack, flow.url);
    // The Report Service's code and state, sent on to the GitHub-like provider's callback: a code is
    // never taken to another provider's token endpoint (RFC 9700 §4.4).
    const elsewhere = new URL(callbackUrl);
    elsewhere.pathname = '/oauth/callback/github';
    expect((await browser.get(elsewhere.href)).status).toBe(403);
    expect(await countFor(service, 'secrets', flow.id)).toBe(0);
    expect((await flowRow(service, flow.id)).status).toBe('OUT_OF_BAND_PENDING');
    expect(await eventsOf(service, flow.id)).toContainEqual(
      expect.objectContaining({
        event: 'callback_redirect_mismatch',
        evidence: expect.objectContaining({ deliveredTo: 'github' }),
      }),
    );
    // The transaction is spent on the refusal: alice starts over on the same link, and the call completes once.
    await completeInBrowser(service.stack, flow.url);
    await expectAcceptedOnce(flow);
  }, 60_000);

  it('2025-11-25 nested: a completion notice posted by the client, the completion arriving before the host answers, and a retry in flight cause one effect', async () => {
    await forgetConnections(service);
    const session = await initialize(service.stack, tokens.alice);
    const args = { title: 'Nested, retried', body: 'b' };
    const original = await session.start('tools/call', { name: 'reports_create', arguments: args });
    const asked = await original.next(isElicitation);
    const navigationId = elicitationIdOf(asked);
    const url = asked.params!['url'] as string;
    witness.linkEmitted(url);
    // A completion notice from the client, before anything happened: the ledger does not move.
    const beforeForged = await eventsOf(service, navigationId);
    const forged = await session.send({
      method: 'notifications/elicitation/complete',
      params: { elicitationId: navigationId },
    });
    expect(forged.status).toBe(202);
    expect(await eventsOf(service, navigationId)).toEqual(beforeForged);
    // The user finishes in the browser before the host has answered the elicitation.
    await completeInBrowser(service.stack, url);
    expect((await flowRow(service, navigationId)).status).toBe('REQUIREMENT_VERIFIED');
    // The host retries the call still in flight, then answers the original elicitation.
    const retrying = await session.start('tools/call', { name: 'reports_create', arguments: args });
    await sleep(100);
    expect((await session.send({ id: asked.id, result: { action: 'accept' } })).status).toBe(202);
    const first = await original.next((m) => m.id === original.requestId, LEGACY_WAIT_MS);
    const second = await retrying.next((m) => m.id === retrying.requestId, LEGACY_WAIT_MS);
    expect(first.result).toMatchObject({ structuredContent: { status: 'created' } });
    expect(reportOf(second)).toBe(reportOf(first));
    expect(retrying.messages.filter(isElicitation)).toEqual([]);
    expect(original.messages.filter(isCompletion)).toHaveLength(1);
    expect(await countFor(service, 'operation_receipts', navigationId)).toBe(1);
    expect(await reportsTitled(service, args.title)).toBe(1);
    // Kept open across the restart below: its notifications must then reach nothing.
    oldSession = await initialize(service.stack, tokens.alice);
  }, 60_000);

  it('2025-11-25 nested: a retry sent while the call still waits for the user joins it, and both end with the one effect', async () => {
    await forgetConnections(service);
    const session = await initialize(service.stack, tokens.alice);
    const args = { title: 'Nested, retried before connecting', body: 'b' };
    const original = await session.start('tools/call', { name: 'reports_create', arguments: args });
    const asked = await original.next(isElicitation);
    const url = asked.params!['url'] as string;
    witness.linkEmitted(url);
    // Not awaited: the retry's answer opens only once the operation has an outcome, so a host that
    // waited for it before the user connected would wait out LEGACY_WAIT_MS on both calls.
    const retrying = session.start('tools/call', { name: 'reports_create', arguments: args });
    await sleep(200);
    await completeInBrowser(service.stack, url);
    expect((await session.send({ id: asked.id, result: { action: 'accept' } })).status).toBe(202);
    const first = await original.next((m) => m.id === original.requestId, LEGACY_WAIT_MS);
    const retry = await retrying;
    const second = await retry.next((m) => m.id === retry.requestId, LEGACY_WAIT_MS);
    expect(first.result).toMatchObject({ structuredContent: { status: 'created' } });
    expect(reportOf(second)).toBe(reportOf(first));
    expect(retry.messages.filter(isElicitation)).toEqual([]);
    expect(await countFor(service, 'operation_receipts', elicitationIdOf(asked))).toBe(1);
    expect(await reportsTitled(service, args.title)).toBe(1);
  }, 60_000);

  it('2025-11-25 -32042 (LEGACY_URL_ELICITATION=error): retried twice, in turn and racing, accepts once', async () => {
    // Hosts go away with the old process (their streams would only fail); the raw session stays.
    for (const c of clients.splice(0)) await c.client.close().catch(() => undefined);
    await service.restart({ LEGACY_URL_ELICITATION: 'error' });
    await forgetConnections(service);
    const legacy = await connectLegacy(service.stack, tokens.alice, {});
    clients.push(legacy);
    const args = { title: 'Error retried twice', body: 'b' };
    const required = await expectUrlElicitation(legacy, 'reports_create', args);
    const [elicitation] = required.elicitations;
    witness.linkEmitted(elicitation!.url);
    await completeInBrowser(service.stack, elicitation!.url);
    const id = await flowOfLink(service, elicitation!.url);
    const once = await legacy.client.callTool({ name: 'reports_create', arguments: args });
    const twice = await Promise.all([
      legacy.client.callTool({ name: 'reports_create', arguments: args }),
      legacy.client.callTool({ name: 'reports_create', arguments: args }),
    ]);
    const idOf = (r: unknown) =>
      (r as { structuredContent?: { report?: { id: string } } }).structuredContent?.report?.id;
    expect(idOf(once)).toBeDefined();
    expect(twice.map(idOf)).toEqual([idOf(once), idOf(once)]);
    expect(await countFor(service, 'operation_receipts', id)).toBe(1);
    expect(await reportsTitled(service, args.title)).toBe(1);
    await closeLegacy(legacy);
  }, 60_000);

  it("an old session's notification after a restart reaches nothing", async () => {
    const notified = await oldSession.send({ method: 'notifications/initialized' });
    expect(notified.status).toBe(404);
    const answered = await oldSession.send({ id: 1, result: { action: 'accept' } });
    expect(answered.status).toBe(404);
  });

  it(
    'the flow never completed has expired and is recoverable: calling again connects and accepts once',
    async () => {
      const deadline = Date.now() + (NAVIGATION_TTL_SECONDS + 30) * 1000;
      while ((await flowRow(service, neverCompleted.id)).status !== 'EXPIRED' && Date.now() < deadline)
        await sleep(500);
      expect((await flowRow(service, neverCompleted.id)).status).toBe('EXPIRED');
      expect(await countFor(service, 'operation_receipts', neverCompleted.id)).toBe(0);
      const again = await elicitFlow(service, witness, tokens.bob, neverCompleted.args.title);
      expect(again.id).not.toBe(neverCompleted.id);
      await consentAndAuthorize(service.stack, await openConnectLink(service.stack, again.url, 'bob'), 'bob');
      const answer = await retryConnection(
        service.stack,
        tokens.bob,
        'reports_create',
        again.args,
        again.requestState,
        'accept',
      );
      expect(answer.json.result).toMatchObject({ resultType: 'complete' });
      expect(await reportsTitled(service, again.args.title)).toBe(1);
    },
    (NAVIGATION_TTL_SECONDS + 60) * 1000,
  );

  it('prints every gate and passes them all', async () => {
    const canaries = await reportServiceTokens(service.dataDir);
    if (SELF_TEST) {
      // The injected regression: a Report Service token lands outside the vault (a note's body)
      // and comes back in an answer. The ledger's scan and the suite's must both see it.
      await callTool(service.stack, tokens.alice, 'notes_create', {
        workspaceUri: devWorkspaceOf('alice'),
        title: 'pasted token',
        body: canaries[0] ?? 'no token',
      });
      await callTool(service.stack, tokens.alice, 'notes_list', { workspaceUri: devWorkspaceOf('alice') });
    }
    const tokensFile = join(service.dataDir, 'gates-tokens.txt');
    await writeFile(tokensFile, canaries.join('\n'), { mode: 0o600 });
    const ledger = await service.cli(['ledger', 'gates', '--json', '--tokens-file', tokensFile], {
      BROKER_OPERATOR_TOKEN: tokens.ops,
    });
    const line = ledger.out
      .trim()
      .split('\n')
      .findLast((l) => l.startsWith('['));
    if (!line) throw new Error(`broker ledger gates printed no JSON (exit ${String(ledger.code)}):\n${ledger.out}`);
    const fromLedger = JSON.parse(line) as GateResult[];
    expect(fromLedger.map((g) => g.id)).toContain('tokens_outside_vault'); // judged: it was given the tokens
    const fromSuite = await witness.gates(service.output(), canaries);
    const gates: SuiteGate[] = [...fromLedger, ...fromSuite];
    console.log(`\nRelease gates (${canaries.length} Report Service tokens as canaries)\n\n${gateTable(gates)}\n`);
    const missed = gates.filter((g) => !g.pass).map((g) => `${g.gate}: ${g.figure} (target ${g.target})`);
    expect(missed, `gates missed:\n${missed.join('\n')}`).toEqual([]);
    expect(ledger.code).toBe(0);
  }, 60_000);
});
