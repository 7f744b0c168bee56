import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config.js';
import { createPool } from '../../src/db/pool.js';
import { createLogger } from '../../src/shared/logger.js';
import { Secret } from '../../src/shared/secret.js';

// DATABASE_DIRECT_URL: Postgres itself, beside a DATABASE_URL that goes through a transaction-mode
// pooler (docs/scaling.md). Through the pooler, tested in scripts/pgbouncer-pass.sh.
describe('DATABASE_DIRECT_URL', () => {
  const pooler = 'postgres://broker:pw-canary@pgbouncer.example.com:6432/broker';
  const direct = 'postgres://broker:pw-canary@db.example.com:5432/broker';

  it('is read beside DATABASE_URL, kept secret, and unset by default', () => {
    const config = loadConfig({ DATABASE_URL: pooler, DATABASE_DIRECT_URL: direct });
    expect(config.db.url?.reveal()).toBe(pooler);
    expect(config.db.directUrl?.reveal()).toBe(direct);
    expect(JSON.stringify(config)).not.toContain('pw-canary');
    expect(loadConfig({ DATABASE_URL: pooler }).db.directUrl).toBeUndefined();
  });

  it('needs DATABASE_URL and a postgres:// URL', () => {
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as ConfigError).problems;
      }
      return [];
    };
    expect(problems({ DATABASE_DIRECT_URL: direct })).toEqual([
      'DATABASE_DIRECT_URL: needs DATABASE_URL (the pooler it bypasses); the embedded Postgres needs neither',
    ]);
    expect(problems({ DATABASE_URL: pooler, DATABASE_DIRECT_URL: 'mysql://x' })).toEqual([
      'DATABASE_DIRECT_URL: must be a postgres:// URL',
    ]);
  });

  it('a pooled pool sends no session settings: a schema is refused', () => {
    const logger = createLogger({ level: 'silent' });
    expect(() => createPool({ url: new Secret(pooler), poolMax: 1, pooled: true, schema: 'test_x' }, logger)).toThrow(
      /cannot set a schema/,
    );
  });
});
