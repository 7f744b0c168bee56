import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { freePorts, repoRoot } from '../support/brokerProcess.js';
import { requestFrom } from '../support/fromAddress.js';
import { HAPROXY_BINARY, startHaproxy, type Balancer } from '../support/haproxy.js';
import { meta, VERSION } from '../support/mcpWire.js';
import { NGINX_BINARY, NGINX_TEMPLATES, startNginx } from '../support/nginx.js';
import { createTestBrowser } from '../support/testBrowser.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// The broker behind the proxies deploy/ ships, each started with its committed file on loopback
// ports: HAProxy and nginx, each with TLS ending at the proxy (the broker on plain HTTP,
// TLS_TERMINATED_BY_PROXY=true) and with TLS end to end (re-encrypted to the broker's own TLS).
// The broker trusts the proxy's address (TRUST_PROXY=127.0.0.1). Clients connect from other
// loopback addresses, so each is a user of its own: each must get its own sign-in budget, whatever
// X-Forwarded-For it writes, and the log lines must name it, not the proxy.

const CLIENT_A = '127.0.0.2';
const CLIENT_B = '127.0.0.3';
const SIGN_IN_BURST = loadConfig({}).login.rateLimit.burst;

// They need the real proxies (Debian's haproxy and nginx-light, which .ci/run installs): run by
// npm run test:production, beside the rehearsal that needs them too. Missing, they fail, never skip.
const missing = [HAPROXY_BINARY ? '' : 'haproxy', NGINX_BINARY ? '' : 'nginx-light'].filter(Boolean);

const cases = [
  { proxy: 'haproxy', file: 'deploy/haproxy-tls-terminated.cfg', plainHttp: true },
  { proxy: 'haproxy', file: 'deploy/haproxy.cfg', plainHttp: false },
  { proxy: 'nginx', file: 'deploy/nginx-tls-terminated.conf.template', plainHttp: true },
  { proxy: 'nginx', file: 'deploy/nginx.conf.template', plainHttp: false },
] as const;

describe.each(cases)('the broker behind $proxy ($file)', ({ proxy, file, plainHttp }) => {
  let publicUrl = '';
  let dir = '';
  let balancer: Balancer | undefined;
  // The broker's clock stands still, so no bucket refills while a test spends it.
  const startedAt = new Date();
  const { stack } = useBrokerStack(async () => {
    const [port] = await freePorts(1);
    publicUrl = `https://127.0.0.1:${port}`;
    return {
      loginRateLimit: loadConfig({}).login.rateLimit,
      clock: { now: () => startedAt },
      trustProxy: '127.0.0.1',
      behindProxy: { publicUrl, plainHttp },
    };
  });

  beforeAll(async () => {
    if (missing.length > 0) throw new Error(`the proxies are not installed: apt-get install ${missing.join(' ')}`);
    dir = await mkdtemp(join(tmpdir(), `broker-${proxy}-`));
    await chmod(dir, 0o711);
    const port = Number(new URL(publicUrl).port);
    const instance = new URL(stack.instanceUrl).host;
    if (proxy === 'haproxy') {
      // The files name three instances; one broker stands for all three here.
      balancer = await startHaproxy({
        port,
        instances: [instance, instance, instance],
        tls: stack.tls,
        dir,
        config: join(repoRoot, file),
      });
    } else {
      const caFile = join(dir, 'instances-ca.pem');
      await writeFile(caFile, stack.tls.caPem);
      balancer = await startNginx({
        port,
        template: plainHttp ? NGINX_TEMPLATES.terminated : NGINX_TEMPLATES.reencrypt,
        instances: [instance, instance, instance],
        tls: stack.tls,
        dir,
        // The local CA's server certificate is issued for localhost and 127.0.0.1.
        values: { BROKER_CA_FILE: caFile, BROKER_TLS_NAME: 'localhost' },
      });
    }
    // Until the proxy answers for the broker (HAProxy's health checks see it up).
    for (let i = 0; i < 100; i++) {
      const ready = await requestFrom(CLIENT_B, `${publicUrl}/readyz`, { ca: stack.tls.caPem }).catch(() => undefined);
      if (ready?.status === 200) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`${proxy} never answered for the broker:\n${balancer.output()}`);
  });

  afterAll(async () => {
    await balancer?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const logged = (message: string) =>
    stack.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line['msg'] === message);

  it('gives each client its own sign-in budget, whatever X-Forwarded-For it writes', async () => {
    const statuses: number[] = [];
    for (let i = 1; i <= SIGN_IN_BURST + 1; i++) {
      const response = await requestFrom(CLIENT_A, `${publicUrl}/login`, {
        ca: stack.tls.caPem,
        // A client that claims another address on every request, hoping for a fresh budget each time.
        headers: { 'x-forwarded-for': `198.51.100.${i}`, accept: 'application/json' },
      });
      statuses.push(response.status);
    }
    expect(statuses.filter((s) => s === 303)).toHaveLength(SIGN_IN_BURST);
    expect(statuses[SIGN_IN_BURST]).toBe(429);
    // Through the same proxy, another client still signs in: the budget spent was A's, not the proxy's.
    const other = await requestFrom(CLIENT_B, `${publicUrl}/login`, { ca: stack.tls.caPem });
    expect(other.status).toBe(303);
    expect(logged('sign-in rate limit reached').map((line) => line['clientAddress'])).toEqual([CLIENT_A]);
  });

  it('names the client, not the proxy, in /mcp’s log line', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'no/such/method', params: { _meta: meta() } });
    // No token: the proxy passed the public Host (a foreign one is 403), and the challenge names the https public URL.
    const challenged = await requestFrom(CLIENT_B, `${publicUrl}/mcp`, {
      ca: stack.tls.caPem,
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body,
    });
    expect(challenged.status).toBe(401);
    expect(challenged.headers['www-authenticate']).toContain(
      `resource_metadata="${publicUrl}/.well-known/oauth-protected-resource/mcp"`,
    );
    const { fetchDevToken } = await import('../../src/cli/devToken.js');
    const token = await fetchDevToken({
      issuer: stack.dev.idp.issuer,
      resource: stack.mcpResourceUrl,
      login: 'alice',
      password: DEV_PASSWORD,
      fetch: stack.fetch,
    });
    const refused = await requestFrom(CLIENT_B, `${publicUrl}/mcp`, {
      ca: stack.tls.caPem,
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': VERSION,
        'mcp-method': 'no/such/method',
        authorization: `Bearer ${token}`,
        'x-forwarded-for': '203.0.113.66',
      },
      body,
    });
    expect(refused.text).toContain('"error"');
    expect(logged('MCP request refused').map((line) => line['clientAddress'])).toEqual([CLIENT_B]);
  });

  it('signs a user in through the proxy with Secure __Host- cookies, HSTS, and redirects to the https public URL', async () => {
    const login = await requestFrom('127.0.0.4', `${publicUrl}/login?return_to=/connections`, {
      ca: stack.tls.caPem,
    });
    expect(login.status).toBe(303);
    expect(login.headers['strict-transport-security']).toBe('max-age=31536000');
    const authorize = new URL(login.headers.location!);
    expect(authorize.origin).toBe(stack.dev.idp.issuer);
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${publicUrl}/auth/callback`);
    expect(login.headers['set-cookie']).toEqual([expect.stringMatching(/^__Host-broker_login=[^;]+;.*; Secure/)]);

    const browser = createTestBrowser({ fetch: stack.fetch });
    const form = await browser.get(`${publicUrl}/login?return_to=/connections`);
    const page = await browser.submitForm(form, { login: 'alice', password: DEV_PASSWORD });
    expect(page.status).toBe(200);
    expect(new URL(page.url).href).toBe(`${publicUrl}/connections`);
    // Every hop back to the broker was to its https public URL: the callback, then the page asked for.
    const ours = page.redirects.filter((url) => !url.startsWith(stack.dev.idp.issuer));
    expect(ours.map((url) => new URL(url).origin)).toEqual(ours.map(() => publicUrl));
    const session = browser.cookiesFor(publicUrl).find((c) => c.name === '__Host-broker_session');
    expect(session).toMatchObject({ secure: true, hostOnly: true, path: '/' });
  });
});
