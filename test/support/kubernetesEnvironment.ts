import { join, posix } from 'node:path';
import type { IContainer, IPodSpec } from 'kubernetes-models/v1';
import { kubernetesDir, only, renderKustomization, type K8sObject } from './kustomize.js';

/** What a workload's container is given: its settings, the Secret keys it reads, its mounted files. */
export interface WorkloadEnvironment {
  /** Non-secret settings by variable: the ConfigMaps its envFrom names (prefix applied), then its own `env` values. */
  configMap: Record<string, string>;
  /** Variables it takes from Secrets (secretKeyRef), in manifest order; their values are the caller's. */
  secretKeys: string[];
  /** Those of `secretKeys` marked optional: the container starts without them. */
  optionalSecretKeys: string[];
  /** Files mounted from ConfigMaps, by their path in the container (PROVIDERS_FILE's and TOOLS_FILE's values among them). */
  files: Record<string, string>;
}

/** What the broker's container in a rendered kustomization is given, for a process run outside Kubernetes. */
export interface KubernetesEnvironment extends WorkloadEnvironment {
  /** The container's port and its probes' paths. */
  port: number;
  readinessPath: string;
  livenessPath: string;
}

/**
 * The variables a rehearsal may point elsewhere: where things are (URLs, hosts, ports, files and
 * folders, the database), never how the broker behaves.
 */
export const ADDRESS_SETTINGS = [
  'PUBLIC_URL',
  'OIDC_ISSUER',
  'HOST',
  'PORT',
  'DATA_DIR',
  'DATABASE_URL',
  'DATABASE_DIRECT_URL',
  'TLS_CERT_FILE',
  'TLS_KEY_FILE',
  'TLS_CA_FILE',
  'PROVIDERS_FILE',
  'TOOLS_FILE',
  'WEBHOOK_URL',
  'TRUST_PROXY',
  'EGRESS_ALLOW',
] as const;

/** Renders `deploy/kubernetes/<overlay>` and reads the Deployment's broker container (see environmentOf). */
export async function kubernetesEnvironment(overlay = 'overlays/production'): Promise<KubernetesEnvironment> {
  const objects = await renderKustomization(join(kubernetesDir, overlay));
  const deployment = only(objects, 'Deployment', 'connect-broker');
  return { ...environmentOf(objects, deployment), ...probesOf(podSpecOf(deployment).containers[0]!) };
}

/** A workload's pod spec: a Deployment's, a Job's (or any object with spec.template.spec). */
export function podSpecOf(workload: K8sObject): IPodSpec {
  const spec = (workload['spec'] as { template?: { spec?: IPodSpec } } | undefined)?.template?.spec;
  if (!spec) throw new Error(`${workload.kind} ${workload.metadata.name} has no pod template`);
  return spec;
}

/** The environment of `workload`'s first container, read from the other rendered objects. */
export function environmentOf(objects: K8sObject[], workload: K8sObject): WorkloadEnvironment {
  const pod = podSpecOf(workload);
  const container = pod.containers[0];
  if (!container) throw new Error(`${workload.metadata.name} has no container`);
  const configMap: Record<string, string> = {};
  for (const from of container.envFrom ?? []) {
    if (from.secretRef)
      throw new Error(`${workload.metadata.name}: envFrom a Secret hides its names; use secretKeyRef`);
    if (!from.configMapRef?.name) continue;
    for (const [key, value] of Object.entries(configMapData(objects, from.configMapRef.name)))
      configMap[`${from.prefix ?? ''}${key}`] = value;
  }
  const secretKeys: string[] = [];
  const optionalSecretKeys: string[] = [];
  for (const variable of container.env ?? []) {
    const source = variable.valueFrom;
    if (source?.secretKeyRef) {
      secretKeys.push(variable.name);
      if (source.secretKeyRef.optional) optionalSecretKeys.push(variable.name);
    } else if (source?.configMapKeyRef) {
      const data = configMapData(objects, source.configMapKeyRef.name ?? '');
      const value = data[source.configMapKeyRef.key];
      if (value !== undefined) configMap[variable.name] = value;
    } else if (variable.value !== undefined) configMap[variable.name] = variable.value;
    else
      throw new Error(
        `${workload.metadata.name}: ${variable.name} comes from neither a Secret, a ConfigMap nor a value`,
      );
  }
  return { configMap, secretKeys, optionalSecretKeys, files: mountedFiles(objects, pod, container) };
}

/**
 * The broker's environment from the manifests' values: the ConfigMap's settings, `secrets` for the
 * Secret keys (every required one, no other), and `addresses` replacing only ADDRESS_SETTINGS.
 */
export function brokerEnv(
  k8s: WorkloadEnvironment,
  secrets: Record<string, string>,
  addresses: Partial<Record<(typeof ADDRESS_SETTINGS)[number], string>> = {},
): Record<string, string> {
  const missing = k8s.secretKeys.filter((k) => !k8s.optionalSecretKeys.includes(k) && secrets[k] === undefined);
  const unknown = Object.keys(secrets).filter((k) => !k8s.secretKeys.includes(k));
  const notAddresses = Object.keys(addresses).filter((k) => !(ADDRESS_SETTINGS as readonly string[]).includes(k));
  if (missing.length + unknown.length + notAddresses.length > 0)
    throw new Error(
      `brokerEnv: secrets missing [${missing.join(', ')}], not the Deployment's [${unknown.join(', ')}]; not addresses [${notAddresses.join(', ')}]`,
    );
  const env: Record<string, string> = { ...k8s.configMap, ...secrets };
  for (const [key, value] of Object.entries(addresses)) if (value !== undefined) env[key] = value;
  return env;
}

function configMapData(objects: K8sObject[], name: string): Record<string, string> {
  const map = only(objects, 'ConfigMap', name);
  return (map['data'] as Record<string, string> | undefined) ?? {};
}

function mountedFiles(objects: K8sObject[], pod: IPodSpec, container: IContainer): Record<string, string> {
  const files: Record<string, string> = {};
  for (const mount of container.volumeMounts ?? []) {
    const volume = (pod.volumes ?? []).find((v) => v.name === mount.name);
    if (!volume?.configMap?.name) continue;
    const data = configMapData(objects, volume.configMap.name);
    const items = volume.configMap.items ?? Object.keys(data).map((key) => ({ key, path: key }));
    for (const item of items) {
      const content = data[item.key];
      if (content !== undefined) files[posix.join(mount.mountPath, item.path)] = content;
    }
  }
  return files;
}

function probesOf(container: IContainer): Pick<KubernetesEnvironment, 'port' | 'readinessPath' | 'livenessPath'> {
  const port = container.ports?.[0]?.containerPort;
  const readinessPath = container.readinessProbe?.httpGet?.path;
  const livenessPath = container.livenessProbe?.httpGet?.path;
  if (port === undefined || !readinessPath || !livenessPath)
    throw new Error(`container ${container.name} lacks a port or an HTTP readiness or liveness probe`);
  return { port, readinessPath, livenessPath };
}
