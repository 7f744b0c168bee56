import { parseArgs } from 'node:util';
import type { Config } from '../config/config.js';
import { ToolsFileError } from '../mcp/declared/toolsFile.js';
import { loadDeclaredTools, providersForTools, toolsFileFor } from '../mcp/declared/toolsSetup.js';
import { isConnectionTool } from '../mcp/defineConnectionTool.js';
import { builtInToolsFor, tools } from '../mcp/tools/registry.js';
import { loadToolModules, ToolModuleError } from '../mcp/tools/toolModules.js';
import { loadProviders } from './providersCommand.js';
import { formatTable } from './table.js';
import { CliError } from './cliError.js';

export class ToolsCommandError extends CliError {}

const usage = `Usage: broker tools <command> [--json]

Reads the tools as start-up does: the built-in ones its providers serve, TOOL_MODULES, and TOOLS_FILE
(in development without TOOLS_FILE, the embedded config/dev-tools.yaml). No network access.

  list    Each tool: name, provider, scopes, and where it comes from (built in, module, file, or a
          starter tool the file enables by name).
  check   Validates TOOLS_FILE against the configured providers; exit 1 on any problem (every one listed).
`;

interface ToolRow {
  name: string;
  provider: string | undefined;
  scopes: readonly string[];
  source: 'built in' | 'module' | 'file' | 'starter';
}

/** `broker tools …`: returns the process exit code. Notes go to `note` (stderr), so --json output stays JSON. */
export async function toolsCommand(
  args: string[],
  config: Readonly<Config>,
  out: (line: string) => void,
  note: (line: string) => void,
): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'list' && sub !== 'check') throw new ToolsCommandError(usage);
  const { values } = parseArgs({ args: rest, strict: true, options: { json: { type: 'boolean', default: false } } });
  const dev = config.mode !== 'production';
  const fileProviders = await loadProviders(config);
  const file = toolsFileFor({ toolsFile: config.toolsFile, dev, fileProviders });
  if (file?.embedded)
    note(
      `Development mode: TOOLS_FILE is not set, so npm start serves the tools of ${file.path} on the development providers.`,
    );
  const { modules, declared } = await loadTools(config, dev, fileProviders);

  if (sub === 'check') {
    const result = file
      ? { file: file.path, ok: true, tools: declared.map((t) => t.name) }
      : { file: undefined, ok: true, tools: [] };
    if (values.json) out(JSON.stringify(result));
    else
      out(
        file
          ? `ok: ${file.path} declares ${declared.length} tool(s): ${declared.map((t) => t.name).join(', ') || '(none)'}`
          : 'No TOOLS_FILE: nothing to check.',
      );
    return 0;
  }
  const row = (tool: (typeof tools)[number], source: ToolRow['source']): ToolRow =>
    isConnectionTool(tool)
      ? { name: tool.name, provider: tool.provider, scopes: tool.scopes, source }
      : { name: tool.name, provider: undefined, scopes: [], source };
  const rows = [
    ...builtInToolsFor(providersForTools(fileProviders, dev)).map((t) => row(t, 'built in')),
    ...modules.map((t) => row(t, 'module')),
    ...declared.map((t) => row(t, t.source)),
  ];
  if (values.json) out(JSON.stringify(rows));
  else
    out(
      formatTable(
        ['name', 'provider', 'scopes', 'source'],
        rows.map((r) => [r.name, r.provider ?? '-', r.scopes.join(' ') || '-', r.source]),
      ),
    );
  return 0;
}

// As start-up loads them (src/main.ts); a problem is the command's answer (exit 1), not a crash.
async function loadTools(
  config: Readonly<Config>,
  dev: boolean,
  fileProviders: Awaited<ReturnType<typeof loadProviders>>,
) {
  try {
    const modules = await loadToolModules(config.toolModules, tools);
    const declared = await loadDeclaredTools({
      toolsFile: config.toolsFile,
      dev,
      fileProviders,
      builtIn: tools,
      modules,
    });
    return { modules, declared };
  } catch (err) {
    if (err instanceof ToolsFileError || err instanceof ToolModuleError) throw new ToolsCommandError(err.message, 1);
    throw err;
  }
}
