import type { Fetch } from '../../src/shared/httpClient.js';

/**
 * A fetch that sends requests for real provider hosts (`slack.com`,
 * `api.github.com`) to the local emulators standing in for them: the scheme,
 * host and port are replaced by the emulator's origin, the path and query are
 * kept, and `x-forwarded-host` tells the emulator which host was asked for
 * (one emulator can serve several hosts of one provider). Any other URL goes
 * out unchanged. The broker and the test browser both use it, so nothing in
 * the broker knows it is talking to an emulator.
 */
export function mapHosts(fetch: Fetch, map: Readonly<Record<string, string>>): Fetch {
  return (async (input: Parameters<Fetch>[0], init?: Parameters<Fetch>[1]) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const origin = url.protocol === 'https:' && url.port === '' ? map[url.hostname] : undefined;
    if (origin === undefined) return fetch(input, init);
    const target = new URL(`${url.pathname}${url.search}`, origin);
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    headers.set('x-forwarded-host', url.hostname);
    return fetch(target, { ...init, headers });
  }) as Fetch;
}
