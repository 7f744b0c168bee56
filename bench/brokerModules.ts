import { execFile } from 'node:child_process';
import { access } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import type * as Config from '../src/config/config.js';
import type * as Migrate from '../src/db/migrate.js';
import type * as PoolModule from '../src/db/pool.js';
import type * as DevSecrets from '../src/dev/devSecrets.js';
import type * as AppErrorModule from '../src/errors/appError.js';
import type * as DeclaredDefaults from '../src/mcp/declared/devDefaults.js';
import type * as ToolsFile from '../src/mcp/declared/toolsFile.js';
import type * as DefineConnectionTool from '../src/mcp/defineConnectionTool.js';
import type * as DefineTool from '../src/mcp/defineTool.js';
import type * as GithubApi from '../src/mcp/tools/githubApi.js';
import type * as OauthClient from '../src/oauth/oauthClient.js';
import type * as ProviderConfig from '../src/providers/providerConfig.js';
import type * as ProviderRefusal from '../src/providers/providerRefusal.js';
import type * as HttpsServer from '../src/runtime/httpsServer.js';
import type * as DisplayText from '../src/security/displayText.js';
import type * as Server from '../src/server.js';
import type * as Clock from '../src/shared/clock.js';
import type * as HttpClient from '../src/shared/httpClient.js';
import type * as Logger from '../src/shared/logger.js';
import type * as RequestFetch from '../src/shared/requestFetch.js';
import type * as SecretModule from '../src/shared/secret.js';
import type * as LocalCa from '../src/tls/localCa.js';
import type * as Render from '../src/web/render.js';

// The two code forms bench:mcp and bench:flow measure the broker in: the development
// process's (src/*.ts through tsx, as npm start runs it) and production's (the compiled
// JavaScript of `npm run build`, as the image runs dist/main.js). A bench assembles each
// form's broker from that form's modules only, so the two differ in nothing else.

export const BROKER_FORMS = ['tsx', 'compiled'] as const;
export type BrokerForm = (typeof BROKER_FORMS)[number];

/** What a bench broker is built from, every function and class from one form's modules. */
export interface BrokerModules {
  form: BrokerForm;
  createBrokerServer: typeof Server.createBrokerServer;
  loadConfig: typeof Config.loadConfig;
  createOidcClient: typeof OauthClient.createOidcClient;
  parseProviders: typeof ProviderConfig.parseProviders;
  Secret: typeof SecretModule.Secret;
  systemClock: typeof Clock.systemClock;
  createPool: typeof PoolModule.createPool;
  readMigrations: typeof Migrate.readMigrations;
  createFetch: typeof HttpClient.createFetch;
  createRequestFetch: typeof RequestFetch.createRequestFetch;
  createRender: typeof Render.createRender;
  createLogger: typeof Logger.createLogger;
  listenHttps: typeof HttpsServer.listenHttps;
  /** What bench:mcp's defineConnectionTool twin (bench/benchIssueTool.ts) is written with. */
  tool: {
    defineConnectionTool: typeof DefineConnectionTool.defineConnectionTool;
    completeResult: typeof DefineTool.completeResult;
    AppError: typeof AppErrorModule.AppError;
    providerRefusal: typeof ProviderRefusal.providerRefusal;
    plainText: typeof DisplayText.plainText;
    GITHUB_PROVIDER: typeof GithubApi.GITHUB_PROVIDER;
    loadToolsFile: typeof ToolsFile.loadToolsFile;
    DEV_PROVIDER_SCOPES: typeof DeclaredDefaults.DEV_PROVIDER_SCOPES;
  };
  /** The flow bench's broker process reads its TLS material and development secrets with these. */
  loadOrCreateLocalTls: typeof LocalCa.loadOrCreateLocalTls;
  loadOrCreateDevSecrets: typeof DevSecrets.loadOrCreateDevSecrets;
}

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
const SOURCE_ROOT = new URL('../src/', import.meta.url);

/**
 * The modules of one form: src/ (resolved by tsx, the same module instances the bench imports
 * itself) or the compiled folder `compiledDir` (dist/, or an image:build folder's dist/).
 */
export async function loadBrokerModules(form: BrokerForm, compiledDir: string): Promise<BrokerModules> {
  const root = form === 'tsx' ? SOURCE_ROOT : pathToFileURL(`${resolve(compiledDir)}/`);
  const at = async <T>(path: string): Promise<T> => (await import(new URL(path, root).href)) as T;
  const [server, config, oauth, providers, secret, clock, pool, migrate, http, requestFetch, render, logger, https] =
    await Promise.all([
      at<typeof Server>('server.js'),
      at<typeof Config>('config/config.js'),
      at<typeof OauthClient>('oauth/oauthClient.js'),
      at<typeof ProviderConfig>('providers/providerConfig.js'),
      at<typeof SecretModule>('shared/secret.js'),
      at<typeof Clock>('shared/clock.js'),
      at<typeof PoolModule>('db/pool.js'),
      at<typeof Migrate>('db/migrate.js'),
      at<typeof HttpClient>('shared/httpClient.js'),
      at<typeof RequestFetch>('shared/requestFetch.js'),
      at<typeof Render>('web/render.js'),
      at<typeof Logger>('shared/logger.js'),
      at<typeof HttpsServer>('runtime/httpsServer.js'),
    ]);
  const [defineConnection, defineTool, appError, refusal, displayText, githubApi, toolsFile, declaredDefaults] =
    await Promise.all([
      at<typeof DefineConnectionTool>('mcp/defineConnectionTool.js'),
      at<typeof DefineTool>('mcp/defineTool.js'),
      at<typeof AppErrorModule>('errors/appError.js'),
      at<typeof ProviderRefusal>('providers/providerRefusal.js'),
      at<typeof DisplayText>('security/displayText.js'),
      at<typeof GithubApi>('mcp/tools/githubApi.js'),
      at<typeof ToolsFile>('mcp/declared/toolsFile.js'),
      at<typeof DeclaredDefaults>('mcp/declared/devDefaults.js'),
    ]);
  const [localCa, devSecrets] = await Promise.all([
    at<typeof LocalCa>('tls/localCa.js'),
    at<typeof DevSecrets>('dev/devSecrets.js'),
  ]);
  return {
    form,
    createBrokerServer: server.createBrokerServer,
    loadConfig: config.loadConfig,
    createOidcClient: oauth.createOidcClient,
    parseProviders: providers.parseProviders,
    Secret: secret.Secret,
    systemClock: clock.systemClock,
    createPool: pool.createPool,
    readMigrations: migrate.readMigrations,
    createFetch: http.createFetch,
    createRequestFetch: requestFetch.createRequestFetch,
    createRender: render.createRender,
    createLogger: logger.createLogger,
    listenHttps: https.listenHttps,
    tool: {
      defineConnectionTool: defineConnection.defineConnectionTool,
      completeResult: defineTool.completeResult,
      AppError: appError.AppError,
      providerRefusal: refusal.providerRefusal,
      plainText: displayText.plainText,
      GITHUB_PROVIDER: githubApi.GITHUB_PROVIDER,
      loadToolsFile: toolsFile.loadToolsFile,
      DEV_PROVIDER_SCOPES: declaredDefaults.DEV_PROVIDER_SCOPES,
    },
    loadOrCreateLocalTls: localCa.loadOrCreateLocalTls,
    loadOrCreateDevSecrets: devSecrets.loadOrCreateDevSecrets,
  };
}

/**
 * The compiled broker's folder: BENCH_DIST when set (a built folder holding main.js and
 * server.js: the checkout's dist/, or the dist/ of a folder `npm run image:build` printed, on
 * that folder's production install), else the checkout's dist/, built now by `npm run build`
 * so it is the same commit as the src/ the tsx side runs.
 */
export async function compiledBrokerDir(
  env: Readonly<Record<string, string | undefined>>,
  progress: (line: string) => void,
): Promise<string> {
  const given = env['BENCH_DIST'];
  if (given) {
    const dir = resolve(given);
    for (const file of ['main.js', 'server.js'])
      await access(join(dir, file)).catch(() => {
        throw new Error(`BENCH_DIST=${given}: no ${file} there; point it at a built folder (dist/)`);
      });
    progress(`compiled broker: ${dir} (BENCH_DIST)`);
    return dir;
  }
  progress('compiled broker: building dist/ (npm run build)…');
  const started = performance.now();
  try {
    await promisify(execFile)('npm', ['run', 'build', '--silent'], { cwd: REPO_ROOT, maxBuffer: 16 * 1024 * 1024 });
  } catch (err) {
    const out = err as { stdout?: string; stderr?: string };
    throw new Error(`npm run build failed; nothing measured:\n${out.stdout ?? ''}${out.stderr ?? String(err)}`);
  }
  progress(`compiled broker: dist/ built in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return join(REPO_ROOT, 'dist');
}
