import { AppError, InvalidInputError } from '../../errors/appError.js';
import type { ConnectionInfo, ConnectionRequestInit } from '../connectionFetch.js';
import type { JsonTemplate, RequestPlan } from './requestPlan.js';
import { expandTemplate, soleVariable, type Template } from './template.js';
import { headerValueProblem, pathValueProblem, queryValueProblem, textOf } from './valueRules.js';

export interface BuiltRequest {
  /** Below the connection's API base, with its query; the bound fetch adds the host. */
  path: string;
  init: ConnectionRequestInit & { method: string; headers: Record<string, string> };
}

const DROPPED = Symbol('dropped');

/**
 * The request for one call's parsed arguments. Path variables are
 * percent-encoded (encodeURIComponent) after their rules pass; query values go
 * through URLSearchParams; an absent optional argument drops its query
 * parameter, header, form field or JSON member. Throws InvalidInputError,
 * before anything is sent, for a value its place refuses (the parsed
 * arguments were checked already: this is the second line). A connection
 * field in the path is the connection's recorded metadata under the same
 * path rules; one it lacks, or holds in a form no path segment may take, is
 * an exposed upstream_auth_failed error, and nothing is sent.
 */
export function buildRequest(
  tool: string,
  plan: RequestPlan,
  input: Readonly<Record<string, unknown>>,
  idempotencyKey: string,
  connection: Pick<ConnectionInfo, 'displayName' | 'metadata'> = { displayName: 'the provider', metadata: {} },
): BuiltRequest {
  const refuse = (name: string, problem: string): never => {
    throw new InvalidInputError(`Invalid arguments for ${tool}. ${name}: ${problem}. Nothing was sent.`);
  };
  const fieldOf = (field: string): string => {
    const value = Object.hasOwn(connection.metadata, field) ? connection.metadata[field] : undefined;
    const problem = value === undefined ? 'is not recorded for this connection' : pathValueProblem(value);
    if (problem === undefined && value !== undefined) return encodeURIComponent(value);
    throw new AppError(
      'upstream_auth_failed',
      `${tool} needs the ${connection.displayName} connection's ${field}, which ${problem}. Nothing was sent; connecting ${connection.displayName} again records it anew.`,
      { expose: true },
    );
  };
  const present = (template: Template) => template.variables.every((name) => input[name] !== undefined);
  const expand = (
    template: Template,
    rule: (text: string) => string | undefined,
    encode: (text: string) => string = (t) => t,
    fields?: (field: string) => string,
  ) =>
    expandTemplate(
      template,
      (name) => {
        const text = textOf(input[name]);
        const problem = rule(text);
        return problem ? refuse(name, problem) : encode(text);
      },
      fields,
    );

  if (!present(plan.path))
    refuse(plan.path.variables.find((name) => input[name] === undefined) ?? 'path', 'is required');
  let path = expand(plan.path, pathValueProblem, encodeURIComponent, fieldOf);
  const search = new URLSearchParams();
  for (const [name, template] of plan.query)
    if (present(template)) search.append(name, expand(template, queryValueProblem));
  // "/" is a plain query character (RFC 3986 §3.4); the bound fetch refuses an encoded one anywhere in the URL.
  if (search.size > 0) path += `?${search.toString().replace(/%2F/gi, '/')}`;

  const headers: Record<string, string> = {};
  for (const [name, template] of plan.headers)
    if (present(template)) headers[name] = expand(template, headerValueProblem);
  if (plan.idempotencyHeader) headers[plan.idempotencyHeader] = idempotencyKey;

  let body: string | undefined;
  if (plan.body && 'form' in plan.body) {
    const form = new URLSearchParams();
    for (const [name, template] of plan.body.form)
      if (present(template))
        form.append(
          name,
          expand(template, () => undefined),
        );
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = form.toString();
  } else if (plan.body) {
    const json = fill(plan.body.json, input);
    headers['content-type'] = 'application/json';
    body = json === DROPPED ? undefined : JSON.stringify(json);
  }
  return { path, init: { method: plan.method, headers, ...(body === undefined ? {} : { body }) } };
}

function fill(node: JsonTemplate, input: Readonly<Record<string, unknown>>): unknown {
  if ('literal' in node) return node.literal;
  if ('array' in node) return node.array.map((item) => fill(item, input)).filter((item) => item !== DROPPED);
  if ('object' in node) {
    const members = node.object
      .map(([key, inner]) => [key, fill(inner, input)] as const)
      .filter(([, value]) => value !== DROPPED);
    return Object.fromEntries(members);
  }
  const { template } = node;
  if (!template.variables.every((name) => input[name] !== undefined)) return DROPPED;
  const sole = soleVariable(template);
  return sole === undefined ? expandTemplate(template, (name) => textOf(input[name])) : input[sole];
}
