import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, DEFAULT_DATA_DIR, loadConfig, processEnvironment, type Config } from '../config/config.js';
import { withRunningService } from '../runtime/serviceRecord.js';
import { createFetch } from '../shared/httpClient.js';
import { CliError } from './cliError.js';
import { connectionsCommand } from './connectionsCommand.js';
import { deploymentIssuer } from './deployment.js';
import { doctorCommand } from './doctor.js';
import { fetchDevToken } from './devToken.js';
import { keysCommand } from './keysCommand.js';
import { ledgerCommand } from './ledgerCommand.js';
import { migrateCommand } from './migrateCommand.js';
import { providersCommand } from './providersCommand.js';
import { sessionsCommand } from './sessionsCommand.js';
import { toolsCommand } from './toolsCommand.js';
import { toolsImport } from './toolsImport.js';
import { urlCheck } from './urlCheck.js';
import { upstreamsCommand } from './upstreamsCommand.js';

/** Where a command writes: whole lines to stdout or stderr, or text as it is (a YAML document). */
interface Io {
  out(line: string): void;
  err(line: string): void;
  write(text: string): void;
}

/** One command: its lines of the help, and what it runs (its exit code). The configuration is read once, when a command asks. */
interface Command {
  usage: string;
  run(args: string[], io: Io, config: () => Config): Promise<number>;
}

const commands: Record<string, Command> = {
  'dev-token': {
    usage: `dev-token --user <name>   Print an MCP access token for a demo user of the running
                            development server (development mode only).`,
    run: async (args, _io, config) => {
      await devToken(args, config());
      return 0;
    },
  },
  ledger: {
    usage: `ledger <command>          Operators' ledger and actions: verify, flows, flow <id>, stuck,
                            reconcile, gates, close, reissue, redrive, approvals, approve,
                            reject, pause-connections, resume-connections (an operator's
                            token in BROKER_OPERATOR_TOKEN; broker ledger help for the options).`,
    run: (args, io, config) => ledgerCommand(args, config(), io.out, io.err),
  },
  doctor: {
    usage: `doctor                    Checks this environment without starting the broker: every variable,
                            the identity provider, the database, the TLS files, each provider and
                            upstream; one OK/WARN/FAIL line each, exit 1 on any FAIL.`,
    // The environment itself, not loadConfig's result: every bad variable is a finding, not a stop.
    run: (args, io) => doctorCommand(args, processEnvironment(), io.out),
  },
  migrate: {
    usage: `migrate [--check]         Applies the pending database migrations (the step before a rollout);
                            --check lists them and exits 1 when any is pending.`,
    run: (args, io, config) => migrateCommand(args, config(), io.out),
  },
  keys: {
    usage: `keys status [--json]      Values at rest per key id of SECRET_KEYS and kind, the active key, and
                            whether each older key can be retired (an operator's token, as ledger).`,
    run: (args, io, config) => keysCommand(args, config(), io.out),
  },
  sessions: {
    usage: `sessions list [--subject SUB] [--json]
                            Live browser sessions: id, subject, signed in, last seen, expires.
  sessions revoke <subject|session-id> --reason R
                            Ends one browser session, or every one of a subject, at its next
                            request; recorded (an operator's token, as ledger).`,
    run: (args, io, config) => sessionsCommand(args, config(), io.out),
  },
  connections: {
    usage: `connections list [--subject SUB] [--provider ID] [--state STATE] [--json]
                            Connections: id, subject, provider, account, state, granted scopes,
                            connected, last used (never a token).
  connections revoke <id> --reason R
                            Disconnects one: revoked at the provider where it can be, its tokens
                            deleted whatever the provider answers; recorded (an operator's token).`,
    run: (args, io, config) => connectionsCommand(args, config(), io.out),
  },
  providers: {
    usage: `providers list [--json]   The providers PROVIDERS_FILE configures: source, kind, the callback
                            URL to register at each, scopes (no network access).
  providers check [--json]  Loads every provider's endpoints (discovery where configured); exit 1
                            unless every provider is ok.`,
    run: (args, io, config) => providersCommand(args, config(), io.out, io.err),
  },
  upstreams: {
    usage: `upstreams list [--json]   Each upstream MCP server: prefix, URL, registration, pinned snapshot.
  upstreams check [--json]  Resolves each upstream MCP server: its authorization server and the
                            broker's client there (registering it when none is stored); exit 1
                            unless every upstream is ok.
  upstreams snapshot <id> --file <tools.json> | --clear
                            Pins the tools shown to users not yet connected to <id>, with who
                            pinned them (an operator's token).
  upstreams repin <id> --reason <why>
                            Binds <id> to the authorization server its metadata names now, after
                            a change (an operator's token; recorded with the reason).`,
    run: (args, io, config) => upstreamsCommand(args, config(), io.out),
  },
  tools: {
    usage: `tools list [--json]       Every tool start-up serves: name, provider, scopes, and its source
                            (built in, module, file).
  tools check [--json]      Validates TOOLS_FILE against the configured providers; exit 1 on any
                            problem (every one listed).
  tools import <openapi file> --provider <id> --operation <operationId>… | --tag <tag>…
                            TOOLS_FILE entries (YAML) for the chosen operations of an OpenAPI 3.0
                            or 3.1 description; without a choice, lists its operations.`,
    // import reads a file and writes YAML: no configuration needed.
    run: (args, io, config) =>
      args[0] === 'import'
        ? toolsImport(args.slice(1), io.write, io.err)
        : toolsCommand(args, config(), io.out, io.err),
  },
  'url-check': {
    usage: `url-check [--json] [--file F] [--protect D]… [URL…]
                            The broker's judgement of each link (arguments, a file, or stdin): allow
                            or block, the rule, the registrable domain; exit 1 if any is blocked.`,
    run: (args, io, config) => urlCheck(args, config(), io.out, readStdin),
  },
};

const usage = `Usage: broker <command> [options]

Commands:
${Object.values(commands)
  .map((c) => `  ${c.usage}\n`)
  .join('')}  help                      Show this help.
`;

async function devToken(args: string[], config: Config): Promise<void> {
  const { values } = parseArgs({ args, options: { user: { type: 'string', short: 'u' } }, strict: true });
  if (config.mode !== 'development') {
    throw new UsageError(
      `dev-token works only in development mode (NODE_ENV is ${config.mode}); production tokens come from your identity provider.`,
    );
  }
  // The demo users are development material: loaded only here, so a production install never needs src/dev/.
  const { DEV_PASSWORD, findDevUser, devUsers } = await import('../dev/devUsers.js');
  const user = values.user ? findDevUser(values.user) : undefined;
  if (!user) throw new UsageError(`--user must be one of: ${devUsers.map((u) => u.login).join(', ')}`);
  const caPem = await readFile(join(config.dataDir, 'tls', 'ca.pem'), 'utf8').catch(() => {
    throw new UsageError(`No development CA in ${config.dataDir}/tls. Start the development server first: npm start`);
  });
  const issuer = deploymentIssuer(config);
  const token = await fetchDevToken({
    issuer,
    resource: config.http.mcpResourceUrl,
    login: user.login,
    password: DEV_PASSWORD,
    fetch: createFetch({ extraCaPems: [caPem] }),
  }).catch((cause: unknown) => {
    throw new UsageError(
      `Could not get a token from ${issuer}: is the development server running (npm start)? ${(cause as Error).message}`,
    );
  });
  process.stderr.write(
    `MCP access token for ${user.login} (audience ${config.http.mcpResourceUrl}, from ${issuer}):\n`,
  );
  process.stdout.write(`${token}\n`);
}

/** A command line the CLI cannot run (exit 2). */
class UsageError extends CliError {}

/** Standard input to its end; nothing when it is a terminal (no URL piped in). */
async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) return '';
  let text = '';
  for await (const chunk of process.stdin) text += (chunk as Buffer).toString('utf8');
  return text;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  const io: Io = {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    write: (text) => process.stdout.write(text),
  };
  let config: Config | undefined;
  try {
    if (name === undefined || name === 'help' || name === '--help') {
      process.stdout.write(usage);
      return 0;
    }
    const command = Object.hasOwn(commands, name) ? commands[name] : undefined;
    if (!command) throw new UsageError(`Unknown command: ${name}\n\n${usage}`);
    // Beside a running development service, its ports, unless the command is given its own (serviceRecord.ts).
    const env = () => {
      const given = processEnvironment();
      return withRunningService(given['DATA_DIR']?.trim() || DEFAULT_DATA_DIR, given);
    };
    return await command.run(rest, io, () => (config ??= loadConfig(env())));
  } catch (err) {
    if (err instanceof CliError || err instanceof ConfigError) {
      process.stderr.write(`broker: ${err.message}\n`);
      return err instanceof CliError ? err.exitCode : 2;
    }
    if (err instanceof TypeError && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`broker: ${err.message}\n\n${usage}`);
      return 2;
    }
    throw err;
  }
}

process.exitCode = await main(process.argv.slice(2));
