import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ElicitRequestURLParams } from '@modelcontextprotocol/client';
import { decodeJwt } from 'jose';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TlsMaterial } from '../../src/tls/localCa.js';
import { connectSdkClient, toolCalls } from '../support/sdkClient.js';
import { buildImage } from './imageBuild.js';
import { connectInBrowser, hostToken, launchRehearsalChromium, signInToBroker } from './rehearsalBrowser.js';
import { createRehearsalTls } from './rehearsalCerts.js';
import { devDependenciesIn, receiptsOf, step } from './rehearsalChecks.js';
import { brokerCli } from './rehearsalProcesses.js';
import { HOST_CLIENT_ID, MODES, SLOW_TITLE, startRehearsal, type Mode, type Rehearsal } from './rehearsalRun.js';
import { HOSTS } from './rehearsalHosts.js';

// `npm run test:production`: the broker as the image builds it, `node dist/main.js` with
// NODE_ENV=production and the production overlay's configuration, against the machine's Postgres,
// an identity provider, a provider emulator and an upstream MCP server in their own processes, at
// names that are not loopback; driven by the official SDK client and Chromium. Once per TLS mode
// (rehearsalRun.ts): ending at nginx with HTTP to the broker, ending at HAProxy re-encrypted to the
// broker, and ending at the broker itself.

const WORK = join(tmpdir(), `connect-broker-rehearsal-${process.pid}`);
const BUILD = join(WORK, 'image');
let IMAGE = '';
// REHEARSAL_MODES=direct (comma-separated) runs fewer, while working on the harness.
const modes = (process.env['REHEARSAL_MODES']?.split(',') ?? MODES).filter((m): m is Mode => MODES.includes(m as Mode));

let tls: TlsMaterial;
let browser: Browser;

beforeAll(async () => {
  // REHEARSAL_IMAGE: a folder an earlier run built (its WORKDIR), reused while working on the harness.
  IMAGE =
    process.env['REHEARSAL_IMAGE'] ??
    (await step('build (the Dockerfile, target production)', () => buildImage(BUILD)));
  // Else a module production imports from a devDependency would load here and fail only in the image.
  await step('the image holds no devDependency', async () => expect(await devDependenciesIn(IMAGE)).toEqual([]));
  tls = await createRehearsalTls(Object.values(HOSTS));
  browser = await launchRehearsalChromium(tls.certPem);
});
afterAll(async () => {
  await browser?.close();
  await rm(WORK, { recursive: true, force: true });
});

describe.each(modes)('production rehearsal, %s', (mode) => {
  let r: Rehearsal;
  beforeAll(async () => {
    r = await step(
      `start (${mode}): database, identity provider, emulators, broker migrate, broker doctor, node dist/main.js`,
      () => startRehearsal(mode, IMAGE, tls, WORK),
    );
  });
  afterAll(async () => {
    await r?.stop();
  });

  it('signs in, connects, accepts once, proxies upstream, reads the ledger as an operator and drains on SIGTERM', async () => {
    const [alice, olivia] = r.users as [Rehearsal['users'][0], Rehearsal['users'][0]];
    const context = await browser.newContext();
    const page = await context.newPage();
    const target = { mcpResourceUrl: r.mcpUrl, tls };

    expect(await step('sign in', () => signInToBroker(page, r.publicUrl, alice.login, alice.password), r)).toBe(
      `Signed in as ${alice.login}`,
    );

    const token = await step(
      'MCP host token (SDK client, code + PKCE in Chromium)',
      () =>
        hostToken({
          context,
          target,
          fetch: r.fetch,
          clientId: HOST_CLIENT_ID,
          login: alice.login,
          password: alice.password,
        }),
      r,
    );
    expect(decodeJwt(token)).toMatchObject({ iss: r.issuer, aud: r.mcpUrl, sub: alice.login, scope: 'mcp' });

    const connects: string[] = [];
    const host = await connectSdkClient(target, token, {
      era: '2026-07-28',
      fetch: r.fetch,
      url: async (params: ElicitRequestURLParams) => {
        const pages = await connectInBrowser(
          page,
          params.url,
          alice.login,
          connects.length === 0 ? 'Authorize Connect Broker' : 'Allow',
        );
        connects.push(`${pages.review} → ${pages.done}`);
        return { action: 'accept' };
      },
    });

    const title = `Rehearsal ${mode}`;
    const created = await step(
      'a tool that asks to connect, connected in Chromium, accepted once',
      async () => {
        const result = await host.client.callTool({
          name: 'github_create_issue',
          arguments: { repository: 'alice/demo', title, body: 'From the rehearsal.' },
        });
        const calls = toolCalls(host.sent);
        expect(calls.map((c) => (c.response?.['result'] as { resultType?: string } | undefined)?.resultType)).toEqual([
          'input_required',
          'complete',
        ]);
        expect(connects).toEqual([expect.stringMatching(/^Connect GitHub\?.*→ GitHub is connected$/)]);
        expect(await receiptsOf(r, 'github_create_issue')).toEqual(['succeeded']);
        const store = JSON.parse(await readFile(r.githubStoreFile, 'utf8')) as {
          issues: { title: string; number: number }[];
        };
        expect(store.issues.filter((i) => i.title === title)).toHaveLength(1);
        return result.structuredContent as { issue: { number: number } };
      },
      r,
    );

    await step(
      'a declared tool of TOOLS_FILE on the same connection',
      async () => {
        const result = await host.client.callTool({
          name: 'github_get_issue',
          arguments: { owner: 'alice', repo: 'demo', number: created.issue.number },
        });
        expect(JSON.stringify(result.content)).toContain(title);
        expect(connects).toHaveLength(1);
      },
      r,
    );

    const prefix = r.deployment.upstreamPrefix;
    await step(
      'an upstream MCP server\u2019s tool, its connection made in Chromium',
      async () => {
        const result = await host.client.callTool({
          name: `${prefix}_create_note`,
          arguments: { title: 'rehearsal note' },
        });
        expect(result.content).toEqual([{ type: 'text', text: 'Created "rehearsal note" for up-alice.' }]);
        expect(connects).toHaveLength(2);
        // The server prints each call it received (upstreamServer.ts), a moment after it answered.
        await r.upstream.waitFor('"title":"rehearsal note"', 5_000);
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect(r.upstream.output().match(/"title":"rehearsal note"/g)).toHaveLength(1);
        expect(await receiptsOf(r, `${prefix}_create_note`)).toEqual(['succeeded']);
      },
      r,
    );
    await step(
      'the operator role, read from the identity provider at sign-in: /ops refused to a user, shown to an operator',
      async () => {
        expect((await page.goto(`${r.publicUrl}/ops`))?.status()).toBe(403);
        const operatorPage = await (await browser.newContext()).newPage();
        await signInToBroker(operatorPage, r.publicUrl, olivia.login, olivia.password);
        await operatorPage.goto(`${r.publicUrl}/ops`);
        expect(await operatorPage.textContent('h1')).toBe('Operator dashboard');
        await operatorPage.context().close();
      },
      r,
    );
    await context.close();

    await step(
      'an operator reads the ledger with the CLI (a token from the identity provider)',
      async () => {
        const operatorContext = await browser.newContext();
        const operatorToken = await hostToken({
          context: operatorContext,
          target,
          fetch: r.fetch,
          clientId: HOST_CLIENT_ID,
          login: olivia.login,
          password: olivia.password,
        });
        await operatorContext.close();
        const flows = await brokerCli(r.imageDir, { ...r.env, BROKER_OPERATOR_TOKEN: operatorToken }, [
          'ledger',
          'flows',
          '--json',
        ]);
        expect(flows.code, flows.output).toBe(0);
        const ids = (await r.db.query<{ id: string }>('SELECT id FROM elicitation_navigations')).rows.map(
          (row) => row.id,
        );
        expect(ids).toHaveLength(2);
        for (const id of ids) expect(flows.output).toContain(id);
        const verify = await brokerCli(r.imageDir, { ...r.env, BROKER_OPERATOR_TOKEN: operatorToken }, [
          'ledger',
          'verify',
        ]);
        expect(verify.code, verify.output).toBe(0);
        const refused = await brokerCli(r.imageDir, { ...r.env, BROKER_OPERATOR_TOKEN: token }, ['ledger', 'flows']);
        expect(refused.code, refused.output).toBe(3);
      },
      r,
    );

    await step(
      'SIGTERM drains an in-flight call',
      async () => {
        const call = host.client.callTool({ name: `${prefix}_create_note`, arguments: { title: SLOW_TITLE } });
        await r.upstream.waitFor(`"title":"${SLOW_TITLE}"`, 10_000);
        r.broker.child.kill('SIGTERM');
        expect((await call).content).toEqual([{ type: 'text', text: `Created "${SLOW_TITLE}" for up-alice.` }]);
        expect(await r.broker.exited).toEqual({ code: 0, signal: null });
      },
      r,
    );
    await host.client.close().catch(() => undefined);
  });
});
