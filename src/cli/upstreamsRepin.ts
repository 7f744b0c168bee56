import type { Config } from '../config/config.js';
import { withTransaction } from '../db/transaction.js';
import { recordOperatorAction } from '../ledger/operatorRepo.js';
import { createProviderClient, type DiscoveredServer } from '../oauth/providerClient.js';
import type { Provider } from '../providers/providerConfig.js';
import type { Fetch } from '../shared/httpClient.js';
import { discoverUpstream } from '../upstream/discovery.js';
import { endpointsOf } from '../upstream/issuerPin.js';
import { findPin, repin, type PinnedEndpoints } from '../oauth/issuerPinsRepo.js';
import type { BrokerSelf } from '../providers/selfReference.js';
import { UpstreamSetupError } from '../errors/upstreamErrors.js';
import { deploymentFetch, deploymentSelf } from './deployment.js';
import { withOperator } from './operatorAuth.js';

const TIMEOUT_MS = 10_000;
const MAX_REASON = 500;

/**
 * `broker upstreams repin <id> --reason R`: binds the upstream to the authorization server its
 * metadata names now (the entry's declared `issuer`, where it has one, must be among them), or a
 * catalog provider to the endpoints its issuer's discovery names now, clears a recorded change, and
 * records who did it and why in operator_actions, in one transaction.
 * Connections ended by the change stay ended: their tokens were the old server's.
 */
export async function repinUpstream(
  config: Readonly<Config>,
  providers: readonly Provider[],
  id: string,
  reason: string | undefined,
  refused: (message: string, exitCode?: number) => Error,
  out: (line: string) => void,
): Promise<number> {
  const why = reason?.trim() ?? '';
  if (why.length === 0 || why.length > MAX_REASON)
    throw refused(`A re-pin needs --reason (1 to ${MAX_REASON} characters): it is recorded with the operator.`);
  // Those whose authorization server comes from discovery: upstream MCP servers, and discovered catalog entries.
  const pinnable = providers.filter((p) => p.upstream !== undefined || p.kind === 'oidc' || p.metadataDiscovery);
  const entry = pinnable.find((p) => p.id === id);
  if (!entry)
    throw refused(
      `No provider ${id} has a discovered authorization server (these do: ${pinnable.map((p) => p.id).join(', ') || 'none'}).`,
    );
  return withOperator(config, 'upstreams repin', refused, async (pool, { actor }) => {
    const fetchDeps = {
      fetch: await deploymentFetch(config),
      allowLoopback: config.mode !== 'production',
      timeoutMs: TIMEOUT_MS,
    };
    const server = await discovered(entry, fetchDeps, deploymentSelf(config)).catch((err: unknown) => {
      if (!(err instanceof UpstreamSetupError)) throw err;
      throw refused(`Cannot re-pin ${id}: ${err.message.replace(/^Upstream [^:]+: /, '')}`, 1);
    });
    const now = new Date();
    const before = await withTransaction(pool, async (tx) => {
      const was = await findPin(tx, id);
      await repin(tx, {
        provider: id,
        issuer: server.issuer,
        endpoints: server.endpoints,
        pinnedBy: actor,
        pinnedAt: now,
      });
      await recordOperatorAction(
        tx,
        'repin_authorization_server',
        why,
        actor,
        { provider: id, from: was?.issuer ?? null, to: server.issuer, changedTo: was?.changedTo ?? null },
        now,
      );
      return was;
    });
    out(
      `Pinned ${id} to the authorization server ${server.issuer} (was ${before?.issuer ?? 'none'}). Connections it ended need their users to connect again.`,
    );
    return 0;
  });
}

/** What discovery names now: an upstream's authorization server, or a catalog provider's endpoints. */
async function discovered(
  entry: Provider,
  deps: { fetch: Fetch; allowLoopback: boolean; timeoutMs: number },
  self: BrokerSelf,
): Promise<{ issuer: string; endpoints: PinnedEndpoints }> {
  if (entry.upstream) {
    const discovery = await discoverUpstream(entry.id, entry.upstream, deps, { pinned: entry.upstream.issuer, self });
    return { issuer: discovery.authorizationServer.issuer, endpoints: endpointsOf(discovery.authorizationServer) };
  }
  let found: DiscoveredServer | undefined;
  const client = createProviderClient(entry, {
    fetch: deps.fetch,
    allowLoopback: deps.allowLoopback,
    now: () => new Date(),
    holdDiscovered: async (server) => {
      found = server;
    },
  });
  // Reading where users are sent loads the metadata (and nothing else is asked of the provider).
  await client.destination();
  const { issuer, ...endpoints } = found!;
  return { issuer, endpoints };
}
