import { z } from 'zod';
import { BodySchema, TitleSchema } from '../../notes/note.js';
import { createNote } from '../../notes/notes.js';
import { completeResult, defineTool } from '../defineTool.js';
import type { McpToolDeps } from '../toolDeps.js';

export const notesCreate = defineTool({
  name: 'notes_create',
  title: 'Create a note',
  description: 'Creates a note with a title and a body in a workspace you may use (see notes_workspaces).',
  inputSchema: z.strictObject({
    workspaceUri: z.string().max(2048).describe('A file: URI from notes_workspaces'),
    title: TitleSchema.describe('1 to 200 characters'),
    body: BodySchema.describe('Up to 20000 characters'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async handler(args, ctx, deps: McpToolDeps) {
    const note = await createNote(deps, ctx.principal, args.workspaceUri, args.title, args.body);
    return completeResult(`Created ${note.id} "${note.title}" at ${note.noteUri}.`, {
      note: { id: note.id, title: note.title, uri: note.noteUri, createdAt: note.createdAt.toISOString() },
    });
  },
});
