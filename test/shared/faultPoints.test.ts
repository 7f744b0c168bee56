import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config.js';
import { FAULT_POINTS, reachFaultPoint } from '../../src/shared/faultPoints.js';

// The kill itself is what test/faults/ proves on real processes; here, who may set a point at all.
const production = {
  NODE_ENV: 'production',
  PUBLIC_URL: 'https://broker.example.com',
  OIDC_ISSUER: 'https://login.example.com',
  OIDC_CLIENT_ID: 'connect-broker',
  OIDC_CLIENT_SECRET: 'client-secret-canary',
  SECRET_KEYS: `k1:${Buffer.alloc(32, 7).toString('base64url')}`,
  DATABASE_URL: 'postgres://broker:pw@db.example.com:5432/broker',
  TLS_CERT_FILE: '/etc/broker/tls.pem',
  TLS_KEY_FILE: '/etc/broker/tls-key.pem',
};

const problemsOf = (env: Record<string, string>): string[] => {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
};

describe('BROKER_FAULT_POINT', () => {
  it('is off unless set, and names one of the fault points outside production', () => {
    expect(loadConfig({}).faultPoint).toBeUndefined();
    for (const point of FAULT_POINTS) expect(loadConfig({ BROKER_FAULT_POINT: point }).faultPoint).toBe(point);
    expect(loadConfig({ NODE_ENV: 'test', BROKER_FAULT_POINT: 'operation.before_call' }).faultPoint).toBe(
      'operation.before_call',
    );
  });

  it('refuses a name that is not a fault point', () => {
    expect(problemsOf({ BROKER_FAULT_POINT: 'operation.somewhere' })[0]).toMatch(/^BROKER_FAULT_POINT: /);
  });

  it('refuses to start in production with a fault point set', () => {
    expect(problemsOf({ ...production, BROKER_FAULT_POINT: 'operation.before_call' })).toEqual([
      'BROKER_FAULT_POINT: is a development setting',
    ]);
  });

  it('does nothing where no point is armed', () => {
    for (const point of FAULT_POINTS) reachFaultPoint(point);
    expect(process.exitCode ?? 0).toBe(0);
  });
});
