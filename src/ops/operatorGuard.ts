import type { Request, RequestHandler, Response } from 'express';
import { operatorStanding } from '../auth/operatorRole.js';
import type { Principal } from '../auth/principal.js';
import { readSessionCookie } from '../auth/sessionCookie.js';
import { currentSession } from '../auth/signIn.js';
import type { Pool } from '../db/pool.js';
import { ForbiddenError } from '../errors/appError.js';
import { countOperatorRefusal } from '../ledger/operatorRepo.js';
import type { Clock } from '../shared/clock.js';
import type { Logger } from '../shared/logger.js';
import { csrfTokenFor } from '../web/middleware/csrf.js';

/** The signed-in operator of a request to an operator page (set by requireOperator). */
export interface OperatorContext {
  /** Recorded as the actor of every action: operator:<sub>. */
  actor: string;
  /** Who the operator is (an operator never approves their own operation). */
  subject: Principal;
  name: string;
  cookie: string;
  csrf: string;
}

export interface OperatorGuardDeps {
  pool: Pool;
  clock: Clock;
  logger: Logger;
}

export function operatorOf(res: Response): OperatorContext {
  const operator = res.locals['operator'] as OperatorContext | undefined;
  if (!operator) throw new Error('operator route mounted without requireOperator');
  return operator;
}

/**
 * Operator pages: a browser without a signed-in session is
 * sent to sign in; a signed-in user whose sign-in did not carry the operator
 * role gets 403, and the refusal is recorded in operator_actions.
 *
 * The role holds for OPERATOR_PROOF_MAX_AGE_SECONDS from the sign-in that read
 * it: a page after that sends the browser to sign in again, which reads the
 * role afresh from the identity provider (usually without a prompt, on the
 * provider's own session). Anything but GET changes state and needs the user
 * to have authenticated within the same bound: else the browser is sent to
 * sign in again with prompt=login, nothing is done, and the form's page
 * (with a new form token, as the session is new) is where it comes back to.
 */
export function requireOperator(deps: OperatorGuardDeps): RequestHandler {
  return (req, res, next) => {
    void (async () => {
      const current = await currentSession(deps, readSessionCookie(req));
      const subject = current?.session.subject;
      const reads = req.method === 'GET' || req.method === 'HEAD';
      if (!current || !subject) {
        if (reads) return void res.redirect(303, signInAgain(req.originalUrl, false));
        throw new ForbiddenError('Sign in as an operator first.');
      }
      const standing = operatorStanding(current.session, deps.clock.now());
      if (standing === 'none') {
        await recordRefusal(deps, req, `web:${subject.sub}`);
        throw new ForbiddenError('Operators only: your account does not have the operator role.');
      }
      if (!reads && standing !== 'act') return void res.redirect(303, signInAgain(formPageOf(req), true));
      if (standing === 'stale') return void res.redirect(303, signInAgain(req.originalUrl, false));
      const operator: OperatorContext = {
        actor: `operator:${subject.sub}`,
        subject,
        name: current.session.displayName ?? subject.sub,
        cookie: current.cookie,
        csrf: csrfTokenFor(current.cookie),
      };
      res.locals['operator'] = operator;
      next();
    })().catch(next);
  };
}

function signInAgain(returnTo: string, reauthenticate: boolean): string {
  return `/login?return_to=${encodeURIComponent(returnTo)}${reauthenticate ? '&reauth=1' : ''}`;
}

// The page each operator form is on (a redirect cannot carry a POST's body over a sign-in).
const FORM_PAGES: readonly [RegExp, (m: RegExpExecArray) => string][] = [
  [/^\/ops\/flows\/([0-9a-f-]{36})\/[a-z]+$/, (m) => `/ops/flows/${m[1]}`],
  [/^\/ops\/approvals\//, () => '/ops/approvals'],
  [/^\/ops\/sessions\//, () => '/ops/sessions'],
];

function formPageOf(req: Pick<Request, 'baseUrl' | 'path'>): string {
  const path = `${req.baseUrl}${req.path}`;
  for (const [pattern, page] of FORM_PAGES) {
    const match = pattern.exec(path);
    if (match) return page(match);
  }
  return '/ops';
}

/** Every refused attempt at an operator route is counted: at most a row per subject and minute (append-only). */
export async function recordRefusal(
  deps: OperatorGuardDeps,
  req: Pick<Request, 'method' | 'baseUrl' | 'path'>,
  actor: string,
): Promise<void> {
  // The full path (the router is mounted at /ops): /ops/flows, not /flows.
  const path = `${req.baseUrl}${req.path === '/' ? '' : req.path}`.slice(0, 200);
  const what = `${req.method} ${path}`;
  deps.logger.warn({ actor, what }, 'operator access refused');
  await countOperatorRefusal(
    deps.pool,
    `not an operator: ${what}`,
    actor,
    { method: req.method, path },
    deps.clock.now(),
  );
}
