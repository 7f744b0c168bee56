import type { UpstreamCallCount, UpstreamOutcome } from '../metrics/metrics.js';
import type { IssuerPin } from '../oauth/issuerPinsRepo.js';
import type { ProviderConnections, ProviderReceipts } from './dashboardRepo.js';

/** One upstream MCP server's row on the dashboard. */
export interface UpstreamRow {
  id: string;
  prefix: string;
  url: string;
  connections: ProviderConnections;
  /** Accepted operations, from the receipts: every instance, since the database began. */
  accepted: ProviderReceipts;
  /** Requests this instance sent since it started (its in-memory counters, as on /metrics). */
  instance: { calls: number; errors: number; errorsByOutcome: string; lists: number };
  /** The authorization server it is pinned to (none before its first use), and a change discovery named since. */
  authorizationServer:
    { issuer: string; pinnedBy: string; changedTo?: string | undefined; changedAt?: string | undefined } | undefined;
}

const OUTCOME_LABELS: Readonly<Record<Exclude<UpstreamOutcome, 'ok'>, string>> = {
  tool_error: 'tool error',
  upstream_error: 'upstream error',
  unauthorized: 'unauthorized',
  unreachable: 'unreachable',
  unknown: 'outcome unknown',
};

const NO_CONNECTIONS: ProviderConnections = { users: 0, connections: 0, needsReauth: 0 };
const NO_RECEIPTS: ProviderReceipts = { succeeded: 0, failed: 0, unknown: 0, pending: 0 };

/** The dashboard's rows, in the order the upstreams are given; an upstream nothing was counted for shows zeros. */
export function upstreamRows(
  upstreams: readonly { id: string; prefix: string; url: string }[],
  connections: ReadonlyMap<string, ProviderConnections>,
  receipts: ReadonlyMap<string, ProviderReceipts>,
  counts: readonly UpstreamCallCount[],
  pins: ReadonlyMap<string, IssuerPin> = new Map(),
): UpstreamRow[] {
  return upstreams.map((u) => {
    const pin = pins.get(u.id);
    const mine = counts.filter((c) => c.upstream === u.id);
    const calls = mine.filter((c) => c.method === 'tools/call');
    const failures = calls.filter((c) => c.outcome !== 'ok' && c.count > 0);
    const sum = (list: readonly UpstreamCallCount[]) => list.reduce((n, c) => n + c.count, 0);
    return {
      ...u,
      connections: connections.get(u.id) ?? NO_CONNECTIONS,
      accepted: receipts.get(u.id) ?? NO_RECEIPTS,
      instance: {
        calls: sum(calls),
        errors: sum(failures),
        errorsByOutcome: failures
          .map((c) => `${OUTCOME_LABELS[c.outcome as Exclude<UpstreamOutcome, 'ok'>]} ${c.count}`)
          .join(', '),
        lists: sum(mine.filter((c) => c.method === 'tools/list')),
      },
      authorizationServer: pin && {
        issuer: pin.issuer,
        pinnedBy: pin.pinnedBy,
        ...(pin.changedTo !== undefined && { changedTo: pin.changedTo, changedAt: pin.changedAt?.toISOString() }),
      },
    };
  });
}
