import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { fetchDevToken } from '../../src/cli/devToken.js';
import type { BrokerStack } from './brokerStack.js';

export const VERSION = '2026-07-28';
export const FORM = { elicitation: { form: {} } };

export function meta(capabilities: object = {}): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': VERSION,
    'io.modelcontextprotocol/clientCapabilities': capabilities,
  };
}

export interface WireResponse {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed JSON body, when there is one. */
  json: {
    jsonrpc?: string;
    id?: unknown;
    result?: Record<string, unknown>;
    error?: { code: number; message: string; data?: unknown };
  } & Record<string, unknown>;
}

export interface PostOptions {
  token?: string | undefined;
  headers?: Record<string, string>;
  /** Defaults to the stack's first instance. */
  baseUrl?: string;
  raw?: boolean;
}

/** A raw POST to /mcp with the headers a 2026-07-28 client sends (override any of them). */
export async function mcpPost(stack: BrokerStack, body: unknown, options: PostOptions = {}): Promise<WireResponse> {
  // The standard headers a 2026-07-28 client derives from the body (MCP 2026-07-28 Streamable HTTP).
  const message =
    !options.raw && typeof body === 'object' && body !== null && !Array.isArray(body)
      ? (body as { method?: unknown; params?: { name?: unknown } })
      : {};
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': VERSION,
    ...(typeof message.method === 'string' ? { 'mcp-method': message.method } : {}),
    ...(typeof message.params?.name === 'string' ? { 'mcp-name': message.params.name } : {}),
    ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
    ...options.headers,
  };
  const response = await stack.fetch(`${options.baseUrl ?? stack.brokerUrl}/mcp`, {
    method: 'POST',
    headers,
    body: options.raw ? (body as string) : JSON.stringify(body),
  });
  const text = await response.text();
  let json = {};
  try {
    json = text ? JSON.parse(text) : {};
  } catch {
    json = {};
  }
  return { status: response.status, headers: response.headers, text, json };
}

let nextId = 1;

/** tools/call with a fresh id. */
export function callTool(
  stack: BrokerStack,
  token: string,
  name: string,
  args: unknown,
  extra: Record<string, unknown> = {},
  capabilities: object = FORM,
  options: PostOptions = {},
) {
  return mcpPost(
    stack,
    {
      jsonrpc: '2.0',
      id: nextId++,
      method: 'tools/call',
      params: { name, arguments: args, ...extra, _meta: meta(capabilities) },
    },
    { ...options, token },
  );
}

export function tokenFor(stack: BrokerStack, login: string): Promise<string> {
  return fetchDevToken({
    issuer: stack.dev.idp.issuer,
    resource: stack.mcpResourceUrl,
    login,
    password: DEV_PASSWORD,
    fetch: stack.fetch,
  });
}
