import { isJsonMedia, isRecord, singleSchema as single, type Json } from './openapiDocument.js';

// A few top-level fields of an operation's 2xx JSON answer, as a declared
// tool's response.fields picks them (responsePlan.ts): the scalars an
// operator most often keeps first (id, number, name, title, state, url), then
// the others in the description's order. For a list, each item's fields (`*.id`).

const MAX_FIELDS = 6;
const PREFERRED = [
  'id',
  'number',
  'key',
  'name',
  'login',
  'title',
  'summary',
  'state',
  'status',
  'html_url',
  'url',
  'created_at',
  'updated_at',
];
const SCALARS = new Set(['string', 'integer', 'number', 'boolean']);
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

export interface ImportedResponse {
  fields: Record<string, string> | undefined;
  note: string;
}

export function responseFromOperation(responses: Json): ImportedResponse {
  const statuses = Object.keys(responses)
    .filter((s) => /^2(\d\d|XX)$/i.test(s))
    .sort();
  const status = statuses[0];
  if (status === undefined) return { fields: undefined, note: 'the description lists no 2xx answer: no fields picked' };
  const answer = responses[status];
  const content = isRecord(answer) && isRecord(answer['content']) ? answer['content'] : {};
  const media = Object.keys(content).find(isJsonMedia);
  const schema = media && isRecord(content[media]) ? single(content[media]['schema']) : undefined;
  if (!schema) return { fields: undefined, note: `the ${status} answer has no JSON schema: no fields picked` };

  const list = typeOf(schema) === 'array';
  const item = list ? single(schema['items']) : schema;
  const properties = item ? propertiesOf(item) : undefined;
  if (!properties)
    return {
      fields: undefined,
      note: `the ${status} answer is ${list ? 'a list of items without listed properties' : 'not an object of listed properties'}: no fields picked`,
    };

  const candidates = Object.entries(properties).flatMap(([name, raw], order) => {
    const property = single(raw);
    if (!property || property['writeOnly'] === true || !FIELD_NAME.test(name)) return [];
    const kind = typeOf(property);
    const scalar = kind !== undefined && SCALARS.has(kind);
    // A list of scalars is a field too (labels.*), but not inside a list: a path maps over one array at most.
    const scalars = !list && kind === 'array' && SCALARS.has(typeOf(single(property['items']) ?? {}) ?? '');
    if (!scalar && !scalars) return [];
    const rank = PREFERRED.indexOf(name);
    return [
      {
        name,
        path: `${list ? '*.' : ''}${name}${scalars ? '.*' : ''}`,
        rank: rank === -1 ? PREFERRED.length + order : rank,
      },
    ];
  });
  const picked = candidates.sort((a, b) => a.rank - b.rank).slice(0, MAX_FIELDS);
  if (picked.length === 0)
    return { fields: undefined, note: `the ${status} answer has no top-level scalar fields: no fields picked` };
  const total = Object.keys(properties).length;
  return {
    fields: Object.fromEntries(picked.map((f) => [f.name, f.path])),
    note: `response: ${picked.length} of the ${total} top-level fields of ${list ? 'each item of the list in the ' : 'the '}${status} answer (others by path: a.b.c, *, as docs/declared-tools.md says)`,
  };
}

/** The listed properties, those of every member of an allOf included (GitHub's answers extend a schema so). */
function propertiesOf(schema: Json): Json | undefined {
  const own = isRecord(schema['properties']) ? schema['properties'] : {};
  const members = Array.isArray(schema['allOf'])
    ? schema['allOf'].map(single).map((m) => (m ? propertiesOf(m) : undefined))
    : [];
  const merged = Object.assign({}, ...members, own) as Json;
  return Object.keys(merged).length > 0 ? merged : undefined;
}

function typeOf(schema: Json): string | undefined {
  const declared = schema['type'];
  const types = Array.isArray(declared) ? declared.filter((t) => t !== 'null') : [declared];
  return types.length === 1 && typeof types[0] === 'string'
    ? types[0]
    : isRecord(schema['properties']) || Array.isArray(schema['allOf'])
      ? 'object'
      : undefined;
}
