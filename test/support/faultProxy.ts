import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, request as httpsRequest, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { TlsMaterial } from '../../src/tls/localCa.js';
import type { Fetch } from '../../src/shared/httpClient.js';

/**
 * What the proxy does to one request. `forward` and `delay` reach the provider; `reset`,
 * `stall`, `status` and `garbage` never do; `loseAnswer`, `cutBody` and `holdAnswer` reach it and
 * lose its answer on the way back (a partition in the middle of an exchange: the provider did the
 * work, the broker cannot know).
 */
export type Fault =
  | { kind: 'forward' }
  | { kind: 'delay'; ms: number }
  | { kind: 'reset' }
  | { kind: 'stall' }
  | { kind: 'status'; status: number; body?: string }
  | { kind: 'garbage' }
  | { kind: 'loseAnswer' }
  | { kind: 'cutBody' }
  | { kind: 'holdAnswer' }
  | { kind: 'garbleAnswer' };

export interface ProxiedRequest {
  method: string;
  path: string;
  fault: Fault['kind'];
  /** The provider's status, when the request reached it and it answered. */
  upstreamStatus?: number;
}

export interface FaultProxy {
  origin: string;
  /** The next requests matching `match` (method and path) get `fault`, `times` of them (default 1). */
  inject(match: { method?: string; path: RegExp }, fault: Fault, times?: number): void;
  /** Every request the proxy saw, in order. */
  readonly seen: readonly ProxiedRequest[];
  /** Drops the faults not yet used. */
  clear(): void;
  close(): Promise<void>;
}

interface Rule {
  method?: string;
  path: RegExp;
  fault: Fault;
  left: number;
}

/**
 * A loopback HTTPS proxy a test puts between the broker and a provider, to make the provider
 * slow, unreachable, failing or garbled on command, at the HTTP level the broker sees (the
 * provider itself is untouched). It terminates TLS with the stack's certificate and forwards to
 * `target` with the request as it came (but for Host, the provider's), so the provider answers as it would.
 */
export async function startFaultProxy(target: string, tls: TlsMaterial): Promise<FaultProxy> {
  const upstream = new URL(target);
  const rules: Rule[] = [];
  const seen: ProxiedRequest[] = [];
  const sockets = new Set<Socket>();

  const take = (req: IncomingMessage): Fault => {
    const path = req.url ?? '/';
    const rule = rules.find((r) => r.left > 0 && (!r.method || r.method === req.method) && r.path.test(path));
    if (!rule) return { kind: 'forward' };
    rule.left -= 1;
    return rule.fault;
  };

  const forward = (
    req: IncomingMessage,
    body: Buffer,
    record: ProxiedRequest,
  ): Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }> =>
    new Promise((resolve, reject) => {
      const out = httpsRequest(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          // The provider's own host: oidc-provider builds its metadata's URLs from it.
          headers: { ...req.headers, host: upstream.host },
          ca: tls.caPem,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            record.upstreamStatus = res.statusCode ?? 0;
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
          });
          res.on('error', reject);
        },
      );
      out.on('error', reject);
      out.end(body);
    });

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const fault = take(req);
    const record: ProxiedRequest = { method: req.method ?? '', path: req.url ?? '', fault: fault.kind };
    seen.push(record);
    const cut = (): void => void req.socket.destroy();
    switch (fault.kind) {
      case 'reset':
        return cut();
      case 'stall':
        return; // never answered; the broker's deadline must end it
      case 'status':
        res.writeHead(fault.status, { 'content-type': 'application/json' });
        return void res.end(fault.body ?? JSON.stringify({ error: 'server_error', error_description: 'injected' }));
      case 'garbage':
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end('{"access_token": "\u0000<html>not json');
      case 'delay':
        await new Promise((r) => setTimeout(r, fault.ms));
        break;
      default:
        break;
    }
    const answer = await forward(req, body, record).catch(() => undefined);
    if (!answer) return cut();
    switch (fault.kind) {
      case 'loseAnswer':
        return cut();
      case 'holdAnswer':
        return; // the provider answered; the broker never hears it
      case 'cutBody': {
        const { 'content-length': _length, 'transfer-encoding': _te, ...headers } = answer.headers;
        res.writeHead(answer.status, { ...headers, 'content-length': String(answer.body.length) });
        res.write(answer.body.subarray(0, Math.floor(answer.body.length / 2)));
        return void setTimeout(cut, 20);
      }
      case 'garbleAnswer':
        res.writeHead(answer.status, { 'content-type': 'application/json' });
        return void res.end(`${answer.body.toString('utf8').slice(0, 10)}\u0000garbled`);
      default: {
        const { 'transfer-encoding': _te, connection: _c, ...headers } = answer.headers;
        res.writeHead(answer.status, { ...headers, 'content-length': String(answer.body.length) });
        res.end(answer.body);
      }
    }
  };

  const server: Server = createServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
    handle(req, res).catch(() => req.socket.destroy());
  });
  server.on('secureConnection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    origin: `https://127.0.0.1:${port}`,
    inject(match, fault, times = 1) {
      rules.push({ ...match, fault, left: times });
    },
    seen,
    clear() {
      rules.length = 0;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A fetch that sends requests for `from`'s origin through the proxy once `route.to` is set (the
 * provider's origin is known only once the stack is up); everything else goes out unchanged.
 */
export function routedFetch(fetch: Fetch, route: { from?: string; to?: string }): Fetch {
  return ((input: Parameters<Fetch>[0], init?: Parameters<Fetch>[1]) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (!route.from || !route.to || url.origin !== route.from) return fetch(input, init);
    return fetch(new URL(`${url.pathname}${url.search}`, route.to), init);
  }) as Fetch;
}
