#!/usr/bin/env node
// The container's health check (the Dockerfile's HEALTHCHECK, docker-compose.yml): GET /readyz on
// the broker in this container; exit 0 on 200, else 1 with the reason on stderr. It reads the
// broker's own settings, so it follows them wherever they are set:
// - PORT (8443), on HOST unless HOST is every interface (then 127.0.0.1);
// - production with TLS_TERMINATED_BY_PROXY=true: plain http (the proxy in front holds the certificate);
// - production otherwise: https, trusting TLS_CA_FILE when set (else the system's CAs);
// - development: https, trusting the generated CA in DATA_DIR/tls/ca.pem.
// The certificate is checked for PUBLIC_URL's host name, which is also sent as Host: the broker is
// asked as its users ask it. Plain JavaScript with no dependency: runs as is in the production image.
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { checkServerIdentity } from 'node:tls';

const TIMEOUT_MS = 4_000;
const env = process.env;

function fail(reason) {
  process.stderr.write(`healthcheck: ${reason}\n`);
  process.exit(1);
}

const production = env.NODE_ENV === 'production';
const plain = production && env.TLS_TERMINATED_BY_PROXY === 'true';
const host = !env.HOST || env.HOST === '0.0.0.0' || env.HOST === '::' ? '127.0.0.1' : env.HOST;
const port = Number(env.PORT ?? 8443);
const publicUrl = env.PUBLIC_URL ? new URL(env.PUBLIC_URL) : undefined;
// URL keeps the brackets of an IPv6 literal; TLS names and Host headers take it without them.
const name = publicUrl ? publicUrl.hostname.replace(/^\[(.*)\]$/, '$1') : host;

let ca;
if (!plain) {
  const caFile = production ? env.TLS_CA_FILE : join(env.DATA_DIR ?? '.data', 'tls', 'ca.pem');
  try {
    ca = caFile ? readFileSync(caFile, 'utf8') : undefined;
  } catch (err) {
    fail(`cannot read the CA ${caFile}: ${err.message}`);
  }
}

const options = {
  host,
  port,
  path: '/readyz',
  headers: { host: publicUrl ? publicUrl.host : `${host}:${port}`, accept: 'application/json' },
  ...(plain
    ? {}
    : {
        ca,
        // SNI carries names only (RFC 6066 §3); the certificate is checked for the name either way.
        ...(isIP(name) ? {} : { servername: name }),
        checkServerIdentity: (_host, cert) => checkServerIdentity(name, cert),
      }),
};
const req = (plain ? httpRequest : httpsRequest)(options, (res) => {
  res.resume();
  if (res.statusCode === 200) process.exit(0);
  fail(`${plain ? 'http' : 'https'}://${host}:${port}/readyz answered ${res.statusCode}`);
});
req.setTimeout(TIMEOUT_MS, () => req.destroy(new Error(`no answer in ${TIMEOUT_MS} ms`)));
req.on('error', (err) => fail(`${plain ? 'http' : 'https'}://${host}:${port}/readyz: ${err.message}`));
req.end();
