import { patternProblem, SAFE_PATTERN_RULE } from '../../security/safePattern.js';
import { isRecord, type Json } from './openapiDocument.js';
import { MAX_PATH_VALUE } from './valueRules.js';

// One OpenAPI schema (3.0 or 3.1, dereferenced) as a property of the
// restricted inputSchema (inputSchema.ts): a bounded string, an integer, a
// number, a boolean, or an array of those. What the restricted schema cannot
// state but only loosens (a format, multipleOf) is dropped and noted; what it
// cannot express at all (nested objects, oneOf, a list of types) is skipped
// with the reason, never silently.

export type Place = 'path' | 'query' | 'body';

export interface PropertyNotes {
  /** What is left unchecked or changed, each naming the property. */
  notes: string[];
  /** Bounds added where the description gives none ("maxLength 1000"), with the property they were added to. */
  added: { bound: string; name: string }[];
}

export type Translated = ({ property: Json } & PropertyNotes) | { skipped: string };

/** A maxLength where the description gives none: a path segment's limit, a query value's, a body text's. */
export const ADDED_MAX_LENGTH: Record<Place, number> = { path: MAX_PATH_VALUE, query: 1_000, body: 65_536 };
export const ADDED_MAX_ITEMS = 100;
const MAX_DESCRIPTION = 1_000;

// Words for people and tools, not constraints: leaving them out changes no argument a tool accepts.
const ANNOTATIONS = new Set([
  'title',
  'description',
  'default',
  'example',
  'examples',
  'deprecated',
  'readOnly',
  'writeOnly',
  'xml',
  'externalDocs',
  '$comment',
  '$schema',
  '$id',
  'nullable',
  'discriminator',
]);
// Constraints the restricted schema has no word for; without them the tool accepts more, and the provider still checks.
const LOOSENED = new Set([
  'format',
  'multipleOf',
  'uniqueItems',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'contentEncoding',
  'contentMediaType',
]);
const NUMERIC_FORMATS = new Set(['int32', 'int64', 'float', 'double']);
const KEYWORDS: Record<string, ReadonlySet<string>> = {
  string: new Set(['type', 'enum', 'const', 'maxLength', 'minLength', 'pattern']),
  integer: new Set(['type', 'enum', 'const', 'minimum', 'maximum']),
  number: new Set(['type', 'enum', 'const', 'minimum', 'maximum']),
  boolean: new Set(['type', 'enum', 'const']),
  array: new Set(['type', 'items', 'maxItems', 'minItems']),
};

const isCount = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 1_000_000;

/** `schema` as a restricted property named `name` (for the notes), or why it is skipped. */
export function restrictedProperty(name: string, schema: unknown, place: Place, description?: string): Translated {
  const notes: PropertyNotes = { notes: [], added: [] };
  const built = translate(name, schema, place, notes, false);
  if ('skipped' in built) return built;
  const text = describe(
    description ?? (isRecord(schema) ? schema['description'] : undefined),
    isRecord(schema) ? schema['default'] : undefined,
    built.values,
  );
  return { property: text ? { ...built.property, description: text } : built.property, ...notes };
}

type Built = { property: Json; values: unknown[] | undefined } | { skipped: string };

function translate(name: string, raw: unknown, place: Place, notes: PropertyNotes, item: boolean): Built {
  const schema = flatten(raw);
  if (!isRecord(schema)) return { skipped: schema };
  const choice = schema['oneOf'] ?? schema['anyOf'];
  if (choice !== undefined) return firstChoice(name, schema, place, notes, item);
  for (const key of ['not', 'if', 'properties', 'additionalProperties', 'patternProperties', '$ref'] as const) {
    if (schema[key] === undefined) continue;
    // dereference() replaced every $ref it could follow: one left is outside the file, which is not read.
    if (key === '$ref')
      return { skipped: `a $ref outside the file (${String(schema[key])}), which the import does not follow` };
    return { skipped: key === 'not' || key === 'if' ? `${key} (a condition on the value)` : 'a nested object' };
  }
  const type = typeOf(schema);
  if (type.kind === undefined) return { skipped: type.skipped };
  const kind = type.kind;
  if (type.others) notes.notes.push(`${name}: types ${[kind, ...type.others].join(', ')}: imported as ${kind} only`);
  if (kind === 'array' && item) return { skipped: 'arrays' };
  for (const key of Object.keys(schema)) {
    if (KEYWORDS[kind]?.has(key) || ANNOTATIONS.has(key) || key.startsWith('x-')) continue;
    if (!LOOSENED.has(key)) return { skipped: `"${key}", which the restricted inputSchema cannot express` };
    if (key === 'format' && NUMERIC_FORMATS.has(String(schema[key]))) continue;
    if (!key.startsWith('exclusive'))
      notes.notes.push(`${name}: ${key} ${JSON.stringify(schema[key])} is not checked (the provider checks it)`);
  }
  const values = enumOf(schema);
  if (kind === 'string') return stringProperty(name, schema, place, notes, values);
  if (kind === 'boolean') return { property: { type: 'boolean' }, values };
  if (kind === 'integer' || kind === 'number') return numberProperty(name, kind, schema, notes, values);
  if (kind !== 'array') return { skipped: `type ${kind}` };

  const items = translate(`${name} items`, schema['items'], place, notes, true);
  if ('skipped' in items) return { skipped: `an array of ${items.skipped}` };
  const property: Json = { type: 'array', items: items.property };
  if (isCount(schema['minItems'])) property['minItems'] = schema['minItems'];
  if (isCount(schema['maxItems']) && schema['maxItems'] <= 1_000) property['maxItems'] = schema['maxItems'];
  else {
    property['maxItems'] = Math.max(ADDED_MAX_ITEMS, isCount(schema['minItems']) ? schema['minItems'] : 0);
    notes.added.push({ bound: `maxItems ${String(property['maxItems'])}`, name });
  }
  return { property, values: undefined };
}

/**
 * A oneOf or anyOf as its first member the restricted schema can express: a
 * value valid for one member is one the provider accepts (GitHub's issue
 * title is a string or an integer, and is imported as a string). The choice
 * is noted, and the property skipped when no member fits.
 */
function firstChoice(name: string, schema: Json, place: Place, notes: PropertyNotes, item: boolean): Built {
  const keyword = schema['oneOf'] !== undefined ? 'oneOf' : 'anyOf';
  const { oneOf: _one, anyOf: _any, ...shared } = schema;
  const members = Array.isArray(schema[keyword]) ? schema[keyword] : [];
  const reasons: string[] = [];
  for (const member of members) {
    const tried: PropertyNotes = { notes: [], added: [] };
    const built = translate(name, isRecord(member) ? { ...shared, ...member } : member, place, tried, item);
    if ('skipped' in built) {
      reasons.push(built.skipped);
      continue;
    }
    notes.notes.push(
      ...tried.notes,
      `${name}: ${keyword} of ${members.length}: imported as its ${String(built.property['type'])} choice only`,
    );
    notes.added.push(...tried.added);
    return built;
  }
  return {
    skipped: `${keyword} with no choice the restricted inputSchema can express (${[...new Set(reasons)].join('; ')})`,
  };
}

/** A single-member allOf merged in; a string says why the schema is skipped. */
function flatten(raw: unknown): Json | string {
  if (!isRecord(raw)) return 'no schema';
  const all = raw['allOf'];
  if (all === undefined) return raw;
  if (!Array.isArray(all) || all.length !== 1 || !isRecord(all[0])) return 'allOf (a combination of schemas)';
  const { allOf: _merged, ...rest } = raw;
  return flatten({ ...all[0], ...rest });
}

function typeOf(
  schema: Json,
): { kind: string; others?: string[]; skipped?: never } | { kind?: never; skipped: string } {
  const declared = schema['type'];
  // 3.1 writes an optional null as a second type; the tool never sends null (an absent argument is left out).
  const types = Array.isArray(declared)
    ? declared.filter((t) => t !== 'null')
    : declared === undefined
      ? []
      : [declared];
  if (types.length > 1) {
    // Any one of a list of types is a value the provider accepts: the first the restricted schema can express.
    const kind = types.find((t): t is string => typeof t === 'string' && t !== 'object' && t in KEYWORDS);
    return kind
      ? { kind, others: types.filter((t) => t !== kind).map(String) }
      : { skipped: `a list of types (${types.join(', ')})` };
  }
  const [kind] = types;
  if (typeof kind === 'string')
    return kind === 'object'
      ? { skipped: 'a nested object' }
      : kind === 'null'
        ? { skipped: 'type null' }
        : KEYWORDS[kind]
          ? { kind }
          : { skipped: `type ${kind}` };
  const values = enumOf(schema);
  if (values && values.length > 0 && values.every((v) => typeof v === 'string')) return { kind: 'string' };
  return { skipped: 'no type' };
}

/** enum (or const) without null, which a tool never sends. */
function enumOf(schema: Json): unknown[] | undefined {
  const listed = Array.isArray(schema['enum'])
    ? schema['enum']
    : schema['const'] !== undefined
      ? [schema['const']]
      : undefined;
  return listed?.filter((v) => v !== null);
}

function stringProperty(
  name: string,
  schema: Json,
  place: Place,
  notes: PropertyNotes,
  values: unknown[] | undefined,
): Built {
  if (values) {
    const strings = [...new Set(values)];
    if (strings.length === 0 || !strings.every((v) => typeof v === 'string' && v.length <= 1_000))
      return { skipped: 'an enum the restricted inputSchema cannot express (values that are not short strings)' };
    return { property: { type: 'string', enum: strings }, values: undefined };
  }
  const property: Json = { type: 'string' };
  const min = isCount(schema['minLength']) ? schema['minLength'] : undefined;
  if (min !== undefined) property['minLength'] = min;
  if (isCount(schema['maxLength']) && (min === undefined || schema['maxLength'] >= min))
    property['maxLength'] = schema['maxLength'];
  else {
    property['maxLength'] = Math.max(ADDED_MAX_LENGTH[place], min ?? 0);
    notes.added.push({ bound: `maxLength ${String(property['maxLength'])}`, name });
  }
  const pattern = schema['pattern'];
  const why = typeof pattern === 'string' ? patternProblem(pattern) : 'not a string';
  if (typeof pattern === 'string' && why === undefined) property['pattern'] = pattern;
  else if (pattern !== undefined)
    notes.notes.push(`${name}: pattern ${JSON.stringify(pattern)} left out (not ${SAFE_PATTERN_RULE}: ${why})`);
  return { property, values: undefined };
}

function numberProperty(
  name: string,
  kind: 'integer' | 'number',
  schema: Json,
  notes: PropertyNotes,
  values: unknown[] | undefined,
): { property: Json; values: unknown[] | undefined } {
  const property: Json = { type: kind };
  const bound = (key: 'minimum' | 'maximum', exclusive: 'exclusiveMinimum' | 'exclusiveMaximum', step: 1 | -1) => {
    const inclusive = typeof schema[key] === 'number' ? schema[key] : undefined;
    const other = schema[exclusive];
    // 3.1: exclusiveMinimum is the bound itself; 3.0: a boolean beside minimum.
    const excluded = typeof other === 'number' ? other : other === true ? inclusive : undefined;
    if (excluded === undefined) {
      if (inclusive !== undefined) property[key] = inclusive;
      return;
    }
    if (kind === 'integer') property[key] = step === 1 ? Math.floor(excluded) + 1 : Math.ceil(excluded) - 1;
    else {
      property[key] = excluded;
      notes.notes.push(`${name}: ${exclusive} ${excluded} kept as ${key} ${excluded} (inclusive)`);
    }
  };
  bound('minimum', 'exclusiveMinimum', 1);
  bound('maximum', 'exclusiveMaximum', -1);
  if (values)
    notes.notes.push(
      `${name}: enum ${JSON.stringify(values)} is not checked on ${kind === 'integer' ? 'an integer' : 'a number'} (listed in its description)`,
    );
  return { property, values };
}

/** The description on one line, bounded, with the values an enum allowed and the provider's default. */
function describe(description: unknown, defaultValue: unknown, values: unknown[] | undefined): string | undefined {
  const parts =
    typeof description === 'string' && description.trim() !== '' ? [description.trim().replace(/\s+/g, ' ')] : [];
  if (values && values.length > 0) parts.push(`One of: ${values.map((v) => JSON.stringify(v)).join(', ')}.`);
  if (defaultValue !== undefined && defaultValue !== null && typeof defaultValue !== 'object')
    parts.push(`Default: ${String(defaultValue)}.`);
  const text = parts.join(' ');
  return text === '' ? undefined : text.length > MAX_DESCRIPTION ? `${text.slice(0, MAX_DESCRIPTION - 1)}…` : text;
}
