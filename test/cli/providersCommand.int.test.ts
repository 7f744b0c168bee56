import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadOrCreateLocalTls } from '../../src/tls/localCa.js';
import { freePorts, runTs } from '../support/brokerProcess.js';
import { plainProviderEntry, startPlainOAuthServer, type PlainOAuthServer } from '../support/plainOAuthServer.js';
import { loadOrCreateDevSecrets } from '../../src/dev/devSecrets.js';

// `broker providers list|check` as an operator runs it: a separate process, configured
// through the environment only (PROVIDERS_FILE, PUBLIC_URL, DATA_DIR, the secrets).

const GITHUB_SECRET = 'github-secret-canary-7f3a';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'broker-providers-cli-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function providersFile(name: string, entries: unknown[]): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, name.endsWith('.json') ? JSON.stringify(entries) : stringify(entries));
  return file;
}

/** Runs `broker providers …`; stdout apart from the whole output (stderr's notes and errors too). */
async function providers(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; output: string }> {
  const run = runTs('src/cli/broker.ts', ['providers', ...args], {
    NODE_ENV: 'development',
    DATA_DIR: join(dir, 'no-data'),
    ...env,
  });
  let stdout = '';
  run.child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  return { code: (await run.exited).code, stdout, output: run.output() };
}

const catalogEntry = {
  id: 'github',
  catalog: 'github',
  clientId: 'Iv1.abc',
  clientSecret: { env: 'GITHUB_CLIENT_SECRET' },
  scopes: ['repo', 'read:user'],
};
const customEntry = {
  id: 'acme',
  kind: 'oauth2',
  displayName: 'Acme Tickets',
  docs: 'https://acme.example.com/docs/oauth',
  authorizationEndpoint: 'https://auth.acme.example.com/authorize',
  tokenEndpoint: 'https://auth.acme.example.com/token',
  identity: { from: 'call', method: 'GET', url: 'https://api.acme.example.com/me', subjectPath: 'id' },
  clientAuth: 'client_secret_post',
  pkce: true,
  apiBase: 'https://api.acme.example.com',
  clientId: 'acme-client',
  clientSecret: 'acme-secret-canary-91c2',
  scopes: ['tickets:read', 'tickets:write'],
};

describe('broker providers list', () => {
  it('lists a catalog and a custom entry of a YAML file with the callback URL to register and the scopes, and says how development providers are listed', async () => {
    const file = await providersFile('providers.yaml', [catalogEntry, customEntry]);
    const run = await providers(['list'], {
      PROVIDERS_FILE: file,
      PUBLIC_URL: 'https://broker.example.test',
      GITHUB_CLIENT_SECRET: GITHUB_SECRET,
    });
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^id\s+name\s+source\s+kind\s+callback URL\s+scopes$/);
    expect(lines[2]).toMatch(
      /^github\s+GitHub\s+catalog:github\s+oauth2\s+https:\/\/broker\.example\.test\/oauth\/callback\/github\s+repo read:user$/,
    );
    expect(lines[3]).toMatch(
      /^acme\s+Acme Tickets\s+custom\s+oauth2\s+https:\/\/broker\.example\.test\/oauth\/callback\/acme\s+tickets:read tickets:write$/,
    );
    expect(lines).toHaveLength(4);
    expect(run.output).toContain(
      'the development providers npm start adds (the Report Service, a GitHub-like provider, the memo upstream) are listed as development once it has run',
    );
    expect(run.output).not.toContain(GITHUB_SECRET);
    expect(run.output).not.toContain(customEntry.clientSecret);
  });

  it('lists the development providers npm start adds, marked as such, beside the file (its github in place of theirs)', async () => {
    // What npm start leaves in its data folder: the development secrets the providers are built with.
    const dataDir = join(dir, 'started');
    await mkdir(dataDir);
    await loadOrCreateDevSecrets(dataDir);
    const file = await providersFile('with-dev.yaml', [catalogEntry]);
    const run = await providers(['list', '--json'], {
      DATA_DIR: dataDir,
      PROVIDERS_FILE: file,
      PUBLIC_URL: 'https://127.0.0.1:8443',
      GITHUB_CLIENT_SECRET: GITHUB_SECRET,
    });
    expect(run.code).toBe(0);
    const rows = JSON.parse(run.stdout) as { id: string; source: string }[];
    expect(rows.map((r) => [r.id, r.source])).toEqual([
      ['memo', 'development'],
      ['reports', 'development'],
      ['github', 'catalog:github'],
    ]);
    // Without a PROVIDERS_FILE, the development ones alone: no "not set" message when there are some.
    const bare = await providers(['list'], { DATA_DIR: dataDir, PUBLIC_URL: 'https://127.0.0.1:8443' });
    expect(bare.code).toBe(0);
    expect(bare.stdout).toMatch(/^reports\s+Report Service\s+development\s+/m);
    expect(bare.stdout).toMatch(/^github\s+.*\s+development\s+/m);
    expect(bare.stdout).not.toContain('PROVIDERS_FILE is not set');
  });

  it('prints the same as JSON with --json', async () => {
    const file = await providersFile('providers.json', [catalogEntry, customEntry]);
    const run = await providers(['list', '--json'], {
      PROVIDERS_FILE: file,
      PUBLIC_URL: 'https://broker.example.test',
      GITHUB_CLIENT_SECRET: GITHUB_SECRET,
    });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual([
      {
        id: 'github',
        displayName: 'GitHub',
        source: 'catalog:github',
        kind: 'oauth2',
        callbackUrl: 'https://broker.example.test/oauth/callback/github',
        scopes: ['repo', 'read:user'],
      },
      {
        id: 'acme',
        displayName: 'Acme Tickets',
        source: 'custom',
        kind: 'oauth2',
        callbackUrl: 'https://broker.example.test/oauth/callback/acme',
        scopes: ['tickets:read', 'tickets:write'],
      },
    ]);
    expect(run.output).not.toContain(GITHUB_SECRET);
  });

  it('exits 1 on a bad file and lists every problem: an unknown catalog id and a secret missing from the environment', async () => {
    const file = await providersFile('bad.yaml', [
      { ...catalogEntry, id: 'gh', catalog: 'gitbub' },
      customEntry,
      { ...catalogEntry, clientSecret: { env: 'UNSET_GITHUB_SECRET' } },
    ]);
    const run = await providers(['list'], { PROVIDERS_FILE: file });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.output).toContain('Invalid provider configuration');
    expect(run.output).toContain('[0] (gh) catalog: "gitbub" is not in the catalog');
    expect(run.output).toContain('[2] (github) clientSecret: the environment variable UNSET_GITHUB_SECRET is not set');
  });

  it('exits 1 on a YAML file that does not parse, naming the file and the line', async () => {
    const file = join(dir, 'broken.yml');
    await writeFile(file, '- id: acme\n  id: again\n');
    const run = await providers(['list'], { PROVIDERS_FILE: file });
    expect(run.code).toBe(1);
    expect(run.output).toContain(`PROVIDERS_FILE ${file} is not valid YAML: line 2, column 3: Map keys must be unique`);
  });
});

describe('broker providers check', () => {
  let data: string;
  let plain: PlainOAuthServer;

  beforeAll(async () => {
    // DATA_DIR's tls/ca.pem is the CA the plain server's certificate is issued by, as under `npm start`.
    data = join(dir, 'data');
    const tls = await loadOrCreateLocalTls(join(data, 'tls'));
    plain = await startPlainOAuthServer({ tls, redirectUri: 'https://127.0.0.1:8443/oauth/callback/plain' });
  });
  afterAll(async () => {
    await plain?.close();
  });

  it('discovers the endpoints of an RFC 8414 entry and an OpenID Connect entry from a real server and passes an explicit entry without a request', async () => {
    const discovered = plainProviderEntry(plain, { metadataDiscovery: true });
    const oidc = {
      ...discovered,
      id: 'plainoidc',
      kind: 'oidc',
      metadataDiscovery: false,
      identity: { from: 'idToken' },
    };
    const file = await providersFile('check-ok.yaml', [discovered, oidc, customEntry]);
    const run = await providers(['check'], { PROVIDERS_FILE: file, DATA_DIR: data });
    expect(run.code).toBe(0);
    const host = new URL(plain.issuer).host;
    expect(run.stdout).toMatch(
      new RegExp(`^plain\\s+ok \\(discovered; authorization endpoint on https://${host}\\)$`, 'm'),
    );
    expect(run.stdout).toMatch(
      new RegExp(`^plainoidc\\s+ok \\(discovered; authorization endpoint on https://${host}\\)$`, 'm'),
    );
    expect(run.stdout).toMatch(/^acme\s+ok \(explicit endpoints, no discovery\)$/m);
    expect(run.output).not.toContain(plain.clientSecret);
  });

  it('reports a discovery URL where nothing listens, with the reason, and exits 1', async () => {
    const [port] = await freePorts(1);
    const nowhere = `https://127.0.0.1:${port}`;
    const entry = {
      ...plainProviderEntry(plain, { metadataDiscovery: true }),
      id: 'gone',
      issuer: nowhere,
      authorizationEndpoint: `${nowhere}/auth`,
      tokenEndpoint: `${nowhere}/token`,
      apiBase: `${nowhere}/api`,
    };
    const file = await providersFile('check-down.json', [
      entry,
      plainProviderEntry(plain, { metadataDiscovery: true }),
    ]);
    const run = await providers(['check', '--json'], { PROVIDERS_FILE: file, DATA_DIR: data });
    expect(run.code).toBe(1);
    const checks = JSON.parse(run.stdout) as { id: string; ok: boolean; result: string }[];
    expect(checks).toEqual([
      {
        id: 'gone',
        ok: false,
        result: expect.stringContaining(
          `discovery from ${nowhere} failed: The authorization server could not be reached.`,
        ),
      },
      { id: 'plain', ok: true, result: expect.stringMatching(/^ok \(discovered;/) },
    ]);
    expect(checks[0]!.result).toContain('ECONNREFUSED');
    expect(run.output).not.toContain(plain.clientSecret);
  });

  it('refuses a server whose certificate is not from a CA it trusts: without DATA_DIR/tls/ca.pem, discovery fails', async () => {
    const file = await providersFile('check-untrusted.yaml', [plainProviderEntry(plain, { metadataDiscovery: true })]);
    const run = await providers(['check'], { PROVIDERS_FILE: file });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^plain\s+discovery from https:\/\/127\.0\.0\.1:\d+ failed: .*certificate/m);
  });

  it('exits 1 on a file with problems, listing every one and checking none', async () => {
    const file = await providersFile('check-bad.yaml', [
      { ...catalogEntry, id: 'gh', catalog: 'gitbub' },
      { ...catalogEntry, clientSecret: { env: 'UNSET_GITHUB_SECRET' } },
      plainProviderEntry(plain, { metadataDiscovery: true }),
    ]);
    const run = await providers(['check'], { PROVIDERS_FILE: file, DATA_DIR: data });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.output).toContain('[0] (gh) catalog: "gitbub" is not in the catalog');
    expect(run.output).toContain('[1] (github) clientSecret: the environment variable UNSET_GITHUB_SECRET is not set');
  });
});
