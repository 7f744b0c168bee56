import { randomUUID } from 'node:crypto';
import { withTransaction } from '../db/transaction.js';
import { samePrincipal, type Principal } from '../auth/principal.js';
import { ConflictError, ForbiddenError, NotFoundError } from '../errors/appError.js';
import { recordOperatorAction } from '../ledger/operatorRepo.js';
import { advance, recordWithoutMoving } from './advance.js';
import {
  decideApprovalRow,
  findApprovalByNavigation,
  insertApprovalOnce,
  lockApproval,
  type Approval,
} from './approvalRepo.js';
import type { BrokerDeps } from './brokerDeps.js';
import type { NavigationRecord } from '../flow/navigationRecord.js';
import { findNavigationById, lockNavigation } from './navigationRepo.js';
import { State } from '../flow/navigationStates.js';

// The approval queue: a manual queue takes high-risk confirmations. A verified
// operation of a high-risk tool or provider is held before
// acceptOriginalOperation until an operator decides.

export type ApprovalGate =
  { kind: 'go' } | { kind: 'pending'; approval: Approval } | { kind: 'rejected'; approval: Approval };

export function needsApproval(
  deps: Pick<BrokerDeps, 'highRiskTools' | 'providers'>,
  tool: string,
  provider: string,
): boolean {
  return deps.highRiskTools.has(tool) || deps.providers.get(provider)?.provider.highRisk === true;
}

/** Whether a verified navigation's operation may be accepted now; files it in the queue the first time. */
export async function approvalGate(deps: BrokerDeps, navigation: NavigationRecord): Promise<ApprovalGate> {
  if (!needsApproval(deps, navigation.tool, navigation.provider)) return { kind: 'go' };
  const approval = await withTransaction(deps.pool, async (tx) => {
    const now = deps.clock.now();
    const { approval, created } = await insertApprovalOnce(tx, {
      id: randomUUID(),
      navigationId: navigation.id,
      tool: navigation.tool,
      provider: navigation.provider,
      subject: navigation.subject.sub,
      requestedAt: now,
    });
    if (created)
      await recordWithoutMoving(tx, navigation, 'approval_requested', {
        actor: 'system:approval',
        now,
        evidence: { approvalId: approval.id },
      });
    return approval;
  });
  if (approval.status === 'approved') return { kind: 'go' };
  return { kind: approval.status, approval };
}

/** For acceptOriginalOperation, inside its transaction: a held operation is accepted only once approved. */
export async function isApproved(
  deps: Pick<BrokerDeps, 'highRiskTools' | 'providers'>,
  tx: Parameters<typeof findApprovalByNavigation>[0],
  navigation: NavigationRecord,
): Promise<boolean> {
  if (!needsApproval(deps, navigation.tool, navigation.provider)) return true;
  return (await findApprovalByNavigation(tx, navigation.id))?.status === 'approved';
}

/**
 * An operator's decision, once, with a reason: approval lets the next retry
 * accept the operation; rejection ends the flow (OPERATION_REJECTED). Both are
 * ledger events and operator actions; waiting retries are woken.
 */
export async function decideApproval(
  deps: BrokerDeps,
  id: string,
  decision: 'approve' | 'reject',
  reason: string,
  operator: { actor: string; subject: Principal },
): Promise<Approval> {
  const { actor } = operator;
  const decided = await withTransaction(deps.pool, async (tx) => {
    const now = deps.clock.now();
    const held = await lockApproval(tx, id);
    if (!held) throw new NotFoundError(`No approval ${id}.`);
    if (held.status !== 'pending')
      throw new ConflictError(`Approval ${id} was already ${held.status} by ${held.decidedBy ?? 'someone'}.`);
    const navigation = await lockNavigation(tx, held.navigationId);
    if (!navigation) throw new NotFoundError('The approval names no flow.');
    // Four eyes: the approval exists so that someone other than the caller decides.
    if (decision === 'approve' && samePrincipal(navigation.subject, operator.subject))
      throw new ForbiddenError('You cannot approve your own operation: another operator must decide.');
    const approval = (await decideApprovalRow(
      tx,
      id,
      decision === 'approve' ? 'approved' : 'rejected',
      reason,
      actor,
      now,
    ))!;
    const by = { actor, now, evidence: { approvalId: id, reason } };
    if (decision === 'reject') await advance(tx, navigation, 'operator_reject', by);
    else await recordWithoutMoving(tx, navigation, 'operator_approved', by);
    await recordOperatorAction(
      tx,
      decision === 'approve' ? 'approve_operation' : 'reject_operation',
      reason,
      actor,
      { approvalId: id, navigationId: navigation.id },
      now,
    );
    return approval;
  });
  await deps.signal.notify(deps.pool, decided.navigationId);
  return decided;
}

/**
 * Before accepting a verified operation: files a high-risk one in the queue and
 * waits (bounded, woken by the decision) for an operator. A flow that is
 * already accepted, or not verified, goes on to acceptOriginalOperation, which decides.
 */
export async function awaitApproval(
  deps: BrokerDeps,
  op: { navigationId: string; tool: string; provider: string },
  waitMs: number,
): Promise<ApprovalGate> {
  // Most tools are not high-risk: nothing to read for them.
  if (!needsApproval(deps, op.tool, op.provider)) return { kind: 'go' };
  const { navigationId } = op;
  const navigation = await findNavigationById(deps.pool, navigationId);
  if (!navigation) return { kind: 'go' };
  if (navigation.status === State.OPERATION_REJECTED) {
    const approval = await findApprovalByNavigation(deps.pool, navigationId);
    if (approval) return { kind: 'rejected', approval };
  }
  if (navigation.status !== State.REQUIREMENT_VERIFIED) return { kind: 'go' };
  const gate = await approvalGate(deps, navigation);
  if (gate.kind !== 'pending') return gate;
  const decided = async () => (await findApprovalByNavigation(deps.pool, navigationId))?.status !== 'pending';
  if (!(await deps.waits.run(navigation.subject, () => deps.signal.waitFor(navigationId, waitMs, decided))))
    return gate;
  const approval = (await findApprovalByNavigation(deps.pool, navigationId))!;
  return approval.status === 'approved' ? { kind: 'go' } : { kind: approval.status, approval };
}

/** What a host is told while an operation waits for, or was refused, an operator's approval. */
export function approvalMessage(gate: Exclude<ApprovalGate, { kind: 'go' }>, purpose: string): string {
  if (gate.kind === 'rejected')
    return `An operator rejected this operation (${gate.approval.reason ?? 'no reason given'}); ${purpose} was not done and will not be.`;
  return `You are connected. Because this operation is marked high-risk, it waits for an operator's approval (approval ${gate.approval.id}, requested ${gate.approval.requestedAt.toISOString()}); ${purpose} has not been done yet. Retry later: it will be done once approved.`;
}
