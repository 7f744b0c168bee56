import type { Tool } from '../defineTool.js';
import type { McpToolDeps } from '../tools/registry.js';
import type { DeclaredTool } from './compileDeclaredTool.js';
import { DEV_PROVIDER_SCOPES, DEV_TOOLS_FILE } from './devDefaults.js';
import { loadToolsFile, type ToolsProvider } from './toolsFile.js';

// Which declared tools start-up serves, read the same way by src/main.ts and
// `broker tools`: TOOLS_FILE, or in development without it the embedded
// default on the GitHub-like development provider.

/** What a configured provider (providers/providerConfig.ts) says that declared tools are checked against. */
type ProviderFacts = {
  id: string;
  scopes: readonly string[];
  catalog?: string | undefined;
  metadataCall?: { fields: Readonly<Record<string, string>> } | undefined;
};

// devStack.ts builds the development `github` provider from the github catalog entry
// (GitHub Enterprise Server's layout), so starter tools for GitHub bind to it.
const DEV_PROVIDER_CATALOG: Readonly<Record<string, string>> = { github: 'github' };

export interface DeclaredToolsOptions {
  /** TOOLS_FILE. */
  toolsFile: string | undefined;
  dev: boolean;
  /** The providers PROVIDERS_FILE configures. */
  fileProviders: readonly ProviderFacts[];
  builtIn: readonly Tool<McpToolDeps>[];
  modules: readonly Tool<McpToolDeps>[];
}

/** The configured providers: the file's and, in development, those npm start adds (an entry of the same id in the file replaces one). */
export function providersForTools(fileProviders: readonly ProviderFacts[], dev: boolean): ToolsProvider[] {
  const added = dev
    ? Object.entries(DEV_PROVIDER_SCOPES).filter(([id]) => !fileProviders.some((p) => p.id === id))
    : [];
  return [
    ...fileProviders.map((p) => ({
      id: p.id,
      scopes: p.scopes,
      catalog: p.catalog,
      connectionFields: Object.keys(p.metadataCall?.fields ?? {}),
    })),
    ...added.map(([id, scopes]) => ({ id, scopes, catalog: DEV_PROVIDER_CATALOG[id] })),
  ];
}

/**
 * The file start-up loads: TOOLS_FILE; else, in development with the
 * GitHub-like development provider as `github` (no operator entry replaced
 * it), the embedded default (config/dev-tools.yaml).
 */
export function toolsFileFor(
  options: Pick<DeclaredToolsOptions, 'toolsFile' | 'dev' | 'fileProviders'>,
): { path: string; embedded: boolean } | undefined {
  if (options.toolsFile) return { path: options.toolsFile, embedded: false };
  if (options.dev && !options.fileProviders.some((p) => p.id === 'github'))
    return { path: DEV_TOOLS_FILE, embedded: true };
  return undefined;
}

/** The declared tools start-up serves (none without a file); throws ToolsFileError listing every problem. */
export async function loadDeclaredTools(options: DeclaredToolsOptions): Promise<DeclaredTool[]> {
  const file = toolsFileFor(options);
  if (!file) return [];
  const taken = [
    ...options.builtIn.map((t) => ({ name: t.name, source: 'built-in' })),
    ...options.modules.map((t) => ({ name: t.name, source: 'TOOL_MODULES' })),
  ];
  return loadToolsFile(file.path, { providers: providersForTools(options.fileProviders, options.dev), taken });
}

/** HIGH_RISK_TOOLS with the declared tools marked `highRisk`. */
export function highRiskToolNames(configured: readonly string[], declared: readonly DeclaredTool[]): string[] {
  return [...new Set([...configured, ...declared.filter((t) => t.highRisk).map((t) => t.name)])];
}
