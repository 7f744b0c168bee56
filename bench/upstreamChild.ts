import { createDevUpstream } from '../src/dev/devUpstream.js';
import { listenHttps } from '../src/runtime/httpsServer.js';
import { createFetch } from '../src/shared/httpClient.js';
import { createLogger } from '../src/shared/logger.js';
import type { TlsMaterial } from '../src/tls/localCa.js';
import { createRender } from '../src/web/render.js';

// bench/upstreamProcess.ts's child: memo on a free loopback port, on the bench's TLS certificate.

type Handler = Parameters<typeof listenHttps>[1];

async function start(job: { tls: TlsMaterial; brokerUrl: string }) {
  const logger = createLogger({ level: 'warn', name: 'bench-upstream' }, process.stderr);
  let handler: Handler = (_req, res) => void res.writeHead(503).end('starting');
  const server = await listenHttps(job.tls, (req, res) => handler(req, res), '127.0.0.1', 0, 'bench upstream');
  const upstream = await createDevUpstream({
    origin: `https://127.0.0.1:${server.port}`,
    brokerPublicUrl: new URL(job.brokerUrl),
    fetch: createFetch({ extraCaPems: [job.tls.caPem] }),
    render: createRender({ cache: true }),
    logger,
  });
  handler = upstream.handler;
  return { url: upstream.url, issuer: upstream.issuer };
}

process.once('message', (job: { tls: TlsMaterial; brokerUrl: string }) => {
  start(job).then(
    (facts) => {
      process.send!(facts);
      process.on('message', (message) => {
        if (message === 'cpu') process.send!({ cpu: process.cpuUsage() });
      });
    },
    (err: unknown) => process.send!({ error: err instanceof Error ? err.message : String(err) }),
  );
});
// Stopped by the bench, or orphaned by it.
process.once('SIGTERM', () => process.exit(0));
process.once('disconnect', () => process.exit(0));
