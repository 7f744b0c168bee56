import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOrCreateLocalTls, type TlsMaterial } from '../../src/tls/localCa.js';
import { listenHttps, type HttpsTestServer } from '../support/httpsTestServer.js';

// bin/healthcheck.js, the image's HEALTHCHECK, run as Docker runs it: its own process with the
// broker's environment, against a real HTTPS (or plain HTTP) server standing in for the broker.

const script = fileURLToPath(new URL('../../bin/healthcheck.js', import.meta.url));

interface Outcome {
  code: number;
  stderr: string;
}

function healthcheck(env: Record<string, string>): Promise<Outcome> {
  return new Promise((resolve) => {
    // Only what is given: the host's NODE_ENV, PORT or TLS settings must not leak in.
    execFile(process.execPath, [script], { env: { PATH: process.env['PATH'] ?? '', ...env } }, (err, _out, stderr) =>
      resolve({ code: err ? Number(err.code) : 0, stderr }),
    );
  });
}

describe('bin/healthcheck.js', () => {
  let dataDir: string;
  let tls: TlsMaterial;
  let broker: HttpsTestServer;
  let port: string;
  const seen: { path: string | undefined; host: string | undefined }[] = [];
  let status = 200;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'healthcheck-'));
    // The development CA where the broker writes it (DATA_DIR/tls): its leaf names 127.0.0.1 and localhost.
    tls = await loadOrCreateLocalTls(join(dataDir, 'tls'));
    broker = await listenHttps(tls);
    broker.setHandler((req, res) => {
      seen.push({ path: req.url, host: req.headers.host });
      res.statusCode = req.url === '/readyz' ? status : 404;
      res.end();
    });
    port = new URL(broker.origin).port;
  });
  afterAll(async () => {
    await broker.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('passes in development when /readyz answers 200 over https, trusting the CA in DATA_DIR', async () => {
    seen.length = 0;
    status = 200;
    const result = await healthcheck({ NODE_ENV: 'development', PORT: port, DATA_DIR: dataDir });
    expect(result).toEqual({ code: 0, stderr: '' });
    expect(seen).toEqual([{ path: '/readyz', host: `127.0.0.1:${port}` }]);
  });

  it('fails when /readyz answers 503, saying so', async () => {
    status = 503;
    const result = await healthcheck({ NODE_ENV: 'development', PORT: port, DATA_DIR: dataDir });
    status = 200;
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('answered 503');
  });

  it('passes in production with TLS_CA_FILE, checking the certificate for PUBLIC_URL and sending its Host', async () => {
    seen.length = 0;
    const result = await healthcheck({
      NODE_ENV: 'production',
      PORT: port,
      HOST: '0.0.0.0',
      PUBLIC_URL: `https://localhost:${port}`,
      TLS_CA_FILE: join(dataDir, 'tls', 'ca.pem'),
    });
    expect(result).toEqual({ code: 0, stderr: '' });
    expect(seen).toEqual([{ path: '/readyz', host: `localhost:${port}` }]);
  });

  it('fails in production without the CA that issued the certificate (the system CAs alone)', async () => {
    const result = await healthcheck({ NODE_ENV: 'production', PORT: port, PUBLIC_URL: `https://localhost:${port}` });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/self-signed|unable to verify|certificate/i);
  });

  it('fails when the certificate does not name PUBLIC_URL’s host', async () => {
    const result = await healthcheck({
      NODE_ENV: 'production',
      PORT: port,
      PUBLIC_URL: 'https://broker.example.com',
      TLS_CA_FILE: join(dataDir, 'tls', 'ca.pem'),
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("Host: broker.example.com. is not in the cert's altnames");
  });

  it('speaks plain http in production behind a TLS-terminating proxy (TLS_TERMINATED_BY_PROXY=true)', async () => {
    const requests: IncomingMessage[] = [];
    const plain: Server = createServer((req, res) => {
      requests.push(req);
      res.statusCode = req.url === '/readyz' ? 200 : 404;
      res.end();
    });
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    try {
      const plainPort = String((plain.address() as AddressInfo).port);
      const result = await healthcheck({
        NODE_ENV: 'production',
        PORT: plainPort,
        TLS_TERMINATED_BY_PROXY: 'true',
        PUBLIC_URL: 'https://broker.example.com',
      });
      expect(result).toEqual({ code: 0, stderr: '' });
      expect(requests.map((r) => [r.url, r.headers.host])).toEqual([['/readyz', 'broker.example.com']]);
      // The same server is no https listener: without the proxy setting the check fails.
      const https = await healthcheck({
        NODE_ENV: 'production',
        PORT: plainPort,
        PUBLIC_URL: 'https://broker.example.com',
      });
      expect(https.code).toBe(1);
    } finally {
      await new Promise((resolve) => plain.close(resolve));
    }
  });

  it('fails when nothing listens on PORT', async () => {
    const closed = await listenHttps(tls);
    const closedPort = new URL(closed.origin).port;
    await closed.close();
    const result = await healthcheck({ NODE_ENV: 'development', PORT: closedPort, DATA_DIR: dataDir });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('ECONNREFUSED');
  });
});
