import { z } from 'zod';
import type { ElicitFormRequest, FormSchema } from './protocol.js';

// Every form-mode elicitation the broker can emit is built here, so one unit
// test can prove none of them asks for a secret (MCP 2026-07-28, Elicitation,
// form mode: MUST NOT request passwords, API keys, tokens or payment credentials);
// defineFormTool.ts audits each again before it is sent (src/security/formAudit.ts).

export interface DeleteCandidate {
  id: string;
  title: string;
  createdAt: Date;
}

export function deleteConfirmationForm(
  workspaceUri: string,
  candidates: readonly DeleteCandidate[],
): ElicitFormRequest {
  const lines = candidates.map((c) => `• ${c.id}: "${c.title}" (created ${c.createdAt.toISOString().slice(0, 10)})`);
  const message =
    candidates.length === 1
      ? `Delete this note from ${workspaceUri}? This cannot be undone.\n${lines[0]}`
      : `${candidates.length} notes in ${workspaceUri} match. Choose the one to delete and confirm. This cannot be undone.\n${lines.join('\n')}`;
  const requestedSchema: FormSchema = {
    type: 'object',
    properties: {
      note_id: {
        type: 'string',
        title: 'Note to delete',
        description: 'The id of the note to delete',
        enum: candidates.map((c) => c.id),
      },
      confirm: {
        type: 'boolean',
        title: 'Yes, delete it',
        description: 'Tick to delete the chosen note permanently',
        default: false,
      },
    },
    required: ['note_id', 'confirm'],
  };
  return { method: 'elicitation/create', params: { mode: 'form', message, requestedSchema } };
}

/** The content schema a reply to deleteConfirmationForm must satisfy: exactly the ids that were offered. */
export function deleteConfirmationContent(candidateIds: readonly string[]) {
  const [first, ...rest] = candidateIds;
  return z.strictObject({ note_id: z.enum([first ?? '', ...rest]), confirm: z.boolean() });
}

/** The reply to an elicitation (ElicitResult), as the client sends it in inputResponses. */
export const ElicitResultSchema = z.object({
  action: z.enum(['accept', 'decline', 'cancel']),
  content: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.array(z.string())])).optional(),
});

/** One connection offered in the account choice: its label only (the account's name at the provider), never a token. */
export interface AccountCandidate {
  label: string;
  connectedAt: Date;
}

/**
 * Which of the user's accounts at a provider a call should use, when they hold several and chose no
 * default: a single choice field, its values the account labels in the order offered.
 */
export function accountChoiceForm(
  providerName: string,
  purpose: string,
  candidates: readonly AccountCandidate[],
): ElicitFormRequest {
  const lines = candidates.map((c) => `• ${c.label} (connected ${c.connectedAt.toISOString().slice(0, 10)})`);
  const message = `You have ${candidates.length} ${providerName} accounts connected. Choose the one to ${purpose} with; the others are not used.\n${lines.join('\n')}`;
  const requestedSchema: FormSchema = {
    type: 'object',
    properties: {
      account: {
        type: 'string',
        title: `${providerName} account`,
        description: `The ${providerName} account to use for this call`,
        enum: candidates.map((c) => c.label),
      },
    },
    required: ['account'],
  };
  return { method: 'elicitation/create', params: { mode: 'form', message, requestedSchema } };
}

/** The content schema a reply to accountChoiceForm must satisfy: one of the labels offered. */
export function accountChoiceContent(labels: readonly string[]) {
  const [first, ...rest] = labels;
  return z.strictObject({ account: z.enum([first ?? '', ...rest]) });
}
