import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { z } from 'zod';
import { createDevGithubServer } from '../../src/dev/devGithubServer.js';
import { openGithubStore } from '../../src/dev/devGithubStore.js';
import { createLogger } from '../../src/shared/logger.js';
import { createRender } from '../../src/web/render.js';

// The rehearsal's plain OAuth 2.0 provider, in its own process: the GitHub emulator (GitHub's
// documented OAuth App and REST wire behaviour, src/dev/devGithubServer.ts) at a name of its own,
// as a GitHub Enterprise Server is, which the broker reaches through the `github` catalog entry's
// `host` parameter. Its state is saved to `storeFile` after every write, where the test counts
// what the broker's calls did. Prints `READY` once it listens.

const Settings = z.strictObject({
  port: z.number().int(),
  origin: z.url(),
  certFile: z.string(),
  keyFile: z.string(),
  storeFile: z.string(),
  app: z.strictObject({ clientId: z.string(), clientSecret: z.string(), callbackUrl: z.url() }),
});

const settings = Settings.parse(JSON.parse(process.argv[2] ?? '{}'));
const github = createDevGithubServer({
  origin: settings.origin,
  apps: [{ ...settings.app, name: 'Connect Broker' }],
  store: await openGithubStore({ filePath: settings.storeFile }),
  render: createRender({ cache: false }),
  logger: createLogger({ level: 'warn' }),
});
const server = createServer(
  { cert: readFileSync(settings.certFile), key: readFileSync(settings.keyFile) },
  github.handler,
);
server.listen(settings.port, '127.0.0.1', () => process.stdout.write(`READY ${settings.origin}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
