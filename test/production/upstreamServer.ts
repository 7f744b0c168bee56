import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { createFetch } from '../../src/shared/httpClient.js';
import { startUpstreamMcp } from '../support/upstreamMcp.js';

// The rehearsal's upstream MCP server (`kind: mcp`), in its own process: the test suite's upstream
// (test/support/upstreamMcp.ts: the official SDK's handler behind bearer auth, its own
// authorization server with Dynamic Client Registration) at a name of its own. A create_note whose
// title is `slowTitle` is answered after `slowMs` (an in-flight call for the shutdown step). Each
// call that reaches it is printed as `CALL <json>`; prints `READY` once it listens.

const Settings = z.strictObject({
  hostname: z.string(),
  mcpPort: z.number().int(),
  authPort: z.number().int(),
  certFile: z.string(),
  keyFile: z.string(),
  caFile: z.string(),
  slowTitle: z.string(),
  slowMs: z.number().int(),
});

const settings = Settings.parse(JSON.parse(process.argv[2] ?? '{}'));
const caPem = readFileSync(settings.caFile, 'utf8');
const upstream = await startUpstreamMcp({
  tls: { caPem, certPem: readFileSync(settings.certFile, 'utf8'), keyPem: readFileSync(settings.keyFile, 'utf8') },
  registration: 'dcr',
  metadata: 'challenge',
  fetch: createFetch({ extraCaPems: [caPem] }),
  listen: { hostname: settings.hostname, mcpPort: settings.mcpPort, authPort: settings.authPort },
});
upstream.behaviour = { mode: 'slow', slowMs: settings.slowMs, onlyTitle: settings.slowTitle };
let printed = 0;
setInterval(() => {
  for (; printed < upstream.calls.length; printed++)
    process.stdout.write(`CALL ${JSON.stringify(upstream.calls[printed])}\n`);
}, 20).unref();
process.stdout.write(`READY ${upstream.url}\n`);
process.on('SIGTERM', () => void upstream.close().then(() => process.exit(0)));
