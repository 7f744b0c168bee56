import { UnavailableError } from '../errors/appError.js';

/** Where resolving an upstream stopped: its 401, its protected resource metadata, its authorization server, or the client. */
export type UpstreamStep = 'challenge' | 'resource_metadata' | 'authorization_server' | 'registration';

/**
 * An upstream MCP server the broker cannot connect users to (yet): down, misconfigured, or asking
 * for a registration only the operator can make. The message is for operators (the log, `broker
 * upstreams check`): it names URLs, statuses and OAuth error codes, never a secret or a token.
 * Users are told only that the service is unavailable.
 */
export class UpstreamSetupError extends UnavailableError {
  constructor(
    readonly upstream: string,
    readonly step: UpstreamStep,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(`Upstream ${upstream}: ${message}`, { ...options, expose: false });
  }
}
