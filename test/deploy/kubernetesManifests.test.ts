import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as models from 'kubernetes-models';
import type { IContainer, IPodSpec } from 'kubernetes-models/v1';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { SETTING_NAMES } from '../../src/config/config.js';
import { environmentOf, podSpecOf } from '../support/kubernetesEnvironment.js';
import { kubernetesDir, only, renderKustomization, type K8sObject } from '../support/kustomize.js';

// The manifests operators apply, rendered as they render them (`kubectl kustomize`, offline) and
// checked against the Kubernetes API's schemas and the broker's own configuration schema.

type Validating = { kind?: string; new (data: unknown): { validate(): void } };

/** The kubernetes-models class of an apiVersion and kind: `networking.k8s.io/v1` is `networkingK8sIo.v1`. */
function modelOf(apiVersion: string, kind: string): Validating | undefined {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  const groupName = (group ?? '')
    .split('.')
    .map((part, i) => (i === 0 ? part : part[0]!.toUpperCase() + part.slice(1)));
  const byGroup = models as unknown as Record<string, Record<string, Record<string, Validating>>>;
  const versions =
    group === '' ? { v1: byGroup['v1'] as unknown as Record<string, Validating> } : byGroup[groupName.join('')];
  const model = versions?.[version ?? '']?.[kind];
  return model && model.kind === kind ? model : undefined;
}

/** Every object's problems: a kind the API does not define, or what its schema refuses. */
function schemaProblems(objects: K8sObject[]): string[] {
  return objects.flatMap((o) => {
    const model = modelOf(o.apiVersion, o.kind);
    if (!model) return [`${o.apiVersion} ${o.kind} ${o.metadata.name}: not a Kubernetes API kind`];
    try {
      new model(o).validate();
      return [];
    } catch (err) {
      return [`${o.kind} ${o.metadata.name}: ${(err as Error).message}`];
    }
  });
}

const workloads = (objects: K8sObject[]) => objects.filter((o) => o.kind === 'Deployment' || o.kind === 'Job');
const containersOf = (pod: IPodSpec): IContainer[] => [...(pod.initContainers ?? []), ...pod.containers];

/** The `{ env: NAME }` client secrets of the PROVIDERS_FILE a workload mounts: variables the broker reads too. */
function providerSecretNames(objects: K8sObject[]): string[] {
  const names: string[] = [];
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(walk);
    else if (value !== null && typeof value === 'object') {
      const env = (value as { env?: unknown }).env;
      if (typeof env === 'string' && Object.keys(value).length === 1) names.push(env);
      else Object.values(value).forEach(walk);
    }
  };
  for (const workload of workloads(objects)) {
    const k8s = environmentOf(objects, workload);
    const file = k8s.configMap['PROVIDERS_FILE'];
    if (file && k8s.files[file] !== undefined) walk(parse(k8s.files[file]));
  }
  return names;
}

/** Variables the workloads name (env, envFrom ConfigMap keys) that the broker does not read. */
function unknownVariables(objects: K8sObject[]): string[] {
  const known = new Set([...SETTING_NAMES, ...providerSecretNames(objects)]);
  const problems: string[] = [];
  for (const workload of workloads(objects)) {
    for (const container of containersOf(podSpecOf(workload))) {
      const names = (container.env ?? []).map((e) => e.name);
      for (const from of container.envFrom ?? []) {
        if (from.secretRef) problems.push(`${workload.metadata.name}: envFrom Secret ${from.secretRef.name}`);
        const map = from.configMapRef && only(objects, 'ConfigMap', from.configMapRef.name);
        names.push(...Object.keys((map?.['data'] as object | undefined) ?? {}).map((k) => `${from.prefix ?? ''}${k}`));
      }
      problems.push(...names.filter((n) => !known.has(n)).map((n) => `${workload.metadata.name}: ${n}`));
    }
  }
  return problems;
}

const matches = (selector: Record<string, string>, labels: Record<string, string> | undefined) =>
  Object.entries(selector).every(([k, v]) => labels?.[k] === v);

describe('deploy/kubernetes', () => {
  let base: K8sObject[];
  let production: K8sObject[];
  beforeAll(async () => {
    base = await renderKustomization(join(kubernetesDir, 'base'));
    production = await renderKustomization(join(kubernetesDir, 'overlays/production'));
  }, 30_000);

  const deployment = () => only(production, 'Deployment', 'connect-broker');
  const pod = () => podSpecOf(deployment());
  const broker = () => pod().containers[0]!;
  const settings = () => environmentOf(production, deployment()).configMap;
  const labelsOf = (workload: K8sObject) =>
    (workload['spec'] as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels;
  const podLabels = () => labelsOf(deployment());

  it('renders the base and the production overlay, every object valid against the Kubernetes API schemas', () => {
    expect(schemaProblems(base)).toEqual([]);
    expect(schemaProblems(production)).toEqual([]);
    expect(production.map((o) => o.kind).sort()).toEqual(
      [
        'ConfigMap',
        'ConfigMap',
        'Deployment',
        'Ingress',
        'Job',
        'NetworkPolicy',
        'PodDisruptionBudget',
        'Service',
        'ServiceAccount',
      ].sort(),
    );
    expect(production.every((o) => o.metadata.namespace === 'connect-broker')).toBe(true);
  });

  it('refuses a kind the Kubernetes API does not define and an object its schema refuses', () => {
    const certificate = { apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: { name: 'c' } };
    const typo = { apiVersion: 'apps/v1', kind: 'Deploymnet', metadata: { name: 't' } };
    const bad = structuredClone(deployment());
    (podSpecOf(bad).containers[0]!.ports![0] as { containerPort: unknown }).containerPort = 'https';
    expect(schemaProblems([certificate, typo, bad])).toEqual([
      'cert-manager.io/v1 Certificate c: not a Kubernetes API kind',
      'apps/v1 Deploymnet t: not a Kubernetes API kind',
      expect.stringMatching(/^Deployment connect-broker: .*containerPort must be integer/),
    ]);
  });

  it('names only variables the configuration schema reads, and the provider secrets PROVIDERS_FILE names', () => {
    expect(unknownVariables(base)).toEqual([]);
    expect(unknownVariables(production)).toEqual([]);
    expect(providerSecretNames(production)).toEqual(['GITHUB_CLIENT_SECRET']);

    const planted = structuredClone(production);
    podSpecOf(only(planted, 'Job')).containers[0]!.env!.push({ name: 'DATABASE_PASSWORD', value: 'x' });
    const map = only(planted, 'ConfigMap', broker().envFrom![0]!.configMapRef!.name);
    (map['data'] as Record<string, string>)['SHUTDOWN_GRACE_SECONDS'] = '15';
    expect(unknownVariables(planted)).toEqual([
      'connect-broker: SHUTDOWN_GRACE_SECONDS',
      'connect-broker-migrate: DATABASE_PASSWORD',
      'connect-broker-migrate: SHUTDOWN_GRACE_SECONDS',
    ]);
  });

  it('fails, naming what to install, when kubectl is missing', async () => {
    await expect(renderKustomization(join(kubernetesDir, 'base'), '/nonexistent/kubectl')).rejects.toThrow(
      /kubectl not found \(\/nonexistent\/kubectl\).*install kubectl/,
    );
  });

  it('runs three replicas, ready on /readyz, live on /healthz, and drains longer than the broker waits', () => {
    const spec = deployment()['spec'] as { replicas: number; strategy: { rollingUpdate: { maxUnavailable: number } } };
    expect(spec.replicas).toBe(3);
    expect(spec.strategy.rollingUpdate.maxUnavailable).toBe(0);
    expect(broker().readinessProbe?.httpGet).toMatchObject({ path: '/readyz', port: 'https' });
    expect(broker().livenessProbe?.httpGet).toMatchObject({ path: '/healthz', port: 'https' });
    const [command, seconds] = broker().lifecycle?.preStop?.exec?.command ?? [];
    expect(command).toBe('sleep');
    const drain = Number(seconds) + Number(settings()['SHUTDOWN_GRACE_MS']) / 1000;
    expect(drain).toBeGreaterThan(Number(seconds));
    expect(pod().terminationGracePeriodSeconds).toBeGreaterThan(drain);
    expect(broker().resources?.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
    expect(broker().resources?.limits).toMatchObject({ memory: '512Mi' });
  });

  it("runs as the image's node user on a read-only root, with no service account token, writing only to emptyDirs", () => {
    for (const workload of workloads(production)) {
      const spec = podSpecOf(workload);
      expect(spec.automountServiceAccountToken, workload.metadata.name).toBe(false);
      expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000 });
      for (const container of containersOf(spec)) {
        expect(container.securityContext).toMatchObject({
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
          capabilities: { drop: ['ALL'] },
        });
        const writable = (container.volumeMounts ?? []).filter((m) => !m.readOnly);
        for (const mount of writable)
          expect(spec.volumes?.find((v) => v.name === mount.name)?.emptyDir, mount.mountPath).toBeDefined();
      }
    }
    expect(only(production, 'ServiceAccount')['automountServiceAccountToken']).toBe(false);
    const writable = (broker().volumeMounts ?? []).filter((m) => !m.readOnly).map((m) => m.mountPath);
    expect(writable.sort()).toEqual([settings()['DATA_DIR'], '/tmp'].sort());
  });

  it("serves PUBLIC_URL's host at the Ingress with TLS there, re-encrypted to the pods, clients kept on one pod", () => {
    const ingress = only(production, 'Ingress');
    const spec = ingress['spec'] as {
      tls: { hosts: string[]; secretName: string }[];
      rules: { host: string; http: { paths: { backend: { service: { name: string; port: { name: string } } } }[] } }[];
    };
    const host = new URL(settings()['PUBLIC_URL']!).host;
    expect(spec.rules.map((r) => r.host)).toEqual([host]);
    expect(spec.tls).toEqual([{ hosts: [host], secretName: expect.any(String) }]);
    const service = only(production, 'Service');
    const backend = spec.rules[0]!.http.paths[0]!.backend.service;
    expect(backend.name).toBe(service.metadata.name);
    const servicePorts = (service['spec'] as { ports: { name: string; targetPort: string }[] }).ports;
    expect(servicePorts.find((p) => p.name === backend.port.name)?.targetPort).toBe(broker().ports![0]!.name);
    expect(matches((service['spec'] as { selector: Record<string, string> }).selector, podLabels())).toBe(true);
    expect(ingress.metadata.annotations).toMatchObject({
      'nginx.ingress.kubernetes.io/backend-protocol': 'HTTPS',
      'nginx.ingress.kubernetes.io/upstream-hash-by': '$remote_addr',
      'nginx.ingress.kubernetes.io/proxy-ssl-verify': 'on',
    });
    // The ingress is every request's peer: the client is the entry it adds to X-Forwarded-For.
    expect(settings()['TRUST_PROXY']).toBe('1');
    // Above LEGACY_WAIT_MS's default (5 min), which a 2025-11-25 call's stream stays open for.
    expect(
      Number(ingress.metadata.annotations?.['nginx.ingress.kubernetes.io/proxy-read-timeout']),
    ).toBeGreaterThanOrEqual(300);
  });

  it('keeps two of three pods through a voluntary disruption', () => {
    const spec = only(production, 'PodDisruptionBudget')['spec'] as {
      maxUnavailable: number;
      selector: { matchLabels: Record<string, string> };
    };
    expect(spec.maxUnavailable).toBe(1);
    expect(matches(spec.selector.matchLabels, podLabels())).toBe(true);
  });

  it("lets in only the ingress controller's namespace, on the broker's port, and out only DNS, Postgres and HTTPS", () => {
    const spec = only(production, 'NetworkPolicy')['spec'] as {
      podSelector: { matchLabels: Record<string, string> };
      policyTypes: string[];
      ingress: { from: { namespaceSelector: { matchLabels: Record<string, string> } }[]; ports: { port: number }[] }[];
      egress: { ports: { port: number; protocol: string }[] }[];
    };
    expect(spec.policyTypes.sort()).toEqual(['Egress', 'Ingress']);
    expect(matches(spec.podSelector.matchLabels, podLabels())).toBe(true);
    expect(spec.ingress).toEqual([
      {
        from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } }],
        ports: [{ port: broker().ports![0]!.containerPort, protocol: 'TCP' }],
      },
    ]);
    const egress = spec.egress.flatMap((rule) => rule.ports.map((p) => `${p.protocol}/${p.port}`));
    expect(egress.sort()).toEqual(['TCP/443', 'TCP/53', 'TCP/5432', 'UDP/53']);
  });

  it("migrates with a Job that runs broker migrate on the Deployment's image and settings", () => {
    const job = only(production, 'Job', 'connect-broker-migrate');
    const migrate = podSpecOf(job).containers[0]!;
    expect(migrate.command).toEqual(['node', 'bin/broker.js', 'migrate']);
    expect(migrate.image).toBe(broker().image);
    expect(migrate.envFrom).toEqual(broker().envFrom);
    const k8s = environmentOf(production, job);
    expect(k8s.secretKeys).toEqual(expect.arrayContaining(['DATABASE_URL', 'DATABASE_DIRECT_URL']));
    // The NetworkPolicy covers its pods too: they reach Postgres and DNS only.
    const policy = only(production, 'NetworkPolicy')['spec'] as {
      podSelector: { matchLabels: Record<string, string> };
    };
    expect(matches(policy.podSelector.matchLabels, labelsOf(job))).toBe(true);
  });

  it('ships a Secret example with placeholders only, for exactly the keys the workloads read, and renders no Secret', () => {
    const example = parse(
      readFileSync(join(kubernetesDir, 'overlays/production/secret.example.yaml'), 'utf8'),
    ) as K8sObject;
    expect(schemaProblems([example])).toEqual([]);
    const data = example['stringData'] as Record<string, string>;
    const refs = workloads(production).flatMap((w) =>
      (podSpecOf(w).containers[0]!.env ?? []).flatMap((e) =>
        e.valueFrom?.secretKeyRef ? [{ env: e.name, ...e.valueFrom.secretKeyRef }] : [],
      ),
    );
    for (const ref of refs) expect(ref).toMatchObject({ name: example.metadata.name, key: ref.env });
    expect(Object.keys(data).sort()).toEqual([...new Set(refs.map((r) => r.key))].sort());
    for (const [key, value] of Object.entries(data))
      expect(value === '' || value.includes('REPLACE_ME'), key).toBe(true);
    expect(production.filter((o) => o.kind === 'Secret')).toEqual([]);
  });
});
