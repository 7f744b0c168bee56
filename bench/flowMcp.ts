import type { Fetch } from '../src/shared/httpClient.js';
import { STEP_HEADER } from './flowIpc.js';

const VERSION = '2026-07-28';

export interface McpTarget {
  fetch: Fetch;
  brokerUrl: string;
}

/**
 * tools/call on POST /mcp as a 2026-07-28 host sends it; returns the JSON-RPC
 * result and throws on anything else. `step` labels the request for the
 * broker process's query count (bench/flowBroker.ts).
 */
export async function callTool(
  target: McpTarget,
  token: string,
  name: string,
  args: object,
  extra: Record<string, unknown>,
  capabilities: object,
  step?: string,
): Promise<Record<string, unknown>> {
  const response = await target.fetch(`${target.brokerUrl}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': VERSION,
      'mcp-method': 'tools/call',
      'mcp-name': name,
      authorization: `Bearer ${token}`,
      ...(step ? { [STEP_HEADER]: step } : {}),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name,
        arguments: args,
        ...extra,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': VERSION,
          'io.modelcontextprotocol/clientCapabilities': capabilities,
        },
      },
    }),
  });
  const text = await response.text();
  let json: { result?: Record<string, unknown> } = {};
  try {
    json = JSON.parse(text) as typeof json;
  } catch {
    // reported below with the raw text
  }
  if (response.status !== 200 || json.result === undefined)
    throw new Error(`${name} answered HTTP ${response.status}: ${text.slice(0, 300)}`);
  return json.result;
}
