import { describe, expect, it } from 'vitest';
import type { OpenApiDocument, OpenApiOperation } from '../../../src/mcp/declared/openapiDocument.js';
import { entryFromOperation, toolNameFor } from '../../../src/mcp/declared/openapiEntry.js';
import { declareTools } from '../../../src/mcp/declared/toolsFile.js';

// Operations written as the description's dereferenced shapes; every entry must load as start-up loads a TOOLS_FILE.

const DOC: OpenApiDocument = {
  version: '3.1.0',
  title: 'Tickets',
  apiVersion: '1',
  servers: ['https://api.tickets.example.com/v1'],
  securitySchemes: { oauth: { type: 'oauth2', flows: {} }, key: { type: 'apiKey', name: 'X-Key', in: 'header' } },
  operations: [],
};

function operation(overrides: Partial<OpenApiOperation>): OpenApiOperation {
  return {
    method: 'get',
    path: '/tickets',
    operationId: 'listTickets',
    summary: 'List tickets',
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

function loads(entry: unknown, scopes: string[] = []) {
  const [tool] = declareTools([entry], { providers: [{ id: 'tickets', scopes }], taken: [] }, 'test');
  return tool!;
}

describe('toolNameFor', () => {
  it('is <provider>_<operationId in snake_case>, at most 64 characters of [a-z0-9_]', () => {
    expect(toolNameFor('tickets', operation({ operationId: 'getTicketByID' }))).toBe('tickets_get_ticket_by_id');
    expect(toolNameFor('github', operation({ operationId: 'issues/create-comment' }))).toBe(
      'github_issues_create_comment',
    );
    expect(toolNameFor('my-api', operation({ operationId: 'my_api_ping' }))).toBe('my_api_ping');
    expect(toolNameFor('tickets', operation({ operationId: undefined, method: 'delete', path: '/tickets/{id}' }))).toBe(
      'tickets_delete_tickets_id',
    );
    const long = toolNameFor('tickets', operation({ operationId: 'x'.repeat(100) }));
    expect(long).toMatch(/^[a-z][a-z0-9_]{0,63}$/);
  });
});

describe('entryFromOperation', () => {
  it('reports an exploded array query parameter, a header and a cookie parameter as not imported, and imports the rest', () => {
    const op = operation({
      parameters: [
        {
          name: 'status',
          in: 'query',
          required: true,
          explode: true,
          schema: { type: 'array', items: { type: 'string' } },
        },
        {
          name: 'ids',
          in: 'query',
          explode: false,
          schema: { type: 'array', items: { type: 'integer' }, maxItems: 10 },
        },
        { name: 'filter', in: 'query', style: 'deepObject', schema: { type: 'object' } },
        { name: 'X-Trace', in: 'header', schema: { type: 'string' } },
        { name: 'session', in: 'cookie', required: true, schema: { type: 'string' } },
        { name: 'page[size]', in: 'query', schema: { type: 'integer', maximum: 100 } },
      ],
    });
    const { entry, notes } = entryFromOperation(DOC, op, 'tickets', 'tickets_list_tickets');
    expect(notes).toContain(
      '  status (query, required): an array sent as a repeated parameter (status=a&status=b, explode), which a template cannot write (it sends a,b)',
    );
    expect(notes).toContain('  filter (query): style deepObject (a template writes a query value in style form)');
    expect(notes).toContain(
      '  X-Trace (header): a header parameter is not imported (add it under request.headers by hand)',
    );
    expect(notes).toContain('  session (cookie, required): a cookie parameter is not imported');
    expect(notes).toContain('  page[size] (query): named page_size in inputSchema');
    expect(entry['inputSchema']).toEqual({
      type: 'object',
      additionalProperties: false,
      properties: {
        ids: { type: 'array', items: { type: 'integer' }, maxItems: 10 },
        page_size: { type: 'integer', maximum: 100 },
      },
    });
    expect(entry['request']).toEqual({
      method: 'GET',
      path: '/tickets',
      query: { ids: '{ids}', 'page[size]': '{page_size}' },
    });
    expect(loads(entry).name).toBe('tickets_list_tickets');
  });

  it('builds a write from path parameters and a JSON body, with idempotency none and the OAuth scopes of its requirement', () => {
    const op = operation({
      method: 'post',
      path: '/projects/{project-id}/tickets',
      operationId: 'createTicket',
      summary: 'Create a ticket',
      description: 'Creates a ticket in a project.',
      security: [{ key: [] }, { oauth: ['tickets:write'] }],
      parameters: [{ name: 'project-id', in: 'path', required: true, schema: { type: 'string', maxLength: 40 } }],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['title', 'owner'],
              properties: {
                id: { type: 'string', readOnly: true },
                title: { type: 'string', maxLength: 200 },
                labels: { type: 'array', items: { type: 'string', maxLength: 50 }, maxItems: 5 },
                owner: { type: 'object', properties: { login: { type: 'string' } } },
              },
            },
          },
        },
      },
      responses: {
        '201': {
          content: {
            'application/json': {
              schema: {
                type: 'object',
                properties: { self: { type: 'string' }, id: { type: 'string' }, body: { type: 'object' } },
              },
            },
          },
        },
      },
    });
    const { entry, notes, scopesTodo } = entryFromOperation(DOC, op, 'tickets', 'tickets_create_ticket');
    expect(entry).toMatchObject({
      title: 'Create a ticket',
      description: 'Creates a ticket in a project.',
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
      scopes: ['tickets:write'],
      request: {
        method: 'POST',
        path: '/projects/{project_id}/tickets',
        body: { json: { title: '{title}', labels: '{labels}' } },
      },
      idempotency: { mode: 'none' },
      response: { fields: { id: 'id', self: 'self' } },
    });
    expect(entry['inputSchema']).toMatchObject({ required: ['project_id', 'title'] });
    expect(scopesTodo).toBeUndefined();
    expect(notes).toEqual(
      expect.arrayContaining([
        '  body.id: readOnly (the provider sets it)',
        '  body.owner (required): a nested object',
        'scopes: from the security requirement oauth',
      ]),
    );
    expect(loads(entry, ['tickets:write']).name).toBe('tickets_create_ticket');
  });

  it('sends the receipt id in the idempotency header the description documents', () => {
    const op = operation({
      method: 'put',
      operationId: 'putTicket',
      parameters: [{ name: 'Idempotency-Key', in: 'header', required: true, schema: { type: 'string' } }],
    });
    const { entry, notes } = entryFromOperation(DOC, op, 'tickets', 'tickets_put_ticket');
    expect(entry['idempotency']).toEqual({ mode: 'header', header: 'Idempotency-Key' });
    expect(notes).toContain(
      'idempotency: the description documents the Idempotency-Key header: the receipt id is sent in it',
    );
    expect(loads(entry)).toMatchObject({ idempotency: 'header', idempotencyHeader: 'Idempotency-Key' });
  });

  it('leaves the scopes to the operator when no requirement names OAuth scopes', () => {
    expect(entryFromOperation(DOC, operation({ security: undefined }), 'tickets', 't').scopesTodo).toBe(
      'TODO(operator): the description names no security requirement; list the scopes of the provider this operation needs',
    );
    expect(entryFromOperation(DOC, operation({ security: [] }), 'tickets', 't').scopesTodo).toMatch(
      /says this operation needs no authorization/,
    );
    expect(entryFromOperation(DOC, operation({ security: [{ key: [] }] }), 'tickets', 't').scopesTodo).toMatch(
      /its security requirement \(key\) names no OAuth scopes/,
    );
  });

  it('imports a path variable whose schema cannot be expressed as a plain string, so the path still loads', () => {
    const op = operation({
      path: '/tickets/{ref}',
      parameters: [
        {
          name: 'ref',
          in: 'path',
          required: true,
          schema: { oneOf: [{ type: 'object' }, { type: 'array', items: { type: 'object' } }] },
        },
      ],
    });
    const { entry, notes } = entryFromOperation(DOC, op, 'tickets', 'tickets_get');
    expect(notes).toContain('  ref (path): imported as a string, since its schema is skipped above');
    expect(entry['inputSchema']).toMatchObject({
      required: ['ref'],
      properties: { ref: { type: 'string', maxLength: 1000 } },
    });
    loads(entry);
  });

  it('writes a form body as body.form, and drops a GET body', () => {
    const form = {
      content: {
        'application/x-www-form-urlencoded': {
          schema: { type: 'object', properties: { name: { type: 'string', maxLength: 9 } } },
        },
      },
    };
    expect(
      entryFromOperation(DOC, operation({ method: 'post', requestBody: form }), 'tickets', 't').entry['request'],
    ).toEqual({ method: 'POST', path: '/tickets', body: { form: { name: '{name}' } } });
    const get = entryFromOperation(DOC, operation({ requestBody: form }), 'tickets', 't');
    expect(get.entry['request']).toEqual({ method: 'GET', path: '/tickets' });
    expect(get.notes).toContain('  request body: a GET request sends no body: not imported');
  });

  it('picks the preferred top-level fields of a list answer first, then the others in order', () => {
    const item = {
      type: 'object',
      properties: {
        a: { type: 'string' },
        secret: { type: 'string', writeOnly: true },
        title: { type: 'string' },
        id: { type: 'integer' },
        nested: { type: 'object' },
        tags: { type: 'array', items: { type: 'string' } },
      },
    };
    const { entry } = entryFromOperation(
      DOC,
      operation({
        responses: { '200': { content: { 'application/json': { schema: { type: 'array', items: item } } } } },
      }),
      'tickets',
      't',
    );
    expect(entry['response']).toEqual({ fields: { id: '*.id', title: '*.title', a: '*.a' } });
  });
});
