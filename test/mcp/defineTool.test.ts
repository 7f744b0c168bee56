import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { NotFoundError } from '../../src/errors/appError.js';
import { invalidParams } from '../../src/mcp/toMcp.js';
import { completeResult, defineTool, errorResult, type ToolContext } from '../../src/mcp/defineTool.js';
import { createLogger } from '../../src/shared/logger.js';

describe('errorResult', () => {
  it('is a complete result marked isError, with the text and its structured data', () => {
    expect(errorResult('Approval was rejected.', { status: 'rejected', approvalId: 'a-1' })).toEqual({
      resultType: 'complete',
      isError: true,
      content: [{ type: 'text', text: 'Approval was rejected.' }],
      structuredContent: { status: 'rejected', approvalId: 'a-1' },
    });
  });

  it('has no structuredContent member when it is given none', () => {
    const result = errorResult('You declined to connect.');
    expect(result).toEqual({
      resultType: 'complete',
      isError: true,
      content: [{ type: 'text', text: 'You declined to connect.' }],
    });
    expect('structuredContent' in result).toBe(false);
  });

  it('differs from completeResult only in isError', () => {
    const { isError, ...rest } = errorResult('t', { a: 1 });
    expect(isError).toBe(true);
    expect(rest).toEqual(completeResult('t', { a: 1 }));
  });
});

describe('defineTool', () => {
  const ctx: ToolContext = {
    principal: { iss: 'https://as.example', sub: 'u-1' },
    clientId: undefined,
    capabilities: {},
    inputResponses: undefined,
    requestState: undefined,
    requestId: 'req-1',
    logger: createLogger({ level: 'silent' }),
  };
  const failing = (err: unknown) =>
    defineTool({
      name: 'probe',
      title: 'Probe',
      description: 'Throws what it is given.',
      inputSchema: z.strictObject({}),
      handler: () => Promise.reject(err),
    });

  it('answers an AppError with an errorResult carrying its code and message', async () => {
    expect(await failing(new NotFoundError('No note with id n-1.')).call({}, ctx, undefined)).toEqual(
      errorResult('No note with id n-1.', { error: 'not_found', message: 'No note with id n-1.' }),
    );
  });

  it("answers the broker's own outage (a lost database connection) as a 503 JSON-RPC error, not a tool result", async () => {
    await expect(
      failing(new Error('Connection terminated unexpectedly')).call({}, ctx, undefined),
    ).rejects.toMatchObject({ kind: 'unavailable', httpStatus: 503, retryAfterSeconds: 5 });
  });

  it('lets a protocol error through as a JSON-RPC error', async () => {
    const error = invalidParams('requestState is invalid');
    await expect(failing(error).call({}, ctx, undefined)).rejects.toBe(error);
  });
});

describe('the input schema a tool lists', () => {
  it('describes what a host may send: a field with a default is optional, a field without one required', () => {
    const tool = defineTool({
      name: 'list_things',
      title: 'List things',
      description: 'Lists things.',
      inputSchema: z.strictObject({ query: z.string().max(10), limit: z.number().int().min(1).max(50).default(20) }),
      handler: async () => completeResult('ok', {}),
    });
    expect(tool.descriptor.inputSchema).toMatchObject({
      type: 'object',
      required: ['query'],
      additionalProperties: false,
      properties: { limit: { default: 20 } },
    });
  });
});
