import { Document, isMap, isSeq, type YAMLMap } from 'yaml';
import { OpenApiImportError, type OpenApiDocument, type OpenApiOperation } from './openapiDocument.js';
import { entryFromOperation, toolNameFor, type ImportedEntry } from './openapiEntry.js';
import { declareTools, ToolsFileError } from './toolsFile.js';

// `broker tools import`: the chosen operations of an OpenAPI description as
// TOOLS_FILE entries, in YAML with comments for the operator who reviews
// them. Operations are chosen one by one or by tag, never the whole API; each
// entry is checked as start-up checks a TOOLS_FILE (toolsFile.ts) before it is
// printed, so what is printed loads once its TODOs are done.

export interface Selection {
  operations: readonly string[];
  tags: readonly string[];
}

export interface ImportResult {
  yaml: string;
  /** The loader's problems with the entries as printed (also in the YAML, as comments); none for an import that loads. */
  problems: readonly string[];
}

const IMPORTED_METHODS = new Set(['get', 'post', 'put', 'patch', 'delete']);

/** How an operation is named on the command line: its operationId, or `METHOD /path`. */
export const operationLabel = (op: OpenApiOperation): string =>
  op.operationId ?? `${op.method.toUpperCase()} ${op.path}`;

/** The operations `selection` names (by operationId or `METHOD /path`, or by tag); throws OpenApiImportError naming what matched nothing. */
export function selectOperations(doc: OpenApiDocument, selection: Selection): OpenApiOperation[] {
  const unknown: string[] = [];
  const chosen = new Set<OpenApiOperation>();
  for (const wanted of selection.operations) {
    const found = doc.operations.filter(
      (op) =>
        op.operationId === wanted ||
        `${op.method.toUpperCase()} ${op.path}` ===
          wanted.replace(/^\s*(\S+)\s+/, (_, m: string) => `${m.toUpperCase()} `),
    );
    if (found.length === 0) unknown.push(`--operation ${wanted}: no operation has this operationId (or METHOD /path)`);
    for (const op of found) chosen.add(op);
  }
  for (const tag of selection.tags) {
    const found = doc.operations.filter((op) => op.tags.includes(tag));
    if (found.length === 0) unknown.push(`--tag ${tag}: no operation has this tag`);
    for (const op of found) chosen.add(op);
  }
  if (unknown.length > 0) throw new OpenApiImportError(unknown.join('\n'));
  // In the description's order, whatever the order of the options.
  return doc.operations.filter((op) => chosen.has(op));
}

export function importOperations(
  doc: OpenApiDocument,
  operations: readonly OpenApiOperation[],
  provider: string,
  source: string,
): ImportResult {
  const imported: ImportedEntry[] = [];
  const refused: string[] = [];
  const names = new Set<string>();
  for (const op of operations) {
    if (!IMPORTED_METHODS.has(op.method)) {
      refused.push(
        `${operationLabel(op)}: ${op.method.toUpperCase()} is not a method a declared tool sends (GET, POST, PUT, PATCH, DELETE)`,
      );
      continue;
    }
    let name = toolNameFor(provider, op);
    for (let n = 2; names.has(name); n++) name = `${toolNameFor(provider, op).slice(0, 60)}_${n}`;
    names.add(name);
    imported.push(entryFromOperation(doc, op, provider, name));
  }

  const scopes = [...new Set(imported.flatMap((i) => i.entry['scopes'] as string[]))];
  let problems: string[] = [];
  try {
    declareTools(
      imported.map((i) => i.entry),
      { providers: [{ id: provider, scopes }], taken: [] },
      'the import',
    );
  } catch (err) {
    if (!(err instanceof ToolsFileError)) throw err;
    problems = [...err.problems];
  }
  return { yaml: render(doc, imported, refused, problems, provider, source), problems: [...refused, ...problems] };
}

function render(
  doc: OpenApiDocument,
  imported: readonly ImportedEntry[],
  refused: readonly string[],
  problems: readonly string[],
  provider: string,
  source: string,
): string {
  const yaml = new Document(imported.map((i) => i.entry));
  const header = [
    `Declared tools imported by \`broker tools import\` from ${source}`,
    `(${doc.title}${doc.apiVersion ? ` ${doc.apiVersion}` : ''}, OpenAPI ${doc.version}), for provider ${provider}.`,
    'Review each entry before you commit it; then check the file as start-up will: TOOLS_FILE=<this file> npm run broker -- tools check',
    `Paths are below the provider's API base${doc.servers.length > 0 ? `; the description's server${doc.servers.length > 1 ? 's are' : ' is'} ${doc.servers.join(', ')}` : ''}.`,
    ...(refused.length > 0 ? ['', 'Not imported:', ...refused.map((r) => `  ${r}`)] : []),
    ...(problems.length > 0
      ? ['', 'These entries do not load yet (broker tools check would say):', ...problems.map((p) => `  ${p}`)]
      : []),
  ];
  yaml.commentBefore = header.map((line) => ` ${line}`.trimEnd()).join('\n');
  const items = isSeq(yaml.contents) ? yaml.contents.items : [];
  items.forEach((node, index) => {
    const { notes, scopesTodo } = imported[index]!;
    if (!isMap(node)) return;
    node.spaceBefore = true;
    node.commentBefore = notes.map((line) => ` ${line}`).join('\n');
    const scopes = node.get('scopes', true);
    if (isSeq(scopes)) {
      scopes.flow = true;
      if (scopesTodo) scopes.comment = ` ${scopesTodo}`;
    }
    const properties = (node.getIn(['inputSchema', 'properties'], true) ?? undefined) as YAMLMap | undefined;
    if (isMap(properties)) for (const pair of properties.items) if (isMap(pair.value)) pair.value.flow = true;
  });
  return yaml.toString({ lineWidth: 0, flowCollectionPadding: false });
}
