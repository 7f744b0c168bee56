import { describe, expect, it } from 'vitest';
import { EnvelopeError, readEnvelope } from '../../src/mcp/envelope.js';

const metaOf = (version: unknown = '2026-07-28', capabilities: unknown = {}) => ({
  'io.modelcontextprotocol/protocolVersion': version,
  'io.modelcontextprotocol/clientCapabilities': capabilities,
});
const headers = { 'mcp-protocol-version': '2026-07-28' };
const request = (extra: Record<string, unknown> = {}, params: Record<string, unknown> = { _meta: metaOf() }) => ({
  jsonrpc: '2.0',
  id: 7,
  method: 'tools/list',
  params,
  ...extra,
});

function refusal(message: unknown, h: Record<string, string> = headers) {
  try {
    readEnvelope(message, h);
  } catch (err) {
    expect(err).toBeInstanceOf(EnvelopeError);
    const e = err as EnvelopeError;
    return { id: e.id, code: e.code, status: e.httpStatus, data: e.data };
  }
  throw new Error('expected a refusal');
}

describe('readEnvelope (the 2026-07-28 ladder)', () => {
  it('accepts a well-formed request and reads its capabilities', () => {
    expect(
      readEnvelope(request({}, { _meta: metaOf('2026-07-28', { elicitation: { form: {} } }) }), {
        ...headers,
        'mcp-method': 'tools/list',
      }),
    ).toMatchObject({
      kind: 'request',
      id: 7,
      method: 'tools/list',
      capabilities: { elicitation: { form: {} } },
    });
  });

  it('treats a message without id as a notification', () => {
    expect(readEnvelope({ jsonrpc: '2.0', method: 'notifications/cancelled' }, {})).toEqual({
      kind: 'notification',
      method: 'notifications/cancelled',
    });
  });

  it('refuses a batch with -32600/400', () => {
    expect(refusal([request()])).toEqual({ id: null, code: -32600, status: 400, data: undefined });
  });

  it('refuses missing _meta with -32602/400, echoing the id', () => {
    expect(refusal(request({}, {}))).toMatchObject({ id: 7, code: -32602, status: 400 });
  });

  it('refuses a missing or non-string protocolVersion with -32602/400', () => {
    expect(refusal(request({}, { _meta: { 'io.modelcontextprotocol/clientCapabilities': {} } }))).toMatchObject({
      id: 7,
      code: -32602,
      status: 400,
    });
    expect(refusal(request({}, { _meta: metaOf(20260728) }))).toMatchObject({ id: 7, code: -32602, status: 400 });
  });

  it('refuses missing clientCapabilities with -32602/400', () => {
    expect(refusal(request({}, { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } }))).toMatchObject({
      id: 7,
      code: -32602,
      status: 400,
    });
  });

  it('refuses a missing MCP-Protocol-Version header with -32020/400', () => {
    expect(refusal(request(), {})).toMatchObject({ id: 7, code: -32020, status: 400 });
  });

  it('refuses a header that disagrees with the body version with -32020/400', () => {
    expect(refusal(request({}, { _meta: metaOf('v999.0.0') }))).toMatchObject({ id: 7, code: -32020, status: 400 });
  });

  it('refuses an unsupported version with -32022/400 and exactly {supported, requested}', () => {
    expect(refusal(request({}, { _meta: metaOf('1900-01-01') }), { 'mcp-protocol-version': '1900-01-01' })).toEqual({
      id: 7,
      code: -32022,
      status: 400,
      data: { supported: ['2026-07-28', '2025-11-25'], requested: '1900-01-01' },
    });
  });

  it('refuses Mcp-Method or Mcp-Name headers that disagree with the body with -32020/400', () => {
    expect(refusal(request(), { ...headers, 'mcp-method': 'tools/call' })).toMatchObject({ code: -32020, status: 400 });
    const call = { jsonrpc: '2.0', id: 'x', method: 'tools/call', params: { name: 'notes_list', _meta: metaOf() } };
    expect(refusal(call, { ...headers, 'mcp-name': 'notes_delete' })).toMatchObject({
      id: 'x',
      code: -32020,
      status: 400,
    });
  });

  it('decodes =?base64?…?= header values before comparing', () => {
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'notes_list', _meta: metaOf() } };
    const encoded = `=?base64?${Buffer.from('notes_list').toString('base64')}?=`;
    expect(readEnvelope(call, { ...headers, 'mcp-method': 'tools/call', 'mcp-name': encoded })).toMatchObject({
      kind: 'request',
    });
  });

  it('refuses a request without the Mcp-Method header, or a tools/call without Mcp-Name, with -32020/400', () => {
    expect(refusal(request())).toMatchObject({ id: 7, code: -32020, status: 400 });
    const call = { jsonrpc: '2.0', id: 'n', method: 'tools/call', params: { name: 'notes_list', _meta: metaOf() } };
    expect(refusal(call, { ...headers, 'mcp-method': 'tools/call' })).toMatchObject({
      id: 'n',
      code: -32020,
      status: 400,
    });
  });

  it('answers initialize, even with a modern _meta, with -32601/404 naming the supported versions', () => {
    expect(refusal({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { _meta: metaOf() } })).toEqual({
      id: 1,
      code: -32601,
      status: 404,
      data: { supported: ['2026-07-28', '2025-11-25'] },
    });
  });

  it.each([
    [{ jsonrpc: '1.0', id: 1, method: 'tools/list' }, 1],
    [{ jsonrpc: '2.0', id: 1 }, 1],
    [{ jsonrpc: '2.0', id: null, method: 'tools/list' }, null],
    [{ jsonrpc: '2.0', id: 1.5, method: 'tools/list' }, null],
    [{ jsonrpc: '2.0', id: 1, method: 'tools/list', params: [] }, 1],
    [{ jsonrpc: '2.0', id: 1, result: {} }, 1],
    ['just a string', null],
  ])('refuses the malformed message %j with -32600/400', (message, id) => {
    expect(refusal(message)).toMatchObject({ id, code: -32600, status: 400 });
  });
});
