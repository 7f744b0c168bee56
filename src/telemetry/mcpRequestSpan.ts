import { context, SpanKind, type Attributes, type Context } from '@opentelemetry/api';
import type { IncomingMessage } from 'node:http';
import { mcpParent } from './traceContext.js';
import { isNoop, startSpan, withRequestSpan, type RequestTrace } from './spans.js';

/** The methods named in span names and attributes; anything else is `other` (a caller's text never is). */
const KNOWN_METHODS = new Set([
  'initialize',
  'ping',
  'server/discover',
  'tools/list',
  'tools/call',
  'notifications/initialized',
  'notifications/cancelled',
]);

export const ERA_MODERN = '2026-07-28';
export const ERA_LEGACY = '2025-11-25';

/**
 * The span of one request to the MCP endpoint (`mcp <method>`). It starts once the message is read,
 * as its parent may come from `_meta` (traceContext.ts mcpParent), dated from the request's arrival;
 * a request refused before that gets one at its end, its parent from the headers. Attributes: the
 * method, the era, the tool (mcpServer.ts, legacyTools.ts), the lineage (the broker's use cases,
 * through markRequest), the outcome and the HTTP status. Never an argument, a token or a session id.
 */
export interface McpRequestSpan {
  /** Runs `fn` inside the request's span, begun now for `message`. */
  within<T>(message: unknown, era: string, fn: () => T): T;
  /** The outcome as the endpoint sees it (a JSON-RPC error), with what it knows of it. */
  outcome(outcome: string, attributes?: Attributes): void;
  /** Ends the span: its outcome as named (here or by markRequest), else by the HTTP status. */
  end(status: number): void;
}

export function mcpRequestSpan(req: IncomingMessage): McpRequestSpan {
  const arrivedAt = Date.now();
  let request: RequestTrace | undefined;
  const begin = (message: unknown, era: string | undefined): Context => {
    const m = (typeof message === 'object' && message !== null ? message : {}) as Record<string, unknown>;
    const params = (typeof m['params'] === 'object' && m['params'] !== null ? m['params'] : {}) as Record<
      string,
      unknown
    >;
    const method = typeof m['method'] === 'string' ? (KNOWN_METHODS.has(m['method']) ? m['method'] : 'other') : '';
    const { parent, links } = mcpParent(req.headers, params['_meta']);
    const name = method
      ? `mcp ${method}`
      : `mcp ${req.method === 'GET' || req.method === 'DELETE' ? req.method : 'POST'}`;
    const span = startSpan(
      name,
      {
        kind: SpanKind.SERVER,
        startTime: arrivedAt,
        links,
        attributes: {
          'http.request.method': req.method === 'GET' || req.method === 'DELETE' ? req.method : 'POST',
          ...(method && { 'mcp.method.name': method }),
          ...(era && { 'mcp.protocol.version': era }),
        },
      },
      parent,
    );
    request = { span };
    return isNoop(span) ? parent : withRequestSpan(parent, request);
  };
  return {
    within: (message, era, fn) => context.with(begin(message, era), fn),
    outcome(value, attributes) {
      if (!request) begin(undefined, undefined);
      request!.outcome = value;
      if (attributes) request!.span.setAttributes(attributes);
    },
    end(status) {
      if (!request) begin(undefined, undefined);
      const { span, outcome } = request!;
      span.setAttributes({
        'http.response.status_code': status,
        'broker.mcp.outcome': outcome ?? (status < 300 ? 'answered' : status < 500 ? 'refused' : 'failed'),
      });
      span.end();
    },
  };
}

/** A tools/call result's outcome for its request span: the tool failed, the user is asked, or it is done. */
export function resultOutcome(result: object): string {
  if ((result as { isError?: unknown }).isError === true) return 'tool_error';
  return (result as { resultType?: unknown }).resultType === 'input_required' ? 'input_required' : 'complete';
}
