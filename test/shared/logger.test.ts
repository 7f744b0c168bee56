import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/shared/logger.js';
import { Secret } from '../../src/shared/secret.js';

function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { lines, logger: createLogger({ level: 'info' }, stream) };
}

describe('logger', () => {
  it('redacts secrets by key at every logged depth', () => {
    const { lines, logger } = capture();
    logger.info(
      {
        password: 'canary-password',
        headers: { authorization: 'Bearer canary-bearer', cookie: 'canary-cookie' },
        tokens: { access_token: 'canary-access', refresh_token: 'canary-refresh' },
        deep: { upstream: { body: { client_secret: 'canary-client-secret' } } },
      },
      'request',
    );
    expect(lines.join('')).not.toMatch(/canary/);
    expect(lines.join('')).toContain('[redacted]');
  });

  it('prints a Secret as [redacted] wherever it ends up', () => {
    const { lines, logger } = capture();
    const secret = new Secret('canary-secret-value');
    logger.info({ config: { db: secret } }, `value ${String(secret)}`);
    expect(lines.join('')).not.toContain('canary-secret-value');
    expect(JSON.stringify({ secret })).toBe('{"secret":"[redacted]"}');
    expect(secret.reveal()).toBe('canary-secret-value');
  });

  it('redacts `code` where it is an OAuth authorization code: request query, form and callback parameters', () => {
    const { lines, logger } = capture();
    logger.info({ query: { code: 'canary-q', state: 'canary-s', iss: 'https://idp.example' } }, 'callback');
    logger.info({ req: { body: { code: 'canary-b' }, params: { code: 'canary-p' } } }, 'form');
    logger.info({ callback: { searchParams: { code: 'canary-sp' } }, callbackParams: { code: 'canary-cp' } }, 'grant');
    logger.info({ authorization_code: 'canary-ac', upstream: { authorizationCode: 'canary-acc' } }, 'named');
    const text = lines.join('');
    expect(text).not.toMatch(/canary/);
    expect(text).toContain('https://idp.example');
  });

  it('keeps an error code, a JSON-RPC code and a SQLSTATE readable', () => {
    const { lines, logger } = capture();
    logger.info({ rpcCode: -32602, error: { code: -32042 } }, 'MCP request refused');
    logger.error(
      {
        err: Object.assign(new Error('duplicate key value violates unique constraint "notes_pkey"'), {
          code: '23505',
          constraint: 'notes_pkey',
        }),
      },
      'tool failed',
    );
    const [refused, failed] = lines.map((l) => JSON.parse(l));
    expect(refused).toMatchObject({ rpcCode: -32602, error: { code: -32042 } });
    expect(failed.err).toMatchObject({ code: '23505', constraint: 'notes_pkey' });
    expect(lines.join('')).not.toContain('[redacted]');
  });

  it("leaves out a database error's detail, which quotes row values", () => {
    const { lines, logger } = capture();
    const err = Object.assign(new Error('duplicate key value violates unique constraint "notes_title_key"'), {
      code: '23505',
      detail: 'Key (title)=(canary-title) already exists.',
      where: 'canary-where',
    });
    logger.error({ err }, 'tool failed');
    expect(lines.join('')).not.toMatch(/canary/);
    expect(JSON.parse(lines[0]!).err).toMatchObject({ type: 'Error', code: '23505' });
  });
});
