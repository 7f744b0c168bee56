import express, { type ErrorRequestHandler, type Request, type Response, Router } from 'express';
import { createLocalJWKSet, type JWK, jwtVerify } from 'jose';
import { z } from 'zod';
import type { Logger } from '../shared/logger.js';
import type { Report, ReportStore } from './reportStore.js';

export interface ReportApiDeps {
  /** The Report Service's issuer; tokens from any other issuer are refused. */
  issuer: string;
  /** The API's resource identifier, e.g. https://127.0.0.1:8445/api. */
  audience: string;
  /** The Report Service's public JWKS. */
  jwks: { keys: JWK[] };
  store: ReportStore;
  logger: Logger;
}

interface Caller {
  subject: string;
  scopes: Set<string>;
}

const NoQuerySchema = z.strictObject({});
const NewReportSchema = z.strictObject({ title: z.string().min(1).max(200), body: z.string().max(10_000) });
// RFC 9110 token-ish: 1..200 visible ASCII characters.
const IdempotencyKeySchema = z.string().regex(/^[\x21-\x7E]{1,200}$/);
const REALM = 'Bearer realm="report-service"';

/**
 * The demo Report Service's API, mounted at `/api` on the Report Service's own
 * origin. It accepts only the Report Service's own JWT access tokens for its
 * own audience (RFC 9068), and speaks RFC 6750 errors, like a third-party API
 * would; it is not part of the broker, so it does not use the broker's AppError mapping.
 */
export function createReportApi(deps: ReportApiDeps): Router {
  const keys = createLocalJWKSet(deps.jwks);
  const router = Router();
  router.use((_req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    next();
  });

  const authorize = async (req: Request, res: Response, scope: string): Promise<Caller | undefined> => {
    const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*)$/i.exec(req.get('authorization') ?? '');
    if (!match?.[1]) return refuse(res);
    try {
      const { payload } = await jwtVerify(match[1], keys, {
        issuer: deps.issuer,
        audience: deps.audience,
        algorithms: ['ES256'],
        typ: 'at+jwt',
        requiredClaims: ['sub', 'exp'],
      });
      const scopes = new Set(typeof payload.scope === 'string' ? payload.scope.split(' ') : []);
      const caller = { subject: String(payload.sub), scopes };
      if (scopes.has(scope)) return caller;
      const challenge = `${REALM}, error="insufficient_scope", scope="${scope}"`;
      res.status(403).set('WWW-Authenticate', challenge).json({ error: 'insufficient_scope' });
      return undefined;
    } catch (err) {
      deps.logger.debug({ reason: err instanceof Error ? err.name : 'unknown' }, 'report api refused a token');
      return refuse(res);
    }
  };

  router.get('/reports', async (req, res) => {
    const caller = await authorize(req, res, 'reports:read');
    if (!caller || !parsed(res, NoQuerySchema, req.query)) return;
    res.json({ reports: deps.store.listBySubject(caller.subject).map(toPublic) });
  });

  router.post('/reports', express.json({ limit: '32kb' }), async (req, res) => {
    const caller = await authorize(req, res, 'reports:write');
    if (!caller || !parsed(res, NoQuerySchema, req.query)) return;
    const input = parsed(res, NewReportSchema, req.body);
    if (!input) return;
    const keyHeader = req.get('idempotency-key');
    const idempotencyKey = keyHeader === undefined ? undefined : parsed(res, IdempotencyKeySchema, keyHeader);
    if (keyHeader !== undefined && idempotencyKey === undefined) return;
    const outcome = await deps.store.create({
      subject: caller.subject,
      ...input,
      ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
    });
    if (outcome.kind === 'key_reused') {
      const message = 'This Idempotency-Key was already used with a different request.';
      res.status(422).json({ error: 'idempotency_key_reused', error_description: message });
      return;
    }
    if (outcome.kind === 'replayed') res.set('Idempotent-Replayed', 'true');
    res.status(201).json({ report: toPublic(outcome.report) });
  });

  router.use((_req, res) => {
    res.status(404).json({ error: 'not_found' });
  });
  router.use(apiErrors(deps.logger));
  return router;
}

// A missing token gets the same answer as an invalid one, so a client needs one code path.
function refuse(res: Response): undefined {
  res.status(401).set('WWW-Authenticate', `${REALM}, error="invalid_token"`).json({ error: 'invalid_token' });
  return undefined;
}

function parsed<T>(res: Response, schema: z.ZodType<T>, input: unknown): T | undefined {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const fields = result.error.issues.map((i) => i.path.join('.') || '(request)');
  res.status(400).json({ error: 'invalid_request', error_description: `Invalid: ${[...new Set(fields)].join(', ')}` });
  return undefined;
}

function toPublic(report: Report) {
  return { id: report.id, title: report.title, body: report.body, createdAt: report.createdAt };
}

// body-parser errors (malformed JSON, too large) carry a 4xx `status`; anything else is ours.
function apiErrors(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    const status = typeof err === 'object' && err !== null && 'status' in err ? Number(err.status) : 500;
    if (status >= 400 && status < 500) {
      res.status(status).json({ error: 'invalid_request' });
      return;
    }
    logger.error({ err, path: req.path }, 'report api failed');
    res.status(500).json({ error: 'server_error' });
  };
}
