import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { brokerEnv, kubernetesEnvironment, podSpecOf, type KubernetesEnvironment } from './kubernetesEnvironment.js';
import { kubernetesDir, only, renderKustomization } from './kustomize.js';

// The production rehearsal builds the broker's environment from the manifests through this helper:
// it must hand over every variable the Deployment sets, from the same values.

const key = Buffer.alloc(32, 7).toString('base64url');
const secrets = {
  DATABASE_URL: 'postgres://broker:pw@db.internal:5432/broker',
  SECRET_KEYS: `k1:${key}`,
  OIDC_CLIENT_SECRET: 'client-secret',
  GITHUB_CLIENT_SECRET: 'github-secret',
};

describe('kubernetesEnvironment', () => {
  let k8s: KubernetesEnvironment;
  beforeAll(async () => {
    k8s = await kubernetesEnvironment();
  }, 30_000);

  it("returns a value or a Secret key for every variable the Deployment's container uses, and its mounted files", async () => {
    const objects = await renderKustomization(join(kubernetesDir, 'overlays/production'));
    const container = podSpecOf(only(objects, 'Deployment', 'connect-broker')).containers[0]!;
    const used = (container.env ?? []).map((e) => e.name);
    for (const from of container.envFrom ?? [])
      used.push(...Object.keys(only(objects, 'ConfigMap', from.configMapRef!.name)['data'] as object));
    expect(used.length).toBeGreaterThan(10);
    for (const name of used) expect(name in k8s.configMap !== k8s.secretKeys.includes(name), name).toBe(true);
    expect([...Object.keys(k8s.configMap), ...k8s.secretKeys].sort()).toEqual([...new Set(used)].sort());
    expect(k8s.secretKeys.sort()).toEqual(
      [
        'DATABASE_DIRECT_URL',
        'DATABASE_URL',
        'GITHUB_CLIENT_SECRET',
        'METRICS_TOKEN',
        'OIDC_CLIENT_SECRET',
        'SECRET_KEYS',
      ].sort(),
    );
    expect(k8s.optionalSecretKeys.sort()).toEqual(['DATABASE_DIRECT_URL', 'METRICS_TOKEN']);
    expect(k8s.configMap).toMatchObject({ NODE_ENV: 'production', PUBLIC_URL: 'https://broker.example.com' });

    const overlay = (file: string) => readFileSync(join(kubernetesDir, 'overlays/production', file), 'utf8');
    expect(k8s.files).toEqual({
      [k8s.configMap['PROVIDERS_FILE']!]: overlay('providers.yaml'),
      [k8s.configMap['TOOLS_FILE']!]: overlay('tools.yaml'),
    });
    expect(k8s).toMatchObject({ port: 8443, readinessPath: '/readyz', livenessPath: '/healthz' });
  });

  it("builds a production environment loadConfig accepts from the manifests' values, the secrets and new addresses", () => {
    const env = brokerEnv(k8s, secrets, {
      PROVIDERS_FILE: '/tmp/rehearsal/providers.yaml',
      PORT: '0',
      HOST: '127.0.0.1',
    });
    const config = loadConfig(env);
    expect(config.mode).toBe('production');
    expect(config.http.publicUrl.href).toBe('https://broker.example.com/');
    expect(config.http).toMatchObject({ host: '127.0.0.1', port: 0, shutdownGraceMs: 15_000 });
    expect(config.broker.providersFile).toBe('/tmp/rehearsal/providers.yaml');
    expect(config.toolsFile).toBe(k8s.configMap['TOOLS_FILE']);
    expect(config.broker.providerSecret('GITHUB_CLIENT_SECRET')).toBe('github-secret');
  });

  it('refuses a missing Secret key, a key the Deployment does not read, and an override that is not an address', () => {
    const { SECRET_KEYS: _left, ...withoutKeys } = secrets;
    expect(() => brokerEnv(k8s, withoutKeys)).toThrow(/secrets missing \[SECRET_KEYS\]/);
    expect(() => brokerEnv(k8s, { ...secrets, WEBHOOK_SECRET: 'x'.repeat(32) })).toThrow(
      /not the Deployment's \[WEBHOOK_SECRET\]/,
    );
    const behaviour = { LOG_LEVEL: 'debug' } as unknown as Parameters<typeof brokerEnv>[2];
    expect(() => brokerEnv(k8s, secrets, behaviour)).toThrow(/not addresses \[LOG_LEVEL\]/);
  });
});
