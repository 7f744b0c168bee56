import type { CallToolResult, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { Principal } from '../src/auth/principal.js';
import type { Pool } from '../src/db/pool.js';
import { toToolError } from '../src/mcp/toMcp.js';
import { BodySchema, TitleSchema } from '../src/notes/note.js';
import { createNote, listNotes, listWorkspaces } from '../src/notes/notes.js';

// The broker's tools (src/mcp/tools/registry.ts): the same names, titles,
// descriptions, annotations and input schemas, so both tools/list answers carry
// the same tool set (the bench's sample check compares them). The notes tools
// do the broker's work; notes_delete and the reports tools, which need
// elicitation and a connected Report Service, are stubs the bench never calls.

const workspaceUri = z.string().max(2048).describe('A file: URI from notes_workspaces');
const schemas = {
  create: z.strictObject({
    workspaceUri,
    title: TitleSchema.describe('1 to 200 characters'),
    body: BodySchema.describe('Up to 20000 characters'),
  }),
  delete: z.strictObject({
    workspaceUri,
    title: TitleSchema.describe('The title, or part of it, of the note to delete'),
  }),
  list: z.strictObject({ workspaceUri }),
  workspaces: z.strictObject({}),
  reportsCreate: z.strictObject({ title: z.string().trim().min(1).max(200), body: z.string().max(10_000) }),
  reportsList: z.strictObject({}),
};

export interface PeerToolDeps {
  pool: Pool;
}

/** Registers the tools on a per-request server for `principal`. */
export function registerPeerTools(server: McpServer, deps: PeerToolDeps, principal: Principal): void {
  server.registerTool(
    'notes_create',
    {
      title: 'Create a note',
      description: 'Creates a note with a title and a body in a workspace you may use (see notes_workspaces).',
      inputSchema: schemas.create,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (args) =>
      guarded(async () => {
        const note = await createNote(deps, principal, args.workspaceUri, args.title, args.body);
        return complete(`Created ${note.id} "${note.title}" at ${note.noteUri}.`, {
          note: { id: note.id, title: note.title, uri: note.noteUri, createdAt: note.createdAt.toISOString() },
        });
      }),
  );
  server.registerTool(
    'notes_delete',
    {
      title: 'Delete a note (asks the user)',
      description:
        'Deletes one note whose title contains `title` in a workspace you may use. The user must confirm in a form, so your host must support form elicitation; retry the call with the form answer and the requestState you received.',
      inputSchema: schemas.delete,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    () => stub('notes_delete'),
  );
  server.registerTool(
    'notes_list',
    {
      title: 'List notes',
      description:
        'Lists the notes in a workspace (oldest first, up to 200). workspaceUri must be one of notes_workspaces, or a folder inside one.',
      inputSchema: schemas.list,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args) =>
      guarded(async () => {
        const { workspace, notes } = await listNotes(deps, principal, args.workspaceUri);
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
        return complete(text, { workspaceUri: workspace, notes: items });
      }),
  );
  server.registerTool(
    'notes_workspaces',
    {
      title: 'List note workspaces',
      description:
        'Lists the workspace URIs you may use with the other notes tools. Call this first; pass one of them as workspaceUri.',
      inputSchema: schemas.workspaces,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    () =>
      guarded(async () => {
        const workspaces = await listWorkspaces(deps, principal);
        return complete(
          workspaces.length > 0 ? `Your workspaces:\n${workspaces.join('\n')}` : 'You have no workspaces yet.',
          { workspaces },
        );
      }),
  );
  server.registerTool(
    'reports_create',
    {
      title: 'Create a report',
      description:
        'Creates a report at the Report Service (once: a retried call never creates a second one). If you have not connected the Report Service yet, the result asks your host to open a connect link (URL elicitation); retry with the requestState after the user has connected.',
      inputSchema: schemas.reportsCreate,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    () => stub('reports_create'),
  );
  server.registerTool(
    'reports_list',
    {
      title: 'List my reports',
      description:
        'Lists your reports at the Report Service. If you have not connected the Report Service yet, the result asks your host to open a connect link (URL elicitation); retry with the requestState after the user has connected.',
      inputSchema: schemas.reportsList,
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    () => stub('reports_list'),
  );
}

function stub(name: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: `${name} is not implemented by the bench peer.` }] };
}

function complete(text: string, structuredContent: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent };
}

// The broker's error mapping (mcp/toMcp.ts), so a failing call looks the same from both servers.
async function guarded(run: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await run();
  } catch (err) {
    const { text, structured } = toToolError(err);
    return { isError: true, content: [{ type: 'text', text }], structuredContent: structured };
  }
}
