import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { Config } from '../config/config.js';
import { createKeyring } from '../crypto/keyring.js';
import { createSecretBox } from '../crypto/secretBox.js';
import { createPool } from '../db/pool.js';
import type { Provider } from '../providers/providerConfig.js';
import { createLogger } from '../shared/logger.js';
import { createUpstreamClient, type ResolvedUpstream } from '../upstream/upstreamClient.js';
import type { UpstreamEntry } from '../providers/upstreamEntry.js';
import type { UpstreamTool } from '../upstream/upstreamMcpClient.js';
import { UpstreamSetupError } from '../errors/upstreamErrors.js';
import { clearSnapshot, listSnapshots, pinSnapshot } from '../upstream/snapshotsRepo.js';
import { parseToolSnapshot } from '../upstream/toolSnapshot.js';
import { databaseUrl, deploymentFetch, deploymentIssuer, deploymentKeys, deploymentProviders } from './deployment.js';
import { withOperator } from './operatorAuth.js';
import { formatTable } from './table.js';
import { repinUpstream } from './upstreamsRepin.js';
import { CliError } from './cliError.js';

export class UpstreamsCommandError extends CliError {}

const TIMEOUT_MS = 10_000;

const MAX_SNAPSHOT_BYTES = 1024 * 1024;
const NONE = 'No upstream MCP servers (kind: mcp) in PROVIDERS_FILE, and no development one.';

const usage = `Usage: broker upstreams list [--json]
       broker upstreams check [--json]
       broker upstreams snapshot <id> --file <tools.json> | --clear
       broker upstreams repin <id> --reason <why>

  list      Each upstream MCP server the running broker serves (PROVIDERS_FILE's, and outside
            production the development one npm start runs at DEV_UPSTREAM_PORT): its prefix, URL,
            registration, and the snapshot pinned for it (no network access).

  check   Resolves each of those upstream MCP servers (kind: mcp) as its first connection
          would: its 401 challenge, its protected resource metadata, its authorization server's
          metadata, and the broker's client there (the pre-registered one, the broker's Client ID
          Metadata Document, or a Dynamic Client Registration: made now if none is stored, and
          kept for the running broker). An authorization server other than the one pinned for
          the upstream is reported and refused (nothing is sent to it). At most ${TIMEOUT_MS / 1000} s a request; exit 1 unless every
          upstream is ok. Uses the broker's database and keys (DATABASE_URL or the embedded
          one; SECRET_KEYS or the development ones).
  snapshot  Pins the tools users not yet connected to <id> are shown (so the model can pick the
            tool that starts the connection): a tools/list result ({"tools": [...]}) or its array
            of tools, checked whole; --clear removes it. A connected user is always shown their own
            list. Needs an operator's token (BROKER_OPERATOR_TOKEN).
  repin     Binds <id> to the authorization server its metadata names now (the entry's issuer,
            where it declares one), after a change check reported; recorded with the reason.
            Needs an operator's token.
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
  if (sub !== 'check' && sub !== 'list' && sub !== 'snapshot' && sub !== 'repin')
    throw new UpstreamsCommandError(usage);
  const { values, positionals } = parseArgs({
    args: rest,
    strict: true,
    allowPositionals: sub === 'snapshot' || sub === 'repin',
    options: {
      json: { type: 'boolean', default: false },
      file: { type: 'string' },
      clear: { type: 'boolean', default: false },
      reason: { type: 'string' },
    },
  });
  const dev = config.mode !== 'production';
  // What the running broker serves: PROVIDERS_FILE, and outside production npm start's development upstream.
  const providers = await deploymentProviders(config);
  const upstreams = providers.filter((p): p is Provider & { upstream: UpstreamEntry } => p.upstream !== undefined);
  if (sub === 'snapshot') return snapshot(config, upstreams, positionals, values, out);
  if (sub === 'repin') {
    if (positionals.length !== 1) throw new UpstreamsCommandError(usage);
    const refused = (message: string, exitCode?: number) => new UpstreamsCommandError(message, exitCode);
    return repinUpstream(config, providers, positionals[0]!, values.reason, refused, out);
  }
  if (sub === 'list') return list(config, upstreams, values.json, out);
  if (upstreams.length === 0) {
    out(values.json ? '[]' : NONE);
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
      issuer: deploymentIssuer(config),
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

async function list(
  config: Readonly<Config>,
  upstreams: readonly (Provider & { upstream: UpstreamEntry })[],
  json: boolean,
  out: (line: string) => void,
): Promise<number> {
  const pool = createPool({ url: await databaseUrl(config), poolMax: 2 }, createLogger({ level: 'silent' }));
  try {
    const pinned = new Map((await listSnapshots(pool)).map((s) => [s.provider, s]));
    const rows = upstreams.map((p) => {
      const snap = pinned.get(p.id);
      return {
        id: p.id,
        prefix: p.upstream.prefix,
        url: p.upstream.url,
        registration: p.upstream.registration,
        snapshot: snap
          ? { tools: snap.tools.length, pinnedBy: snap.pinnedBy, pinnedAt: snap.pinnedAt.toISOString() }
          : null,
      };
    });
    if (json) out(JSON.stringify(rows));
    else if (rows.length === 0) out(NONE);
    else
      out(
        formatTable(
          ['id', 'prefix', 'url', 'registration', 'snapshot'],
          rows.map((r) => [
            r.id,
            r.prefix,
            r.url,
            r.registration,
            r.snapshot ? `${r.snapshot.tools} tools, ${r.snapshot.pinnedBy} ${r.snapshot.pinnedAt}` : '(none)',
          ]),
        ),
      );
    return 0;
  } finally {
    await pool.end();
  }
}

async function snapshot(
  config: Readonly<Config>,
  upstreams: readonly (Provider & { upstream: UpstreamEntry })[],
  positionals: string[],
  values: { file?: string | undefined; clear?: boolean | undefined },
  out: (line: string) => void,
): Promise<number> {
  const [id, ...extra] = positionals;
  if (id === undefined || extra.length > 0 || (values.file === undefined) === !values.clear)
    throw new UpstreamsCommandError(usage);
  if (!upstreams.some((p) => p.id === id))
    throw new UpstreamsCommandError(
      `No upstream MCP server ${id} is served (upstreams: ${upstreams.map((p) => p.id).join(', ') || 'none'}).`,
    );
  // Checked whole before anything is stored.
  let tools: UpstreamTool[] | undefined;
  if (values.file !== undefined) {
    const text = await readFile(values.file, 'utf8').catch((err: unknown) => {
      throw new UpstreamsCommandError(`Cannot read ${values.file}: ${(err as Error).message}`);
    });
    if (Buffer.byteLength(text) > MAX_SNAPSHOT_BYTES)
      throw new UpstreamsCommandError(`${values.file} is larger than ${MAX_SNAPSHOT_BYTES} bytes.`);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      throw new UpstreamsCommandError(`${values.file} is not JSON: ${(err as Error).message}`);
    }
    const parsed = parseToolSnapshot(json);
    if ('problems' in parsed)
      throw new UpstreamsCommandError(`${values.file} is not a tool list:\n  ${parsed.problems.join('\n  ')}`);
    tools = parsed.tools;
  }
  return withOperator(
    config,
    'upstreams snapshot',
    (message, exitCode) => new UpstreamsCommandError(message, exitCode),
    async (pool, { actor }) => {
      if (!tools) {
        out((await clearSnapshot(pool, id)) ? `Snapshot of ${id} removed.` : `${id} had no snapshot.`);
        return 0;
      }
      await pinSnapshot(pool, { provider: id, tools, pinnedBy: actor, pinnedAt: new Date() });
      out(
        `Pinned ${tools.length} tools for ${id}: ${tools.map((t) => t.name).join(', ')}. Users not connected to it see them from their next tools/list.`,
      );
      return 0;
    },
  );
}
