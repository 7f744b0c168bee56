import { z } from 'zod';
import { listNotes } from '../../notes/notes.js';
import { completeResult, defineTool } from '../defineTool.js';
import type { McpToolDeps } from '../toolDeps.js';

export const notesList = defineTool({
  name: 'notes_list',
  title: 'List notes',
  description:
    'Lists the notes in a workspace (oldest first, up to 200). workspaceUri must be one of notes_workspaces, or a folder inside one.',
  inputSchema: z.strictObject({ workspaceUri: z.string().max(2048).describe('A file: URI from notes_workspaces') }),
  annotations: { readOnlyHint: true, openWorldHint: false },
  async handler(args, ctx, deps: McpToolDeps) {
    const { workspace, notes } = await listNotes(deps, ctx.principal, args.workspaceUri);
    const items = notes.map((n) => ({
      id: n.id,
      title: n.title,
      uri: n.noteUri,
      createdAt: n.createdAt.toISOString(),
      body: n.body,
    }));
    const text =
      items.length > 0
        ? items.map((n) => `${n.id}  ${n.title}  (${n.createdAt})`).join('\n')
        : `No notes in ${workspace}.`;
    return completeResult(text, { workspaceUri: workspace, notes: items });
  },
});
