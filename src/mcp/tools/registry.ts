import type { ConnectionCall } from '../calls/connectionCall.js';
import { isConnectionTool } from '../defineConnectionTool.js';
import type { Tool } from '../defineTool.js';
import type { McpToolDeps } from '../toolDeps.js';

export type { McpToolDeps } from '../toolDeps.js';
import { githubCreateIssue } from './githubCreateIssue.js';
import { githubListIssues } from './githubListIssues.js';
import { notesCreate } from './notesCreate.js';
import { notesDelete } from './notesDelete.js';
import { notesList } from './notesList.js';
import { notesWorkspaces } from './notesWorkspaces.js';
import { reportsCreate } from './reportsCreate.js';
import { reportsList } from './reportsList.js';

/** The table of built-in tools, by name. */
export const tools: readonly Tool<McpToolDeps>[] = [
  githubCreateIssue,
  githubListIssues,
  notesCreate,
  notesDelete,
  notesList,
  notesWorkspaces,
  reportsCreate,
  reportsList,
];

/**
 * The built-in tools a deployment serves: a connection tool only where its
 * provider is configured and asks for every scope the tool needs (a GitHub
 * entry kept to read scopes serves no GitHub tool that writes).
 */
export function builtInToolsFor(providers: readonly { id: string; scopes: readonly string[] }[]): Tool<McpToolDeps>[] {
  return tools.filter((tool) => {
    if (!isConnectionTool(tool)) return true;
    const provider = providers.find((p) => p.id === tool.provider);
    return provider !== undefined && tool.scopes.every((scope) => provider.scopes.includes(scope));
  });
}

/** The operation a connection tool's kept arguments rebuild (the re-drive); undefined for any other tool. */
export function connectionCallFor(
  list: readonly Tool<McpToolDeps>[],
  name: string,
  args: unknown,
  deps: McpToolDeps,
): ConnectionCall | undefined {
  const tool = list.find((t) => t.name === name);
  return tool && isConnectionTool(tool) ? tool.connectionCall(args, deps) : undefined;
}
