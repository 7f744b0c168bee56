import { ConfigError, loadConfig, type Config } from '../config/config.js';
import type { Fetch } from '../shared/httpClient.js';
import { checkDatabase } from './doctorDatabase.js';
import { fail, ok, warn, type Finding } from './doctorFinding.js';
import { checkIssuer } from './doctorIssuer.js';
import { checkProvidersFile } from './doctorProviders.js';
import { checkTls } from './doctorTls.js';
import { deploymentFetch, deploymentSelf } from './deployment.js';

export interface DoctorDeps {
  /** The fetch the checks call out with (default: the running broker's, deployment.ts). */
  fetch?: Fetch;
  now?: Date;
}

const usage = `Usage: broker doctor

Checks this environment as a start in it would use it, without starting anything: every variable
(all problems at once), the identity provider's discovery and the broker's registration there, the
database and its migrations, the TLS files, and each provider and upstream MCP server of
PROVIDERS_FILE. One line a finding, OK, WARN or FAIL; exit 1 on any FAIL. Prints no secret.
`;

/** `broker doctor`: prints one line a finding, returns the exit code (1 on any FAIL). */
export async function doctorCommand(
  args: string[],
  env: Record<string, string | undefined>,
  out: (line: string) => void,
  deps: DoctorDeps = {},
): Promise<number> {
  if (args.length > 0) {
    out(usage);
    return 2;
  }
  const findings = await diagnose(env, deps);
  const hide = redactor(env);
  const width = Math.max(...findings.map((f) => f.subject.length));
  for (const f of findings) out(hide(`${f.level.padEnd(4)}  ${f.subject.padEnd(width)}  ${f.message}`));
  const count = (level: Finding['level']) => findings.filter((f) => f.level === level).length;
  out(`${count('FAIL')} FAIL, ${count('WARN')} WARN, ${count('OK')} OK`);
  return count('FAIL') > 0 ? 1 : 0;
}

async function diagnose(env: Record<string, string | undefined>, deps: DoctorDeps): Promise<Finding[]> {
  const production = env['NODE_ENV'] === 'production';
  const findings: Finding[] = [];
  let config: Readonly<Config>;
  try {
    config = loadConfig(env);
    findings.push(ok('environment', `every variable parses (${production ? 'production' : 'not production'} mode)`));
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    const bad = new Set<string>();
    for (const problem of err.problems) {
      const name = /^([A-Z][A-Z0-9_]*):\s*/.exec(problem)?.[1];
      if (name) bad.add(name);
      findings.push(fail(name ?? 'environment', name ? problem.slice(problem.indexOf(':') + 1).trim() : problem));
    }
    const rest = partialConfig(env, bad);
    if (!rest) return [...findings, warn('environment', 'nothing else checked until the variables above are fixed')];
    config = rest;
  }
  const allowLoopback = !production;
  const fetch = deps.fetch ?? (await deploymentFetch(config));
  const database = config.db.directUrl ?? config.db.url;
  const subject = config.db.directUrl ? 'DATABASE_DIRECT_URL' : 'DATABASE_URL';
  const checks: Promise<Finding[]>[] = [
    database
      ? checkDatabase(subject, database)
      : Promise.resolve(production ? [] : [ok('DATABASE_URL', 'not set: development mode runs its embedded Postgres')]),
    checkTls(config.tls, config.http.publicUrl, production, deps.now ?? new Date()),
    checkProvidersFile(config.broker, { fetch, allowLoopback, self: deploymentSelf(config) }),
  ];
  if (config.oidc.issuer && config.oidc.clientSecret)
    checks.unshift(
      checkIssuer({
        issuer: config.oidc.issuer,
        clientId: config.oidc.clientId,
        clientSecret: config.oidc.clientSecret,
        callbackUrl: new URL('/auth/callback', config.http.publicUrl).href,
        allowLoopback,
        fetch,
      }),
    );
  else if (!production) findings.push(ok('OIDC_ISSUER', 'not set: development mode runs its own identity provider'));
  return [...findings, ...(await Promise.all(checks)).flat()];
}

/**
 * What the variables that did parse configure, so one run reports them too: the bad ones left out
 * and the production-only requirements lifted (loadConfig has reported those). Undefined when even
 * that does not parse.
 */
function partialConfig(
  env: Record<string, string | undefined>,
  bad: ReadonlySet<string>,
): Readonly<Config> | undefined {
  const rest = Object.fromEntries(Object.entries(env).filter(([name]) => !bad.has(name)));
  try {
    return loadConfig({ ...rest, NODE_ENV: 'test', DEV_ALLOW_NETWORK: 'true' });
  } catch {
    return undefined;
  }
}

// Secrets never reach a finding by design; this is the second fence: any value of a variable whose
// name says secret, and a database URL's password, is blanked from every line.
function redactor(env: Record<string, string | undefined>): (line: string) => string {
  const values = new Set<string>();
  for (const [name, value] of Object.entries(env)) {
    if (!value) continue;
    if (/SECRET|TOKEN|PASSWORD|KEYS?$/.test(name)) {
      values.add(value);
      for (const part of value.split(/[,:]/)) if (part.length >= 8) values.add(part);
    }
    if (/^DATABASE_/.test(name) && URL.canParse(value)) {
      const password = decodeURIComponent(new URL(value).password);
      if (password) values.add(password);
    }
  }
  const secrets = [...values].filter((v) => v.length >= 4).sort((a, b) => b.length - a.length);
  return (line) => secrets.reduce((text, secret) => text.replaceAll(secret, '[redacted]'), line);
}
