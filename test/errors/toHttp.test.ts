import { describe, expect, it } from 'vitest';
import { AppError, ConflictError, InvalidInputError, NotFoundError, UpstreamAuthError } from '../../src/errors/appError.js';
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
    expect(mapped).toEqual({ status: 400, log: false, body: { error: 'invalid_input', message: 'Invalid query.', requestId: 'req-1', details: { fields: ['a'] } } });
  });

  it('never shows the message of an unexposed error, and logs it', () => {
    const canary = 'access_token=canary-7f3e';
    const mapped = toHttp(new UpstreamAuthError(canary, { cause: new Error(canary) }), 'req-2');
    expect(JSON.stringify(mapped.body)).not.toContain('canary');
    expect(mapped.log).toBe(true);
  });

  it('turns anything that is not an AppError into a generic 500', () => {
    const mapped = toHttp(new TypeError('secret detail'), 'req-3');
    expect(mapped).toEqual({ status: 500, log: true, body: { error: 'internal', message: 'Internal error.', requestId: 'req-3' } });
  });
});
