import { describe, expect, it } from 'vitest';
import { InvalidInputError, NotFoundError, UnavailableError, UpstreamAuthError } from '../../src/errors/appError.js';
import {
  endpointFailed,
  forbidden,
  headerMismatch,
  httpMethodNotAllowed,
  internalError,
  invalidMeta,
  invalidParams,
  invalidRequest,
  McpProtocolError,
  methodNotFound,
  missingRequiredClientCapability,
  notAcceptable,
  outageOf,
  parseError,
  payloadTooLarge,
  rpcErrors,
  sessionEnded,
  toJsonRpcError,
  tooManySessions,
  toToolError,
  unavailable,
  unknownSession,
  unsupportedMediaType,
  unsupportedProtocolVersion,
  urlElicitationRequired,
  type RpcErrorKind,
} from '../../src/mcp/toMcp.js';

const elicitation = {
  mode: 'url' as const,
  elicitationId: 'nav-1',
  url: 'https://broker.example/connect/x',
  message: 'Connect Reports',
};

// Written out, not read from the table: a changed code or status fails here.
const rows: [RpcErrorKind, number, number, McpProtocolError, string, unknown][] = [
  ['parseError', -32700, 400, parseError('not JSON'), 'not JSON', undefined],
  ['invalidRequest', -32600, 400, invalidRequest('a batch'), 'a batch', undefined],
  [
    'methodNotFound',
    -32601,
    404,
    methodNotFound('Method not found: x', { data: { supported: ['2026-07-28'] } }),
    'Method not found: x',
    { supported: ['2026-07-28'] },
  ],
  [
    'invalidParams',
    -32602,
    200,
    invalidParams('params.name must be a string'),
    'params.name must be a string',
    undefined,
  ],
  ['internalError', -32603, 200, internalError('Internal error'), 'Internal error', undefined],
  ['forbidden', -32600, 403, forbidden('Forbidden: Origin not allowed'), 'Forbidden: Origin not allowed', undefined],
  ['unknownSession', -32600, 404, unknownSession('Unknown or ended session'), 'Unknown or ended session', undefined],
  ['httpMethodNotAllowed', -32600, 405, httpMethodNotAllowed('Method not allowed'), 'Method not allowed', undefined],
  ['notAcceptable', -32600, 406, notAcceptable('Accept must include …'), 'Accept must include …', undefined],
  ['payloadTooLarge', -32600, 413, payloadTooLarge('too big'), 'too big', undefined],
  ['unsupportedMediaType', -32600, 415, unsupportedMediaType('Content-Type'), 'Content-Type', undefined],
  ['tooManySessions', -32600, 429, tooManySessions('too many sessions'), 'too many sessions', undefined],
  ['endpointFailed', -32603, 500, endpointFailed('Internal error'), 'Internal error', undefined],
  ['unavailable', -32603, 503, unavailable('Try again later.'), 'Try again later.', undefined],
  ['invalidMeta', -32602, 400, invalidMeta('params._meta is required'), 'params._meta is required', undefined],
  ['headerMismatch', -32020, 400, headerMismatch('Header mismatch'), 'Header mismatch', undefined],
  [
    'missingRequiredClientCapability',
    -32021,
    400,
    missingRequiredClientCapability('needs URL elicitation', { elicitation: { url: {} } }),
    'needs URL elicitation',
    { requiredCapabilities: { elicitation: { url: {} } } },
  ],
  [
    'unsupportedProtocolVersion',
    -32022,
    400,
    unsupportedProtocolVersion('1900-01-01'),
    'Unsupported protocol version',
    { supported: ['2026-07-28', '2025-11-25'], requested: '1900-01-01' },
  ],
  ['sessionEnded', -32000, 200, sessionEnded('The session ended'), 'The session ended', undefined],
  [
    'urlElicitationRequired',
    -32042,
    200,
    urlElicitationRequired({ elicitations: [elicitation] }),
    'This request requires connecting an account. Open the link, then retry the call.',
    { elicitations: [elicitation] },
  ],
];

describe('the MCP error table', () => {
  it.each(rows)('%s is JSON-RPC %i travelling as HTTP %i', (kind, code, status, error, message, data) => {
    expect(error).toBeInstanceOf(McpProtocolError);
    expect({
      kind: error.kind,
      code: error.code,
      httpStatus: error.httpStatus,
      message: error.message,
      data: error.data,
    }).toEqual({ kind, code, httpStatus: status, message, data });
  });

  it('has a constructor tested above for every row', () => {
    expect(rows.map(([kind]) => kind).sort()).toEqual(Object.keys(rpcErrors).sort());
  });

  it('keeps the cause for the log', () => {
    const cause = new Error('tampered');
    expect(invalidParams('requestState is invalid', { cause }).cause).toBe(cause);
  });
});

describe('toJsonRpcError (outside a tool)', () => {
  it('passes a protocol error through as it is', () => {
    const error = invalidParams('Unknown cursor');
    expect(toJsonRpcError(error)).toBe(error);
  });

  it('turns anything else into an in-band -32603 that keeps the cause and not its message', () => {
    const cause = new TypeError('secret detail');
    const mapped = toJsonRpcError(cause);
    expect({ code: mapped.code, httpStatus: mapped.httpStatus, message: mapped.message, cause: mapped.cause }).toEqual({
      code: -32603,
      httpStatus: 200,
      message: 'Internal error',
      cause,
    });
  });
});

describe('outageOf (the broker cannot reach its database)', () => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 10.9.8.7:6543'), {
    code: 'ECONNREFUSED',
    syscall: 'connect',
  });

  it('is a 503 with Retry-After and -32603 that says so, naming no internals', () => {
    const mapped = outageOf(refused);
    expect(mapped).toBeInstanceOf(McpProtocolError);
    expect({
      kind: mapped?.kind,
      code: mapped?.code,
      httpStatus: mapped?.httpStatus,
      retryAfterSeconds: mapped?.retryAfterSeconds,
      message: mapped?.message,
      data: mapped?.data,
    }).toEqual({
      kind: 'unavailable',
      code: -32603,
      httpStatus: 503,
      retryAfterSeconds: 5,
      message: 'The service cannot reach its database at the moment. Try again in a few seconds.',
      data: { retryAfterSeconds: 5 },
    });
    expect(JSON.stringify(mapped?.data) + mapped?.message).not.toMatch(/10\.9\.8\.7|ECONNREFUSED/);
    expect(mapped?.cause).toBe(refused);
  });

  it('is the same outside a tool', () => {
    expect(toJsonRpcError(new Error('Connection terminated unexpectedly'))).toMatchObject({
      kind: 'unavailable',
      httpStatus: 503,
    });
  });

  it('is nothing for other errors, a provider that cannot be reached included (a tool error the model reads)', () => {
    expect(outageOf(new Error('boom'))).toBeUndefined();
    expect(outageOf(new UnavailableError('Reports could not be reached.', { expose: true }))).toBeUndefined();
    expect(outageOf(new TypeError('fetch failed', { cause: refused }))).toBeUndefined();
  });
});

describe('toToolError (inside tools/call)', () => {
  it('shows an exposed message with its code, and does not ask for a log line', () => {
    expect(toToolError(new NotFoundError('No note with id n-1.'))).toEqual({
      text: 'No note with id n-1.',
      structured: { error: 'not_found', message: 'No note with id n-1.' },
      log: false,
      code: 'not_found',
    });
  });

  it('never shows the message of an unexposed error, and logs it', () => {
    const mapped = toToolError(new UpstreamAuthError('access_token=canary-7f3e'));
    expect(mapped).toEqual({
      text: 'Internal error. Try again later.',
      structured: { error: 'upstream_auth_failed', message: 'Internal error. Try again later.' },
      log: true,
      code: 'upstream_auth_failed',
    });
  });

  it('maps what is not an AppError to internal', () => {
    expect(toToolError(new Error('boom'))).toMatchObject({
      log: true,
      code: 'internal',
      text: 'Internal error. Try again later.',
    });
    expect(toToolError(new InvalidInputError('bad field'))).toMatchObject({
      log: false,
      code: 'invalid_input',
      text: 'bad field',
    });
  });
});
