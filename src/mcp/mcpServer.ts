import { invalidParams, methodNotFound, missingRequiredClientCapability, toJsonRpcError } from './toMcp.js';
import type { Logger } from '../shared/logger.js';
import type { ToolContext } from './defineTool.js';
import type { Envelope } from './envelope.js';
import { elicitationModes, META_SERVER_INFO, SUPPORTED_VERSIONS, type ClientCapabilities } from './protocol.js';
import type { VerifiedBearer } from './mcpAuth.js';
import type { ToolRegistry } from './toolRegistry.js';
import { markRequest } from '../telemetry/spans.js';
import { resultOutcome } from '../telemetry/mcpRequestSpan.js';

export interface ServerInfo {
  name: string;
  version: string;
}

export interface ModernServerDeps<D> {
  tools: ToolRegistry<D>;
  toolDeps: D;
  serverInfo: ServerInfo;
  logger: Logger;
}

type Request = Extract<Envelope, { kind: 'request' }>;

export interface ModernServer {
  /** The JSON of the `result` member for a request, or throws McpProtocolError. */
  handle(request: Request, caller: VerifiedBearer, requestId: string): Promise<string>;
}

const DISCOVER_TTL_MS = 60 * 60 * 1000;

/**
 * The 2026-07-28 method table: server/discover, tools/list, tools/call. It
 * knows nothing of HTTP or sessions. Results that never vary (discover, and
 * tools/list while no tool depends on the caller) are serialised once.
 */
export function createModernServer<D>(deps: ModernServerDeps<D>): ModernServer {
  const meta = { [META_SERVER_INFO]: deps.serverInfo };
  const discover = JSON.stringify({
    resultType: 'complete',
    supportedVersions: SUPPORTED_VERSIONS,
    capabilities: { tools: {} },
    instructions:
      'Notes tools with an explicit workspaceUri; deletions are confirmed by the user in a form. Call notes_workspaces first.',
    ttlMs: DISCOVER_TTL_MS,
    cacheScope: 'public',
    _meta: meta,
  });
  const listJson = async (caller: VerifiedBearer) => {
    const { tools, ttlMs, cacheScope } = await deps.tools.list(caller.principal);
    return JSON.stringify({ resultType: 'complete', tools, ttlMs, cacheScope, _meta: meta });
  };
  let fixedList: Promise<string> | undefined;

  async function callTool(request: Request, caller: VerifiedBearer, requestId: string): Promise<string> {
    const { params } = request;
    const name = params['name'];
    if (typeof name !== 'string') throw invalidParams('params.name must be a string');
    const tool = deps.tools.find(name);
    if (!tool) throw invalidParams(`Unknown tool: ${name.slice(0, 64)}. Known tools: ${deps.tools.names.join(', ')}`);
    // A name of the registry's, not the caller's text.
    markRequest({ 'gen_ai.tool.name': tool.name });
    const missing = missingCapabilities(tool.requires, request.capabilities);
    if (missing)
      throw missingRequiredClientCapability(
        `${name} needs the client capability ${JSON.stringify(missing)} on this request`,
        missing,
      );
    const inputResponses = params['inputResponses'];
    const requestState = params['requestState'];
    if (
      inputResponses !== undefined &&
      (typeof inputResponses !== 'object' || inputResponses === null || Array.isArray(inputResponses))
    ) {
      throw invalidParams('params.inputResponses must be an object');
    }
    if (requestState !== undefined && typeof requestState !== 'string')
      throw invalidParams('params.requestState must be a string');
    const ctx: ToolContext = {
      principal: caller.principal,
      clientId: caller.clientId,
      capabilities: request.capabilities,
      inputResponses: inputResponses as Record<string, unknown> | undefined,
      requestState,
      requestId,
      logger: deps.logger,
    };
    const result = await tool.call(params['arguments'], ctx, deps.toolDeps);
    markRequest({}, resultOutcome(result));
    // The server's own _meta keys; a tool may add its own (namespaced) beside them.
    return JSON.stringify({
      ...result,
      _meta: '_meta' in result && result._meta ? { ...meta, ...result._meta } : meta,
    });
  }

  return {
    async handle(request, caller, requestId) {
      try {
        switch (request.method) {
          case 'server/discover':
            return discover;
          case 'tools/list':
            if (request.params['cursor'] !== undefined)
              throw invalidParams('Unknown cursor: tools/list has a single page');
            // The same for every caller: the first answer serves them all.
            if (deps.tools.fixed) return await (fixedList ??= listJson(caller));
            return await listJson(caller);
          case 'tools/call':
            return await callTool(request, caller, requestId);
          default:
            throw methodNotFound(`Method not found: ${request.method.slice(0, 64)}`);
        }
      } catch (err) {
        const mapped = toJsonRpcError(err);
        if (mapped.kind === 'internalError')
          deps.logger.error({ err, requestId, method: request.method }, 'MCP request failed');
        else if (mapped.kind === 'unavailable')
          deps.logger.warn(
            { err, requestId, method: request.method },
            'MCP request answered 503: database unreachable',
          );
        throw mapped;
      }
    },
  };
}

/** The capabilities `required` asks for that `declared` lacks, or undefined (only elicitation modes so far). */
function missingCapabilities(
  required: ClientCapabilities | undefined,
  declared: ClientCapabilities,
): ClientCapabilities | undefined {
  const wanted = required?.elicitation;
  if (!wanted) return undefined;
  const modes = elicitationModes(declared);
  const lacking: Record<string, object> = {};
  if (wanted.form && !modes.form) lacking['form'] = {};
  if (wanted.url && !modes.url) lacking['url'] = {};
  return Object.keys(lacking).length > 0 ? { elicitation: lacking } : undefined;
}
