import { UnauthorizedError, type FetchLike } from '@modelcontextprotocol/client';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { launchChromium } from '../support/chromium.js';
import { listenHttps, type HttpsTestServer } from '../support/httpsTestServer.js';
import { InMemoryHostOAuth, listenLoopbackCallback } from '../support/mcpHostOAuth.js';
import { listToolsThrough, startBridge } from '../support/mcpRemoteBridge.js';
import { sdkClient } from '../support/sdkClient.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// An MCP host that does its own OAuth (the official SDK client's OAuthClientProvider,
// as desktop hosts and bridges do) against the broker and the development identity
// provider, from no token at all: 401 → protected resource metadata (RFC 9728) →
// authorization server metadata → registration (RFC 7591) or a Client ID Metadata
// Document → authorization in Chromium → its loopback callback on an ephemeral port
// (RFC 8252 §7.3) → token (RFC 8707 resource) → tools/list.

const NOTES_TOOLS = ['notes_create', 'notes_delete', 'notes_list', 'notes_workspaces'];

describe('an MCP host that does its own OAuth', () => {
  const { stack } = useBrokerStack();
  let browser: Browser;

  beforeAll(async () => {
    browser = await launchChromium(stack.tls.certPem);
  });
  afterAll(async () => {
    await browser?.close();
  });

  /**
   * Console errors (CSP violations among them) and failed requests of a page;
   * `blocked` rejects at the first, so a blocked hand-off fails at once, not by timeout.
   */
  function watch(page: Page): { problems: string[]; blocked: Promise<never> } {
    const problems: string[] = [];
    let fail: (err: Error) => void = () => undefined;
    const blocked = new Promise<never>((_resolve, reject) => {
      fail = reject;
    });
    blocked.catch(() => undefined); // observed through `problems` when nobody races it
    const note = (problem: string) => {
      problems.push(problem);
      fail(new Error(problem));
    };
    page.on('console', (message) => {
      if (message.type() !== 'error') return;
      // The host's own loopback callback page serves no icon: Chromium asks for one when the page
      // stays open long enough (a busy machine), which is no problem of the broker's.
      const resource = message.location().url;
      if (/\/favicon\.ico$/.test(resource) && !resource.startsWith(stack.brokerUrl)) return;
      note(`${page.url()}: ${message.text()}`);
    });
    page.on('pageerror', (err) => note(`${page.url()}: ${err.message}`));
    page.on('requestfailed', (request) => note(`${request.failure()?.errorText ?? 'failed'} ${request.url()}`));
    return { problems, blocked };
  }

  /** The host starts with nothing, the user signs in as alice in Chromium, the host lists the tools. */
  async function connectAsHost(options: { clientMetadataUrl?: (redirectUrl: string) => string } = {}) {
    const callback = await listenLoopbackCallback();
    const context = await browser.newContext();
    const page = await context.newPage();
    const { problems, blocked } = watch(page);
    const wire: string[] = [];
    const fetch: FetchLike = async (url, init) => {
      const response = await stack.fetch(url, init);
      wire.push(`${init?.method ?? 'GET'} ${new URL(String(url)).pathname} ${response.status}`);
      return response;
    };
    const host = new InMemoryHostOAuth({
      redirectUrl: callback.redirectUrl,
      clientName: 'Example MCP host',
      ...(options.clientMetadataUrl ? { clientMetadataUrl: options.clientMetadataUrl(callback.redirectUrl) } : {}),
      openAuthorization: async (url) => {
        await page.goto(url.href);
      },
    });
    try {
      const first = sdkClient(stack, host, { era: '2026-07-28', fetch });
      const attempt = first.client.connect(first.transport).then(() => first.client.listTools());
      await expect(attempt).rejects.toBeInstanceOf(UnauthorizedError);
      await first.client.close();

      // Chromium is on the identity provider's sign-in page now.
      expect(new URL(page.url()).origin).toBe(stack.dev.idp.issuer);
      await page.fill('input[name="login"]', 'alice');
      await page.fill('input[name="password"]', DEV_PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL((url) => url.pathname.startsWith('/interaction/'));
      expect(await page.textContent('body')).toContain('Example MCP host');
      await page.getByRole('button', { name: 'Allow' }).click();
      const params = await Promise.race([callback.received, blocked]);
      await page.waitForURL((url) => url.href.startsWith(callback.redirectUrl));
      expect(params.get('iss')).toBe(stack.dev.idp.issuer);
      await first.transport.finishAuth(params);

      const second = sdkClient(stack, host, { era: '2026-07-28', fetch });
      await second.client.connect(second.transport);
      const { tools } = await second.client.listTools();
      await second.client.close();
      return { host, wire, problems, tools: tools.map((t) => t.name) };
    } finally {
      await context.close();
      await callback.close();
    }
  }

  function expectMcpToken(host: InMemoryHostOAuth, clientId: string): void {
    const claims = decodeJwt(String(host.saved?.access_token));
    expect(claims).toMatchObject({
      iss: stack.dev.idp.issuer,
      aud: stack.mcpResourceUrl,
      sub: 'alice',
      scope: 'mcp',
      client_id: clientId,
    });
  }

  it('registers itself (DCR), signs alice in through Chromium, and lists the notes tools', async () => {
    const { host, wire, problems, tools } = await connectAsHost();
    expect(tools).toEqual(expect.arrayContaining(NOTES_TOOLS));
    expect(problems).toEqual([]);
    const clientId = String(host.registered?.client_id);
    expect(host.registered).toMatchObject({
      redirect_uris: [expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/oauth\/callback$/)],
    });
    expectMcpToken(host, clientId);
    // Discovery from the 401, in the order the MCP authorization spec gives.
    expect(wire.slice(0, 4)).toEqual([
      expect.stringMatching(/^POST \/mcp 401$/),
      'GET /.well-known/oauth-protected-resource/mcp 200',
      expect.stringMatching(/^GET \/\.well-known\/(oauth-authorization-server|openid-configuration) 200$/),
      'POST /reg 201',
    ]);
    expect(wire).toContain('POST /token 200');
  });

  it('mcp-remote, started with no token, registers itself, has alice sign in through Chromium, and bridges tools/list', async () => {
    const configDir = await mkdtemp(join(tmpdir(), 'mcp-remote-'));
    const bridge = startBridge(stack, { configDir });
    const context = await browser.newContext();
    const page = await context.newPage();
    const { problems, blocked } = watch(page);
    try {
      // What its `open` would have shown the user: the identity provider's sign-in.
      await page.goto(await bridge.authorizationUrl);
      expect(new URL(page.url()).origin).toBe(stack.dev.idp.issuer);
      await page.fill('input[name="login"]', 'alice');
      await page.fill('input[name="password"]', DEV_PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL((url) => url.pathname.startsWith('/interaction/'));
      await page.getByRole('button', { name: 'Allow' }).click();
      // The hand-off to its loopback callback (a port it chose) is not blocked by the CSP.
      await Promise.race([
        page.waitForURL((url) => url.protocol === 'http:' && url.pathname === '/oauth/callback'),
        blocked,
      ]);
      expect(problems).toEqual([]);

      const [initialized, listed] = await listToolsThrough(bridge);
      expect(initialized.result?.protocolVersion).toBe('2025-11-25');
      expect(listed.result?.tools?.map((t) => t.name)).toEqual(expect.arrayContaining(NOTES_TOOLS));

      // What it stored: a registration with a port-numbered loopback redirect, and the broker's token.
      const folder = join(configDir, 'mcp-remote-v1');
      const stored = async (suffix: string) =>
        JSON.parse(
          await readFile(
            join(
              folder,
              (await readdir(folder)).find((f) => f.endsWith(suffix))!,
            ),
            'utf8',
          ),
        ) as Record<string, unknown>;
      const registered = await stored('_client_info.json');
      expect(registered['redirect_uris']).toEqual([
        expect.stringMatching(/^http:\/\/(localhost|127\.0\.0\.1):\d+\/oauth\/callback$/),
      ]);
      const claims = decodeJwt(String((await stored('_tokens.json'))['access_token']));
      expect(claims).toMatchObject({
        iss: stack.dev.idp.issuer,
        aud: stack.mcpResourceUrl,
        sub: 'alice',
        client_id: registered['client_id'],
      });
    } finally {
      await bridge.quit();
      await context.close();
      await rm(configDir, { recursive: true, force: true });
    }
  });

  describe('with a Client ID Metadata Document', () => {
    let metadataServer: HttpsTestServer;
    const fetched: string[] = [];

    beforeAll(async () => {
      metadataServer = await listenHttps(stack.tls);
      metadataServer.setHandler((req, res) => {
        fetched.push(req.url ?? '');
        // The document names a loopback redirect URI without a port: the host may use any (RFC 8252 §7.3).
        const clientId = `${metadataServer.origin}/oauth/client-metadata.json`;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            client_id: clientId,
            client_name: 'Example MCP host',
            redirect_uris: ['http://127.0.0.1/oauth/callback'],
            grant_types: ['authorization_code', 'refresh_token'],
            response_types: ['code'],
            token_endpoint_auth_method: 'none',
          }),
        );
      });
    });
    afterAll(async () => {
      await metadataServer?.close();
    });

    it('uses its metadata URL as client_id without registering, and lists the notes tools', async () => {
      const clientId = `${metadataServer.origin}/oauth/client-metadata.json`;
      const { host, wire, problems, tools } = await connectAsHost({ clientMetadataUrl: () => clientId });
      expect(tools).toEqual(expect.arrayContaining(NOTES_TOOLS));
      expect(problems).toEqual([]);
      expect(host.registered?.client_id).toBe(clientId);
      expect(wire.some((line) => line.startsWith('POST /reg'))).toBe(false);
      expect(fetched).toContain('/oauth/client-metadata.json');
      expectMcpToken(host, clientId);
    });
  });
});
