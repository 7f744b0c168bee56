import { UnavailableError } from './appError.js';

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

/**
 * Discovery named another authorization server than the one pinned for the upstream (or the same
 * issuer with other endpoints): nothing is sent to it, and only an operator re-pins.
 */
export class IssuerChangedError extends UpstreamSetupError {
  constructor(
    upstream: string,
    readonly pinned: string,
    readonly named: string,
  ) {
    super(
      upstream,
      'authorization_server',
      named === pinned
        ? `the authorization server ${pinned} now names other endpoints than the ones pinned; nothing is sent to them until an operator re-pins (broker upstreams repin ${upstream} --reason ...)`
        : `its metadata names the authorization server ${named}, not the pinned ${pinned}; nothing is sent to it until an operator re-pins (broker upstreams repin ${upstream} --reason ...)`,
    );
  }
}
