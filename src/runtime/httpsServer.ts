import { createServer, type Server } from 'node:https';
import type { RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TlsPair {
  certPem: string;
  keyPem: string;
}

export interface RunningServer {
  server: Server;
  port: number;
  /** Stops accepting, lets in-flight requests finish for up to graceMs, then cuts what is left. */
  close(graceMs: number): Promise<void>;
}

/** Listens with TLS on host:port (0 = any free port). A taken port fails with a message that says which. */
export async function listenHttps(
  tls: TlsPair,
  handler: RequestListener,
  host: string,
  port: number,
  name: string,
): Promise<RunningServer> {
  const server = createServer({ cert: tls.certPem, key: tls.keyPem, minVersion: 'TLSv1.2' }, handler);
  server.keepAliveTimeout = 5_000;
  server.headersTimeout = 20_000;
  server.requestTimeout = 120_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(
              `${name}: port ${port} on ${host} is already in use; set another port (see README, Configuration)`,
              { cause: err },
            )
          : err,
      ),
    );
    server.listen(port, host, () => resolve());
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: (graceMs) => closeGracefully(server, graceMs),
  };
}

async function closeGracefully(server: Server, graceMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  // A keep-alive connection becomes idle when its last request finishes; close it then, not at its timeout.
  const sweep = setInterval(() => server.closeIdleConnections(), 50);
  const timer = setTimeout(() => server.closeAllConnections(), graceMs);
  await closed;
  clearInterval(sweep);
  clearTimeout(timer);
}
