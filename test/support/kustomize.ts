import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

/** One rendered Kubernetes object, as YAML gives it. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

export const kubernetesDir = fileURLToPath(new URL('../../deploy/kubernetes/', import.meta.url));

/**
 * `kubectl kustomize <dir>` (offline: kustomize is built into kubectl), parsed. A missing kubectl is
 * an error that says what to install, never a skip: CI must render what operators apply.
 */
export async function renderKustomization(dir: string, kubectl = 'kubectl'): Promise<K8sObject[]> {
  const text = await new Promise<string>((resolve, reject) => {
    execFile(kubectl, ['kustomize', dir], { maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (!err) return resolve(stdout);
      if ((err as NodeJS.ErrnoException).code === 'ENOENT')
        return reject(
          new Error(
            `kubectl not found (${kubectl}): the Kubernetes manifests are rendered with \`kubectl kustomize\` (kubectl 1.32 or later, kustomize v5.5); install kubectl on this machine`,
          ),
        );
      reject(new Error(`kubectl kustomize ${dir} failed: ${stderr || err.message}`));
    });
  });
  return parseAllDocuments(text)
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`kubectl kustomize ${dir}: ${doc.errors[0]?.message}`);
      return doc.toJS() as K8sObject | null;
    })
    .filter((o): o is K8sObject => o !== null);
}

/** The one object of a kind (and name, when given); throws when there is none or several. */
export function only(objects: K8sObject[], kind: string, name?: string): K8sObject {
  const found = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  if (found.length !== 1) throw new Error(`expected one ${kind}${name ? ` ${name}` : ''}, rendered ${found.length}`);
  return found[0]!;
}
