// RFC 6570 level 1 templates: literal text and `{name}` simple expressions,
// nothing else (no operators, no prefixes or explode modifiers). Expansion
// itself is the caller's (a path segment, a query value and a header value are
// encoded differently); this module parses and names the variables.
// `{connection.<field>}` (a dotted varname, RFC 6570 §2.3) names a fact the
// connection recorded (Atlassian's cloudId), not an argument; only a template
// parsed with `connection: true` (the request path) may hold one.

export type TemplatePart = { literal: string } | { variable: string } | { connection: string };

export interface Template {
  source: string;
  parts: readonly TemplatePart[];
  /** The arguments it uses. */
  variables: readonly string[];
  /** The connection metadata fields it uses. */
  connectionFields: readonly string[];
}

const VARNAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const CONNECTION_PREFIX = 'connection.';
const CONNECTION_FIELD = /^[A-Za-z][A-Za-z0-9]{0,63}$/;
// RFC 6570 §2.2 operators: level 2 and above, which a declared tool does not take.
const OPERATORS = new Set(['+', '#', '.', '/', ';', '?', '&', '=', ',', '!', '@', '|']);

/** The template, or why it is not a level 1 template (or holds connection fields where `options.connection` is not set). */
export function parseTemplate(
  source: string,
  options: { connection?: boolean } = {},
): { template: Template } | { problem: string } {
  const parts: TemplatePart[] = [];
  let at = 0;
  while (at < source.length) {
    const open = source.indexOf('{', at);
    const close = source.indexOf('}', at);
    if (close !== -1 && (open === -1 || close < open))
      return { problem: `has a "}" without its "{" at character ${close + 1}` };
    if (open === -1) {
      parts.push({ literal: source.slice(at) });
      break;
    }
    if (open > at) parts.push({ literal: source.slice(at, open) });
    const end = source.indexOf('}', open);
    if (end === -1) return { problem: `has a "{" that is never closed at character ${open + 1}` };
    const name = source.slice(open + 1, end);
    if (name.includes('{')) return { problem: `has a "{" inside an expression at character ${open + 1}` };
    if (OPERATORS.has(name[0] ?? ''))
      return { problem: `{${name}}: only simple {name} expressions are supported (RFC 6570 level 1)` };
    if (name.includes(',') || name.includes(':') || name.endsWith('*'))
      return { problem: `{${name}}: one variable per expression, without modifiers (RFC 6570 level 1)` };
    if (name.startsWith(CONNECTION_PREFIX)) {
      const field = name.slice(CONNECTION_PREFIX.length);
      if (!CONNECTION_FIELD.test(field))
        return { problem: `{${name}}: a connection field name must match ^[A-Za-z][A-Za-z0-9]{0,63}$` };
      if (!options.connection) return { problem: `{${name}}: connection metadata may be used only in request.path` };
      parts.push({ connection: field });
    } else {
      if (!VARNAME.test(name))
        return { problem: `{${name}}: a variable name must match ^[A-Za-z_][A-Za-z0-9_]{0,63}$` };
      parts.push({ variable: name });
    }
    at = end + 1;
  }
  const variables = [...new Set(parts.flatMap((p) => ('variable' in p ? [p.variable] : [])))];
  const connectionFields = [...new Set(parts.flatMap((p) => ('connection' in p ? [p.connection] : [])))];
  return { template: { source, parts, variables, connectionFields } };
}

const noConnection = (field: string): never => {
  throw new Error(`{connection.${field}} in a template parsed without connection fields`);
};

/**
 * The text of a template with each variable's text from `valueOf` and each
 * connection field's from `fieldOf` (both already encoded as their place needs).
 */
export function expandTemplate(
  template: Template,
  valueOf: (name: string) => string,
  fieldOf: (field: string) => string = noConnection,
): string {
  return template.parts
    .map((part) =>
      'literal' in part ? part.literal : 'variable' in part ? valueOf(part.variable) : fieldOf(part.connection),
    )
    .join('');
}

/** A template that is exactly one expression, `"{name}"`: in a JSON body it stands for the typed value. */
export function soleVariable(template: Template): string | undefined {
  const [only, ...rest] = template.parts;
  return only && rest.length === 0 && 'variable' in only ? only.variable : undefined;
}
