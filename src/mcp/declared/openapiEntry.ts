import { TOOL_NAME } from './declaredEntry.js';
import type { Json, OpenApiDocument, OpenApiOperation } from './openapiDocument.js';
import { inputFromOperation } from './openapiInput.js';
import { responseFromOperation } from './openapiResponse.js';

// One OpenAPI operation as a TOOLS_FILE entry (docs/declared-tools.md) for
// an operator to read, edit and commit, with what they should check: what was
// added, what is not imported and why, where the scopes came from.

export interface ImportedEntry {
  entry: Json;
  /** Comment lines for the entry, in the order an operator reviews it. */
  notes: string[];
  /** Set when the scopes are for the operator to write. */
  scopesTodo: string | undefined;
}

const WRITE_METHODS = new Set(['post', 'put', 'patch', 'delete']);
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;
const MAX_TITLE = 100;
const MAX_DESCRIPTION = 4_000;
const MAX_SCOPES = 20;

/** `<provider>_<operationId in snake_case>`, at most 64 characters of [a-z0-9_]. */
export function toolNameFor(provider: string, op: OpenApiOperation): string {
  const snake = (text: string) =>
    text
      .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
      .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '_')
      .replace(/^_+|_+$/g, '');
  const prefix = snake(provider);
  const own = snake(op.operationId ?? `${op.method} ${op.path}`) || op.method;
  const name = own.startsWith(`${prefix}_`) ? own : `${prefix}_${own}`;
  const bounded = name.slice(0, 64).replace(/_+$/, '');
  return TOOL_NAME.test(bounded) ? bounded : `tool_${bounded}`.slice(0, 64).replace(/_+$/, '');
}

export function entryFromOperation(
  doc: OpenApiDocument,
  op: OpenApiOperation,
  provider: string,
  name: string,
): ImportedEntry {
  const method = op.method.toUpperCase();
  const input = inputFromOperation(op);
  const response = responseFromOperation(op.responses);
  const scopes = scopesOf(doc, op);
  const notes: string[] = [
    `${op.operationId ?? '(no operationId)'}: ${method} ${op.path}${op.deprecated ? ' (deprecated in the description)' : ''}`,
  ];

  const title = oneLine(op.summary ?? op.operationId ?? `${method} ${op.path}`);
  const fullDescription = (op.description ?? op.summary ?? title).trim();
  if (title.length > MAX_TITLE) notes.push(`title: cut to ${MAX_TITLE} characters`);
  if (fullDescription.length > MAX_DESCRIPTION) notes.push(`description: cut to ${MAX_DESCRIPTION} characters`);
  if (input.notes.length > 0) notes.push('inputSchema:', ...input.notes.map((n) => `  ${n}`));
  if (input.skipped.length > 0)
    notes.push(
      'not imported (the restricted inputSchema or a level 1 template cannot carry them):',
      ...input.skipped.map((s) => `  ${s}`),
    );
  if (scopes.note) notes.push(scopes.note);

  const write = WRITE_METHODS.has(op.method);
  let idempotency: Json | undefined;
  if (input.idempotencyHeader) {
    idempotency = { mode: 'header', header: input.idempotencyHeader };
    notes.push(
      `idempotency: the description documents the ${input.idempotencyHeader} header: the receipt id is sent in it`,
    );
  } else if (write) {
    idempotency = { mode: 'none' };
    notes.push(
      "idempotency: none, as the description documents no idempotency header: exactly once rests on the broker's receipt",
    );
  }
  notes.push(response.note);

  const entry: Json = {
    name,
    title: bounded(title, MAX_TITLE),
    description: bounded(fullDescription, MAX_DESCRIPTION),
    annotations: write
      ? {
          readOnlyHint: false,
          destructiveHint: op.method === 'delete',
          idempotentHint: op.method === 'put' || op.method === 'delete',
          openWorldHint: true,
        }
      : { readOnlyHint: true, openWorldHint: true },
    provider,
    scopes: scopes.scopes,
    inputSchema: input.inputSchema,
    request: { method, ...input.request },
    ...(idempotency ? { idempotency } : {}),
    ...(response.fields ? { response: { fields: response.fields } } : {}),
  };
  return { entry, notes, scopesTodo: scopes.todo };
}

/**
 * The OAuth scopes of the first security requirement that names any (an
 * `oauth2` or `openIdConnect` scheme with scopes); the requirements are
 * alternatives, and the others are named in the note.
 */
function scopesOf(
  doc: OpenApiDocument,
  op: OpenApiOperation,
): { scopes: string[]; note: string | undefined; todo: string | undefined } {
  const todo = (why: string) => ({
    scopes: [],
    note: undefined,
    todo: `TODO(operator): ${why}; list the scopes of the provider this operation needs`,
  });
  if (op.security === undefined) return todo('the description names no security requirement');
  if (op.security.length === 0) return todo('the description says this operation needs no authorization');
  const oauth = op.security.flatMap((requirement) =>
    Object.entries(requirement).flatMap(([scheme, listed]) => {
      const type = doc.securitySchemes[scheme]?.['type'];
      const scopes = Array.isArray(listed) ? listed.filter((s): s is string => typeof s === 'string') : [];
      return (type === 'oauth2' || type === 'openIdConnect') && scopes.length > 0 ? [{ scheme, scopes }] : [];
    }),
  );
  const [first, ...others] = oauth;
  if (!first)
    return todo(
      `its security requirement (${op.security.flatMap((r) => Object.keys(r)).join(', ') || 'none'}) names no OAuth scopes`,
    );
  const scopes = first.scopes.filter((s) => SCOPE_TOKEN.test(s)).slice(0, MAX_SCOPES);
  const alternatives =
    others.length > 0 ? `; alternatives: ${others.map((o) => `${o.scheme} (${o.scopes.join(' ')})`).join(', ')}` : '';
  const dropped =
    first.scopes.length > scopes.length
      ? `; ${first.scopes.length - scopes.length} left out (not scope tokens, or past ${MAX_SCOPES})`
      : '';
  return {
    scopes,
    note: `scopes: from the security requirement ${first.scheme}${alternatives}${dropped}`,
    todo: undefined,
  };
}

const oneLine = (text: string) => text.trim().replace(/\s+/g, ' ');
const bounded = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
