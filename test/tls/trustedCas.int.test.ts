import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeploymentError, deploymentCas } from '../../src/cli/deployment.js';
import { loadConfig } from '../../src/config/config.js';
import { CaFileError, readTrustedCas } from '../../src/tls/trustedCas.js';

// The CAs the service and the CLI trust beside the system roots: in development the development CA
// and TLS_CA_FILE both (a provider on a private CA can be tried with npm start), in production
// TLS_CA_FILE only; an unreadable TLS_CA_FILE is an error that names it.
describe('the CAs outbound calls trust', () => {
  let dir: string;
  const DEV_CA = '-----BEGIN CERTIFICATE-----\ndevelopment\n-----END CERTIFICATE-----\n';
  const PRIVATE_CA = '-----BEGIN CERTIFICATE-----\nprivate\n-----END CERTIFICATE-----\n';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'trusted-cas-'));
    await writeFile(join(dir, 'dev-ca.pem'), DEV_CA);
    await writeFile(join(dir, 'private-ca.pem'), PRIVATE_CA);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('trusts the development CA and TLS_CA_FILE together', async () => {
    expect(await readTrustedCas({ devCaFile: join(dir, 'dev-ca.pem'), caFile: join(dir, 'private-ca.pem') })).toEqual([
      DEV_CA,
      PRIVATE_CA,
    ]);
  });

  it('skips a development CA not written yet, and refuses an unreadable TLS_CA_FILE by name', async () => {
    expect(await readTrustedCas({ devCaFile: join(dir, 'none.pem'), caFile: undefined })).toEqual([]);
    await expect(readTrustedCas({ devCaFile: undefined, caFile: join(dir, 'none.pem') })).rejects.toThrow(
      new CaFileError(
        `TLS_CA_FILE ${join(dir, 'none.pem')} cannot be read: ENOENT: no such file or directory, open '${join(dir, 'none.pem')}'`,
      ),
    );
  });

  it('gives the CLI what npm start trusts: both in development, TLS_CA_FILE alone in production', async () => {
    const development = loadConfig({
      NODE_ENV: 'development',
      DATA_DIR: dir,
      TLS_CA_FILE: join(dir, 'private-ca.pem'),
    });
    // The development CA lives at DATA_DIR/tls/ca.pem.
    await mkdir(join(dir, 'tls'));
    await writeFile(join(dir, 'tls', 'ca.pem'), DEV_CA);
    expect(await deploymentCas(development)).toEqual([DEV_CA, PRIVATE_CA]);
    const missing = loadConfig({ NODE_ENV: 'development', DATA_DIR: dir, TLS_CA_FILE: join(dir, 'gone.pem') });
    await expect(deploymentCas(missing)).rejects.toBeInstanceOf(DeploymentError);
  });
});
