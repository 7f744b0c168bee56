import { createServer as createHttpServer, type RequestListener, type Server as HttpServer } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';

export interface TlsPair {
  certPem: string;
  keyPem: string;
}

export interface RunningServer {
  server: Server | HttpServer;
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
  return listen(createServer({ cert: tls.certPem, key: tls.keyPem, minVersion: 'TLSv1.2' }, handler), host, port, name);
}

/**
 * Listens on plain HTTP, for TLS_TERMINATED_BY_PROXY=true only: a proxy in front holds the
 * certificate, and PUBLIC_URL, cookies and HSTS stay https (nothing reads the scheme from here).
 */
export async function listenHttp(
  handler: RequestListener,
  host: string,
  port: number,
  name: string,
): Promise<RunningServer> {
  return listen(createHttpServer(handler), host, port, name);
}

async function listen(server: Server | HttpServer, host: string, port: number, name: string): Promise<RunningServer> {
  server.keepAliveTimeout = 5_000;
  server.headersTimeout = 20_000;
  server.requestTimeout = 120_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(`${name}: port ${port} on ${host} is already in use; set another port (docs/configuration.md)`, {
              cause: err,
            })
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

async function closeGracefully(server: Server | HttpServer, graceMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  // A keep-alive connection becomes idle when its last request finishes; close it then, not at its timeout.
  const sweep = setInterval(() => server.closeIdleConnections(), 50);
  const timer = setTimeout(() => server.closeAllConnections(), graceMs);
  await closed;
  clearInterval(sweep);
  clearTimeout(timer);
}
