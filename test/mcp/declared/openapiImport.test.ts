import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  OpenApiImportError,
  type OpenApiDocument,
  type OpenApiOperation,
} from '../../../src/mcp/declared/openapiDocument.js';
import { importOperations, selectOperations } from '../../../src/mcp/declared/openapiImport.js';

function operation(overrides: Partial<OpenApiOperation>): OpenApiOperation {
  return {
    method: 'get',
    path: '/x',
    operationId: undefined,
    summary: 'X',
    description: undefined,
    tags: [],
    deprecated: false,
    parameters: [],
    requestBody: undefined,
    responses: {},
    security: undefined,
    ...overrides,
  };
}

const DOC: OpenApiDocument = {
  version: '3.0.3',
  title: 'Files',
  apiVersion: '2',
  servers: ['https://files.example.com/api'],
  securitySchemes: {},
  operations: [
    operation({ operationId: 'listFiles', path: '/files', tags: ['files'] }),
    operation({
      operationId: 'getFile',
      path: '/files/{id}',
      tags: ['files'],
      parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
    }),
    operation({ operationId: 'ping', path: '/ping', tags: ['meta'] }),
    operation({ method: 'head', path: '/files', tags: ['meta'] }),
    operation({
      operationId: 'parent',
      path: '/files/../{id}',
      parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
    }),
  ],
};

describe('selectOperations', () => {
  it("takes operations by operationId, by METHOD /path and by tag, in the description's order", () => {
    expect(
      selectOperations(DOC, { operations: ['ping', 'get /files/{id}'], tags: ['files'] }).map(
        (op) => op.operationId ?? op.method,
      ),
    ).toEqual(['listFiles', 'getFile', 'ping']);
  });

  it('names every choice that matches nothing', () => {
    expect(() => selectOperations(DOC, { operations: ['nope'], tags: ['none'] })).toThrow(
      new OpenApiImportError(
        '--operation nope: no operation has this operationId (or METHOD /path)\n--tag none: no operation has this tag',
      ),
    );
  });
});

describe('importOperations', () => {
  it('prints YAML the loader accepts, with a header naming the source, the description and its server', () => {
    const result = importOperations(
      DOC,
      selectOperations(DOC, { operations: [], tags: ['files'] }),
      'files',
      'files.json',
    );
    expect(result.problems).toEqual([]);
    expect(
      result.yaml.startsWith(
        '# Declared tools imported by `broker tools import` from files.json\n# (Files 2, OpenAPI 3.0.3), for provider files.\n',
      ),
    ).toBe(true);
    expect(result.yaml).toContain(
      "# Paths are below the provider's API base; the description's server is https://files.example.com/api.\n",
    );
    expect((parse(result.yaml) as { name: string }[]).map((e) => e.name)).toEqual([
      'files_list_files',
      'files_get_file',
    ]);
  });

  it('lists a method no declared tool sends, and an entry the loader refuses, at the top (and as problems)', () => {
    const result = importOperations(
      DOC,
      selectOperations(DOC, { operations: ['HEAD /files', 'parent'], tags: [] }),
      'files',
      'files.json',
    );
    expect(result.problems).toEqual([
      'HEAD /files: HEAD is not a method a declared tool sends (GET, POST, PUT, PATCH, DELETE)',
      expect.stringMatching(/^\[0\] \(files_parent\) request\.path: /),
    ]);
    expect(result.yaml).toContain('# Not imported:\n#   HEAD /files: HEAD is not a method');
    expect(result.yaml).toMatch(
      /# These entries do not load yet \(broker tools check would say\):\n# {3}\[0\] \(files_parent\) request\.path: /,
    );
  });

  it('gives two operations whose names meet distinct tool names', () => {
    const doc = {
      ...DOC,
      operations: [operation({ operationId: 'getFile' }), operation({ operationId: 'get-file', path: '/y' })],
    };
    const result = importOperations(doc, doc.operations, 'files', 'f.json');
    expect((parse(result.yaml) as { name: string }[]).map((e) => e.name)).toEqual([
      'files_get_file',
      'files_get_file_2',
    ]);
  });
});
