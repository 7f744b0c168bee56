import { OutcomeUnknownError } from '../broker/acceptOriginalOperation.js';
import { UpstreamUnauthorizedError } from '../broker/forgetConnection.js';
import type { UpstreamOutcome } from '../metrics/metrics.js';
import type { Provider } from '../providers/providerConfig.js';
import { UpstreamUnreachableError } from './upstreamMcpClient.js';

/** Counts each request to an upstream (the instance's metrics). */
export type ObserveUpstream = (upstream: string, method: 'tools/call' | 'tools/list', outcome: UpstreamOutcome) => void;

/** A request to an upstream run through `counted` is observed with how it ended. */
export function countedRequests(observe: ObserveUpstream | undefined) {
  /** Runs one request to `provider`, counting how it ended. */
  return async function counted<T extends object>(
    provider: Provider,
    method: 'tools/call' | 'tools/list',
    run: () => Promise<T>,
  ): Promise<T> {
    try {
      const answer = await run();
      const outcome: UpstreamOutcome =
        'kind' in answer && answer.kind === 'error'
          ? 'upstream_error'
          : 'result' in answer && (answer.result as Record<string, unknown> | undefined)?.['isError'] === true
            ? 'tool_error'
            : 'ok';
      observe?.(provider.id, method, outcome);
      return answer;
    } catch (err) {
      observe?.(
        provider.id,
        method,
        err instanceof UpstreamUnauthorizedError
          ? 'unauthorized'
          : err instanceof OutcomeUnknownError
            ? 'unknown'
            : err instanceof UpstreamUnreachableError
              ? 'unreachable'
              : 'unknown',
      );
      throw err;
    }
  };
}

export type Counted = ReturnType<typeof countedRequests>;
