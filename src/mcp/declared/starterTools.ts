import { readdir } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { catalog } from '../../providers/catalog/catalog.js';
import { readListFile } from '../../shared/listFile.js';
import { TOOL_NAME } from './declaredEntry.js';
import type { StarterTool } from './starterRef.js';

// The starter tools shipped with the broker: TOOLS_FILE entries written for a
// catalog entry (their `provider` is its catalog id), one YAML file per
// provider family in config/starter-tools/. They are served only where a
// TOOLS_FILE names one (starterRef.ts binds it to the operator's provider);
// each is then checked and compiled like any other entry.

/** config/starter-tools/, beside the development tools file. */
export const STARTER_TOOLS_DIR = fileURLToPath(new URL('../../../config/starter-tools/', import.meta.url));

/**
 * Every starter tool of `dir`'s YAML files, by name, or the problems: a file
 * that does not read as a list, an entry without a tool name or whose
 * provider is not a catalog id, a name in two places. The entries' other
 * fields are checked when a TOOLS_FILE enables them (as every entry is).
 */
export async function readStarterTools(
  dir: string = STARTER_TOOLS_DIR,
): Promise<{ starters: ReadonlyMap<string, StarterTool>; problems: string[] }> {
  const starters = new Map<string, StarterTool>();
  const problems: string[] = [];
  let files: string[];
  try {
    files = (await readdir(dir)).filter((file) => ['.yaml', '.yml'].includes(extname(file))).sort();
  } catch (cause) {
    return { starters, problems: [`the starter tools in ${dir} cannot be read: ${(cause as Error).message}`] };
  }
  for (const file of files) {
    const path = join(dir, file);
    let entries: unknown[];
    try {
      entries = await readListFile(path, {
        variable: 'starter tools file',
        items: 'tools',
        error: (message) => new Error(message),
      });
    } catch (err) {
      problems.push((err as Error).message);
      continue;
    }
    for (const [index, entry] of entries.entries()) {
      const fields =
        typeof entry === 'object' && entry !== null && !Array.isArray(entry) ? (entry as Record<string, unknown>) : {};
      const { name, provider } = fields;
      const at = `${file} [${index}]`;
      if (typeof name !== 'string' || !TOOL_NAME.test(name))
        problems.push(`${at}: name must be a tool name (^[a-z][a-z0-9_]{0,63}$)`);
      else if (typeof provider !== 'string' || !catalog.has(provider))
        problems.push(`${at} (${name}): provider must be a catalog id (${[...catalog.keys()].join(', ')})`);
      else if (starters.has(name))
        problems.push(`${at} (${name}): ${name} is also a starter tool in ${starters.get(name)!.file}`);
      else starters.set(name, { name, catalog: provider, entry: fields, file });
    }
  }
  return { starters, problems };
}
