import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { configProblems as problemsOf, PRODUCTION_ENV as production } from '../support/productionSettings.js';

const key = Buffer.alloc(32, 7).toString('base64url');

describe('loadConfig', () => {
  it('runs with no configuration in development, on https://127.0.0.1:8443', () => {
    const config = loadConfig({});
    expect(config.mode).toBe('development');
    expect(config.http.publicUrl.href).toBe('https://127.0.0.1:8443/');
    expect(config.http.mcpResourceUrl).toBe('https://127.0.0.1:8443/mcp');
    expect(config.db.url).toBeUndefined();
    expect(config.dev).toEqual({
      idpPort: 8444,
      reportsPort: 8445,
      githubPort: 8446,
      upstreamPort: 8447,
      allowNetwork: false,
      secretFormTool: false,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('reads PROVIDERS_FILE client secrets named by environment variable from the environment it was given', () => {
    const config = loadConfig({
      PROVIDERS_FILE: '/etc/broker/providers.json',
      GITHUB_CLIENT_SECRET: 'from-the-environment',
    });
    expect(config.broker.providersFile).toBe('/etc/broker/providers.json');
    expect(config.broker.providerSecret('GITHUB_CLIENT_SECRET')).toBe('from-the-environment');
    expect(JSON.stringify(config)).not.toContain('from-the-environment');
  });

  it('lets PORT move the broker and the development servers beside it', () => {
    const config = loadConfig({ PORT: '9443' });
    expect(config.http.publicUrl.href).toBe('https://127.0.0.1:9443/');
    expect(config.dev).toEqual({
      idpPort: 9444,
      reportsPort: 9445,
      githubPort: 9446,
      upstreamPort: 9447,
      allowNetwork: false,
      secretFormTool: false,
    });
  });

  it('development mode is not served on a non-loopback HOST unless DEV_ALLOW_NETWORK=true says so', () => {
    for (const NODE_ENV of ['development', 'test']) {
      expect(problemsOf({ NODE_ENV, HOST: '0.0.0.0' })).toEqual([
        expect.stringMatching(/^HOST: is 0\.0\.0\.0, but .* loopback only.*DEV_ALLOW_NETWORK=true/),
      ]);
      expect(problemsOf({ NODE_ENV, HOST: '192.168.1.10', DEV_ALLOW_NETWORK: 'false' })[0]).toMatch(/^HOST: /);
    }
    expect(loadConfig({ HOST: '::1' }).dev.allowNetwork).toBe(false);
    expect(loadConfig({ HOST: '0.0.0.0', DEV_ALLOW_NETWORK: 'true' }).dev.allowNetwork).toBe(true);
    expect(loadConfig({ ...production, HOST: '0.0.0.0' }).http.host).toBe('0.0.0.0');
    expect(problemsOf({ ...production, DEV_ALLOW_NETWORK: 'true' })).toEqual([
      'DEV_ALLOW_NETWORK: is a development setting',
    ]);
  });

  it('DEV_SECRET_FORM_TOOL (the gates suite’s form asking for a password) is off by default and refused in production', () => {
    expect(loadConfig({}).dev.secretFormTool).toBe(false);
    expect(loadConfig({ DEV_SECRET_FORM_TOOL: 'true' }).dev.secretFormTool).toBe(true);
    expect(problemsOf({ ...production, DEV_SECRET_FORM_TOOL: 'true' })).toEqual([
      'DEV_SECRET_FORM_TOOL: is a development setting',
    ]);
  });

  it('reports every invalid variable together', () => {
    const problems = problemsOf({
      PORT: 'eighty',
      PUBLIC_URL: 'http://broker.example.com',
      DATABASE_URL: 'mysql://x',
      SECRET_KEYS: 'k1:short',
      LOG_LEVEL: 'loud',
    });
    expect(problems.map((p) => p.split(':')[0])).toEqual([
      'PORT',
      'PUBLIC_URL',
      'DATABASE_URL',
      'SECRET_KEYS',
      'LOG_LEVEL',
    ]);
  });

  it('accepts a complete production configuration', () => {
    const config = loadConfig(production);
    expect(config.mode).toBe('production');
    expect(config.secretKeys?.map((k) => k.kid)).toEqual(['k1']);
  });

  it('takes SECRET_KEYS in order, the first active, and refuses a key id named twice', () => {
    const other = Buffer.alloc(32, 9).toString('base64url');
    expect(loadConfig({ ...production, SECRET_KEYS: `k2:${other},k1:${key}` }).secretKeys?.map((k) => k.kid)).toEqual([
      'k2',
      'k1',
    ]);
    // Same id, different material: what k1 sealed would be opened with the other key.
    expect(problemsOf({ ...production, SECRET_KEYS: `k1:${other},k2:${key},k1:${key}` })).toEqual([
      'SECRET_KEYS: names key id k1 more than once; each key needs an id of its own',
    ]);
    const problems = problemsOf({ SECRET_KEYS: `k1:${key}, k1:${key}` });
    expect(problems).toEqual([expect.stringMatching(/^SECRET_KEYS: names key id k1 more than once/)]);
    expect(problems.join('\n')).not.toContain(key);
  });

  it('refuses production without an https PUBLIC_URL, an external issuer and explicit key material', () => {
    const problems = problemsOf({ NODE_ENV: 'production' });
    for (const name of [
      'PUBLIC_URL',
      'OIDC_ISSUER',
      'OIDC_CLIENT_SECRET',
      'SECRET_KEYS',
      'DATABASE_URL',
      'TLS_CERT_FILE',
      'TLS_KEY_FILE',
    ]) {
      expect(
        problems.some((p) => p.startsWith(`${name}:`)),
        name,
      ).toBe(true);
    }
  });

  it('refuses a plain-http public URL and a loopback issuer in production', () => {
    const problems = problemsOf({
      ...production,
      PUBLIC_URL: 'http://broker.example.com',
      OIDC_ISSUER: 'https://127.0.0.1:8444',
    });
    expect(problems).toEqual([
      expect.stringMatching(/^PUBLIC_URL: must be an https/),
      expect.stringMatching(/^OIDC_ISSUER: must be an external issuer/),
    ]);
  });

  it('refuses a loopback PUBLIC_URL in production, naming the sign-in redirect URI it would give', () => {
    for (const publicUrl of ['https://127.0.0.1:8443', 'https://localhost', 'https://[::1]:8443']) {
      const problems = problemsOf({ ...production, PUBLIC_URL: publicUrl });
      expect(problems, publicUrl).toEqual([
        `PUBLIC_URL: is loopback (${publicUrl}), but production sign-in refuses a loopback redirect URI (${new URL('/auth/callback', publicUrl).href}): set it to the https address users reach the broker at`,
      ]);
    }
    // Outside production a loopback PUBLIC_URL is the normal case.
    expect(loadConfig({ PUBLIC_URL: 'https://127.0.0.1:8443' }).http.publicUrl.href).toBe('https://127.0.0.1:8443/');
  });

  it('refuses a PUBLIC_URL in production whose redirect URI the sign-in URL policy refuses, and takes an IP address', () => {
    const problems = problemsOf({ ...production, PUBLIC_URL: 'https://user:pw@broker.example.com' });
    expect(problems).toEqual([expect.stringMatching(/^PUBLIC_URL: gives a sign-in redirect URI that /)]);
    expect(loadConfig({ ...production, PUBLIC_URL: 'https://10.0.0.5' }).http.publicUrl.host).toBe('10.0.0.5');
  });

  it('lists problems of both kinds in one error', () => {
    const problems = problemsOf({ NODE_ENV: 'production', PORT: '-1' });
    expect(problems[0]).toMatch(/^PORT:/);
    expect(problems.some((p) => p.startsWith('SECRET_KEYS:'))).toBe(true);
  });

  it('takes METRICS_TOKEN as a secret of 32 or more printable characters, unset by default', () => {
    expect(loadConfig({}).metrics.token).toBeUndefined();
    const token = 'metrics-token-canary-0123456789abcdef';
    const config = loadConfig({ ...production, METRICS_TOKEN: token });
    expect(config.metrics.token?.reveal()).toBe(token);
    expect(JSON.stringify(config)).not.toContain(token);
    expect(problemsOf({ METRICS_TOKEN: 'too-short' })).toEqual([
      expect.stringMatching(/^METRICS_TOKEN: must be at least 32 characters/),
    ]);
    expect(problemsOf({ METRICS_TOKEN: 'has a space in it, which no header value wants' })).toEqual([
      expect.stringMatching(/^METRICS_TOKEN: must be printable ASCII/),
    ]);
  });

  it('opens GET /metrics without METRICS_TOKEN outside production only (main.ts passes the slice as it is)', () => {
    expect(loadConfig({}).metrics.openWithoutToken).toBe(true);
    expect(loadConfig({ NODE_ENV: 'test' }).metrics.openWithoutToken).toBe(true);
    expect(loadConfig(production).metrics.openWithoutToken).toBe(false);
  });

  it('takes a webhook as its https URL and its signing secret together, the URL through the URL policy', () => {
    expect(loadConfig({}).webhook).toBeUndefined();
    const secret = 'webhook-secret-canary-0123456789abcdef';
    const config = loadConfig({
      ...production,
      WEBHOOK_URL: 'https://hooks.example.com/broker',
      WEBHOOK_SECRET: secret,
    });
    expect(config.webhook?.url.href).toBe('https://hooks.example.com/broker');
    expect(config.webhook?.secret.reveal()).toBe(secret);
    expect(JSON.stringify(config)).not.toContain(secret);
    // Loopback receivers outside production only (the tests' own).
    expect(loadConfig({ WEBHOOK_URL: 'https://127.0.0.1:9443/hooks', WEBHOOK_SECRET: secret }).webhook).toBeDefined();
    expect(problemsOf({ ...production, WEBHOOK_URL: 'https://127.0.0.1:9443/hooks', WEBHOOK_SECRET: secret })).toEqual([
      expect.stringMatching(/^WEBHOOK_URL: URL points at a loopback host/),
    ]);
    expect(problemsOf({ WEBHOOK_URL: 'http://hooks.example.com/broker', WEBHOOK_SECRET: secret })).toEqual([
      expect.stringMatching(/^WEBHOOK_URL: URL must use https/),
    ]);
    expect(problemsOf({ WEBHOOK_URL: 'https://hooks.example.com/?token=abc', WEBHOOK_SECRET: secret })).toEqual([
      expect.stringMatching(/^WEBHOOK_URL: URL carries a credential in its query/),
    ]);
    expect(problemsOf({ WEBHOOK_URL: 'https://hooks.example.com/broker' })).toEqual([
      'WEBHOOK_SECRET: is required with WEBHOOK_URL',
    ]);
    expect(problemsOf({ WEBHOOK_SECRET: secret })).toEqual(['WEBHOOK_URL: is required with WEBHOOK_SECRET']);
  });

  it('takes WEBHOOK_SECRET_PREVIOUS for a rotation: with WEBHOOK_SECRET, under the same rules, not the same value', () => {
    const url = { WEBHOOK_URL: 'https://hooks.example.com/broker' };
    const secret = 'webhook-secret-canary-0123456789abcdef';
    const previous = 'webhook-previous-canary-0123456789abcdef';
    expect(loadConfig({ ...url, WEBHOOK_SECRET: secret }).webhook?.previousSecret).toBeUndefined();
    expect(
      loadConfig({
        ...url,
        WEBHOOK_SECRET: secret,
        WEBHOOK_SECRET_PREVIOUS: previous,
      }).webhook?.previousSecret?.reveal(),
    ).toBe(previous);
    expect(problemsOf({ ...url, WEBHOOK_SECRET_PREVIOUS: previous })).toContain(
      'WEBHOOK_SECRET: is required with WEBHOOK_SECRET_PREVIOUS',
    );
    expect(problemsOf({ ...url, WEBHOOK_SECRET: secret, WEBHOOK_SECRET_PREVIOUS: secret })).toEqual([
      'WEBHOOK_SECRET_PREVIOUS: is WEBHOOK_SECRET itself',
    ]);
    expect(problemsOf({ ...url, WEBHOOK_SECRET: secret, WEBHOOK_SECRET_PREVIOUS: 'short' })).toEqual([
      'WEBHOOK_SECRET_PREVIOUS: must be at least 32 characters',
    ]);
  });

  it('takes WEBHOOK_SECRET of 32 characters or more, or in the Standard Webhooks form whsec_<base64 of 24 to 64 bytes>', () => {
    const url = { WEBHOOK_URL: 'https://hooks.example.com/broker' };
    const whsec = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
    expect(loadConfig({ ...url, WEBHOOK_SECRET: whsec }).webhook?.secret.reveal()).toBe(whsec);
    expect(problemsOf({ ...url, WEBHOOK_SECRET: 'too-short' })).toEqual([
      'WEBHOOK_SECRET: must be at least 32 characters',
    ]);
    for (const bad of [`whsec_${Buffer.alloc(16).toString('base64')}AAAAAAAA`, `whsec_${'*'.repeat(40)}`])
      expect(problemsOf({ ...url, WEBHOOK_SECRET: bad })).toEqual([
        expect.stringMatching(/^WEBHOOK_SECRET: must be whsec_ and the base64 of 24 to 64 bytes/),
      ]);
  });

  it('reads who is an operator, the CLI operator token and the high-risk tools', () => {
    const defaults = loadConfig({});
    expect(defaults.operators).toEqual({ roleClaim: 'roles', role: 'operator' });
    expect(defaults.highRiskTools).toEqual([]);
    expect(defaults.cli.operatorToken).toBeUndefined();
    const config = loadConfig({
      OPERATOR_ROLE_CLAIM: 'realm_access.roles',
      OPERATOR_ROLE: 'broker-ops',
      HIGH_RISK_TOOLS: 'reports_create, payments_send',
      BROKER_OPERATOR_TOKEN: 'operator-token-canary',
    });
    expect(config.operators).toEqual({ roleClaim: 'realm_access.roles', role: 'broker-ops' });
    expect(config.highRiskTools).toEqual(['reports_create', 'payments_send']);
    expect(config.cli.operatorToken?.reveal()).toBe('operator-token-canary');
    expect(JSON.stringify(config)).not.toContain('operator-token-canary');
    expect(
      problemsOf({ OPERATOR_ROLE_CLAIM: 'roles with spaces', HIGH_RISK_TOOLS: 'reports_create,,x' }).map(
        (p) => p.split(':')[0],
      ),
    ).toEqual(['OPERATOR_ROLE_CLAIM', 'HIGH_RISK_TOOLS']);
  });

  it('bounds legacy sessions and sign-in requests by default, and refuses an idle limit shorter than a session in use', () => {
    const config = loadConfig({});
    expect(config.legacy.limits).toEqual({
      maxSessions: 10_000,
      maxSessionsPerPrincipal: 20,
      idleMs: 1_800_000,
      heartbeatMs: 15_000,
      streamMaxMs: 600_000,
      watchersPerSession: 10,
    });
    expect(config.login.rateLimit).toEqual({ burst: 60, perMinute: 60 });
    expect(loadConfig({ LEGACY_MAX_SESSIONS_PER_PRINCIPAL: '3', LOGIN_RATE_PER_MINUTE: '10' })).toMatchObject({
      legacy: { limits: { maxSessionsPerPrincipal: 3 } },
      login: { rateLimit: { perMinute: 10 } },
    });
    expect(problemsOf({ LEGACY_SESSION_IDLE_SECONDS: '300' })).toEqual([
      'LEGACY_SESSION_IDLE_SECONDS: must be longer than twice LEGACY_WAIT_MS and longer than LEGACY_STREAM_MAX_SECONDS',
    ]);
    expect(
      problemsOf({ LEGACY_SESSION_IDLE_SECONDS: '700', LEGACY_STREAM_MAX_SECONDS: '800' }).map((p) => p.split(':')[0]),
    ).toEqual(['LEGACY_SESSION_IDLE_SECONDS']);
    expect(problemsOf({ LEGACY_MAX_SESSIONS: '0', LOGIN_RATE_BURST: 'x' }).map((p) => p.split(':')[0])).toEqual([
      'LEGACY_MAX_SESSIONS',
      'LOGIN_RATE_BURST',
    ]);
  });

  it('bounds each request to a provider and to an upstream MCP server apart, 10 s each by default', () => {
    const defaults = loadConfig({ NODE_ENV: 'development' });
    expect([defaults.broker.providerTimeoutMs, defaults.broker.upstreamTimeoutMs]).toEqual([10_000, 10_000]);
    const set = loadConfig({ NODE_ENV: 'development', PROVIDER_TIMEOUT_MS: '2500', UPSTREAM_TIMEOUT_MS: '60000' });
    expect([set.broker.providerTimeoutMs, set.broker.upstreamTimeoutMs]).toEqual([2_500, 60_000]);
    expect(problemsOf({ PROVIDER_TIMEOUT_MS: '50' }).map((p) => p.split(':')[0])).toEqual(['PROVIDER_TIMEOUT_MS']);
  });

  it('never shows secrets when the config is printed', () => {
    const config = loadConfig(production);
    const printed = JSON.stringify(config) + String(config.oidc.clientSecret);
    expect(printed).not.toContain('client-secret-canary');
    expect(printed).not.toContain(key);
    expect(printed).not.toContain('pw@');
    expect(config.oidc.clientSecret?.reveal()).toBe('client-secret-canary');
  });
});
