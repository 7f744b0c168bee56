import { parseArgs } from 'node:util';
import { DeclaredEntrySchema } from '../mcp/declared/declaredEntry.js';
import { loadOpenApiDocument, OpenApiImportError } from '../mcp/declared/openapiDocument.js';
import { importOperations, operationLabel, selectOperations } from '../mcp/declared/openapiImport.js';
import { formatTable } from './table.js';
import { ToolsCommandError } from './toolsCommand.js';

export const importUsage = `Usage: broker tools import <openapi file> --provider <id> (--operation <operationId> | --tag <tag>)…

Writes TOOLS_FILE entries (YAML, to stdout) for the chosen operations of an OpenAPI 3.0 or 3.1
description (JSON or YAML; the file alone: external $refs are not followed), with comments on what
to review. Without --operation or --tag it lists the operations and exits 2: choose the few a model
should have. No network access; check the result with broker tools check.

  --provider <id>         The provider the tools act through (a PROVIDERS_FILE id, or github / reports
                          in development); the tools are named <provider>_<operationId>.
  --operation <id>        An operationId, or "METHOD /path" (repeat for more).
  --tag <tag>             Every operation with this tag (repeat for more).
`;

/** `broker tools import …`: prints the YAML with `out`, the operation list and notes with `note`; returns the exit code. */
export async function toolsImport(
  args: string[],
  out: (text: string) => void,
  note: (line: string) => void,
): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    strict: true,
    allowPositionals: true,
    options: {
      provider: { type: 'string' },
      operation: { type: 'string', multiple: true },
      tag: { type: 'string', multiple: true },
    },
  });
  const [file, ...extra] = positionals;
  if (!file || extra.length > 0 || values.provider === undefined) throw new ToolsCommandError(importUsage);
  if (!DeclaredEntrySchema.shape.provider.safeParse(values.provider).success)
    throw new ToolsCommandError(`--provider ${values.provider}: must be a provider id (at most 32 characters)`);

  const doc = await loadOpenApiDocument(file).catch((err: unknown) => {
    throw err instanceof OpenApiImportError ? new ToolsCommandError(err.message, 1) : err;
  });
  const selection = { operations: values.operation ?? [], tags: values.tag ?? [] };
  if (selection.operations.length === 0 && selection.tags.length === 0) {
    const rows = doc.operations.map((op) => [
      operationLabel(op),
      op.method.toUpperCase(),
      op.path,
      op.tags.join(', ') || '-',
      (op.summary ?? '').slice(0, 60),
    ]);
    note(formatTable(['operation', 'method', 'path', 'tags', 'summary'], rows));
    throw new ToolsCommandError(
      `${file} describes ${doc.operations.length} operation(s): choose the ones to import with --operation <operationId> or --tag <tag> (a whole API is never imported at once)`,
    );
  }
  let operations;
  try {
    operations = selectOperations(doc, selection);
  } catch (err) {
    if (!(err instanceof OpenApiImportError)) throw err;
    throw new ToolsCommandError(
      `${err.message}\n(run without --operation and --tag to list the operations of ${file})`,
    );
  }
  const result = importOperations(doc, operations, values.provider, file);
  out(result.yaml);
  if (result.problems.length === 0) return 0;
  note(
    `broker: some operations were not imported, or do not load yet (listed at the top of the output):\n${result.problems.map((p) => `  - ${p}`).join('\n')}`,
  );
  return 1;
}
