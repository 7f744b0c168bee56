import { ConnectionFetchRefusedError, requestUrl } from '../connectionFetch.js';
import type { DeclaredEntry } from './declaredEntry.js';
import { expandTemplate, parseTemplate, type Template } from './template.js';
import { hasControl, type Use } from './valueRules.js';

// A declared tool's request, checked once at load: the path is a template
// relative to the API base (never a URL), every template parses, no header
// is one the broker owns. requestBuild.ts fills it in per call. Only the path
// may name connection metadata (`{connection.cloudId}`): a fact of the
// connection that places the call below the base, as an argument would.

/** A JSON body with template strings: `"{name}"` stands for the typed value, other strings interpolate. */
export type JsonTemplate =
  { template: Template } | { literal: unknown } | { array: JsonTemplate[] } | { object: [string, JsonTemplate][] };

export interface RequestPlan {
  method: DeclaredEntry['request']['method'];
  path: Template;
  query: readonly [string, Template][];
  headers: readonly [string, Template][];
  body: { json: JsonTemplate } | { form: readonly [string, Template][] } | undefined;
  /** The header the operation's idempotency key (its receipt id) is sent in; undefined for mode none. */
  idempotencyHeader: string | undefined;
}

// The broker's own headers (credentials, routing, framing) and those the body decides.
const RESERVED_HEADERS = new Set([
  'authorization',
  'proxy-authorization',
  'host',
  'cookie',
  'set-cookie',
  'content-length',
  'content-type',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'forwarded',
  'via',
  'user-agent',
]);
const RESERVED_PREFIXES = ['proxy-', 'x-forwarded-', 'sec-'];
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/;
const QUERY_NAME = /^[A-Za-z0-9_.~[\]-]{1,100}$/;
// Checks the path's literal text against the bound fetch's own rules, with every variable as a plain segment.
const SAMPLE_BASE = { provider: 'the file', apiBase: 'https://api.invalid/base' };

export function headerNameProblem(name: string): string | undefined {
  if (!HEADER_NAME.test(name)) return 'is not a header name (RFC 9110 token)';
  const lower = name.toLowerCase();
  if (RESERVED_HEADERS.has(lower) || RESERVED_PREFIXES.some((p) => lower.startsWith(p)))
    return 'is set by the broker, not by a tool';
  return undefined;
}

/** The plan and each variable's uses, or the problems, each naming its field under `request`. */
export function planRequest(
  entry: Pick<DeclaredEntry, 'request' | 'idempotency'>,
): { plan: RequestPlan; uses: Map<string, Set<Use>>; problems: [] } | { plan: undefined; problems: string[] } {
  const { request, idempotency } = entry;
  const problems: string[] = [];
  const uses = new Map<string, Set<Use>>();
  const parse = (source: string, at: string, use: Use): Template | undefined => {
    const parsed = parseTemplate(source, { connection: use === 'path' });
    if ('problem' in parsed) {
      problems.push(`${at}: ${parsed.problem}`);
      return undefined;
    }
    for (const name of parsed.template.variables) uses.set(name, (uses.get(name) ?? new Set()).add(use));
    return parsed.template;
  };

  const path = parse(request.path, 'request.path', 'path');
  if (!request.path.startsWith('/') || request.path.startsWith('//'))
    problems.push(
      'request.path: must start with a single "/": it is below the provider\'s API base (no scheme or host)',
    );
  else if (/[?#\\\s]/.test(request.path) || hasControl(request.path))
    problems.push(
      'request.path: must not contain "?", "#", "\\", spaces or control characters (query parameters go in request.query)',
    );
  else if (path) {
    try {
      requestUrl(
        SAMPLE_BASE,
        expandTemplate(
          path,
          () => 'x',
          () => 'x',
        ),
      );
    } catch (err) {
      if (!(err instanceof ConnectionFetchRefusedError)) throw err;
      problems.push(`request.path: ${err.message.replace(/^the file: /, '')}`);
    }
  }

  const query: [string, Template][] = [];
  for (const [name, value] of Object.entries(request.query ?? {})) {
    if (!QUERY_NAME.test(name)) problems.push(`request.query.${name}: is not a plain query parameter name`);
    const sources: [string, string][] =
      typeof value === 'string'
        ? [[value, `request.query.${name}`]]
        : value.map((source, i): [string, string] => [source, `request.query.${name}.${i}`]);
    for (const [source, at] of sources) {
      const template = parse(source, at, 'query');
      if (template) query.push([name, template]);
    }
  }
  const headers: [string, Template][] = [];
  for (const [name, source] of Object.entries(request.headers ?? {})) {
    const problem = headerNameProblem(name);
    if (problem) problems.push(`request.headers.${name}: ${problem}`);
    if (hasControl(source))
      problems.push(`request.headers.${name}: must not contain control characters (CR, LF, NUL, …)`);
    const template = parse(source, `request.headers.${name}`, 'header');
    if (template) headers.push([name, template]);
  }

  let body: RequestPlan['body'];
  if (request.body && request.method === 'GET') problems.push('request.body: a GET request has no body');
  else if (request.body?.form) {
    const form: [string, Template][] = [];
    for (const [name, source] of Object.entries(request.body.form)) {
      const template = parse(source, `request.body.form.${name}`, 'body');
      if (template) form.push([name, template]);
    }
    body = { form };
  } else if (request.body?.graphql) {
    // The body GraphQL over HTTP POSTs as application/json: {"query": document, "variables": {…}}.
    const { query: document, variables } = request.body.graphql;
    const members: [string, JsonTemplate][] = [['query', { literal: document }]];
    if (variables)
      members.push([
        'variables',
        jsonTemplate(variables, 'request.body.graphql.variables', (source, at) => parse(source, at, 'body')),
      ]);
    body = { json: { object: members } };
  } else if (request.body && 'json' in request.body) {
    body = { json: jsonTemplate(request.body.json, 'request.body.json', (source, at) => parse(source, at, 'body')) };
  }

  if (!idempotency && request.method !== 'GET')
    problems.push(
      `idempotency: is required for ${request.method} (choose {"mode": "header", "header": "Idempotency-Key"} or {"mode": "none"})`,
    );
  const idempotencyHeader = idempotency?.mode === 'header' ? idempotency.header : undefined;
  if (idempotencyHeader !== undefined) {
    const problem = headerNameProblem(idempotencyHeader);
    if (problem) problems.push(`idempotency.header: ${problem}`);
    if (headers.some(([name]) => name.toLowerCase() === idempotencyHeader.toLowerCase()))
      problems.push(`idempotency.header: ${idempotencyHeader} is also in request.headers`);
  }
  if (problems.length > 0 || !path) return { plan: undefined, problems };
  return { plan: { method: request.method, path, query, headers, body, idempotencyHeader }, uses, problems: [] };
}

function jsonTemplate(
  value: unknown,
  at: string,
  parse: (source: string, at: string) => Template | undefined,
): JsonTemplate {
  if (typeof value === 'string') {
    if (!value.includes('{') && !value.includes('}')) return { literal: value };
    const template = parse(value, at);
    return template ? { template } : { literal: value };
  }
  if (Array.isArray(value)) return { array: value.map((item, i) => jsonTemplate(item, `${at}.${i}`, parse)) };
  if (typeof value === 'object' && value !== null)
    return { object: Object.entries(value).map(([key, inner]) => [key, jsonTemplate(inner, `${at}.${key}`, parse)]) };
  return { literal: value };
}
