import pg from 'pg';
import { describe, expect, it } from 'vitest';
import {
  AppError,
  ConflictError,
  DatabaseUnavailableError,
  InvalidInputError,
  NotFoundError,
  RateLimitedError,
  toAppError,
  UpstreamAuthError,
} from '../../src/errors/appError.js';
import { toHttp } from '../../src/errors/toHttp.js';

describe('toHttp', () => {
  it.each([
    [new InvalidInputError('bad field'), 400],
    [new AppError('unauthenticated', 'sign in'), 401],
    [new AppError('forbidden', 'no'), 403],
    [new NotFoundError('gone'), 404],
    [new ConflictError('raced'), 409],
    [new AppError('invalid_transition', 'no edge'), 409],
    [new UpstreamAuthError('upstream said no'), 502],
    [new AppError('unavailable', 'later'), 503],
    [new AppError('internal', 'boom'), 500],
  ])('maps %s to HTTP %i', (error, status) => {
    expect(toHttp(error, 'req-1').status).toBe(status);
  });

  it('shows an exposed message with its safe details, and does not ask for a log line', () => {
    const mapped = toHttp(new InvalidInputError('Invalid query.', { details: { fields: ['a'] } }), 'req-1');
    expect(mapped).toEqual({
      status: 400,
      log: false,
      body: { error: 'invalid_input', message: 'Invalid query.', requestId: 'req-1', details: { fields: ['a'] } },
    });
  });

  it('never shows the message of an unexposed error, and logs it', () => {
    const canary = 'access_token=canary-7f3e';
    const mapped = toHttp(new UpstreamAuthError(canary, { cause: new Error(canary) }), 'req-2');
    expect(JSON.stringify(mapped.body)).not.toContain('canary');
    expect(mapped.log).toBe(true);
  });

  describe('a database that cannot be reached', () => {
    // As pg builds them, with what must not leave the process: the server's address and its words.
    const refused = Object.assign(new Error('connect ECONNREFUSED 10.9.8.7:6543'), {
      code: 'ECONNREFUSED',
      syscall: 'connect',
      address: '10.9.8.7',
      port: 6543,
    });
    const shutdown = Object.assign(
      new pg.DatabaseError('terminating connection due to administrator command', 0, 'error'),
      { code: '57P01' },
    );
    const lost = new Error('Connection terminated unexpectedly');

    it.each([
      ['a refused connection', refused],
      ['the server stopping', shutdown],
      ['a connection lost under a query', lost],
      ['an internal error caused by one', new AppError('internal', 'Internal error.', { cause: refused })],
    ])('answers %s with 503, Retry-After and a fixed message that names no internals', (_what, err) => {
      const mapped = toHttp(err, 'req-7');
      expect(mapped).toEqual({
        status: 503,
        log: true,
        headers: { 'Retry-After': '5' },
        body: {
          error: 'unavailable',
          message: 'The service cannot reach its database at the moment. Try again in a few seconds.',
          requestId: 'req-7',
        },
      });
      expect(JSON.stringify(mapped)).not.toMatch(/10\.9\.8\.7|6543|ECONNREFUSED|57P01|administrator|terminated/);
    });

    it('keeps the driver error as the cause, for the log', () => {
      const appError = toAppError(refused);
      expect(appError).toBeInstanceOf(DatabaseUnavailableError);
      expect(appError.cause).toBe(refused);
    });

    it('leaves a failed statement an internal error', () => {
      const unique = Object.assign(new pg.DatabaseError('duplicate key value', 0, 'error'), { code: '23505' });
      expect(toHttp(unique, 'req-8')).toMatchObject({ status: 500, body: { message: 'Internal error.' } });
      expect(toHttp(unique, 'req-8').headers).toBeUndefined();
    });
  });

  it('sends Retry-After with a 429', () => {
    expect(toHttp(new RateLimitedError('Slow down.', 2.2), 'req-9')).toMatchObject({
      status: 429,
      headers: { 'Retry-After': '3' },
    });
  });

  it('turns anything that is not an AppError into a generic 500', () => {
    const mapped = toHttp(new TypeError('secret detail'), 'req-3');
    expect(mapped).toEqual({
      status: 500,
      log: true,
      body: { error: 'internal', message: 'Internal error.', requestId: 'req-3' },
    });
  });

  describe('errors of the HTTP stack that carry a client status', () => {
    const httpError = (status: number, message: string, extra: object = {}) =>
      Object.assign(new Error(message), { status, statusCode: status, expose: status < 500, ...extra });

    it.each([
      [
        'a bad percent-encoding in a path parameter (router)',
        Object.assign(new URIError("Failed to decode param '%ZZ'"), { status: 400, statusCode: 400 }),
        400,
        'invalid_input',
        'The request is malformed.',
      ],
      [
        'a missing static file (send, unexposed)',
        httpError(404, "ENOENT: no such file or directory, stat '/srv/public/nope.css'", {
          expose: false,
          path: '/srv/public/nope.css',
        }),
        404,
        'not_found',
        'There is no page here.',
      ],
      [
        'a form too large (raw-body)',
        httpError(413, 'request entity too large', { type: 'entity.too.large', limit: 2048 }),
        413,
        'payload_too_large',
        'The request body is too large.',
      ],
      [
        'malformed JSON (body-parser)',
        httpError(400, 'Unexpected token } in JSON at position 7', { type: 'entity.parse.failed', body: '{"a":1,}' }),
        400,
        'invalid_input',
        'The request is malformed.',
      ],
      [
        'an unsupported charset',
        httpError(415, 'unsupported charset "KOI8-R"'),
        415,
        'invalid_input',
        'Unsupported Media Type.',
      ],
    ])(
      'maps %s to that status with a fixed message, no stack and no log line',
      (_what, error, status, code, message) => {
        const mapped = toHttp(error, 'req-4');
        expect(mapped).toEqual({ status, log: false, body: { error: code, message, requestId: 'req-4' } });
        expect(JSON.stringify(mapped)).not.toMatch(/ENOENT|%ZZ|Unexpected token|KOI8|at \w/);
      },
    );

    it('keeps a 5xx from the HTTP stack generic and logged', () => {
      const mapped = toHttp(httpError(503, 'secret detail'), 'req-5');
      expect(mapped).toEqual({
        status: 500,
        log: true,
        body: { error: 'internal', message: 'Internal error.', requestId: 'req-5' },
      });
    });

    it('treats a status without the http-errors statusCode pair (an upstream response on an OAuth error) as internal', () => {
      const upstream = Object.assign(new Error('invalid_grant'), { status: 400, error: 'invalid_grant' });
      expect(toHttp(upstream, 'req-6')).toMatchObject({ status: 500, log: true, body: { error: 'internal' } });
    });
  });
});
