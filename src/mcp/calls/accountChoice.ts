import type { ConnectionAccess } from '../../broker/connectionAccess.js';
import { InvalidInputError } from '../../errors/appError.js';
import { accountLabelOf, type ConnectionRecord } from '../../secrets/connectionsRepo.js';
import { errorResult } from '../defineTool.js';
import {
  accountChoiceContent,
  accountChoiceForm,
  ElicitResultSchema,
  type AccountCandidate,
} from '../elicitationForms.js';
import type { ElicitFormRequest, ToolCallResult } from '../protocol.js';

// The question a connection tool asks when the caller holds several usable connections to its
// provider and nothing names one (broker/connectionChoice.ts): a form listing the accounts by their
// labels, never a token. The answer applies to the call that asked, on its retry, and nothing else.

/** The input request's key in inputResponses (2026-07-28), and the phase its requestState is sealed for. */
export const ACCOUNT_INPUT_KEY = 'account';
export const CHOOSE_ACCOUNT_PHASE = 'choose_account';
/** Where a result names the connection it ran on (its id and account label, never a token). */
export const CONNECTION_META = 'io.connect-broker/connection';

/** Each candidate's label as offered, unique among them (an account with no name is named by its connection id). */
export function candidateLabels(candidates: readonly ConnectionRecord[]): string[] {
  const base = candidates.map((c) => accountLabelOf(c) ?? `connection ${c.id}`);
  return base.map((label, i) =>
    base.indexOf(label) === i && base.lastIndexOf(label) === i ? label : `${label} (${candidates[i]!.id})`,
  );
}

export function accountQuestion(
  providerName: string,
  purpose: string,
  candidates: readonly ConnectionRecord[],
): ElicitFormRequest {
  const labels = candidateLabels(candidates);
  const offered: AccountCandidate[] = candidates.map((c, i) => ({ label: labels[i]!, connectedAt: c.connectedAt }));
  return accountChoiceForm(providerName, purpose, offered);
}

/** What the user answered: the connection picked among `offered` (in the order asked), or that they declined or cancelled. */
export type AccountAnswer = { kind: 'chosen'; connectionId: string } | { kind: 'declined' } | { kind: 'cancelled' };

/** Parses a reply to accountQuestion; a malformed one, or one naming an account not offered, changes nothing and says so. */
export function accountAnswerOf(raw: unknown, offered: readonly ConnectionRecord[]): AccountAnswer {
  const reply = ElicitResultSchema.safeParse(raw);
  if (!reply.success)
    throw new InvalidInputError(
      `The answer to the account question is not an elicitation result ({action, content}). Nothing was done.`,
    );
  if (reply.data.action === 'decline') return { kind: 'declined' };
  if (reply.data.action === 'cancel') return { kind: 'cancelled' };
  const labels = candidateLabels(offered);
  const content = accountChoiceContent(labels).safeParse(reply.data.content);
  if (!content.success)
    throw new InvalidInputError(
      `The answer must choose one of the accounts offered (${labels.map((l) => `"${l}"`).join(', ')}). Nothing was done.`,
    );
  return { kind: 'chosen', connectionId: offered[labels.indexOf(content.data.account)]!.id };
}

/** The tool error for an `account` argument that names none of the user's connections to the provider. */
export function unknownAccountResult(
  providerName: string,
  access: Extract<ConnectionAccess, { kind: 'unknown_account' }>,
): ToolCallResult {
  const known = access.known.length === 0 ? 'none yet' : access.known.map((k) => `"${k}"`).join(', ');
  return errorResult(
    `You have no ${providerName} connection named "${access.account}"; nothing was done. Your ${providerName} accounts: ${known}. Call again with one of them as account, or without account to use your default.`,
    { status: 'unknown_account', known: access.known },
  );
}

/** A result with the connection it ran on named in its _meta. */
export function namingConnection(result: ToolCallResult, connection: ConnectionRecord): ToolCallResult {
  if (result.resultType === 'input_required') return result;
  const account = accountLabelOf(connection);
  return {
    ...result,
    _meta: { ...result._meta, [CONNECTION_META]: { id: connection.id, ...(account !== undefined && { account }) } },
  };
}
