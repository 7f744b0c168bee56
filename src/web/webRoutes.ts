import { Router } from 'express';
import { z } from 'zod';
import { currentSession } from '../auth/signIn.js';
import { readSessionCookie } from '../auth/sessionCookie.js';
import type { Config } from '../config/config.js';
import type { Pool } from '../db/pool.js';
import type { Clock } from '../shared/clock.js';
import { csrfTokenFor } from './middleware/csrf.js';
import { parseInput } from './parse.js';
import type { Render } from './render.js';

export interface WebRoutesDeps {
  pool: Pool;
  clock: Clock;
  render: Render;
  settings: Pick<Config, 'http'>;
}

/** GET / : who is signed in, with sign-in or sign-out. */
export function webRoutes(deps: WebRoutesDeps): Router {
  const router = Router();

  router.get('/', async (req, res) => {
    parseInput(z.strictObject({}), req.query, 'query');
    const current = await currentSession(deps, readSessionCookie(req));
    const session = current?.session.subject ? current : undefined;
    res.type('html').send(
      deps.render('home', {
        title: session ? 'Signed in' : 'Welcome',
        signedInAs: session?.session.displayName,
        subject: session?.session.subject,
        operator: session?.session.operator ?? false,
        csrf: session ? csrfTokenFor(session.cookie) : undefined,
        mcpResourceUrl: deps.settings.http.mcpResourceUrl,
      }),
    );
  });

  return router;
}
