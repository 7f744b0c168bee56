import { z } from 'zod';
import { InvalidInputError } from '../../errors/appError.js';
import { TitleSchema } from '../../notes/note.js';
import { confirmDelete, declineDelete, findDeleteCandidates, findOfferedCandidates } from '../../notes/notes.js';
import { canonicalFileUri } from '../../notes/workspaceUri.js';
import { completeResult, defineTool, type ToolContext } from '../defineTool.js';
import { deleteConfirmationContent, deleteConfirmationForm, ElicitResultSchema } from '../elicitationForms.js';
import { argumentsDigest, openPresentedState, type SealedState, type StateBinding } from '../requestState.js';
import type { McpToolDeps } from './registry.js';

const INPUT_KEY = 'delete_choice';

export const notesDeleteInput = z.strictObject({
  workspaceUri: z.string().max(2048).describe('A file: URI from notes_workspaces'),
  title: TitleSchema.describe('The title, or part of it, of the note to delete'),
});

/**
 * Deletion always asks the user (seed 000): the first call answers
 * input_required with a form; the retry carries the user's answer and the
 * sealed requestState, and only then is anything deleted, at most once.
 */
export const notesDelete = defineTool({
  name: 'notes_delete',
  title: 'Delete a note (asks the user)',
  description:
    'Deletes one note whose title contains `title` in a workspace you may use. The user must confirm in a form, so your host must support form elicitation; retry the call with the form answer and the requestState you received.',
  inputSchema: notesDeleteInput,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  requires: { elicitation: { form: {} } },
  async handler(args, ctx, deps: McpToolDeps) {
    const binding: StateBinding = {
      clientId: ctx.clientId,
      principal: ctx.principal,
      method: 'tools/call',
      tool: 'notes_delete',
      digest: argumentsDigest([canonicalFileUri(args.workspaceUri).uri, args.title]),
      phase: 'confirm_delete',
    };
    if (ctx.requestState === undefined) return askUser(args, binding, deps);
    const state = await openPresentedState(deps.requestState, ctx.requestState, binding);
    return answer(args.workspaceUri, { token: ctx.requestState, state }, ctx, deps);
  },
});

async function askUser(args: z.output<typeof notesDeleteInput>, binding: StateBinding, deps: McpToolDeps) {
  const { workspace, candidates } = await findDeleteCandidates(deps, binding.principal, args.workspaceUri, args.title);
  const { token } = await deps.requestState.seal(binding, { candidates: candidates.map((c) => c.id) });
  return { resultType: 'input_required' as const, inputRequests: { [INPUT_KEY]: deleteConfirmationForm(workspace, candidates) }, requestState: token };
}

async function answer(workspaceUri: string, sealed: { token: string; state: SealedState }, ctx: ToolContext, deps: McpToolDeps) {
  const { state } = sealed;
  const raw = ctx.inputResponses?.[INPUT_KEY];
  if (raw === undefined) {
    // No answer yet: ask again with the same, still valid, state (spec brief §4.4, missing responses).
    const { workspace, candidates } = await findOfferedCandidates(deps, state.principal, workspaceUri, state.candidates);
    return { resultType: 'input_required' as const, inputRequests: { [INPUT_KEY]: deleteConfirmationForm(workspace, candidates) }, requestState: sealed.token };
  }
  const reply = ElicitResultSchema.safeParse(raw);
  if (!reply.success) throw new InvalidInputError(`inputResponses.${INPUT_KEY} is not an elicitation result ({action, content}). Nothing was deleted.`);
  const until = state.expiresAt.toISOString();
  if (reply.data.action === 'cancel') {
    return completeResult(`Deletion cancelled; nothing was deleted. The confirmation stays valid until ${until}.`, { status: 'cancelled', expiresAt: until });
  }
  if (reply.data.action === 'decline') return decline(state, deps);
  const content = deleteConfirmationContent(state.candidates).safeParse(reply.data.content ?? {});
  if (!content.success) {
    throw new InvalidInputError(`The form answer does not match the form: note_id must be one of ${state.candidates.join(', ')} and confirm a boolean. Nothing was deleted.`);
  }
  if (!content.data.confirm) return decline(state, deps);
  const note = await confirmDelete(deps, { principal: state.principal, workspaceUri, noteId: content.data.note_id, nonce: state.nonce, expiresAt: state.expiresAt });
  return completeResult(`Deleted ${note.id} "${note.title}".`, { status: 'deleted', note: { id: note.id, title: note.title, uri: note.noteUri } });
}

async function decline(state: SealedState, deps: McpToolDeps) {
  await declineDelete(deps, { principal: state.principal, nonce: state.nonce, expiresAt: state.expiresAt });
  return completeResult('You declined; nothing was deleted.', { status: 'declined' });
}
