import { Router } from 'express';
import { migrationStatus, type MigrationFile } from '../db/migrate.js';
import type { Pool } from '../db/pool.js';
import type { Logger } from '../shared/logger.js';
import { within } from '../shared/within.js';

/** The identity provider browser sign-in uses, as /readyz asks it (oauth/oauthClient.ts `problem`). */
export interface IdentityProviderCheck {
  issuer: string;
  /** Why sign-in cannot start now, in a few words with no secret in them; undefined when it can. */
  problem(): Promise<string | undefined>;
}

export interface HealthDeps {
  pool: Pool;
  migrations: MigrationFile[];
  logger: Logger;
  /** How long /readyz waits for the database before it says not ready (default 2 s). */
  readyTimeoutMs?: number;
  /** Absent (tests of the database alone): /readyz asks only the database. */
  identityProvider?: IdentityProviderCheck;
}

// Below the probe timeouts of load balancers and orchestrators (Kubernetes: 1 s by default, often
// raised to a few): a database that does not answer is an answer, and must come in time.
const READY_TIMEOUT_MS = 2_000;

/**
 * GET /healthz: the process answers (nothing else: a restart mends no database or issuer).
 * GET /readyz: the database answers in time with every migration applied, and the identity provider
 * can start a sign-in; else 503 with `reasons`, short and free of secrets, for the operator.
 */
export function healthRoutes(deps: HealthDeps): Router {
  const router = Router();
  const timeoutMs = deps.readyTimeoutMs ?? READY_TIMEOUT_MS;
  const idp = deps.identityProvider;

  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  router.get('/readyz', async (_req, res) => {
    const [database, signIn] = await Promise.all([
      withinTime(migrationStatus(deps.pool, deps.migrations), timeoutMs).then(
        (status) => ({ status }),
        (err: unknown) => {
          deps.logger.warn({ err }, 'readiness check failed');
          return { status: undefined, late: err instanceof LateError };
        },
      ),
      idp &&
        withinTime(idp.problem(), timeoutMs).then(
          (problem) => problem,
          () => `discovery did not answer within ${timeoutMs / 1000} s`,
        ),
    ]);
    const reasons: string[] = [];
    const { status } = database;
    // Postgres's own words (host, role, database names) stay in the log.
    if (!status)
      reasons.push(
        `database: ${'late' in database && database.late ? `no answer within ${timeoutMs / 1000} s` : 'unreachable (the log says why)'}`,
      );
    else if (!status.current)
      reasons.push(`database: ${status.problem ?? `${status.expected - status.applied} migrations not applied`}`);
    if (idp && signIn) {
      // A failed discovery is tried again at the next request (/readyz's included): it mends itself.
      reasons.push(`identity provider ${idp.issuer}: ${signIn}; retrying`);
      deps.logger.warn({ issuer: idp.issuer, reason: signIn }, 'not ready: sign-in cannot start');
    }
    const body = {
      status: reasons.length === 0 ? 'ready' : 'not_ready',
      ...(status
        ? {
            database: 'ok',
            migrations: { current: status.current, applied: status.applied, expected: status.expected },
          }
        : { database: 'unreachable' }),
      ...(idp && { identityProvider: signIn ? 'unavailable' : 'ok' }),
      ...(reasons.length > 0 && { reasons }),
    };
    res.status(reasons.length === 0 ? 200 : 503).json(body);
  });

  return router;
}

// The check itself runs on (bounded by the pool's connect and statement timeouts, or the issuer
// fetch's deadline); only the answer stops waiting.
class LateError extends Error {}

async function withinTime<T>(check: Promise<T>, ms: number): Promise<T> {
  const answered = await within(check, ms);
  if (!answered) throw new LateError(`no answer within ${ms} ms`);
  return answered.value;
}
