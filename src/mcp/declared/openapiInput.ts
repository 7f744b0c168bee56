import { isJsonMedia, isRecord, singleSchema, type Json, type OpenApiOperation } from './openapiDocument.js';
import { restrictedProperty, type Place } from './openapiSchema.js';

// An operation's arguments, as a declared tool takes them: its path and query
// parameters and the top-level properties of its JSON (or form) request body
// become the properties of one flat inputSchema, and the request's templates
// name them.
// Whatever cannot be carried that way is listed in `skipped`, with the reason.

export interface ImportedInput {
  inputSchema: Json;
  request: {
    path: string;
    query?: Record<string, string>;
    body?: { json: Record<string, string> } | { form: Record<string, string> };
  };
  /** A header parameter the description names for idempotency keys (Idempotency-Key). */
  idempotencyHeader: string | undefined;
  /** What was added or left unchecked, per property. */
  notes: string[];
  /** What is not imported, and why. */
  skipped: string[];
}

const MAX_PROPERTIES = 50;
const IDEMPOTENCY_HEADER = /^(x-)?idempotency-key$/i;
const FORM_MEDIA = 'application/x-www-form-urlencoded';

export function inputFromOperation(op: OpenApiOperation): ImportedInput {
  const properties: Record<string, Json> = {};
  const required: string[] = [];
  const notes: string[] = [];
  const added = new Map<string, string[]>();
  const skipped: string[] = [];
  const query: Record<string, string> = {};
  const body: Record<string, string> = {};
  let path = op.path;
  let idempotencyHeader: string | undefined;

  const add = (
    name: string,
    place: Place,
    schema: unknown,
    isRequired: boolean,
    description: unknown,
  ): string | undefined => {
    const label = place === 'body' ? `body.${name}` : `${name} (${place})`;
    const labelled =
      place === 'body'
        ? `${label}${isRequired ? ' (required)' : ''}`
        : `${name} (${place}${isRequired ? ', required' : ''})`;
    if (Object.keys(properties).length >= MAX_PROPERTIES) {
      skipped.push(`${labelled}: more than ${MAX_PROPERTIES} properties (the restricted inputSchema's limit)`);
      return undefined;
    }
    const translated = restrictedProperty(
      label,
      schema,
      place,
      typeof description === 'string' ? description : undefined,
    );
    if ('skipped' in translated) {
      skipped.push(`${labelled}: ${translated.skipped}`);
      return undefined;
    }
    const key = propertyName(name, place, properties);
    properties[key] = translated.property;
    if (isRequired) required.push(key);
    notes.push(...translated.notes, ...(key !== name ? [`${label}: named ${key} in inputSchema`] : []));
    for (const { bound, name: where } of translated.added) added.set(bound, [...(added.get(bound) ?? []), where]);
    return key;
  };

  for (const param of op.parameters) {
    const name = String(param['name']);
    const where = param['in'];
    if (where === 'header' && IDEMPOTENCY_HEADER.test(name)) {
      idempotencyHeader = name;
      continue;
    }
    if (where !== 'path' && where !== 'query') {
      skipped.push(
        `${name} (${String(where)}${param['required'] === true ? ', required' : ''}): a ${String(where)} parameter is not imported${where === 'header' ? ' (add it under request.headers by hand)' : ''}`,
      );
      continue;
    }
    const shape = parameterShape(param, where);
    if (shape) {
      skipped.push(`${name} (${where}${where === 'path' || param['required'] === true ? ', required' : ''}): ${shape}`);
      continue;
    }
    const key = add(name, where, param['schema'], where === 'path' || param['required'] === true, param['description']);
    if (key === undefined) {
      if (where === 'path') {
        // The path cannot leave its variable out: keep it as a plain segment, and say so.
        const fallback = add(name, 'path', { type: 'string' }, true, param['description']);
        if (fallback) notes.push(`${name} (path): imported as a string, since its schema is skipped above`);
        if (fallback && fallback !== name) path = path.split(`{${name}}`).join(`{${fallback}}`);
      }
      continue;
    }
    if (where === 'path') path = path.split(`{${name}}`).join(`{${key}}`);
    else query[name] = `{${key}}`;
  }

  const found = !op.requestBody
    ? undefined
    : op.method === 'get'
      ? 'a GET request sends no body: not imported'
      : bodySchema(op.requestBody);
  if (typeof found === 'string') skipped.push(`request body: ${found}`);
  else if (found) {
    const bodyRequired = new Set(
      Array.isArray(found.schema['required'])
        ? found.schema['required'].filter((r): r is string => typeof r === 'string')
        : [],
    );
    for (const [name, schema] of Object.entries(
      isRecord(found.schema['properties']) ? found.schema['properties'] : {},
    )) {
      if (isRecord(schema) && schema['readOnly'] === true) {
        skipped.push(`body.${name}: readOnly (the provider sets it)`);
        continue;
      }
      const key = add(name, 'body', schema, bodyRequired.has(name), undefined);
      if (key !== undefined) body[name] = `{${key}}`;
    }
  }

  notes.unshift(
    ...[...added].map(([bound, names]) => `${bound} added where the description gives none: ${names.join(', ')}`),
  );
  const inputSchema: Json = {
    type: 'object',
    additionalProperties: false,
    ...(required.length > 0 ? { required } : {}),
    properties,
  };
  const request = {
    path,
    ...(Object.keys(query).length > 0 ? { query } : {}),
    ...(Object.keys(body).length > 0
      ? { body: found && typeof found !== 'string' && found.form ? { form: body } : { json: body } }
      : {}),
  };
  return { inputSchema, request, idempotencyHeader, notes, skipped };
}

/** Why a parameter's serialisation is one a level 1 template cannot write, or undefined. */
function parameterShape(param: Json, where: 'path' | 'query'): string | undefined {
  if (param['schema'] === undefined)
    return param['content'] !== undefined
      ? 'a parameter given as content (a serialised document), not a schema'
      : 'no schema';
  const style = param['style'] ?? (where === 'path' ? 'simple' : 'form');
  if (where === 'path' && style !== 'simple')
    return `style ${String(style)} (a template writes a path variable in style simple)`;
  if (where === 'query' && style !== 'form')
    return `style ${String(style)} (a template writes a query value in style form)`;
  const schema = isRecord(param['schema']) ? param['schema'] : {};
  const isArray = schema['type'] === 'array' || (Array.isArray(schema['type']) && schema['type'].includes('array'));
  // RFC 6570 simple expansion writes a list once, comma-separated: `a=x,y`, never `a=x&a=y`.
  if (where === 'query' && isArray && param['explode'] !== false)
    return `an array sent as a repeated parameter (${String(param['name'])}=a&${String(param['name'])}=b, explode), which a template cannot write (it sends a,b)`;
  if (where === 'path' && isArray) return 'an array in the path (a path variable is one value)';
  return undefined;
}

/** The object schema of a JSON request body (else a form body), or why there is none to import. */
function bodySchema(requestBody: Json): { schema: Json; form: boolean } | string {
  const content = isRecord(requestBody['content']) ? requestBody['content'] : {};
  const media =
    Object.keys(content).find(isJsonMedia) ??
    Object.keys(content).find((type) => type.toLowerCase().startsWith(FORM_MEDIA));
  if (!media) return `${Object.keys(content).join(', ') || 'no media type'}: neither JSON nor a form, not imported`;
  const mediaType = content[media];
  const schema = singleSchema(isRecord(mediaType) ? mediaType['schema'] : undefined);
  if (!schema) return `the ${media} body has no schema: not imported`;
  if (schema['type'] !== 'object' && !isRecord(schema['properties']))
    return `the ${media} body is ${Array.isArray(schema['oneOf']) || Array.isArray(schema['anyOf']) ? 'a choice of schemas' : `${String(schema['type'] ?? 'untyped')}`}, not an object of properties: not imported`;
  if (!isRecord(schema['properties']) || Object.keys(schema['properties']).length === 0)
    return `the ${media} body is an object without listed properties: not imported`;
  return { schema, form: !isJsonMedia(media) };
}

/** A template-safe property name (^[A-Za-z_][A-Za-z0-9_]{0,63}$), unique among `taken`. */
function propertyName(name: string, place: Place, taken: Record<string, unknown>): string {
  // page[size] → page_size, X-Trace-Id → X_Trace_Id.
  let base =
    name
      .replace(/[^A-Za-z0-9_]+$/, '')
      .replace(/[^A-Za-z0-9_]+/g, '_')
      .slice(0, 64) || '_';
  if (!/^[A-Za-z_]/.test(base)) base = `_${base}`.slice(0, 64);
  if (!(base in taken)) return base;
  const prefixed = `${place}_${base}`.slice(0, 64);
  if (!(prefixed in taken)) return prefixed;
  for (let n = 2; ; n++) {
    const numbered = `${prefixed.slice(0, 60)}_${n}`;
    if (!(numbered in taken)) return numbered;
  }
}
