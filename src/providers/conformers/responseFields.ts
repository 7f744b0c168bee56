import type { ConformedTokenResponse, RawTokenResponse, TokenExtras } from './conformer.js';

// Reading a token response without trusting it: every accessor is total over
// whatever JSON.parse or form decoding can produce, and every error built here
// is checked against the token values the answer carried.

export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A header's value, whatever the case of its name (RFC 9110 §5.1). */
export function headerValue(headers: RawTokenResponse['headers'], name: string): string | undefined {
  if (!isObject(headers)) return undefined;
  const wanted = name.toLowerCase();
  for (const key of Object.keys(headers)) {
    const value = headers[key];
    if (key.toLowerCase() === wanted && typeof value === 'string') return value;
  }
  return undefined;
}

function decodeForm(text: string): JsonObject {
  const record: JsonObject = Object.create(null) as JsonObject;
  for (const [key, value] of new URLSearchParams(text)) record[key] = value;
  return record;
}

/**
 * The answer's members as an object. A string body is decoded as
 * application/x-www-form-urlencoded when the Content-Type says so, or always
 * when `formByDefault` (GitHub answers form-encoded unless asked for JSON).
 */
export function bodyObject(raw: RawTokenResponse, formByDefault: boolean): JsonObject | undefined {
  const body = raw.body;
  if (body instanceof URLSearchParams) return decodeForm(body.toString());
  if (isObject(body)) return body;
  if (typeof body !== 'string') return undefined;
  const mediaType = headerValue(raw.headers, 'content-type')?.split(';')[0]?.trim().toLowerCase();
  return mediaType === 'application/x-www-form-urlencoded' || formByDefault ? decodeForm(body) : undefined;
}

/** The member at a dotted path (`team.id`; a numeric segment indexes an array: `0.id`), own properties only. */
export function memberAt(object: unknown, path: string): unknown {
  let current: unknown = object;
  for (const key of path.split('.')) {
    if (Array.isArray(current) && /^[0-9]+$/.test(key)) current = current[Number(key)];
    else if (!isObject(current) || !Object.hasOwn(current, key)) return undefined;
    else current = current[key];
  }
  return current;
}

export function stringAt(object: JsonObject, path: string): string | undefined {
  const value = memberAt(object, path);
  return typeof value === 'string' ? value : undefined;
}

const SECRET_KEY = /token|secret|password|signature/i;
const WALK_LIMIT = { depth: 16, nodes: 2_000 };

/**
 * Every string the answer holds under a credential-like name, at any depth
 * (Slack nests the user token under `authed_user`). `complete` is false when
 * the walk stopped at its bounds: then nothing the provider wrote may be echoed.
 */
export function secretsIn(body: unknown): { values: string[]; complete: boolean } {
  const values: string[] = [];
  let nodes = 0;
  let complete = true;
  const walk = (value: unknown, key: string, depth: number): void => {
    if (++nodes > WALK_LIMIT.nodes || depth > WALK_LIMIT.depth) {
      complete = false;
      return;
    }
    if (typeof value === 'string') {
      if (value !== '' && SECRET_KEY.test(key) && key !== 'token_type') values.push(value);
    } else if (Array.isArray(value)) {
      for (const item of value) walk(item, key, depth + 1);
    } else if (isObject(value)) {
      for (const child of Object.keys(value)) walk(value[child], child, depth + 1);
    }
  };
  walk(body, '', 0);
  return { values, complete };
}

export type Secrets = ReturnType<typeof secretsIn>;

function leaks(text: string, secrets: Secrets): boolean {
  return !secrets.complete || secrets.values.some((secret) => text.includes(secret));
}

export function invalidResponse(description: string): ConformedTokenResponse {
  return { status: 400, body: { error: 'invalid_response', error_description: description } };
}

// RFC 6749 §5.2 allows %x20-21 / %x23-5B / %x5D-7E in `error` and
// `error_description`; codes are kept to the snake_case every provider uses.
const ERROR_CODE = /^[A-Za-z0-9_.-]{1,64}$/;
const MAX_DESCRIPTION = 300;

function cleanDescription(text: string): string {
  const printable = text
    .replace(/"/g, "'")
    .replace(/\\/g, '/')
    .replace(/[^\x20-\x7E]+/g, ' ');
  return printable.replace(/ {2,}/g, ' ').trim().slice(0, MAX_DESCRIPTION);
}

/**
 * A provider's own error as RFC 6749 §5.2 describes it. The provider's words
 * pass only when well formed and free of every token value the answer held.
 */
export function providerError(code: unknown, description: unknown, secrets: Secrets): ConformedTokenResponse {
  const safeCode =
    typeof code === 'string' && ERROR_CODE.test(code) && !leaks(code, secrets) ? code : 'invalid_response';
  const text = typeof description === 'string' && !leaks(description, secrets) ? cleanDescription(description) : '';
  const fallback =
    safeCode === 'invalid_response'
      ? 'The token endpoint answered with an error it did not describe safely.'
      : undefined;
  const errorDescription = text === '' ? fallback : text;
  return {
    status: 400,
    body: { error: safeCode, ...(errorDescription === undefined ? {} : { error_description: errorDescription }) },
  };
}

const MAX_EXTRA = 2_048;

/** The string (or number, boolean) members at `paths`, as connection metadata; a token value is never kept. */
export function pickExtras(object: JsonObject, paths: readonly string[], secrets: Secrets): TokenExtras {
  const extras: Record<string, string> = {};
  for (const path of paths) {
    const value = memberAt(object, path);
    const text =
      typeof value === 'number' && Number.isFinite(value)
        ? String(value)
        : typeof value === 'boolean'
          ? String(value)
          : value;
    if (
      typeof text === 'string' &&
      text !== '' &&
      text.length <= MAX_EXTRA &&
      !secrets.values.some((secret) => text.includes(secret))
    )
      extras[path] = text;
  }
  return extras;
}
