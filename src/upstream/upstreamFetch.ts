import { MAX_AUTH_RESPONSE_BYTES } from '../oauth/oauthClient.js';
import { checkUrl, UrlPolicyError } from '../security/urlPolicy.js';
import { FetchRefusedError, strictFetch, type Fetch } from '../shared/httpClient.js';
import { UpstreamSetupError, type UpstreamStep } from '../errors/upstreamErrors.js';

export interface UpstreamFetchDeps {
  fetch: Fetch;
  /** Development: loopback URLs pass the URL policy. */
  allowLoopback: boolean;
  /** Each request's deadline. */
  timeoutMs: number;
}

/** An answer read whole: its status, headers, and its JSON body when it had one. */
export interface UpstreamAnswer {
  status: number;
  headers: Headers;
  json: unknown;
}

/**
 * One request of discovery or registration: the URL through the broker's URL policy first, then
 * the injected fetch with a deadline, no redirect followed and the body bounded
 * (MAX_AUTH_RESPONSE_BYTES). Any failure is an UpstreamSetupError at `step` naming `what` and why.
 */
export async function upstreamRequest(
  deps: UpstreamFetchDeps & { upstream: string; step: UpstreamStep },
  what: string,
  url: string,
  init: RequestInit = {},
): Promise<UpstreamAnswer> {
  const fail = (why: string, cause?: unknown): never => {
    throw new UpstreamSetupError(deps.upstream, deps.step, `${what} ${why}`, cause === undefined ? {} : { cause });
  };
  policyChecked(deps, what, url);
  let response: Response;
  try {
    response = await strictFetch(deps.fetch, { maxBytes: MAX_AUTH_RESPONSE_BYTES })(url, {
      ...init,
      signal: AbortSignal.timeout(deps.timeoutMs),
    });
  } catch (err) {
    if (err instanceof FetchRefusedError) return fail(`was refused: ${err.message}`, err);
    if (err instanceof Error && err.name === 'TimeoutError')
      return fail(`${url} did not answer within ${deps.timeoutMs / 1000} s`, err);
    return fail(`${url} could not be reached`, err);
  }
  const text = await response.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    // not JSON: callers that need a document say so
  }
  return { status: response.status, headers: response.headers, json };
}

/** `url` if it passes the broker's URL policy; else an UpstreamSetupError at `step` naming `what`. */
export function policyChecked(
  deps: Pick<UpstreamFetchDeps, 'allowLoopback'> & { upstream: string; step: UpstreamStep },
  what: string,
  url: string,
): URL {
  try {
    return checkUrl(url, { allowLoopback: deps.allowLoopback }, what);
  } catch (err) {
    if (!(err instanceof UrlPolicyError)) throw err;
    throw new UpstreamSetupError(deps.upstream, deps.step, `${what} is not a URL the broker calls (${err.message})`, {
      cause: err,
    });
  }
}
