import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadOpenApiDocument, OpenApiImportError } from '../../../src/mcp/declared/openapiDocument.js';

// Reading a description from disk: the two public fixtures (fixtures/README.md), and files written here.

const FIXTURES = new URL('./fixtures/', import.meta.url);
const github = new URL('github-issues.openapi.json', FIXTURES).pathname;
const petstore = new URL('petstore.openapi.json', FIXTURES).pathname;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'openapi-doc-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function write(name: string, doc: unknown): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, name.endsWith('.json') ? JSON.stringify(doc) : stringify(doc));
  return path;
}

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => expect.fail('the file was read'),
    (err: unknown) => (expect(err).toBeInstanceOf(OpenApiImportError), (err as Error).message),
  );

describe('loadOpenApiDocument', () => {
  it('reads OpenAPI 3.0 with every $ref dereferenced and path-item parameters merged into each operation', async () => {
    const doc = await loadOpenApiDocument(github);
    expect(doc).toMatchObject({
      version: '3.0.3',
      title: "GitHub's official OpenAPI spec + Octokit extension",
      servers: ['https://api.github.com'],
    });
    const get = doc.operations.find((op) => op.operationId === 'issues/get')!;
    expect(get).toMatchObject({
      method: 'get',
      path: '/repos/{owner}/{repo}/issues/{issue_number}',
      tags: ['issues'],
      security: undefined,
    });
    expect(get.parameters.map((p) => [p['name'], p['in'], p['schema']])).toEqual([
      ['owner', 'path', { type: 'string' }],
      ['repo', 'path', { type: 'string' }],
      ['issue_number', 'path', { type: 'integer' }],
    ]);
    expect(JSON.stringify(doc.operations)).not.toContain('"$ref"');
  });

  it("reads OpenAPI 3.1 with its security schemes and each operation's requirements", async () => {
    const doc = await loadOpenApiDocument(petstore);
    expect(doc.version).toBe('3.1.0');
    expect(doc.securitySchemes['petstore_auth']).toMatchObject({ type: 'oauth2' });
    expect(doc.operations.find((op) => op.operationId === 'addPet')?.security).toEqual([
      { petstore_auth: ['write:pets', 'read:pets'] },
    ]);
    expect(doc.operations.map((op) => op.operationId)).toEqual([
      'updatePet',
      'addPet',
      'findPetsByStatus',
      'getPetById',
      'updatePetWithForm',
      'deletePet',
      'uploadFile',
    ]);
  });

  it("lets an operation's parameter replace the path item's of the same name and place", async () => {
    const path = await write('override.yaml', {
      openapi: '3.1.0',
      info: { title: 'T', version: '1' },
      paths: {
        '/t/{id}': {
          parameters: [
            { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
            { name: 'q', in: 'query', schema: { type: 'string' } },
          ],
          get: {
            operationId: 'getT',
            parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'integer' } }],
            responses: { '200': { description: 'ok' } },
          },
        },
      },
    });
    const [op] = (await loadOpenApiDocument(path)).operations;
    expect(op?.parameters.map((p) => [p['name'], p['schema']])).toEqual([
      ['q', { type: 'string' }],
      ['id', { type: 'integer' }],
    ]);
  });

  it('does not follow a $ref outside the file (no network, no other files)', async () => {
    await writeFile(join(dir, 'other.yaml'), 'B: { type: string, maxLength: 3 }\n');
    const path = await write('external.yaml', {
      openapi: '3.1.0',
      info: { title: 'Ext', version: '1' },
      paths: {
        '/x': {
          get: {
            parameters: [
              { name: 'a', in: 'query', schema: { $ref: 'https://schemas.example.com/a.json' } },
              { name: 'b', in: 'query', schema: { $ref: './other.yaml#/B' } },
            ],
            responses: { '200': { description: 'ok' } },
          },
        },
      },
    });
    const [op] = (await loadOpenApiDocument(path)).operations;
    expect(op?.parameters.map((p) => p['schema'])).toEqual([
      { $ref: 'https://schemas.example.com/a.json' },
      { $ref: './other.yaml#/B' },
    ]);
  });

  it('refuses Swagger 2.0, an invalid description and a file that is not one, saying which', async () => {
    expect(
      await refusal(
        loadOpenApiDocument(
          await write('swagger.json', { swagger: '2.0', info: { title: 'S', version: '1' }, paths: {} }),
        ),
      ),
    ).toMatch(/only OpenAPI 3\.0 and 3\.1 descriptions are imported \(found Swagger 2\.0; convert/);
    const invalid = await refusal(
      loadOpenApiDocument(await write('invalid.yaml', { openapi: '3.0.3', info: { title: 'No version' }, paths: {} })),
    );
    expect(invalid).toMatch(/invalid\.yaml is not a valid OpenAPI 3\.0\.3 description:\n/);
    expect(invalid).toContain("must have required property 'version'");
    expect(await refusal(loadOpenApiDocument(await write('list.yaml', ['a'])))).toMatch(
      /does not hold an OpenAPI description/,
    );
    expect(await refusal(loadOpenApiDocument(join(dir, 'missing.json')))).toMatch(
      /missing\.json cannot be read: ENOENT/,
    );
  });
});
