import type { Config } from '../config/config.js';
import { withTransaction } from '../db/transaction.js';
import { recordOperatorAction } from '../ledger/operatorRepo.js';
import type { Provider } from '../providers/providerConfig.js';
import { discoverUpstream } from '../upstream/discovery.js';
import { endpointsOf } from '../upstream/issuerPin.js';
import { findPin, repin } from '../upstream/issuerPinsRepo.js';
import type { UpstreamEntry } from '../upstream/upstreamEntry.js';
import { UpstreamSetupError } from '../upstream/upstreamErrors.js';
import { deploymentFetch } from './deployment.js';
import { withOperator } from './operatorAuth.js';

const TIMEOUT_MS = 10_000;
const MAX_REASON = 500;

/**
 * `broker upstreams repin <id> --reason R`: binds the upstream to the authorization server its
 * metadata names now (the entry's declared `issuer`, where it has one, must be among them), clears
 * a recorded change, and records who did it and why in operator_actions, in one transaction.
 * Connections ended by the change stay ended: their tokens were the old server's.
 */
export async function repinUpstream(
  config: Readonly<Config>,
  upstreams: readonly (Provider & { upstream: UpstreamEntry })[],
  id: string,
  reason: string | undefined,
  refused: (message: string, exitCode?: number) => Error,
  out: (line: string) => void,
): Promise<number> {
  const why = reason?.trim() ?? '';
  if (why.length === 0 || why.length > MAX_REASON)
    throw refused(`A re-pin needs --reason (1 to ${MAX_REASON} characters): it is recorded with the operator.`);
  const entry = upstreams.find((p) => p.id === id);
  if (!entry)
    throw refused(
      `No upstream MCP server ${id} is served (upstreams: ${upstreams.map((p) => p.id).join(', ') || 'none'}).`,
    );
  return withOperator(config, 'upstreams repin', refused, async (pool, { actor }) => {
    const fetchDeps = {
      fetch: await deploymentFetch(config),
      allowLoopback: config.mode !== 'production',
      timeoutMs: TIMEOUT_MS,
    };
    const discovery = await discoverUpstream(id, entry.upstream, fetchDeps, entry.upstream.issuer).catch(
      (err: unknown) => {
        if (!(err instanceof UpstreamSetupError)) throw err;
        throw refused(`Cannot re-pin ${id}: ${err.message.replace(/^Upstream [^:]+: /, '')}`, 1);
      },
    );
    const server = discovery.authorizationServer;
    const now = new Date();
    const before = await withTransaction(pool, async (tx) => {
      const was = await findPin(tx, id);
      await repin(tx, {
        provider: id,
        issuer: server.issuer,
        endpoints: endpointsOf(server),
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
