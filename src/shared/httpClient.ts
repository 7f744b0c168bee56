import { rootCertificates } from 'node:tls';
import { Agent } from 'undici';

export type Fetch = typeof fetch;

/**
 * The fetch every server-to-server call uses. It verifies TLS against the
 * system roots plus any extra CA (the development CA under `.data/`); there
 * is no switch that turns verification off. It is the global fetch with a
 * dispatcher, so nock still sees every request in tests.
 */
export function createFetch(options: { extraCaPems?: readonly string[]; timeoutMs?: number } = {}): Fetch {
  const dispatcher = new Agent({
    connect: { ca: [...rootCertificates, ...(options.extraCaPems ?? [])], rejectUnauthorized: true },
    headersTimeout: options.timeoutMs ?? 10_000,
    bodyTimeout: options.timeoutMs ?? 10_000,
  });
  const timeoutMs = options.timeoutMs ?? 10_000;
  return ((input: Parameters<Fetch>[0], init?: Parameters<Fetch>[1]) =>
    fetch(input, {
      ...init,
      // Our deadline holds even when the caller brings its own signal (openid-client always does, at 30 s).
      signal: init?.signal ? AbortSignal.any([init.signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs),
      // undici's dispatcher option is not in the DOM RequestInit type
      ...({ dispatcher } as object),
    })) as Fetch;
}
