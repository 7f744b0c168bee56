import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TlsMaterial } from '../../src/tls/localCa.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export interface HttpsTestServer {
  /** e.g. https://127.0.0.1:40123 */
  origin: string;
  server: Server;
  /** Servers whose configuration names their own URL are built after listen, then set here. */
  setHandler(handler: Handler): void;
  close(): Promise<void>;
}

/**
 * An HTTPS server on 127.0.0.1, port 0 (or `port`), answering 503 until a handler is set. `hostname`:
 * the name its origin is written with (one that resolves to 127.0.0.1), else 127.0.0.1.
 */
export async function listenHttps(
  tls: TlsMaterial,
  { hostname = '127.0.0.1', port: wanted = 0 }: { hostname?: string; port?: number } = {},
): Promise<HttpsTestServer> {
  let handler: Handler = (_req, res) => {
    res.statusCode = 503;
    res.end();
  };
  const server = createServer({ key: tls.keyPem, cert: tls.certPem }, (req, res) => handler(req, res));
  await new Promise<void>((resolve) => server.listen(wanted, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo; // listen() on a TCP port always yields AddressInfo
  return {
    origin: `https://${hostname}:${port}`,
    server,
    setHandler: (next) => {
      handler = next;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
