import type { Pool } from '../../db/pool.js';
import type { Fetch } from '../../shared/httpClient.js';
import type { ConnectionCall, ConnectionToolDeps } from '../connectionTool.js';
import type { Tool } from '../defineTool.js';
import type { RequestStateCodec } from '../requestState.js';
import { notesCreate } from './notesCreate.js';
import { notesDelete } from './notesDelete.js';
import { notesList } from './notesList.js';
import { notesWorkspaces } from './notesWorkspaces.js';
import { reportsCreate, reportsCreateCall } from './reportsCreate.js';
import { reportsList, reportsListCall } from './reportsList.js';

/** What tool handlers get: plain values and functions, no singletons (style.md B2.5). */
export interface McpToolDeps {
  pool: Pool;
  requestState: RequestStateCodec;
  connection: ConnectionToolDeps;
  /** For third-party APIs (verifies TLS; nock-visible in tests). */
  fetch: Fetch;
}




/** Tools that act through a connection, by name: rebuilt from kept arguments to re-drive an operation (issue #6). */
export const connectionCalls: Readonly<Record<string, (args: unknown, deps: McpToolDeps) => ConnectionCall>> = {
  reports_create: reportsCreateCall,
  reports_list: reportsListCall,
};

/** The table of tools, in the order tools/list returns them (deterministic, by name). */
export const tools: readonly Tool<McpToolDeps>[] = [notesCreate, notesDelete, notesList, notesWorkspaces, reportsCreate, reportsList];
