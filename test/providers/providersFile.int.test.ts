import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseProviders, ProviderConfigError } from '../../src/providers/providerConfig.js';
import { readProvidersFile } from '../../src/providers/providersFile.js';
import { freePorts, runTs } from '../support/brokerProcess.js';
import { badProvidersFile } from '../support/providerEntries.js';
import { TEST_SELF } from '../support/brokerSelf.js';

describe('start-up with a PROVIDERS_FILE of catalog and custom entries', () => {
  it('refuses to start and lists every problem: unknown catalog id, a missing template parameter, a host the URL policy refuses, a secret missing from the environment', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'broker-providers-file-'));
    const file = join(dir, 'providers.json');
    await writeFile(file, JSON.stringify(badProvidersFile));
    const ports = await freePorts(4);
    const broker = runTs('src/main.ts', [], {
      DATA_DIR: join(dir, 'data'),
      PROVIDERS_FILE: file,
      PORT: String(ports[0]),
      DEV_IDP_PORT: String(ports[1]),
      DEV_REPORTS_PORT: String(ports[2]),
      DEV_GITHUB_PORT: String(ports[3]),
    });
    expect((await broker.exited).code).toBe(78);
    const output = broker.output();
    expect(output).toContain('Invalid provider configuration');
    expect(output).toContain('[0] (gh) catalog: "gitbub" is not in the catalog');
    expect(output).toContain('[1] (tenanted) params.tenant: is required');
    expect(output).toMatch(/\[2\] \(ghes\) authorizationEndpoint: .*looks like github\.com/);
    expect(output).toContain('[3] (github) clientSecret: the environment variable GITHUB_CLIENT_SECRET is not set');
    // Nothing was started: no database, no TLS material.
    expect(existsSync(join(dir, 'data', 'postgres'))).toBe(false);
    expect(existsSync(join(dir, 'data', 'tls'))).toBe(false);
    await rm(dir, { recursive: true, force: true });
  });

  it('reads a YAML file: one with a repeated key stops start-up, naming the line', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'broker-providers-yaml-'));
    const file = join(dir, 'providers.yaml');
    await writeFile(file, '- id: github\n  catalog: github\n  catalog: gitlab\n');
    const ports = await freePorts(4);
    const broker = runTs('src/main.ts', [], {
      DATA_DIR: join(dir, 'data'),
      PROVIDERS_FILE: file,
      PORT: String(ports[0]),
      DEV_IDP_PORT: String(ports[1]),
      DEV_REPORTS_PORT: String(ports[2]),
      DEV_GITHUB_PORT: String(ports[3]),
    });
    expect((await broker.exited).code).toBe(78);
    expect(broker.output()).toContain(
      `broker: PROVIDERS_FILE ${file} is not valid YAML: line 3, column 3: Map keys must be unique`,
    );
    expect(existsSync(join(dir, 'data', 'postgres'))).toBe(false);
    await rm(dir, { recursive: true, force: true });
  });
});

describe('readProvidersFile: a YAML or JSON PROVIDERS_FILE', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'providers-file-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const write = async (name: string, text: string) => {
    const file = join(dir, name);
    await writeFile(file, text);
    return file;
  };
  const refusal = async (file: string) => {
    const err: unknown = await readProvidersFile(file).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderConfigError);
    return (err as Error).message;
  };

  it('reads a YAML list of a catalog entry and a custom entry, which parse as providers', async () => {
    const file = await write(
      'providers.yaml',
      [
        '# committed with the deployment; the secret comes from the environment',
        '- id: github',
        '  catalog: github',
        '  clientId: Iv1.abc',
        '  clientSecret: { env: GITHUB_CLIENT_SECRET }',
        '  scopes: [repo, "read:user"]',
        '- id: acme',
        '  kind: oauth2',
        '  displayName: Acme',
        '  docs: https://acme.example.com/docs',
        '  authorizationEndpoint: https://auth.acme.example.com/authorize',
        '  tokenEndpoint: https://auth.acme.example.com/token',
        '  identity: { from: tokenResponse, subjectPath: user_id }',
        '  clientAuth: client_secret_post',
        '  pkce: true',
        '  apiBase: https://api.acme.example.com',
        '  clientId: acme',
        '  clientSecret: acme-secret',
        '',
      ].join('\n'),
    );
    const entries = await readProvidersFile(file);
    expect(entries[0]).toEqual({
      id: 'github',
      catalog: 'github',
      clientId: 'Iv1.abc',
      clientSecret: { env: 'GITHUB_CLIENT_SECRET' },
      scopes: ['repo', 'read:user'],
    });
    expect(entries[1]).toMatchObject({
      id: 'acme',
      kind: 'oauth2',
      pkce: true,
      identity: { from: 'tokenResponse', subjectPath: 'user_id' },
    });
    const providers = parseProviders(entries, {
      allowLoopback: false,
      self: TEST_SELF,
      readEnv: (name) => (name === 'GITHUB_CLIENT_SECRET' ? 'from-env' : undefined),
    });
    expect(providers.map((p) => [p.id, p.catalog, p.scopes])).toEqual([
      ['github', 'github', ['repo', 'read:user']],
      ['acme', undefined, []],
    ]);
  });

  it('reads a .yml file the same way', async () => {
    expect(await readProvidersFile(await write('short.yml', '- id: a\n  catalog: notion\n'))).toEqual([
      { id: 'a', catalog: 'notion' },
    ]);
  });

  it('refuses a YAML mapping that repeats a key, naming the file, line and column', async () => {
    const file = await write('duplicate.yaml', '- id: github\n  catalog: github\n  id: gitlab\n');
    expect(await refusal(file)).toBe(
      `PROVIDERS_FILE ${file} is not valid YAML: line 3, column 3: Map keys must be unique`,
    );
  });

  it('refuses YAML that does not parse, naming the line where the parser stopped', async () => {
    const file = await write('broken.yaml', '- id: github\n  scopes: [repo, user\n- id: acme\n');
    expect(await refusal(file)).toMatch(new RegExp(`^PROVIDERS_FILE ${file} is not valid YAML: line 3, column 1: `));
  });

  it('refuses a custom YAML tag rather than reading it as a string', async () => {
    const file = await write('tagged.yaml', '- id: github\n  clientSecret: !env GITHUB_CLIENT_SECRET\n');
    expect(await refusal(file)).toBe(
      `PROVIDERS_FILE ${file} is not valid YAML: line 2, column 17: Unresolved tag: !env (custom tags are not supported)`,
    );
  });

  it('refuses a file that holds no list', async () => {
    const yaml = await write('mapping.yaml', 'github:\n  catalog: github\n');
    expect(await refusal(yaml)).toBe(`PROVIDERS_FILE ${yaml} must hold a YAML list of providers, not a mapping`);
    const json = await write('object.json', '{"id": "github"}');
    expect(await refusal(json)).toBe(`PROVIDERS_FILE ${json} must hold a JSON array of providers, not a mapping`);
    const empty = await write('empty.yaml', '');
    expect(await refusal(empty)).toBe(`PROVIDERS_FILE ${empty} must hold a YAML list of providers, not nothing`);
  });

  it('reads any other file name as JSON', async () => {
    const file = await write('providers.conf', JSON.stringify([{ id: 'github', catalog: 'github' }]));
    expect(await readProvidersFile(file)).toEqual([{ id: 'github', catalog: 'github' }]);
  });

  it('refuses JSON that does not parse, naming the line and column', async () => {
    const file = await write('broken.json', '[\n  {"id": "github",,}\n]\n');
    expect(await refusal(file)).toBe(
      `PROVIDERS_FILE ${file} is not valid JSON: line 2, column 19: Expected double-quoted property name`,
    );
  });

  it('refuses a file that cannot be read, naming it', async () => {
    const file = join(dir, 'missing.yaml');
    expect(await refusal(file)).toMatch(new RegExp(`^PROVIDERS_FILE ${file} cannot be read: ENOENT`));
  });
});
