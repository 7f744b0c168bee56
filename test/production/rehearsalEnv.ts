import { randomBytes } from 'node:crypto';
import { parse, stringify } from 'yaml';
import { brokerEnv, kubernetesEnvironment, type KubernetesEnvironment } from '../support/kubernetesEnvironment.js';
import { HOSTS } from './rehearsalHosts.js';

// The broker's environment for the rehearsal, generated from the production overlay as rendered
// (test/support/kubernetesEnvironment.ts: the Deployment's ConfigMap values, the Secret keys it
// reads, the files it mounts) so the manifests and what is rehearsed cannot drift: brokerEnv keeps
// every ConfigMap value and replaces only address settings; every Secret key it reads must be one
// this file knows how to fill. The mounted providers and tools files are the overlay's own, the
// github entry's `host` pointed at the emulator (an address, as for an Enterprise Server) and one
// `kind: mcp` entry added for the upstream server (the overlay configures none).

/** Where this machine differs from the cluster. */
export interface RehearsalPlaces {
  host: string;
  port: number;
  publicUrl: string;
  issuer: string;
  dataDir: string;
  certFile: string;
  keyFile: string;
  caFile: string;
  providersFile: string;
  toolsFile: string;
  databaseUrl: string;
  /** host:port of the GitHub emulator (the `github` entry's `host` parameter, as for an Enterprise Server). */
  githubHost: string;
  /** The upstream MCP server's URL (a `kind: mcp` entry the rehearsal adds). */
  upstreamUrl: string;
}

export interface RehearsalEnv {
  env: Record<string, string>;
  providersYaml: string;
  toolsYaml: string;
  /** What the identity provider and the emulator must be told (the same values the broker has). */
  oidc: { clientId: string; clientSecret: string };
  github: { clientId: string; clientSecret: string };
  operators: { roleClaim: string; role: string };
  upstreamPrefix: string;
}

export const UPSTREAM_PREFIX = 'memo';

/** The production overlay, rendered. */
export function productionValues(): Promise<KubernetesEnvironment> {
  return kubernetesEnvironment('overlays/production');
}

/**
 * `tlsAt: 'proxy'`: TLS ends at the proxy, which speaks HTTP to the broker, the one change from the
 * overlay (which re-encrypts to the pods): TLS_TERMINATED_BY_PROXY=true and no certificate files, as
 * deploy/haproxy-tls-terminated.cfg and deploy/nginx-tls-terminated.conf.template say.
 */
export function rehearsalEnv(
  k8s: KubernetesEnvironment,
  at: RehearsalPlaces,
  tlsAt: 'broker' | 'proxy' = 'broker',
): RehearsalEnv {
  const mounted = (variable: string) => {
    const content = k8s.files[k8s.configMap[variable] ?? ''];
    if (content === undefined) throw new Error(`the production overlay mounts no file at its ${variable}`);
    return content;
  };
  const providers = parse(mounted('PROVIDERS_FILE')) as Record<string, unknown>[];
  const github = providers.find((p) => p['catalog'] === 'github');
  if (!github)
    throw new Error('the production providers file has no github catalog entry for the emulator to stand in for');
  github['params'] = { ...(github['params'] as object | undefined), host: at.githubHost };
  providers.push({
    id: 'memo',
    kind: 'mcp',
    displayName: 'Memo',
    url: at.upstreamUrl,
    prefix: UPSTREAM_PREFIX,
    registration: 'auto',
  });
  const githubSecretVariable = (github['clientSecret'] as { env?: string } | undefined)?.env;

  const fill: Record<string, () => string | undefined> = {
    DATABASE_URL: () => at.databaseUrl,
    DATABASE_DIRECT_URL: () => undefined,
    SECRET_KEYS: () => `k1:${randomBytes(32).toString('base64url')}`,
    OIDC_CLIENT_SECRET: () => randomBytes(24).toString('base64url'),
    METRICS_TOKEN: () => randomBytes(32).toString('base64url'),
    ...(githubSecretVariable && { [githubSecretVariable]: () => randomBytes(20).toString('hex') }),
  };
  const unknown = k8s.secretKeys.filter((key) => !(key in fill));
  if (unknown.length > 0)
    throw new Error(
      `the production Deployment reads ${unknown.join(', ')} from its Secret, which test/production/rehearsalEnv.ts does not fill`,
    );
  const secrets: Record<string, string> = {};
  for (const key of k8s.secretKeys) {
    const value = fill[key]!();
    if (value !== undefined) secrets[key] = value;
  }
  const env = brokerEnv(k8s, secrets, {
    HOST: at.host,
    PORT: String(at.port),
    PUBLIC_URL: at.publicUrl,
    OIDC_ISSUER: at.issuer,
    DATA_DIR: at.dataDir,
    TLS_CERT_FILE: at.certFile,
    TLS_KEY_FILE: at.keyFile,
    // The rehearsal's CA signed the identity provider's and the providers' certificates.
    TLS_CA_FILE: at.caFile,
    PROVIDERS_FILE: at.providersFile,
    TOOLS_FILE: at.toolsFile,
    // The services a cluster would hold inside it: their names resolve to loopback here (hostnames.mjs).
    EGRESS_ALLOW: [HOSTS.idp, HOSTS.github, HOSTS.upstream].join(','),
  });
  if (tlsAt === 'proxy') {
    env['TLS_TERMINATED_BY_PROXY'] = 'true';
    delete env['TLS_CERT_FILE'];
    delete env['TLS_KEY_FILE'];
  }
  return {
    env,
    providersYaml: stringify(providers),
    toolsYaml: mounted('TOOLS_FILE'),
    oidc: { clientId: env['OIDC_CLIENT_ID'] ?? '', clientSecret: env['OIDC_CLIENT_SECRET'] ?? '' },
    github: {
      clientId: String(github['clientId']),
      clientSecret: githubSecretVariable ? (env[githubSecretVariable] ?? '') : String(github['clientSecret']),
    },
    operators: { roleClaim: env['OPERATOR_ROLE_CLAIM'] ?? 'roles', role: env['OPERATOR_ROLE'] ?? 'operator' },
    upstreamPrefix: UPSTREAM_PREFIX,
  };
}
