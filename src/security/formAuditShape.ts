// The flat primitive subset of JSON Schema a form may use: MCP 2026-07-28,
// schema.ts, ElicitRequestFormParams.requestedSchema and PrimitiveSchemaDefinition
// (StringSchema, NumberSchema, BooleanSchema, the single- and multi-select
// EnumSchemas and LegacyTitledEnumSchema). "Form mode elicitation schemas are
// limited to flat objects with primitive properties only" (client/elicitation.mdx).
// A property may carry only its own type's keywords: anything else (a nested
// object, a composition, writeOnly, a pattern, an x- hint) is outside the
// subset, and a client cannot be relied on to treat it as the server meant.

export type ShapeRule =
  | 'not_object'
  | 'nested_object'
  | 'array_not_enum'
  | 'not_primitive'
  | 'unknown_keyword'
  | 'format_not_allowed'
  | 'bad_value';

export interface ShapeFinding {
  rule: ShapeRule | 'format_password';
  /** The property, when the finding is about one. */
  field?: string;
  /** The keyword at fault. */
  keyword?: string;
}

/** What a field can hold, for the vocabulary rules: a boolean is one bit and cannot carry a secret. */
export type FieldKind = 'text' | 'number' | 'boolean' | 'choice';

export interface FieldShape {
  field: string;
  kind: FieldKind | undefined;
  title?: string;
  description?: string;
}

type Json = Record<string, unknown>;

// Top level: the spec's keywords, plus annotations that change nothing a user can enter (Python SDK servers
// send pydantic's model `title`; zod's strict objects add `additionalProperties: false`).
const TOP_KEYWORDS = new Set([
  '$schema',
  'type',
  'properties',
  'required',
  'title',
  'description',
  'additionalProperties',
]);
const STRING_FORMATS = new Set(['email', 'uri', 'date', 'date-time']);
const ANNOTATIONS = ['title', 'description'];
const KEYWORDS: Readonly<Record<string, readonly string[]>> = {
  string: [...ANNOTATIONS, 'type', 'minLength', 'maxLength', 'format', 'default'],
  enum: [...ANNOTATIONS, 'type', 'enum', 'enumNames', 'default'],
  oneOf: [...ANNOTATIONS, 'type', 'oneOf', 'default'],
  number: [...ANNOTATIONS, 'type', 'minimum', 'maximum', 'default'],
  boolean: [...ANNOTATIONS, 'type', 'default'],
  array: [...ANNOTATIONS, 'type', 'items', 'minItems', 'maxItems', 'default'],
};

/** Every way the schema leaves the subset, and each property's shape for the vocabulary rules. */
export function checkShape(schema: unknown): { findings: ShapeFinding[]; fields: FieldShape[] } {
  if (!isObject(schema) || schema['type'] !== 'object' || !isObject(schema['properties']))
    return { findings: [{ rule: 'not_object' }], fields: [] };
  const findings: ShapeFinding[] = [];
  for (const keyword of Object.keys(schema))
    if (!TOP_KEYWORDS.has(keyword)) findings.push({ rule: 'unknown_keyword', keyword });
  for (const keyword of ['$schema', 'title', 'description'])
    if (keyword in schema && typeof schema[keyword] !== 'string') findings.push({ rule: 'bad_value', keyword });
  if ('additionalProperties' in schema && schema['additionalProperties'] !== false)
    findings.push({ rule: 'bad_value', keyword: 'additionalProperties' });
  const properties = schema['properties'];
  const required = schema['required'];
  if (
    required !== undefined &&
    !(
      Array.isArray(required) &&
      required.every((name) => typeof name === 'string' && Object.hasOwn(properties, name)) &&
      new Set(required).size === required.length
    )
  )
    findings.push({ rule: 'bad_value', keyword: 'required' });
  const fields = Object.entries(properties).map(([field, property]) => checkProperty(field, property, findings));
  return { findings, fields };
}

function checkProperty(field: string, property: unknown, findings: ShapeFinding[]): FieldShape {
  if (!isObject(property)) {
    findings.push({ rule: 'not_primitive', field });
    return { field, kind: undefined };
  }
  const text = (key: string) => (typeof property[key] === 'string' ? (property[key] as string) : undefined);
  const shape: FieldShape = { field, kind: undefined };
  const title = text('title');
  const description = text('description');
  if (title !== undefined) shape.title = title;
  if (description !== undefined) shape.description = description;
  const variant = variantOf(property);
  if (typeof variant !== 'string') {
    findings.push({ ...variant, field });
    return shape;
  }
  const bad = (keyword: string) => findings.push({ rule: 'bad_value', field, keyword });
  for (const keyword of Object.keys(property))
    if (!KEYWORDS[variant]!.includes(keyword)) findings.push({ rule: 'unknown_keyword', field, keyword });
  for (const keyword of ANNOTATIONS) if (keyword in property && text(keyword) === undefined) bad(keyword);
  const valueChecks = VALUE_CHECKS[variant]!;
  for (const [keyword, valid] of Object.entries(valueChecks))
    if (keyword in property && !valid(property[keyword], property)) bad(keyword);
  if (variant === 'string' && typeof property['format'] === 'string') {
    if (property['format'] === 'password') findings.push({ rule: 'format_password', field, keyword: 'format' });
    else if (!STRING_FORMATS.has(property['format']))
      findings.push({ rule: 'format_not_allowed', field, keyword: 'format' });
  }
  shape.kind =
    variant === 'string' ? 'text' : variant === 'number' ? 'number' : variant === 'boolean' ? 'boolean' : 'choice';
  return shape;
}

type Variant = 'string' | 'enum' | 'oneOf' | 'number' | 'boolean' | 'array';

function variantOf(property: Json): Variant | { rule: ShapeRule; keyword: string } {
  const type = property['type'];
  if (type === 'object' || 'properties' in property) return { rule: 'nested_object', keyword: 'type' };
  if (type === 'array') return isEnumItems(property['items']) ? 'array' : { rule: 'array_not_enum', keyword: 'items' };
  if (type === 'string') return 'oneOf' in property ? 'oneOf' : 'enum' in property ? 'enum' : 'string';
  if (type === 'number' || type === 'integer') return 'number';
  if (type === 'boolean') return 'boolean';
  return { rule: 'not_primitive', keyword: 'type' };
}

const nonNegativeInteger = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;
const finite = (v: unknown) => typeof v === 'number' && Number.isFinite(v);
const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');
const options = (v: unknown) =>
  Array.isArray(v) &&
  v.length > 0 &&
  v.every(
    (o) =>
      isObject(o) && Object.keys(o).length === 2 && typeof o['const'] === 'string' && typeof o['title'] === 'string',
  );

const VALUE_CHECKS: Readonly<Record<Variant, Readonly<Record<string, (v: unknown, p: Json) => boolean>>>> = {
  string: {
    minLength: nonNegativeInteger,
    maxLength: nonNegativeInteger,
    format: (v) => typeof v === 'string',
    default: (v) => typeof v === 'string',
  },
  enum: {
    enum: (v) => strings(v) && v.length > 0,
    enumNames: (v, p) => strings(v) && Array.isArray(p['enum']) && v.length === p['enum'].length,
    default: (v) => typeof v === 'string',
  },
  oneOf: { oneOf: options, default: (v) => typeof v === 'string' },
  number: { minimum: finite, maximum: finite, default: finite },
  boolean: { default: (v) => typeof v === 'boolean' },
  array: { minItems: nonNegativeInteger, maxItems: nonNegativeInteger, default: strings },
};

/** `items` of a multi-select: `{type: "string", enum: [...]}` or `{anyOf: [{const, title}, ...]}`, nothing else. */
function isEnumItems(items: unknown): boolean {
  if (!isObject(items)) return false;
  const keys = Object.keys(items).sort().join(',');
  if (keys === 'enum,type') return items['type'] === 'string' && strings(items['enum']) && items['enum'].length > 0;
  return keys === 'anyOf' && options(items['anyOf']);
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
