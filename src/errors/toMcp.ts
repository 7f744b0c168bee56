import { ErrorCode, McpProtocolError, type CallToolResult } from '../mcp/protocol.js';
import { toAppError, type AppErrorCode } from './appError.js';

// The ONLY mapping from errors to MCP (style.md B4.3): inside tools/call an
// AppError becomes an `isError` tool result the model can act on; anything
// unexposed is "Internal error" and logged by the caller.

export function toToolErrorResult(err: unknown): { result: CallToolResult; log: boolean; code: AppErrorCode } {
  const appError = toAppError(err);
  const text = appError.expose ? appError.message : 'Internal error. Try again later.';
  return {
    result: { resultType: 'complete', isError: true, content: [{ type: 'text', text }], structuredContent: { error: appError.code, message: text } },
    log: !appError.expose,
    code: appError.code,
  };
}

/** Outside a tool: protocol errors pass as they are; everything else is -32603, never -32700/-32602. */
export function toJsonRpcError(err: unknown): McpProtocolError {
  if (err instanceof McpProtocolError) return err;
  return new McpProtocolError(ErrorCode.InternalError, 'Internal error', { cause: err });
}
