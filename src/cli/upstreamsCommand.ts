import { parseArgs } from 'node:util';
import type { Config } from '../config/config.js';
import { createKeyring } from '../crypto/keyring.js';
import { createSecretBox } from '../crypto/secretBox.js';
import { createPool } from '../db/pool.js';
import type { Provider } from '../providers/providerConfig.js';
import { createLogger } from '../shared/logger.js';
import { createUpstreamClient, type ResolvedUpstream } from '../upstream/upstreamClient.js';
import type { UpstreamEntry } from '../upstream/upstreamEntry.js';
import { UpstreamSetupError } from '../upstream/upstreamErrors.js';
import { databaseUrl, deploymentFetch, deploymentKeys } from './deployment.js';
import { loadProviders } from './providersCommand.js';
import { formatTable } from './table.js';

export class UpstreamsCommandError extends Error {
  readonly exitCode = 2;
}

const TIMEOUT_MS = 10_000;

const usage = `Usage: broker upstreams check [--json]

  check   Resolves each upstream MCP server of PROVIDERS_FILE (kind: mcp) as its first connection
          would: its 401 challenge, its protected resource metadata, its authorization server's
          metadata, and the broker's client there (the pre-registered one, the broker's Client ID
          Metadata Document, or a Dynamic Client Registration: made now if none is stored, and
          kept for the running broker). At most ${TIMEOUT_MS / 1000} s a request; exit 1 unless every
          upstream is ok. Uses the broker's database and keys (DATABASE_URL or the embedded
          one; SECRET_KEYS or the development ones).
`;

export interface UpstreamCheck {
  id: string;
  ok: boolean;
  /** Where it stopped, when it did: challenge, resource_metadata, authorization_server, registration. */
  step?: string;
  result: string;
}

/** `broker upstreams …`: returns the process exit code. */
export async function upstreamsCommand(
  args: string[],
  config: Readonly<Config>,
  out: (line: string) => void,
): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'check') throw new UpstreamsCommandError(usage);
  const { values } = parseArgs({ args: rest, strict: true, options: { json: { type: 'boolean', default: false } } });
  const dev = config.mode !== 'production';
  const upstreams = (await loadProviders(config, dev)).filter(
    (p): p is Provider & { upstream: UpstreamEntry } => p.upstream !== undefined,
  );
  if (upstreams.length === 0) {
    out(values.json ? '[]' : 'No upstream MCP servers (kind: mcp) in PROVIDERS_FILE.');
    return 0;
  }
  const pool = createPool({ url: await databaseUrl(config), poolMax: 2 }, createLogger({ level: 'silent' }));
  try {
    const deps = {
      fetch: await deploymentFetch(config),
      allowLoopback: dev,
      now: () => new Date(),
      pool,
      box: createSecretBox(createKeyring(await deploymentKeys(config), 'secrets')),
      publicUrl: config.http.publicUrl,
      timeoutMs: TIMEOUT_MS,
    };
    const checks = await Promise.all(
      upstreams.map((p) =>
        createUpstreamClient(p, deps)
          .resolve()
          .then(
            (resolved): UpstreamCheck => ({ id: p.id, ok: true, result: describe(resolved) }),
            (err: unknown): UpstreamCheck => {
              if (!(err instanceof UpstreamSetupError)) throw err;
              return { id: p.id, ok: false, step: err.step, result: err.message.replace(/^Upstream [^:]+: /, '') };
            },
          ),
      ),
    );
    if (values.json) out(JSON.stringify(checks));
    else
      out(
        formatTable(
          ['id', 'result'],
          checks.map((c) => [c.id, c.ok ? c.result : `failed at ${c.step}: ${c.result}`]),
        ),
      );
    return checks.every((c) => c.ok) ? 0 : 1;
  } finally {
    await pool.end();
  }
}

function describe({ discovery, registration, provider }: ResolvedUpstream): string {
  const client =
    registration.mode === 'static'
      ? `pre-registered client ${registration.clientId} (${registration.clientAuth})`
      : registration.mode === 'client_id_metadata_document'
        ? `Client ID Metadata Document ${registration.clientId}`
        : `registered client ${registration.clientId} (${registration.reused ? 'stored' : 'registered now'}, ${registration.clientAuth})`;
  const scopes = provider.scopes.length > 0 ? provider.scopes.join(' ') : '(none)';
  return `ok: authorization server ${discovery.authorizationServer.issuer}; ${client}; scopes ${scopes}`;
}
