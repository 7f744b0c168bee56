import { z } from 'zod';
import { listWorkspaces } from '../../notes/notes.js';
import { completeResult, defineTool } from '../defineTool.js';
import type { McpToolDeps } from '../toolDeps.js';

export const notesWorkspaces = defineTool({
  name: 'notes_workspaces',
  title: 'List note workspaces',
  description:
    'Lists the workspace URIs you may use with the other notes tools. Call this first; pass one of them as workspaceUri.',
  inputSchema: z.strictObject({}),
  annotations: { readOnlyHint: true, openWorldHint: false },
  async handler(_args, ctx, deps: McpToolDeps) {
    const workspaces = await listWorkspaces(deps, ctx.principal);
    const text = workspaces.length > 0 ? `Your workspaces:\n${workspaces.join('\n')}` : 'You have no workspaces yet.';
    return completeResult(text, { workspaces });
  },
});
