import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePorts, runTs } from '../support/brokerProcess.js';
import { badProvidersFile } from '../support/providerEntries.js';

describe('start-up with a PROVIDERS_FILE of catalog and custom entries', () => {
  it('refuses to start and lists every problem: unknown catalog id, a missing template parameter, a host the URL policy refuses, a secret missing from the environment', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'broker-providers-file-'));
    const file = join(dir, 'providers.json');
    await writeFile(file, JSON.stringify(badProvidersFile));
    const ports = await freePorts(3);
    const broker = runTs('src/main.ts', [], { DATA_DIR: join(dir, 'data'), PROVIDERS_FILE: file, PORT: String(ports[0]), DEV_IDP_PORT: String(ports[1]), DEV_REPORTS_PORT: String(ports[2]) });
    expect((await broker.exited).code).toBe(78);
    const output = broker.output();
    expect(output).toContain('Invalid provider configuration');
    expect(output).toContain('[0] (gh) catalog: "gitbub" is not in the catalog');
    expect(output).toContain('[1] (tenanted) params.tenant: is required');
    expect(output).toMatch(/\[2\] \(ghes\) authorizationEndpoint: .*punycode/);
    expect(output).toContain('[3] (github) clientSecret: the environment variable GITHUB_CLIENT_SECRET is not set');
    // Nothing was started: no database, no TLS material.
    expect(existsSync(join(dir, 'data', 'postgres'))).toBe(false);
    expect(existsSync(join(dir, 'data', 'tls'))).toBe(false);
    await rm(dir, { recursive: true, force: true });
  });
});
