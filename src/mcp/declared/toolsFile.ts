import type { z } from 'zod';
import { readListFile } from '../../shared/listFile.js';
import { scopeProblem } from '../tools/toolModules.js';
import { compileDeclaredTool, type DeclaredTool } from './compileDeclaredTool.js';
import { DeclaredEntrySchema } from './declaredEntry.js';
import { translateInputSchema } from './inputSchema.js';
import { planRequest, type RequestPlan } from './requestPlan.js';
import { planResponse } from './responsePlan.js';
import { isStarterRef, resolveStarter, starterRefName, type StarterTool } from './starterRef.js';
import { readStarterTools } from './starterTools.js';
import { checkForUses } from './valueRules.js';

export class ToolsFileError extends Error {
  override name = 'ToolsFileError';
  constructor(
    message: string,
    readonly problems: readonly string[] = [message],
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A configured provider (as start-up configures it), as declared tools are checked against it. */
export interface ToolsProvider {
  id: string;
  /** The scopes its entry asks for. */
  scopes: readonly string[];
  /** The catalog entry it is built from (none for a custom entry): where a starter tool is bound. */
  catalog?: string | undefined;
  /** The connection metadata its connections record (its metadata call's fields): what `{connection.<field>}` may name. */
  connectionFields?: readonly string[] | undefined;
}

export interface ToolsFileContext {
  providers: readonly ToolsProvider[];
  /** Tools served already (built in, TOOL_MODULES), and where each comes from: a declared name must differ. */
  taken: readonly { name: string; source: string }[];
  /** The starter tools an entry may name (config/starter-tools/; loadToolsFile reads them when an entry names one). */
  starters?: ReadonlyMap<string, StarterTool>;
}

/** TOOLS_FILE (YAML or JSON, read as PROVIDERS_FILE is), checked and compiled; throws ToolsFileError listing every problem. */
export async function loadToolsFile(path: string, context: ToolsFileContext): Promise<DeclaredTool[]> {
  const entries = await readListFile(path, {
    variable: 'TOOLS_FILE',
    items: 'tools',
    error: (message, cause) => new ToolsFileError(message, [message], { cause }),
  });
  if (context.starters || !entries.some(isStarterRef)) return declareTools(entries, context, `TOOLS_FILE ${path}`);
  const { starters, problems } = await readStarterTools();
  if (problems.length > 0)
    throw new ToolsFileError(
      `The starter tools cannot be read:\n${problems.map((p) => `  - ${p}`).join('\n')}`,
      problems,
    );
  return declareTools(entries, { ...context, starters }, `TOOLS_FILE ${path}`);
}

/**
 * Checks every entry (its fields, schema, templates and answer; the provider
 * and scopes against `context`; names unique and not taken) and compiles them
 * all, or throws ToolsFileError with every problem, each as `[index] (name)
 * field: problem`. An entry that names a starter tool is that tool bound to
 * its provider (starterRef.ts), then checked as the others.
 */
export function declareTools(entries: readonly unknown[], context: ToolsFileContext, label: string): DeclaredTool[] {
  const problems: string[] = [];
  const tools: DeclaredTool[] = [];
  const seen = new Set<string>();
  for (const [index, raw] of entries.entries()) {
    const starter = isStarterRef(raw);
    const name = starter
      ? starterRefName(raw)
      : typeof (raw as { name?: unknown } | null)?.name === 'string'
        ? (raw as { name: string }).name
        : undefined;
    const report = (list: readonly string[]) =>
      problems.push(...list.map((p) => `[${index}]${name === undefined ? '' : ` (${name})`} ${p}`));
    if (name !== undefined) {
      if (seen.has(name)) report([`name: ${name} is declared twice`]);
      const taken = context.taken.find((t) => t.name === name);
      if (taken) report([`name: ${name} is already a ${taken.source} tool`]);
      seen.add(name);
    }
    const resolved = starter ? resolveStarter(raw, context.starters ?? new Map(), context.providers) : { entry: raw };
    const checked =
      'problems' in resolved ? resolved : checkEntry(resolved.entry, context, starter ? 'starter' : 'file');
    if ('problems' in checked) report(checked.problems);
    else tools.push(checked.tool);
  }
  if (problems.length > 0)
    throw new ToolsFileError(
      `${label} declares tools that cannot be served:\n${problems.map((p) => `  - ${p}`).join('\n')}`,
      problems,
    );
  return tools;
}

function checkEntry(
  raw: unknown,
  context: ToolsFileContext,
  source: DeclaredTool['source'],
): { tool: DeclaredTool } | { problems: string[] } {
  const parsed = DeclaredEntrySchema.safeParse(raw);
  if (!parsed.success) {
    // The schema and the provider are checked apart from the other fields, so their problems are listed too.
    const fields = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>) : undefined;
    const schema = fields ? translateInputSchema(fields['inputSchema']).problems : [];
    const provider =
      typeof fields?.['provider'] === 'string'
        ? providerProblems({ name: String(fields['name']), provider: fields['provider'], scopes: [] }, context)
        : [];
    return { problems: [...issuesOf(parsed.error), ...schema, ...provider] };
  }
  const entry = parsed.data;
  const request = planRequest(entry);
  const uses = request.plan ? request.uses : new Map();
  const input = translateInputSchema(entry.inputSchema, (name) => checkForUses(uses.get(name)));
  const response = planResponse(entry.response);
  const problems = [...request.problems, ...input.problems, ...response.problems];

  problems.push(...providerProblems(entry, context));
  if (request.plan) problems.push(...connectionFieldProblems(request.plan, entry.provider, context));

  if (request.plan && input.input) {
    for (const [variable, where] of uses) {
      const property = input.input.properties.get(variable);
      const places = [...where].join(', ');
      if (!property) problems.push(`request: {${variable}} (in the ${places}) is not a property of inputSchema`);
      else if (where.has('path') && property.kind === 'array')
        problems.push(
          `request.path: {${variable}} is an array; a path variable is one string, integer, number or boolean`,
        );
      else if (where.has('path') && !property.alwaysPresent)
        problems.push(
          `request.path: {${variable}} must be required in inputSchema (or have a default): a path cannot leave it out`,
        );
    }
  }
  if (problems.length > 0 || !request.plan || !input.input || !response.plan) return { problems };
  return { tool: compileDeclaredTool(entry, input.input, request.plan, response.plan, source) };
}

/** A `{connection.<field>}` in the path must be a field the provider's connections record (its entry's metadata call). */
function connectionFieldProblems(plan: RequestPlan, providerId: string, context: ToolsFileContext): string[] {
  const provider = context.providers.find((p) => p.id === providerId);
  if (!provider) return [];
  const recorded = provider.connectionFields ?? [];
  return plan.path.connectionFields
    .filter((field) => !recorded.includes(field))
    .map(
      (field) =>
        `request.path: {connection.${field}} is not recorded for connections to ${providerId} (its entry records ${recorded.join(', ') || 'no connection metadata'})`,
    );
}

/** The provider must be configured, and ask for the tool's scopes (toolScopeProblems' rule). */
function providerProblems(
  entry: { name: string; provider: string; scopes: readonly string[] },
  context: ToolsFileContext,
): string[] {
  if (!context.providers.some((p) => p.id === entry.provider))
    return [
      `provider: ${JSON.stringify(entry.provider)} is not a configured provider (configured: ${context.providers.map((p) => p.id).join(', ') || 'none'})`,
    ];
  const scopes = scopeProblem(entry, context.providers);
  return scopes ? [`scopes: ${scopes}`] : [];
}

function issuesOf(error: z.ZodError): string[] {
  return error.issues.map((i) => `${i.path.join('.') || '(entry)'}: ${i.message}`);
}
