import type { RequestListener } from 'node:http';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { Pool } from '../src/db/pool.js';
import type { BrokerServer } from '../src/server.js';
import { atUrl, defaultSettings, MANY_SIGN_INS } from '../test/support/testSettings.js';
import { BROKER_FORMS, loadBrokerModules, type BrokerForm } from './brokerModules.js';
import type { BrokerChildConfig, FromBroker, ToBroker } from './flowIpc.js';
import { createProbe } from './flowProbe.js';

// The broker of the flow bench, alone in its own process so that its memory
// is measured apart from the bench's clients and the development servers.
// Assembled as src/main.ts does, with the configuration's defaults (pool 10,
// sessions 8 h, retry wait 10 s: loadConfig's), and bench/flowProbe.ts on its
// listener, fetch and pool.
// Started with the bench's folder (TLS material, dev-secrets.json), the code form to
// assemble the broker from and the compiled build's folder as its arguments
// (bench/brokerModules.ts: every broker module, its listener, pool, fetch and logger
// among them, comes from that form; this harness and test/support/testSettings.ts
// run through tsx in both);
// everything else arrives over IPC (bench/flowIpc.ts).

const [dir, formArg = 'tsx', compiledDir = ''] = process.argv.slice(2);
if (!dir || !process.send) throw new Error('bench/flowBroker.ts is started by bench/flowBench.ts');
if (!(BROKER_FORMS as readonly string[]).includes(formArg)) throw new Error(`unknown broker form ${formArg}`);
const send = (message: FromBroker) => process.send!(message);
const {
  createBrokerServer,
  createLogger,
  createFetch,
  createOidcClient,
  createPool,
  createRender,
  listenHttps,
  loadConfig,
  loadOrCreateDevSecrets,
  loadOrCreateLocalTls,
  parseProviders,
  readMigrations,
  Secret,
  systemClock,
} = await loadBrokerModules(formArg as BrokerForm, compiledDir);

const probe = createProbe();
const logger = createLogger(
  { level: 'warn', name: 'flow-bench-broker' },
  new Writable({
    write(chunk: Buffer, _encoding, done) {
      const line = chunk.toString('utf8').trim();
      probe.log((JSON.parse(line) as { level?: number }).level ?? 0, line);
      done();
    },
  }),
);

const tls = await loadOrCreateLocalTls(join(dir, 'tls'));
let handler: RequestListener = (_req, res) => res.writeHead(503).end();
const server = await listenHttps(tls, (req, res) => handler(req, res), '127.0.0.1', 0, 'broker');
const publicUrl = new URL(`https://127.0.0.1:${server.port}`);
let pool: Pool | undefined;
let broker: BrokerServer | undefined;

process.on('message', (message: ToBroker) => {
  handle(message).catch((err: unknown) =>
    send({ type: 'failed', message: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
  );
});
// After a stop the bench disconnects; if it goes away without one, leave nothing behind either.
let stopped = false;
process.on('disconnect', () => void stop().finally(() => process.exit(stopped ? 0 : 1)));
send({ type: 'listening', port: server.port });

async function handle(message: ToBroker): Promise<void> {
  if (message.type === 'configure') {
    broker = await assemble(message.config);
    handler = probe.listener(broker.listener);
    send({ type: 'ready' });
  } else if (message.type === 'window') {
    probe.reset();
    send({ type: 'window-open' });
  } else if (message.type === 'stats') {
    send({ type: 'stats', stats: probe.stats() });
  } else {
    await stop();
    stopped = true;
    send({ type: 'stopped' });
  }
}

async function assemble(config: BrokerChildConfig): Promise<BrokerServer> {
  const secrets = await loadOrCreateDevSecrets(dir!);
  const fetch = probe.fetch(createFetch({ extraCaPems: [tls.caPem] }));
  pool = probe.pool(
    createPool({ url: new Secret(config.databaseUrl), poolMax: config.poolMax, schema: config.schema }, logger),
  );
  const defaults = defaultSettings(loadConfig);
  return createBrokerServer({
    settings: atUrl(
      {
        ...defaults,
        quotas: { ...defaults.quotas, ...config.quotas },
        // Every browser of the bench signs in from 127.0.0.1, as in the test stacks.
        login: { ...defaults.login, rateLimit: MANY_SIGN_INS },
      },
      publicUrl,
    ),
    pool,
    logger,
    clock: systemClock,
    render: createRender({ cache: true }),
    oidc: createOidcClient({
      issuer: config.idpIssuer,
      clientId: config.idpClientId,
      clientSecret: new Secret(secrets.brokerIdpClientSecret),
      fetch,
      allowLoopback: true,
    }),
    migrations: await readMigrations(),
    issuer: config.idpIssuer,
    fetch,
    secretKeys: secrets.secretKeys.map((k) => ({ kid: k.kid, key: new Secret(k.key) })),
    version: 'flow-bench',
    providers: parseProviders(config.providers, {
      allowLoopback: true,
      self: { publicUrl, issuer: config.idpIssuer },
    }),
    allowLoopback: true,
  });
}

let stopping: Promise<void> | undefined;
function stop(): Promise<void> {
  stopping ??= (async () => {
    probe.stop();
    await server.close(2_000);
    await broker?.close();
    await pool?.end();
  })();
  return stopping;
}
