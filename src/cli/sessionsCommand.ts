import { parseArgs } from 'node:util';
import { findLiveSessions, type SessionListing } from '../auth/webSessionRepo.js';
import type { Config } from '../config/config.js';
import { AppError } from '../errors/appError.js';
import { describeTarget, parseSessionTarget, revokeSessions } from '../ops/sessionRevocation.js';
import { withOperator } from './operatorAuth.js';
import { formatTable } from './table.js';
import { CliError } from './cliError.js';

export class SessionsCommandError extends CliError {}

const usage = `Usage: broker sessions <command> [--json]

Every command needs BROKER_OPERATOR_TOKEN, as the ledger commands do.

  list [--subject SUB] [--limit N]    Live browser sessions (signed in, unexpired, not revoked), the
                                      most recently used first: id, subject, operator, signed in,
                                      last seen (to the minute), expires. No cookie or secret.
  revoke <subject|session-id> --reason R
                                      Ends one session (an id from list, sess_…) or every session of
                                      a subject, operators' included: that browser is signed out on
                                      its next request. Recorded with the reason (exit 1 when
                                      nothing matched, recorded all the same).
`;

const row = (s: SessionListing) => [
  s.id,
  s.subject,
  s.operator ? 'yes' : '',
  s.createdAt.toISOString(),
  s.lastSeenAt.toISOString(),
  s.expiresAt.toISOString(),
];
const HEADERS = ['id', 'subject', 'operator', 'signed in', 'last seen', 'expires'];

interface Options {
  subject?: string | undefined;
  limit?: string | undefined;
  reason?: string | undefined;
}

function listInput(values: Options, positionals: string[]) {
  if (positionals.length > 0 || values.reason !== undefined) throw new SessionsCommandError(usage);
  const limit = Number(values.limit ?? '100');
  if (!/^\d{1,4}$/.test(values.limit ?? '100') || limit < 1)
    throw new SessionsCommandError('--limit must be a whole number from 1 to 9999');
  const subject = values.subject?.trim();
  if (subject !== undefined && (subject === '' || subject.length > 255))
    throw new SessionsCommandError('--subject must be 1 to 255 characters');
  return { sub: 'list' as const, limit, subject };
}

function revokeInput(values: Options, positionals: string[]) {
  if (positionals.length !== 1 || values.subject !== undefined || values.limit !== undefined)
    throw new SessionsCommandError(usage);
  const reason = values.reason?.trim() ?? '';
  if (reason.length < 3 || reason.length > 500)
    throw new SessionsCommandError('revoke needs --reason "why" (3 to 500 characters); it is recorded.');
  try {
    return { sub: 'revoke' as const, reason, target: parseSessionTarget(positionals[0]!) };
  } catch (err) {
    if (err instanceof AppError) throw new SessionsCommandError(err.message);
    throw err;
  }
}

/** `broker sessions …`: returns the process exit code. */
export async function sessionsCommand(
  args: string[],
  config: Readonly<Config>,
  out: (line: string) => void,
): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'list' && sub !== 'revoke') throw new SessionsCommandError(usage);
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    strict: true,
    options: {
      json: { type: 'boolean', default: false },
      subject: { type: 'string' },
      limit: { type: 'string' },
      reason: { type: 'string' },
    },
  });
  const input = sub === 'list' ? listInput(values, positionals) : revokeInput(values, positionals);
  return withOperator(
    config,
    `sessions ${sub}`,
    (message, exitCode) => new SessionsCommandError(message, exitCode),
    async (pool, { actor, subject }) => {
      if (input.sub === 'list') {
        const sessions = await findLiveSessions(
          pool,
          { limit: input.limit, ...(input.subject !== undefined && { subject: input.subject }) },
          new Date(),
        );
        out(
          values.json
            ? JSON.stringify(sessions)
            : sessions.length === 0
              ? 'No live sessions.'
              : formatTable(HEADERS, sessions.map(row)),
        );
        return 0;
      }
      const revoked = await revokeSessions(pool, input.target, { reason: input.reason, actor, subject }, new Date());
      const what = describeTarget(input.target);
      if (values.json) out(JSON.stringify({ target: input.target, revoked }));
      else if (revoked.length === 0) out(`No live session matched ${what}: nothing revoked (recorded).`);
      else
        out(
          [
            `Revoked ${revoked.length} session${revoked.length === 1 ? '' : 's'} (${what}); each browser is signed out on its next request.`,
            '',
            formatTable(HEADERS, revoked.map(row)),
          ].join('\n'),
        );
      return revoked.length === 0 ? 1 : 0;
    },
  );
}
