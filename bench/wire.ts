// The MCP 2026-07-28 requests the bench sends, and the check every response
// must pass. Used by the sample check and by the load generator.

/** The broker against the SDK peer. */
export const CASES = ['tools/list', 'tools/call notes_list'] as const;
export type PeerCaseName = (typeof CASES)[number];
/** On the broker only: a TOOLS_FILE tool and the same call written with defineConnectionTool (bench/benchIssueTool.ts). */
export const DECLARED_CASES = ['tools/call github_issue_coded', 'tools/call github_issue_declared'] as const;
/**
 * The development upstream MCP server's read-only list: proxied by the broker (memo_list, with
 * alice's MCP token) and sent to the upstream directly (list, with her upstream token).
 */
export const UPSTREAM_CASES = ['tools/call memo_list', 'tools/call list'] as const;
export type UpstreamCaseName = (typeof UPSTREAM_CASES)[number];
export type CaseName = PeerCaseName | (typeof DECLARED_CASES)[number] | UpstreamCaseName;

/** The issue the declared cases read: the first one opened in alice/demo at a fresh GitHub-like provider. */
export const BENCH_ISSUE = { owner: 'alice', repo: 'demo', number: 1 } as const;

/** The memo alice saves at the development upstream; both upstream cases list it. */
export const BENCH_MEMO = 'bench:mcp lists this memo';

function isUpstreamCase(name: CaseName): name is UpstreamCaseName {
  return (UPSTREAM_CASES as readonly string[]).includes(name);
}

export const WORKSPACE = 'file:///work/notes/alice';
const VERSION = '2026-07-28';
const META = { 'io.modelcontextprotocol/protocolVersion': VERSION, 'io.modelcontextprotocol/clientCapabilities': {} };

export interface WireRequest {
  headers: Record<string, string>;
  body: string;
}

export function requestFor(name: CaseName, token: string): WireRequest {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': VERSION,
    authorization: `Bearer ${token}`,
  };
  if (name === 'tools/list') {
    return {
      headers: { ...headers, 'mcp-method': 'tools/list' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: META } }),
    };
  }
  const tool = name.slice('tools/call '.length);
  const args = name === 'tools/call notes_list' ? { workspaceUri: WORKSPACE } : isUpstreamCase(name) ? {} : BENCH_ISSUE;
  return {
    headers: { ...headers, 'mcp-method': 'tools/call', 'mcp-name': tool },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: tool, arguments: args, _meta: META },
    }),
  };
}

type Json = Record<string, unknown>;

/** The JSON-RPC message in a response body: plain JSON, or the last `data:` of an SSE stream. */
export function messageOf(contentType: string, text: string): Json | undefined {
  try {
    if (!contentType.startsWith('text/event-stream')) return JSON.parse(text) as Json;
    const data = text
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .pop();
    return data === undefined ? undefined : (JSON.parse(data.slice(5)) as Json);
  } catch {
    return undefined;
  }
}

/** Why a response does not count as a success, or undefined when it does. */
export function problemWith(name: CaseName, status: number, contentType: string, text: string): string | undefined {
  if (status !== 200) return `HTTP ${status}: ${text.slice(0, 160)}`;
  const message = messageOf(contentType, text);
  if (!message) return `not a JSON-RPC message: ${text.slice(0, 160)}`;
  const error = message['error'] as Json | undefined;
  if (error) return `JSON-RPC error ${String(error['code'])}: ${String(error['message']).slice(0, 160)}`;
  const result = message['result'] as Json | undefined;
  if (!result) return 'no result';
  if (name === 'tools/list') {
    const tools = result['tools'];
    return Array.isArray(tools) && tools.some((t: Json) => t['name'] === 'notes_list')
      ? undefined
      : 'tools/list result without notes_list';
  }
  if (result['isError'] === true) return `tool error: ${JSON.stringify(result['content']).slice(0, 160)}`;
  if (isUpstreamCase(name)) {
    const text = (result['content'] as Json[] | undefined)?.[0]?.['text'];
    return typeof text === 'string' && text.includes(BENCH_MEMO) ? undefined : `${name} returned no bench memo`;
  }
  if (name !== 'tools/call notes_list') {
    const issue = result['structuredContent'] as Json | undefined;
    return issue?.['number'] === BENCH_ISSUE.number && typeof issue['title'] === 'string'
      ? undefined
      : `${name} returned no issue: ${JSON.stringify(result).slice(0, 160)}`;
  }
  const notes = (result['structuredContent'] as Json | undefined)?.['notes'];
  return Array.isArray(notes) && notes.length > 0 ? undefined : 'notes_list returned no notes';
}
