import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isConnectionTool, type ConnectionTool } from '../defineConnectionTool.js';
import type { Tool } from '../defineTool.js';
import type { McpToolDeps } from '../toolDeps.js';

export class ToolModuleError extends Error {
  override name = 'ToolModuleError';
  constructor(readonly problems: readonly string[]) {
    super(`These tools cannot be served (TOOL_MODULES, PROVIDERS_FILE):\n- ${problems.join('\n- ')}`);
  }
}

/**
 * Loads the connection tools an operator adds (TOOL_MODULES): every export of
 * each module made with defineConnectionTool. Start-up refuses, listing every
 * problem, a module that cannot be imported or exports no such tool, and a name
 * that is already taken, so a typo never starts a broker without its tool.
 */
export async function loadToolModules(
  paths: readonly string[],
  builtIn: readonly Tool<McpToolDeps>[],
): Promise<ConnectionTool[]> {
  const problems: string[] = [];
  const loaded: ConnectionTool[] = [];
  const taken = new Set(builtIn.map((t) => t.name));
  for (const path of paths) {
    let exports: Record<string, unknown>;
    try {
      exports = (await import(pathToFileURL(resolve(path)).href)) as Record<string, unknown>;
    } catch (err) {
      problems.push(`${path}: cannot be imported (${err instanceof Error ? err.message.split('\n')[0] : String(err)})`);
      continue;
    }
    const found = Object.values(exports).filter(
      (value): value is ConnectionTool =>
        typeof value === 'object' && value !== null && isConnectionTool(value as Tool<McpToolDeps>),
    );
    if (found.length === 0) problems.push(`${path}: exports no tool made with defineConnectionTool`);
    for (const tool of found) {
      if (taken.has(tool.name)) problems.push(`${path}: the tool name ${tool.name} is already taken`);
      taken.add(tool.name);
      loaded.push(tool);
    }
  }
  if (problems.length > 0) throw new ToolModuleError(problems);
  return loaded;
}

/**
 * Each connection tool's scopes must be among those its provider is configured to ask for:
 * otherwise every connection the user grants would lack them, and each call fail upstream.
 * A tool whose provider is not configured is left to answer that it cannot connect.
 */
export function toolScopeProblems(
  served: readonly Tool<McpToolDeps>[],
  providers: readonly { id: string; scopes: readonly string[] }[],
): string[] {
  return served.filter(isConnectionTool).flatMap((tool) => {
    const problem = scopeProblem(tool, providers);
    return problem ? [problem] : [];
  });
}

/** The rule of toolScopeProblems for one tool's provider and scopes (TOOLS_FILE entries are checked with it before they are tools). */
export function scopeProblem(
  tool: { name: string; provider: string; scopes: readonly string[] },
  providers: readonly { id: string; scopes: readonly string[] }[],
): string | undefined {
  const provider = providers.find((p) => p.id === tool.provider);
  const missing = provider ? tool.scopes.filter((scope) => !provider.scopes.includes(scope)) : [];
  return missing.length > 0
    ? `${tool.name} needs the scopes ${missing.join(' ')} of ${tool.provider}, which its provider entry does not ask for`
    : undefined;
}
