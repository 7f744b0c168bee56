import { z } from 'zod';
import { InvalidInputError } from '../../errors/appError.js';
import { TitleSchema } from '../../notes/note.js';
import { confirmDelete, declineDelete, findDeleteCandidates, findOfferedCandidates } from '../../notes/notes.js';
import { canonicalFileUri } from '../../notes/workspaceUri.js';
import { defineFormTool, type FormClaim } from '../defineFormTool.js';
import { completeResult } from '../defineTool.js';
import { deleteConfirmationContent, deleteConfirmationForm } from '../elicitationForms.js';
import { argumentsDigest } from '../requestState.js';
import type { McpToolDeps } from '../toolDeps.js';

/**
 * Deletion always asks the user: nothing is deleted before the user's answer
 * to the form arrives, and then at most once (the claim's nonce is single use).
 */
export const notesDelete = defineFormTool({
  name: 'notes_delete',
  title: 'Delete a note (asks the user)',
  description:
    'Deletes one note whose title contains `title` in a workspace you may use. The user must confirm in a form, so your host must support form elicitation; retry the call with the form answer and the requestState you received.',
  inputSchema: z.strictObject({
    workspaceUri: z.string().max(2048).describe('A file: URI from notes_workspaces'),
    title: TitleSchema.describe('The title, or part of it, of the note to delete'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  inputKey: 'delete_choice',
  phase: 'confirm_delete',
  digest: (args) => argumentsDigest([canonicalFileUri(args.workspaceUri).uri, args.title]),
  async ask(args, ctx, deps) {
    const { workspace, candidates } = await findDeleteCandidates(deps, ctx.principal, args.workspaceUri, args.title);
    return { form: deleteConfirmationForm(workspace, candidates), offered: candidates.map((c) => c.id) };
  },
  async askAgain(args, offered, principal, deps) {
    const { workspace, candidates } = await findOfferedCandidates(deps, principal, args.workspaceUri, offered);
    return deleteConfirmationForm(workspace, candidates);
  },
  async answer(args, reply, claim, deps) {
    if (!reply)
      return completeResult('No answer to the confirmation arrived; nothing was deleted.', { status: 'no_answer' });
    if (reply.action === 'cancel') {
      if (!claim.answerableLater)
        return completeResult('Deletion cancelled; nothing was deleted.', { status: 'cancelled' });
      const until = claim.expiresAt.toISOString();
      return completeResult(`Deletion cancelled; nothing was deleted. The confirmation stays valid until ${until}.`, {
        status: 'cancelled',
        expiresAt: until,
      });
    }
    if (reply.action === 'decline') return decline(claim, deps);
    const content = deleteConfirmationContent(claim.offered).safeParse(reply.content ?? {});
    if (!content.success) {
      throw new InvalidInputError(
        `The form answer does not match the form: note_id must be one of ${claim.offered.join(', ')} and confirm a boolean. Nothing was deleted.`,
      );
    }
    if (!content.data.confirm) return decline(claim, deps);
    const note = await confirmDelete(deps, {
      principal: claim.principal,
      workspaceUri: args.workspaceUri,
      noteId: content.data.note_id,
      nonce: claim.nonce,
      expiresAt: claim.expiresAt,
    });
    return completeResult(`Deleted ${note.id} "${note.title}".`, {
      status: 'deleted',
      note: { id: note.id, title: note.title, uri: note.noteUri },
    });
  },
});

async function decline(claim: FormClaim, deps: McpToolDeps) {
  await declineDelete(deps, { principal: claim.principal, nonce: claim.nonce, expiresAt: claim.expiresAt });
  return completeResult('You declined; nothing was deleted.', { status: 'declined' });
}
