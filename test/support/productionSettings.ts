import { expect } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config.js';

/**
 * A production environment loadConfig accepts: every required variable, public names, placeholder
 * files (loadConfig reads none). Tests spread it and change what they test.
 */
export const PRODUCTION_ENV = Object.freeze({
  NODE_ENV: 'production',
  PUBLIC_URL: 'https://broker.example.com',
  OIDC_ISSUER: 'https://login.example.com',
  OIDC_CLIENT_ID: 'connect-broker',
  OIDC_CLIENT_SECRET: 'client-secret-canary',
  SECRET_KEYS: `k1:${Buffer.alloc(32, 7).toString('base64url')}`,
  DATABASE_URL: 'postgres://broker:pw@db.example.com:5432/broker',
  TLS_CERT_FILE: '/etc/broker/tls.pem',
  TLS_KEY_FILE: '/etc/broker/tls-key.pem',
});

/** The problems loadConfig lists for `env`; fails the test when it accepts it. */
export function configProblems(env: Record<string, string | undefined>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}
