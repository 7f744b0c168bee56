import type { Request, RequestHandler, Response } from 'express';
import { z } from 'zod';
import type { OperatorAct } from './recovery.js';
import { ForbiddenError } from '../errors/appError.js';
import { isValidCsrf, requireSameOrigin } from '../web/middleware/csrf.js';
import { parseInput } from '../web/parse.js';
import { formBody } from '../web/requestBody.js';
import { operatorOf } from './operatorGuard.js';

// What every operator form shares (recovery and approvals): same-origin POST,
// the session's CSRF token, and a reason of 3 to 500 characters, recorded with
// the operator as the actor.

export const IdParams = z.strictObject({ id: z.uuid() });

/** A query field a blank form field leaves empty: "no filter". */
export const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

const ActionBody = z.strictObject({
  _csrf: z.string().max(128),
  reason: z
    .string()
    .trim()
    .min(3, 'give a reason of at least 3 characters')
    .max(500, 'keep the reason under 500 characters'),
});

/** Middleware for an operator form POST: refuses other origins, then reads a small urlencoded body. */
export function operatorForm(publicOrigin: string): RequestHandler {
  const sameOrigin = requireSameOrigin(publicOrigin);
  const body = formBody({ limit: 4096 });
  return (req, res, next) =>
    sameOrigin(req, res, (err?: unknown) => (err === undefined ? body(req, res, next) : next(err)));
}

/** The operator's act from a submitted form: the CSRF token is checked first, then the reason. */
export function readAct(req: Request, res: Response): OperatorAct {
  const operator = operatorOf(res);
  const body: unknown = req.body;
  const token = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)['_csrf'] : undefined;
  if (!isValidCsrf(operator.cookie, token))
    throw new ForbiddenError('This form has expired. Reload the page and try again.');
  const { reason } = parseInput(ActionBody, body, 'form');
  return { reason, actor: operator.actor, subject: operator.subject };
}

/** What every operator page's model starts with: who is signed in, and the form token. */
export function pageModel(res: Response, title: string, section: string): Record<string, unknown> {
  const operator = operatorOf(res);
  return { title, brand: 'Connect Broker · Operators', signedInAs: operator.name, csrf: operator.csrf, section };
}
