import { parseArgs } from 'node:util';
import { buildBrokerDeps } from '../buildBrokerDeps.js';
import type { Config } from '../config/config.js';
import type { Pool } from '../db/pool.js';
import { AppError } from '../errors/appError.js';
import { describeRevocation, revokeConnection } from '../ops/connectionRevocation.js';
import type { OperatorAct } from '../ops/recovery.js';
import { connectionStates, type ConnectionState } from '../secrets/connectionStates.js';
import { accountLabelOf, listConnections, type ConnectionRecord } from '../secrets/connectionsRepo.js';
import { systemClock } from '../shared/clock.js';
import { createLogger } from '../shared/logger.js';
import { deploymentFetch, deploymentIssuer, deploymentKeys, deploymentProviders } from './deployment.js';
import { withOperator } from './operatorAuth.js';
import { formatTable } from './table.js';
import { CliError } from './cliError.js';

export class ConnectionsCommandError extends CliError {}

const usage = `Usage: broker connections <command> [--json]

Every command needs BROKER_OPERATOR_TOKEN, as the ledger commands do.

  list [--subject SUB] [--provider ID] [--state STATE] [--limit N]
                       Connections, the most recently connected first: id, subject, provider, the
                       account at the provider (its label), whether it is the user's default for
                       the provider (yes, or chosen when the user made it so), state
                       (${connectionStates.join(', ')}), granted scopes, connected, last used.
                       Never a token.
  revoke <connection-id> --reason R
                       Disconnects it: the provider is asked to revoke the grant, the broker's tokens
                       are deleted whatever it answers, the connection is revoked (the user's next
                       call asks to connect again). Recorded with the reason. Exit 1 when the provider
                       did not revoke it (the tokens are deleted all the same).
`;

interface Options {
  subject?: string | undefined;
  provider?: string | undefined;
  state?: string | undefined;
  limit?: string | undefined;
  reason?: string | undefined;
}

const HEADERS = [
  'id',
  'subject',
  'provider',
  'account',
  'default',
  'state',
  'granted scopes',
  'connected',
  'last used',
];
const defaultFlag = (c: ConnectionRecord) => (!c.preferred ? '' : c.preferredChosen ? 'chosen' : 'yes');
const minute = (date: Date | undefined) => (date ? date.toISOString().slice(0, 16).replace('T', ' ') : 'never');
const row = (c: ConnectionRecord) => [
  c.id,
  c.subject.sub,
  c.provider,
  accountLabelOf(c) ?? '',
  defaultFlag(c),
  c.state,
  c.grantedScopes.join(' ') || '(none)',
  minute(c.connectedAt),
  minute(c.lastUsedAt),
];
const asJson = (c: ConnectionRecord) => ({
  id: c.id,
  subject: c.subject,
  provider: c.provider,
  account: { id: c.upstreamSubject ?? null, name: c.upstreamName ?? null, label: accountLabelOf(c) ?? null },
  preferred: c.preferred,
  preferredChosen: c.preferredChosen,
  state: c.state,
  grantedScopes: c.grantedScopes,
  connectedAt: c.connectedAt.toISOString(),
  lastUsedAt: c.lastUsedAt?.toISOString() ?? null,
});

function listInput(values: Options, positionals: string[]) {
  if (positionals.length > 0 || values.reason !== undefined) throw new ConnectionsCommandError(usage);
  const limit = Number(values.limit ?? '100');
  if (!/^\d{1,4}$/.test(values.limit ?? '100') || limit < 1)
    throw new ConnectionsCommandError('--limit must be a whole number from 1 to 9999');
  const text = (name: string, value: string | undefined) => {
    const trimmed = value?.trim();
    if (trimmed !== undefined && (trimmed === '' || trimmed.length > 255))
      throw new ConnectionsCommandError(`--${name} must be 1 to 255 characters`);
    return trimmed;
  };
  const state = values.state;
  if (state !== undefined && !(connectionStates as readonly string[]).includes(state))
    throw new ConnectionsCommandError(`--state must be one of: ${connectionStates.join(', ')}`);
  return {
    limit,
    subject: text('subject', values.subject),
    provider: text('provider', values.provider),
    state: state as ConnectionState | undefined,
  };
}

function revokeInput(values: Options, positionals: string[]) {
  if ((positionals.length !== 1 || values.subject) ?? values.provider ?? values.state ?? values.limit)
    throw new ConnectionsCommandError(usage);
  const reason = values.reason?.trim() ?? '';
  if (reason.length < 3 || reason.length > 500)
    throw new ConnectionsCommandError('revoke needs --reason "why" (3 to 500 characters); it is recorded.');
  return { id: positionals[0]!, reason };
}

/** `broker connections …`: returns the process exit code. */
export async function connectionsCommand(
  args: string[],
  config: Readonly<Config>,
  out: (line: string) => void,
): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'list' && sub !== 'revoke') throw new ConnectionsCommandError(usage);
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    strict: true,
    options: {
      json: { type: 'boolean', default: false },
      subject: { type: 'string' },
      provider: { type: 'string' },
      state: { type: 'string' },
      limit: { type: 'string' },
      reason: { type: 'string' },
    },
  });
  const input = sub === 'list' ? listInput(values, positionals) : revokeInput(values, positionals);
  return withOperator(
    config,
    `connections ${sub}`,
    (message, exitCode) => new ConnectionsCommandError(message, exitCode),
    async (pool, { actor, subject }) => {
      if ('limit' in input) {
        const found = await listConnections(pool, input);
        out(
          values.json
            ? JSON.stringify(found.map(asJson))
            : found.length === 0
              ? 'No connections.'
              : formatTable(HEADERS, found.map(row)),
        );
        return 0;
      }
      const result = await revoke(config, pool, input.id, { reason: input.reason, actor, subject });
      out(values.json ? JSON.stringify(result) : describeRevocation(result));
      return result.atProvider === 'revoked' ? 0 : 1;
    },
  );
}

// The running broker's providers, keys and fetch: the provider is called from here, as from a page.
async function revoke(config: Readonly<Config>, pool: Pool, id: string, act: OperatorAct) {
  const broker = buildBrokerDeps({
    pool,
    clock: systemClock,
    logger: createLogger({ level: 'silent' }),
    fetch: await deploymentFetch(config),
    secretKeys: await deploymentKeys(config),
    providers: await deploymentProviders(config),
    allowLoopback: config.mode !== 'production',
    issuer: deploymentIssuer(config),
    settings: config,
  });
  try {
    return await revokeConnection(broker, id, act);
  } catch (err) {
    // No such connection, already disconnected: the use case's own words.
    if (err instanceof AppError && err.expose) throw new ConnectionsCommandError(err.message, 1);
    throw err;
  } finally {
    await broker.signal.close();
  }
}
