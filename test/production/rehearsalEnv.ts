import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { repoRoot } from '../support/brokerProcess.js';

// The broker's environment for the rehearsal, generated from the production overlay's ConfigMap and
// Secret (deploy/kubernetes/overlays/production) so the manifests and what is rehearsed cannot drift:
// every ConfigMap value is kept except the ones named in SUBSTITUTED (where this machine differs:
// addresses, ports, paths), every Secret key must be one this file knows how to fill, and the
// mounted providers and tools files are the overlay's own with the provider's host pointed at the
// emulator. A key added to either, or one substituted here that left them, fails the run by name.

export interface DeploymentValues {
  /** The ConfigMap's data. */
  config: Record<string, string>;
  /** The Secret's keys (values are the operator's). */
  secretKeys: string[];
  /** The files mounted from the ConfigMap, by file name (providers.yaml, tools.yaml). */
  files: Record<string, string>;
}

const OVERLAY = join(repoRoot, 'deploy', 'kubernetes', 'overlays', 'production');
const BASE = join(repoRoot, 'deploy', 'kubernetes', 'base');

/** The overlay's values, read from its files (kustomize's configMapGenerator: base, then overlay). */
export async function productionValues(): Promise<DeploymentValues> {
  const config = { ...envFile(await readFile(join(BASE, 'config.env'), 'utf8')) };
  Object.assign(config, envFile(await readFile(join(OVERLAY, 'config.env'), 'utf8')));
  const secret = parse(await readFile(join(OVERLAY, 'secret.example.yaml'), 'utf8')) as {
    stringData?: Record<string, string>;
  };
  return {
    config,
    secretKeys: Object.keys(secret.stringData ?? {}),
    files: {
      'providers.yaml': await readFile(join(OVERLAY, 'providers.yaml'), 'utf8'),
      'tools.yaml': await readFile(join(OVERLAY, 'tools.yaml'), 'utf8'),
    },
  };
}

function envFile(text: string): Record<string, string> {
  const entries = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]);
  return Object.fromEntries(entries) as Record<string, string>;
}

/** Where this machine differs from the cluster: the values the rehearsal puts in place of the ConfigMap's. */
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

const SUBSTITUTED = [
  'HOST',
  'PORT',
  'PUBLIC_URL',
  'OIDC_ISSUER',
  'DATA_DIR',
  'TLS_CERT_FILE',
  'TLS_KEY_FILE',
  'PROVIDERS_FILE',
  'TOOLS_FILE',
] as const;

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

export function rehearsalEnv(values: DeploymentValues, at: RehearsalPlaces): RehearsalEnv {
  const env: Record<string, string> = { ...values.config };
  const missing = SUBSTITUTED.filter((key) => !(key in env));
  if (missing.length > 0)
    throw new Error(
      `the production ConfigMap no longer sets ${missing.join(', ')}: update test/production/rehearsalEnv.ts`,
    );
  Object.assign(env, {
    HOST: at.host,
    PORT: String(at.port),
    PUBLIC_URL: at.publicUrl,
    OIDC_ISSUER: at.issuer,
    DATA_DIR: at.dataDir,
    TLS_CERT_FILE: at.certFile,
    TLS_KEY_FILE: at.keyFile,
    PROVIDERS_FILE: at.providersFile,
    TOOLS_FILE: at.toolsFile,
    // Added: the rehearsal's CA, which signed the identity provider's and the providers' certificates.
    TLS_CA_FILE: at.caFile,
  });
  const fill: Record<string, () => string> = {
    DATABASE_URL: () => at.databaseUrl,
    DATABASE_DIRECT_URL: () => '',
    SECRET_KEYS: () => `k1:${randomBytes(32).toString('base64url')}`,
    OIDC_CLIENT_SECRET: () => randomBytes(24).toString('base64url'),
    METRICS_TOKEN: () => randomBytes(32).toString('base64url'),
  };
  const providers = parse(values.files['providers.yaml'] ?? '[]') as Record<string, unknown>[];
  const github = providers.find((p) => p['catalog'] === 'github');
  if (!github)
    throw new Error('the production providers.yaml has no github catalog entry for the emulator to stand in for');
  const githubSecret = github['clientSecret'] as { env?: string } | undefined;
  if (githubSecret?.env) fill[githubSecret.env] = () => randomBytes(20).toString('hex');
  const unknown = values.secretKeys.filter((key) => !(key in fill));
  if (unknown.length > 0)
    throw new Error(
      `the production Secret has ${unknown.join(', ')}, which test/production/rehearsalEnv.ts does not fill`,
    );
  for (const key of values.secretKeys) {
    const value = fill[key]!();
    if (value !== '') env[key] = value;
  }
  github['params'] = { ...(github['params'] as object | undefined), host: at.githubHost };
  providers.push({
    id: 'memo',
    kind: 'mcp',
    displayName: 'Memo',
    url: at.upstreamUrl,
    prefix: UPSTREAM_PREFIX,
    registration: 'auto',
  });
  return {
    env,
    providersYaml: stringify(providers),
    toolsYaml: values.files['tools.yaml'] ?? '',
    oidc: { clientId: env['OIDC_CLIENT_ID'] ?? '', clientSecret: env['OIDC_CLIENT_SECRET'] ?? '' },
    github: {
      clientId: String(github['clientId']),
      clientSecret: githubSecret?.env ? (env[githubSecret.env] ?? '') : String(github['clientSecret']),
    },
    operators: { roleClaim: env['OPERATOR_ROLE_CLAIM'] ?? 'roles', role: env['OPERATOR_ROLE'] ?? 'operator' },
    upstreamPrefix: UPSTREAM_PREFIX,
  };
}
