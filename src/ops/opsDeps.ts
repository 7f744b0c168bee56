import type { BrokerDeps } from '../broker/brokerDeps.js';
import type { RedriveDeps } from '../broker/redrive.js';
import type { GateFiguresReader } from '../metrics/gateMetrics.js';

/** What the operator pages need: the broker's use cases and the re-drive of unknown outcomes. */
export interface OpsDeps {
  broker: BrokerDeps;
  redrive: RedriveDeps;
  /** The process's cached gate figures (shared with /metrics). */
  gateFigures: GateFiguresReader;
}
