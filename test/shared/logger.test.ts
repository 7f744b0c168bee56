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
});
