import { readFile } from 'node:fs/promises';
import { compileErrors, dereference, validate, type ParserOptions } from '@readme/openapi-parser';
import { parse as parseYaml } from 'yaml';

// An OpenAPI 3.0 or 3.1 description read for `broker tools import`: the one
// importer of @readme/openapi-parser, which validates it against the
// specification's schema and dereferences every $ref. The file alone is read:
// external references are not followed (no network access, no other files).

export class OpenApiImportError extends Error {
  override name = 'OpenApiImportError';
}

export type Json = Record<string, unknown>;

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

export interface OpenApiOperation {
  method: (typeof HTTP_METHODS)[number];
  /** The path template as the description writes it (`/repos/{owner}/{repo}`). */
  path: string;
  operationId: string | undefined;
  summary: string | undefined;
  description: string | undefined;
  tags: readonly string[];
  deprecated: boolean;
  /** The path item's parameters with the operation's own (which replace one of the same name and place). */
  parameters: readonly Json[];
  requestBody: Json | undefined;
  responses: Json;
  /** The operation's security requirements, else the document's; undefined when neither says. */
  security: readonly Json[] | undefined;
}

export interface OpenApiDocument {
  /** `3.0.3`, `3.1.0`, … */
  version: string;
  title: string;
  apiVersion: string;
  servers: readonly string[];
  securitySchemes: Readonly<Record<string, Json>>;
  operations: readonly OpenApiOperation[];
}

const MAX_BYTES = 64 * 1024 * 1024;
// The file alone: no external $ref (file or URL) is fetched.
const OPTIONS: ParserOptions = { resolve: { external: false }, validate: { errors: { colorize: false } } };

export const isRecord = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
/** application/json and the +json types (application/vnd.github+json, application/problem+json). */
export const isJsonMedia = (type: string): boolean => /^application\/(.+\+)?json(;|$)/i.test(type);

/** A schema, with a oneOf, anyOf or allOf of one member taken as that member (GitHub writes some so). */
export function singleSchema(raw: unknown): Json | undefined {
  let schema = raw;
  for (const key of ['oneOf', 'anyOf', 'allOf'])
    if (isRecord(schema) && Array.isArray(schema[key]) && schema[key].length === 1) schema = schema[key][0];
  return isRecord(schema) ? schema : undefined;
}

const text = (value: unknown): string | undefined =>
  typeof value === 'string' && value.trim() !== '' ? value : undefined;

/** Reads, validates and dereferences the description at `path`; throws OpenApiImportError saying what is wrong. */
export async function loadOpenApiDocument(path: string): Promise<OpenApiDocument> {
  const raw = await readFile(path).catch((cause: unknown) => {
    throw new OpenApiImportError(`${path} cannot be read: ${(cause as Error).message}`, { cause });
  });
  if (raw.byteLength > MAX_BYTES) throw new OpenApiImportError(`${path} is larger than ${MAX_BYTES / 1024 / 1024} MiB`);
  let parsed: unknown;
  try {
    const source = raw.toString('utf8').replace(/^\uFEFF/, '');
    // JSON.parse for JSON (GitHub's full description is 13 MB); YAML 1.2 for the rest, aliases bounded.
    parsed = source.trimStart().startsWith('{') ? JSON.parse(source) : parseYaml(source, { logLevel: 'error' });
  } catch (cause) {
    throw new OpenApiImportError(`${path} is neither JSON nor YAML: ${(cause as Error).message}`, { cause });
  }
  if (!isRecord(parsed))
    throw new OpenApiImportError(`${path} does not hold an OpenAPI description (an object with "openapi" and "paths")`);
  const version = typeof parsed['openapi'] === 'string' ? parsed['openapi'] : undefined;
  if (!version?.match(/^3\.[01]\./)) {
    const found =
      typeof parsed['swagger'] === 'string'
        ? `Swagger ${parsed['swagger']}`
        : version
          ? `OpenAPI ${version}`
          : 'no "openapi" version';
    throw new OpenApiImportError(
      `${path}: only OpenAPI 3.0 and 3.1 descriptions are imported (found ${found}; convert a Swagger 2.0 description to OpenAPI 3 first)`,
    );
  }

  // validate() and dereference() each work on their own copy: both change the object they are given.
  const result = await validate(structuredClone(parsed) as never, OPTIONS);
  if (!result.valid)
    throw new OpenApiImportError(`${path} is not a valid OpenAPI ${version} description:\n${compileErrors(result)}`);
  const doc = (await dereference(structuredClone(parsed) as never, OPTIONS)) as unknown as Json;

  const info = isRecord(doc['info']) ? doc['info'] : {};
  const components = isRecord(doc['components']) ? doc['components'] : {};
  const schemes = isRecord(components['securitySchemes']) ? components['securitySchemes'] : {};
  const servers = Array.isArray(doc['servers'])
    ? doc['servers'].filter(isRecord).flatMap((s) => (typeof s['url'] === 'string' ? [s['url']] : []))
    : [];
  const documentSecurity = Array.isArray(doc['security']) ? doc['security'].filter(isRecord) : undefined;
  return {
    version,
    title: text(info['title']) ?? path,
    apiVersion: text(info['version']) ?? '',
    servers,
    securitySchemes: Object.fromEntries(
      Object.entries(schemes).filter((entry): entry is [string, Json] => isRecord(entry[1])),
    ),
    operations: operationsOf(isRecord(doc['paths']) ? doc['paths'] : {}, documentSecurity),
  };
}

function operationsOf(paths: Json, documentSecurity: readonly Json[] | undefined): OpenApiOperation[] {
  const operations: OpenApiOperation[] = [];
  for (const [path, item] of Object.entries(paths)) {
    if (!isRecord(item)) continue;
    const shared = Array.isArray(item['parameters']) ? item['parameters'].filter(isRecord) : [];
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (!isRecord(op)) continue;
      const own = Array.isArray(op['parameters']) ? op['parameters'].filter(isRecord) : [];
      const key = (p: Json) => `${String(p['in'])}:${String(p['name'])}`;
      const parameters = [...shared.filter((p) => !own.some((o) => key(o) === key(p))), ...own];
      operations.push({
        method,
        path,
        operationId: text(op['operationId']),
        summary: text(op['summary']),
        description: text(op['description']),
        tags: Array.isArray(op['tags']) ? op['tags'].filter((t): t is string => typeof t === 'string') : [],
        deprecated: op['deprecated'] === true,
        parameters,
        requestBody: isRecord(op['requestBody']) ? op['requestBody'] : undefined,
        responses: isRecord(op['responses']) ? op['responses'] : {},
        security: Array.isArray(op['security']) ? op['security'].filter(isRecord) : documentSecurity,
      });
    }
  }
  return operations;
}
