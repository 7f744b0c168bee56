import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { Config } from '../config/config.js';
import { AGE_HINT, parseAge } from '../ledger/flowAge.js';
import { scanForTokens } from '../ledger/gateScanRepo.js';
import { evaluateGates, verdictOf } from '../ledger/gates.js';
import {
  findFlowDetail,
  findFlows,
  findGateFigures,
  findReconcileFindings,
  findStuckFlows,
} from '../ledger/ledgerQueriesRepo.js';
import { lineages, navigationStates, State } from '../flow/navigationStates.js';
import { formatTable } from './table.js';
import { actionCommands, ActionError, runAction, type ActionCommand } from './ledgerActions.js';
import { withOperator } from './operatorAuth.js';
import { readAnchorFile, runAnchorExport, runVerify, VerifyInputError } from './ledgerVerify.js';
import { createLogger } from '../shared/logger.js';
import { CliError } from './cliError.js';

export class LedgerCommandError extends CliError {}

const queryCommands = ['verify', 'anchor', 'flows', 'flow', 'stuck', 'reconcile', 'gates'];

const usage = `Usage: broker ledger <command> [--json]

Every command needs BROKER_OPERATOR_TOKEN: an access token from the identity provider for a user with
the operator role (development: export BROKER_OPERATOR_TOKEN=$(npm run -s broker -- dev-token --user ops)).

  verify [--anchor FILE]  Recompute every flow's hash chain and head, the anchors' chain and
                          the heads they sealed, and name the first break (exit 1 when broken).
                          With FILE (from anchor export, kept outside the database): also check
                          that the database still holds that anchor, which pins every event it
                          and the anchors before it sealed.
  anchor export           Seal the events committed since the last anchor, then print the
                          latest anchor (JSON) to keep outside the database.
  flows [filters]         Flows, newest first. Filters: --state S --lineage L --subject SUB
                          --provider P --tool T --older-than AGE (90, 30m, 2h, 7d)
                          --limit N (default 50).
  flow <id>               One flow: its record, every event, the consent and the receipt.
  stuck                   Flows still open past their expiry.
  reconcile [--grace S]   Accepted operations without an outcome, verified flows never accepted,
                          secrets without a verified flow, missing consent receipts (exit 1 if any).
  gates [--tokens-file F] The release gates' figures from live data (exit 1 when one is missed).
                          With F (one third-party token a line, e.g. a test run's canaries):
                          also read every table but the vault for those tokens.
  pause-connections --reason R    Kill switch: stop issuing connect links and revoke every pending
                                  OAuth transaction (flows at the provider are left as they are).
  resume-connections --reason R   Issue connect links again.
  close <flow id> --reason R      Mark a flow nobody will finish as terminal (${State.EXPIRED}).
  reissue <flow id> --reason R    A new connect link for an expired or stuck flow, same lineage and
                                  operation; prints the link to hand to its user.
  redrive <receipt or flow id> --reason R [--wait S]
                                  Perform an accepted operation whose outcome is unknown again, with
                                  the same idempotency key (done by a running instance's next sweep).
  approvals                       Operations of high-risk tools waiting for an operator.
  approve <approval id> --reason R / reject <approval id> --reason R
                                  Decide one; a rejection ends the flow.
`;

/** `broker ledger …`: returns the process exit code. */
export async function ledgerCommand(
  args: string[],
  config: Readonly<Config>,
  out: (line: string) => void,
  progress: (line: string) => void = () => undefined,
): Promise<number> {
  const [sub, ...rest] = args;
  if (!sub || ![...queryCommands, ...actionCommands].includes(sub)) throw new LedgerCommandError(usage);
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    strict: true,
    options: {
      json: { type: 'boolean', default: false },
      state: { type: 'string' },
      lineage: { type: 'string' },
      subject: { type: 'string' },
      provider: { type: 'string' },
      tool: { type: 'string' },
      'older-than': { type: 'string' },
      limit: { type: 'string' },
      grace: { type: 'string' },
      reason: { type: 'string' },
      wait: { type: 'string' },
      anchor: { type: 'string' },
      'tokens-file': { type: 'string' },
    },
  });
  const number = (name: string, raw: string | undefined, fallback: number | undefined) => {
    if (raw === undefined) return fallback;
    if (!/^\d{1,9}$/.test(raw)) throw new LedgerCommandError(`--${name} must be a whole number of at most 9 digits`);
    return Number(raw);
  };
  const age = (raw: string | undefined) => {
    if (raw === undefined) return undefined;
    const seconds = parseAge(raw);
    if (seconds === undefined) throw new LedgerCommandError(`--older-than must be ${AGE_HINT}`);
    return seconds;
  };
  const logger = createLogger({ level: 'silent' });
  const oneOf = (name: string, raw: string | undefined, allowed: readonly string[]) => {
    if (raw !== undefined && !allowed.includes(raw))
      throw new LedgerCommandError(`--${name} must be one of: ${allowed.join(', ')}`);
  };
  const now = new Date();
  const print = (data: unknown, text: () => string) => out(values.json ? JSON.stringify(data) : text());
  return withOperator(
    config,
    `ledger ${sub}`,
    (message, exitCode) => new LedgerCommandError(message, exitCode),
    async (pool, { actor, subject }) => {
      if ((actionCommands as readonly string[]).includes(sub)) {
        const input = {
          command: sub as ActionCommand,
          id: positionals[0],
          reason: values.reason,
          json: values.json,
          waitSeconds: number('wait', values.wait, 0)!,
          actor,
          subject,
        };
        return await runAction(config, pool, logger, input, out).catch((err: unknown) => {
          throw err instanceof ActionError ? new LedgerCommandError(err.message) : err;
        });
      }
      if (sub === 'flows' || sub === 'stuck') {
        oneOf('state', values.state, navigationStates);
        oneOf('lineage', values.lineage, lineages);
        const limit = number('limit', values.limit, 50)!;
        const olderThan = age(values['older-than']);
        const flows =
          sub === 'stuck'
            ? await findStuckFlows(pool, now, limit)
            : await findFlows(
                pool,
                {
                  limit,
                  ...(values.state ? { state: values.state } : {}),
                  ...(values.lineage ? { lineage: values.lineage } : {}),
                  ...(values.subject ? { subject: values.subject } : {}),
                  ...(values.provider ? { provider: values.provider } : {}),
                  ...(values.tool ? { tool: values.tool } : {}),
                  ...(olderThan !== undefined ? { olderThanSeconds: olderThan } : {}),
                },
                now,
              );
        print(flows, () =>
          flows.length === 0
            ? 'No flows.'
            : formatTable(
                ['id', 'status', 'lineage', 'subject', 'provider', 'tool', 'created', 'expires'],
                flows.map((f) => [
                  f.id,
                  f.status,
                  f.lineage,
                  f.subject,
                  f.provider,
                  f.tool,
                  f.createdAt.toISOString(),
                  f.expiresAt.toISOString(),
                ]),
              ),
        );
        return 0;
      }
      if (sub === 'flow') {
        const id = positionals[0] ?? '';
        if (!/^[0-9a-f-]{36}$/i.test(id)) throw new LedgerCommandError('Usage: broker ledger flow <navigation id>');
        const detail = await findFlowDetail(pool, id);
        if (!detail) throw new LedgerCommandError(`No flow ${id}.`);
        print(detail, () =>
          [
            `Flow ${detail.flow.id}: ${detail.flow.status} (${detail.flow.lineage}), ${detail.flow.subject} → ${detail.flow.provider} at ${detail.flow.targetHost}, to ${detail.flow.purpose}`,
            `Created ${detail.flow.createdAt.toISOString()}, expires ${detail.flow.expiresAt.toISOString()}`,
            `Consent: ${detail.consent ? `${detail.consent.browserSub} at ${detail.consent.at.toISOString()} for ${detail.consent.destination}` : 'none'}`,
            `Receipt: ${detail.receipt ? `${detail.receipt.id} ${detail.receipt.outcomeStatus} (${detail.receipt.lineage}${detail.receipt.jsonrpcId ? `, JSON-RPC id ${detail.receipt.jsonrpcId}` : ''})` : 'none'}`,
            '',
            formatTable(
              ['at', 'from', 'to', 'event', 'actor'],
              detail.events.map((e) => [e.at.toISOString(), e.from, e.to, e.event, e.actor]),
            ),
          ].join('\n'),
        );
        return 0;
      }
      if (sub === 'gates') {
        const tokens = await tokensToFind(values['tokens-file']);
        const figures = await findGateFigures(pool);
        if (tokens) figures.tokensOutsideVault = await scanForTokens(pool, tokens);
        const gates = evaluateGates(figures);
        print(gates, () =>
          formatTable(
            ['gate', 'figure', 'target', 'result'],
            gates.map((g) => [g.gate, g.figure, g.target, verdictOf(g)]),
          ),
        );
        return gates.every((g) => g.pass) ? 0 : 1;
      }
      if (sub === 'reconcile') {
        const findings = await findReconcileFindings(pool, now, number('grace', values.grace, 300)!);
        print(findings, () =>
          findings.length === 0
            ? 'Nothing to reconcile.'
            : formatTable(
                ['kind', 'id', 'detail'],
                findings.map((f) => [f.kind, f.id, f.detail]),
              ),
        );
        return findings.length > 0 ? 1 : 0;
      }
      try {
        if (sub === 'anchor') {
          if (positionals[0] !== 'export' || positionals.length > 1)
            throw new LedgerCommandError('Usage: broker ledger anchor export');
          return await runAnchorExport(pool, now, out);
        }
        const anchor = values.anchor === undefined ? undefined : await readAnchorFile(values.anchor);
        return await runVerify(pool, { anchor, json: values.json }, out, progress);
      } catch (err) {
        throw err instanceof VerifyInputError ? new LedgerCommandError(err.message) : err;
      }
    },
    { poolMax: 4, logger },
  );
}

/** The tokens of `--tokens-file`: one a line, blank lines skipped; a file that cannot be read is a usage error. */
async function tokensToFind(path: string | undefined): Promise<string[] | undefined> {
  if (path === undefined) return undefined;
  const text = await readFile(path, 'utf8').catch((err: unknown) => {
    throw new LedgerCommandError(`--tokens-file ${path}: ${err instanceof Error ? err.message : String(err)}`);
  });
  const tokens = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.length > 0);
  if (tokens.some((t) => t.length < 8))
    throw new LedgerCommandError(`--tokens-file ${path}: every token must be at least 8 characters`);
  return tokens;
}
