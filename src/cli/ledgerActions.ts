import { decideApproval } from '../broker/approvals.js';
import { findApprovals } from '../broker/approvalRepo.js';
import { buildBrokerDeps } from '../buildBrokerDeps.js';
import { markTerminal, reissueLink, requestRedrive } from '../ops/recovery.js';
import { findReceiptById } from '../broker/receiptRepo.js';
import type { Principal } from '../auth/principal.js';
import type { Config } from '../config/config.js';
import type { Pool } from '../db/pool.js';
import { AppError } from '../errors/appError.js';
import { pauseConnections, resumeConnections } from '../ledger/killSwitch.js';
import { systemClock } from '../shared/clock.js';
import { createFetch } from '../shared/httpClient.js';
import type { Logger } from '../shared/logger.js';
import { deploymentIssuer, deploymentKeys } from './deployment.js';
import { formatTable } from './table.js';

export const actionCommands = [
  'pause-connections',
  'resume-connections',
  'close',
  'reissue',
  'redrive',
  'approvals',
  'approve',
  'reject',
] as const;
export type ActionCommand = (typeof actionCommands)[number];

export class ActionError extends Error {}

export interface ActionInput {
  command: ActionCommand;
  id: string | undefined;
  reason: string | undefined;
  json: boolean;
  waitSeconds: number;
  actor: string;
  /** The operator's identity (an operator never approves their own operation). */
  subject: Principal;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Operators' actions from the CLI (recovery, kill switch, approvals): each needs a
 * reason, runs the same use case as the pages, and is recorded with the
 * operator as actor. The CLI runs no provider clients: a re-drive is asked for
 * here and performed by the next reconcile sweep of a running instance.
 */
export async function runAction(
  config: Readonly<Config>,
  pool: Pool,
  logger: Logger,
  input: ActionInput,
  out: (line: string) => void,
): Promise<number> {
  const print = (data: unknown, text: string) => out(input.json ? JSON.stringify(data) : text);
  if (input.command === 'approvals') {
    const queue = await findApprovals(pool, 'pending', 200);
    print(
      queue,
      queue.length === 0
        ? 'No operation waits for approval.'
        : formatTable(
            ['approval', 'flow', 'tool', 'provider', 'subject', 'requested'],
            queue.map((a) => [a.id, a.navigationId, a.tool, a.provider, a.subject, a.requestedAt.toISOString()]),
          ),
    );
    return 0;
  }
  const reason = input.reason?.trim() ?? '';
  if (reason.length < 3 || reason.length > 500)
    throw new ActionError(`${input.command} needs --reason "why" (3 to 500 characters); it is recorded.`);
  const act = { reason, actor: input.actor, subject: input.subject };
  const now = new Date();
  if (input.command === 'pause-connections') {
    const { revokedTransactions } = await pauseConnections(pool, reason, act.actor, now);
    print(
      { paused: true, revokedTransactions },
      `Connections paused: no new connect links; ${revokedTransactions} pending OAuth transaction(s) revoked. Ledger queries keep working.`,
    );
    return 0;
  }
  if (input.command === 'resume-connections') {
    await resumeConnections(pool, reason, act.actor, now);
    print({ paused: false }, 'Connections resumed: connect links are issued again.');
    return 0;
  }
  const id = input.id ?? '';
  if (!UUID.test(id))
    throw new ActionError(
      `Usage: broker ledger ${input.command} <${input.command === 'approve' || input.command === 'reject' ? 'approval' : 'flow'} id> --reason "why"`,
    );
  // The server's own dependencies, with its keys: a re-issued link's handle is sealed like any other.
  const broker = buildBrokerDeps({
    pool,
    clock: systemClock,
    logger,
    fetch: createFetch(),
    secretKeys: await deploymentKeys(config),
    providers: [],
    allowLoopback: config.mode !== 'production',
    issuer: deploymentIssuer(config),
    settings: config,
  });
  const { signal } = broker;
  try {
    if (input.command === 'close') {
      const closed = await markTerminal(broker, id, act);
      print({ id, status: closed.status }, `Flow ${id} is now ${closed.status} (recorded with your reason).`);
    } else if (input.command === 'reissue') {
      const { navigation, connectUrl } = await reissueLink(broker, id, act);
      print(
        { id: navigation.id, reissuedFrom: id, connectUrl, expiresAt: navigation.expiresAt },
        `New flow ${navigation.id} replaces ${id} (same lineage, same operation). Give this link to ${navigation.subject.sub}, valid until ${navigation.expiresAt.toISOString()}:\n${connectUrl}`,
      );
    } else if (input.command === 'redrive') {
      const receipt = await requestRedrive(broker, id, act);
      const outcome = await waitForOutcome(pool, receipt.id, input.waitSeconds);
      print(
        { receiptId: receipt.id, outcome: outcome ?? 'pending' },
        outcome
          ? `Re-driven: the operation ${outcome}.`
          : `Re-drive of receipt ${receipt.id} requested: the next reconcile sweep of a running instance performs it with the same idempotency key (never a second effect). Check with: broker ledger flow ${receipt.navigationId}`,
      );
    } else {
      const decided = await decideApproval(broker, id, input.command, reason, act);
      print(
        decided,
        `Approval ${id} ${decided.status}${decided.status === 'rejected' ? ': the flow is closed and its operation will not be done' : ": the operation is accepted on the host's next retry"}.`,
      );
    }
    return 0;
  } catch (err) {
    if (err instanceof AppError && err.expose) throw new ActionError(err.message);
    throw err;
  } finally {
    await signal.close();
  }
}

async function waitForOutcome(pool: Pool, receiptId: string, seconds: number): Promise<string | undefined> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const receipt = await findReceiptById(pool, receiptId);
    if (receipt && receipt.outcomeStatus !== 'pending') return receipt.outcomeStatus;
    if (Date.now() >= deadline) return undefined;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
