import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { LineCounter, parseDocument } from 'yaml';

/** Which file is read, for its messages, and the error each refusal becomes. */
export interface ListFileKind {
  /** The variable that names the file (PROVIDERS_FILE, TOOLS_FILE). */
  variable: string;
  /** What the list holds, plural ("providers", "tools"). */
  items: string;
  error(message: string, cause?: unknown): Error;
}

/**
 * An operator's list file: an array of entries in YAML (`.yaml`, `.yml`) or
 * JSON (any other name). Throws `kind.error` naming the file, and the line and
 * column where the parser stopped, when it cannot be read, does not parse, or
 * holds something other than an array.
 */
export async function readListFile(path: string, kind: ListFileKind): Promise<unknown[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (cause) {
    throw kind.error(`${kind.variable} ${path} cannot be read: ${(cause as Error).message}`, cause);
  }
  const yaml = ['.yaml', '.yml'].includes(extname(path).toLowerCase());
  const entries = yaml ? parseYaml(text, path, kind) : parseJson(text, path, kind);
  if (!Array.isArray(entries)) {
    const held = entries === null ? 'nothing' : typeof entries === 'object' ? 'a mapping' : `a ${typeof entries}`;
    throw kind.error(
      `${kind.variable} ${path} must hold a ${yaml ? 'YAML list' : 'JSON array'} of ${kind.items}, not ${held}`,
    );
  }
  return entries;
}

// YAML 1.2 core schema, yaml's defaults: no custom tags, unique keys, aliases bounded. A tag it
// cannot resolve is only a warning there (the value becomes a plain string), so it is refused here.
function parseYaml(text: string, path: string, kind: ListFileKind): unknown {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false });
  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem) {
    const { line, col } = lineCounter.linePos(problem.pos[0]);
    const hint = problem.code === 'TAG_RESOLVE_FAILED' ? ' (custom tags are not supported)' : '';
    throw kind.error(
      `${kind.variable} ${path} is not valid YAML: line ${line}, column ${col}: ${problem.message}${hint}`,
      problem,
    );
  }
  try {
    return doc.toJS();
  } catch (cause) {
    // Too many alias expansions (a "billion laughs" document).
    throw kind.error(`${kind.variable} ${path} is not valid YAML: ${(cause as Error).message}`, cause);
  }
}

function parseJson(text: string, path: string, kind: ListFileKind): unknown {
  const json = text.replace(/^\uFEFF/, '');
  try {
    return JSON.parse(json);
  } catch (cause) {
    const message = (cause as Error).message;
    // V8 names an offset ("… in JSON at position 42"); an operator needs the line and column.
    const position = /at position (\d+)/.exec(message)?.[1];
    const where = position === undefined ? '' : ` ${lineAndColumn(json, Number(position))}:`;
    throw kind.error(
      `${kind.variable} ${path} is not valid JSON:${where} ${message.replace(/ in JSON at position \d+.*$/, '')}`,
      cause,
    );
  }
}

function lineAndColumn(text: string, offset: number): string {
  const before = text.slice(0, offset).split('\n');
  return `line ${before.length}, column ${(before.at(-1)?.length ?? 0) + 1}`;
}
