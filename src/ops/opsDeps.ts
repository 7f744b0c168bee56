import type { BrokerDeps } from '../broker/brokerDeps.js';
import type { RedriveDeps } from '../jobs/redrive.js';
import type { GateFiguresReader } from '../metrics/gateMetrics.js';
import type { UpstreamCallCountsReader } from '../metrics/metrics.js';
import type { Render } from '../web/render.js';
import type { OperatorGuardDeps } from './operatorGuard.js';

/** What the operator pages need: the broker's use cases and the re-drive of unknown outcomes. */
export interface OpsDeps {
  broker: BrokerDeps;
  redrive: RedriveDeps;
  /** The process's cached gate figures (shared with /metrics). */
  gateFigures: GateFiguresReader;
  /** This instance's counts of requests to upstream MCP servers (shared with /metrics). */
  upstreamCalls: UpstreamCallCountsReader;
  /** WEBHOOK_URL is set: without it no event is sent, so none is counted as waiting. */
  webhooksConfigured: boolean;
}

/** What the /ops routers are built from (opsRoutes.ts and each of its sub-routers). */
export interface OpsRoutesDeps extends OperatorGuardDeps {
  render: Render;
  ops: OpsDeps;
}
