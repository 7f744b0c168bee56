import { checkShape, type FieldShape, type ShapeFinding } from './formAuditShape.js';
import { SECRET_TERMS, type SecretConcept, type TermLanguage } from './formAuditTerms.js';
import { normaliseText } from './formAuditText.js';
import { findSecretTerm } from './formAuditVocabulary.js';

// The audit every form-mode elicitation passes before the broker sends it, its
// own or relayed from an upstream server: the requestedSchema stays inside the
// flat primitive subset (formAuditShape.ts), and no field would collect a
// secret (MCP 2026-07-28, client/elicitation.mdx: such input MUST go through URL
// mode). Pure: the caller counts, records and refuses (src/mcp/formGuard.ts).

export type FormAuditRule = ShapeFinding['rule'] | 'secret_term' | 'mixed_script';

/** Who wrote a form: the broker (its own tools) or an upstream MCP server whose elicitation it relays. */
export type FormOrigin = 'broker' | 'upstream';

/** The rules, for metrics labels and tests: a closed set. */
export const formAuditRules: readonly FormAuditRule[] = [
  'not_object',
  'nested_object',
  'array_not_enum',
  'not_primitive',
  'unknown_keyword',
  'format_not_allowed',
  'bad_value',
  'format_password',
  'secret_term',
  'mixed_script',
];

/** Where in a field (or, for `message`, in the form) a term was found. */
export type FieldPart = 'name' | 'title' | 'description' | 'message';

/** One reason to refuse. Never a value from the schema (a `default` could be the very secret): names only. */
export interface FormAuditFinding {
  rule: FormAuditRule;
  field?: string;
  keyword?: string;
  part?: FieldPart;
  concept?: SecretConcept;
  language?: TermLanguage;
}

export type FormAudit = { admitted: true } | { admitted: false; findings: FormAuditFinding[] };

/** The audit of a form's schema and, when given, of the message shown above it (a relayed form's). */
export function auditFormSchema(requestedSchema: unknown, message?: unknown): FormAudit {
  const { findings, fields } = checkShape(requestedSchema);
  const all: FormAuditFinding[] = [...findings];
  // "Type your corporate SSO password" above a field titled "Answer" asks for the password all the same.
  if (typeof message === 'string') all.push(...textFindings('message', message));
  for (const field of fields) {
    // A boolean is one bit whose meaning the server chose; it cannot carry a secret, so "Pin this note" may stay.
    if (field.kind === 'boolean') continue;
    all.push(...wordFindings(field));
  }
  return all.length === 0 ? { admitted: true } : { admitted: false, findings: all };
}

function wordFindings(field: FieldShape): FormAuditFinding[] {
  const found: FormAuditFinding[] = [];
  const parts: [FieldPart, string | undefined][] = [
    ['name', field.field],
    ['title', field.title],
    ['description', field.description],
  ];
  for (const [part, text] of parts) if (text !== undefined) found.push(...textFindings(part, text, field.field));
  return found;
}

function textFindings(part: FieldPart, text: string, field?: string): FormAuditFinding[] {
  const found: FormAuditFinding[] = [];
  const at = field === undefined ? { part } : { field, part };
  const normalised = normaliseText(text);
  // Letters of two look-alike alphabets in one word is how "раssword" hides from the terms below.
  if (normalised.mixedScript) found.push({ rule: 'mixed_script', ...at });
  const hit = findSecretTerm(normalised);
  if (hit) found.push({ rule: 'secret_term', ...at, concept: hit.concept, language: hit.language });
  return found;
}

const LABELS = new Map(SECRET_TERMS.map((c) => [c.concept, c.label]));

/** One finding in words, for the refusal text. `quote` shows a name chosen by someone else safely. */
export function describeFinding(f: FormAuditFinding, quote: (name: string) => string): string {
  const field = f.field === undefined ? 'the form' : `field ${quote(f.field)}`;
  const keyword = f.keyword === undefined ? '' : ` (${quote(f.keyword)})`;
  switch (f.rule) {
    case 'secret_term':
      return `${field} asks for ${LABELS.get(f.concept!) ?? 'a secret'} (its ${f.part})`;
    case 'format_password':
      return `${field} is a password field (format "password")`;
    case 'mixed_script':
      return `${field} mixes look-alike alphabets in one word (its ${f.part})`;
    case 'not_object':
      return 'the requestedSchema is not an object schema with properties';
    case 'nested_object':
      return `${field} is a nested object`;
    case 'array_not_enum':
      return `${field} is an array that is not a multiple choice of strings`;
    case 'not_primitive':
      return `${field} is not a string, number, integer, boolean or choice`;
    case 'unknown_keyword':
      return `${field} uses a keyword outside the elicitation subset${keyword}`;
    case 'format_not_allowed':
      return `${field} has a format other than email, uri, date or date-time`;
    case 'bad_value':
      return `${field} has an invalid value${keyword}`;
  }
}
