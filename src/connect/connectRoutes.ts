import { Router, type Request } from 'express';
import { z } from 'zod';
import { ForbiddenError, InvalidInputError, NotFoundError } from '../errors/appError.js';
import { displayParts } from '../security/displayText.js';
import { csrfTokenFor, isValidCsrf, requireSameOrigin } from '../web/middleware/csrf.js';
import { parseInput } from '../web/parse.js';
import type { Render } from '../web/render.js';
import { formBody } from '../web/requestBody.js';
import { signedInUser } from '../web/signedInUser.js';
import { CALLBACK_ROUTE, DONE_PATH, type BrokerDeps, providerNameOf } from '../broker/brokerDeps.js';
import { findEntries } from '../ledger/ledgerRepo.js';
import { consentToConnect, viewConnect } from './connectFlow.js';
import { findNavigationById } from '../broker/navigationRepo.js';
import { flowTargetOf } from '../broker/startReconnect.js';
import { RECONNECT } from '../flow/navigationStates.js';
import { completeCallback } from './oauthCallback.js';
import { displayTime } from '../web/displayTime.js';

const HandleParams = z.strictObject({ handle: z.string().regex(/^[A-Za-z0-9_-]{43}$/) });

/** The link's handle; a link that is not one (cut short, mistyped) is told so in words, not a field name. */
function handleOf(params: unknown): string {
  const parsed = HandleParams.safeParse(params);
  if (!parsed.success)
    throw new InvalidInputError(
      'This is not a connect link, or not the whole of one: open the link your app gave you again, exactly as it is.',
    );
  return parsed.data.handle;
}
const ConsentBody = z.strictObject({ _csrf: z.string().max(128) });
const DoneQuery = z.strictObject({ n: z.uuid() });
// The provider adds its own parameters (code, state, iss, error, session_state…); openid-client reads the URL.
const CallbackQuery = z.record(z.string(), z.string().max(4096));

export interface ConnectRoutesDeps {
  broker: BrokerDeps;
  render: Render;
  sessionTtlSeconds: number;
}

/** GET/POST /connect/{handle}, GET /oauth/callback/{provider}, GET /connect/done: the connect pages and the provider callback. */
export function connectRoutes(deps: ConnectRoutesDeps): Router {
  const { broker, render } = deps;
  const router = Router();
  const browserOf = (req: Request) => signedInUser(broker, req);

  // Before /connect/:handle, which would otherwise take 'done' for a handle.
  router.get(DONE_PATH, async (req, res) => {
    const { n } = parseInput(DoneQuery, req.query, 'query');
    const [browser, navigation] = await Promise.all([browserOf(req), findNavigationById(broker.pool, n)]);
    if (
      !browser ||
      !navigation ||
      navigation.subject.iss !== browser.principal.iss ||
      navigation.subject.sub !== browser.principal.sub
    ) {
      throw new ForbiddenError('There is nothing to show here for you.');
    }
    const providerName = providerNameOf(broker, navigation.provider);
    // What really happened to an "add another account" flow: a new connection, or (the user signed in as
    // an account already connected) that connection renewed, as its verified callback recorded.
    const adding = flowTargetOf(navigation).kind === 'add';
    const verified = adding
      ? (await findEntries(broker.pool, navigation.id)).find((e) => e.event === 'callback_verified')
      : undefined;
    const added = verified?.evidence['addedAccount'] === true;
    res.type('html').send(
      render('connect/done', {
        title: `${providerName} connected`,
        signedInAs: browser.name,
        providerName,
        reconnect: navigation.lineage === RECONNECT,
        addsAccount: adding && added,
        sameAccountAgain: adding && verified !== undefined && !added,
        purposeParts: displayParts(navigation.purpose),
      }),
    );
  });

  router.get('/connect/:handle', async (req, res) => {
    const handle = handleOf(req.params);
    parseInput(z.strictObject({}), req.query, 'query');
    const browser = await browserOf(req);
    const view = await viewConnect(broker, handle, browser?.principal);
    const page = { signedInAs: browser?.name, handle };
    if (view.kind === 'sign_in')
      return void res
        .type('html')
        .send(render('connect/signIn', { ...page, title: 'Sign in to connect', returnTo: `/connect/${handle}` }));
    if (view.kind === 'mismatch')
      return void res
        .status(403)
        .type('html')
        .send(render('connect/refused', { ...page, title: 'This link is not yours' }));
    if (view.kind === 'closed')
      return void res
        .status(view.reason === 'verified' ? 200 : 410)
        .type('html')
        .send(render('connect/closed', { ...page, title: 'Nothing to do here', reason: view.reason }));
    res.type('html').send(
      render('connect/review', {
        ...page,
        title: `${view.reconnect ? 'Reconnect' : view.addsAccount ? 'Add another account of' : 'Connect'} ${view.providerName}`,
        providerName: view.providerName,
        destination: view.destination,
        grows: view.grows,
        reconnect: view.reconnect,
        addsAccount: view.addsAccount,
        purposeParts: displayParts(view.navigation.purpose),
        expiresAt: displayTime(view.navigation.expiresAt),
        csrf: csrfTokenFor(browser!.cookie),
      }),
    );
  });

  router.post(
    '/connect/:handle',
    requireSameOrigin(broker.publicUrl.origin),
    formBody({ limit: 2048 }),
    async (req, res) => {
      const handle = handleOf(req.params);
      const body = parseInput(ConsentBody, req.body, 'form');
      const browser = await browserOf(req);
      if (!browser) return void res.redirect(303, `/connect/${handle}`);
      if (!isValidCsrf(browser.cookie, body._csrf))
        throw new ForbiddenError('This form has expired. Reload the page and try again.');
      const target = await consentToConnect(broker, handle, browser.principal);
      res.redirect(303, target.href);
    },
  );

  router.get(CALLBACK_ROUTE, async (req, res) => {
    const provider = req.params['provider'] ?? '';
    // An unknown provider's path claims no transaction.
    if (!broker.providers.has(provider)) throw new NotFoundError('This address belongs to no configured service.');
    parseInput(CallbackQuery, req.query, 'query');
    const navigation = await completeCallback(
      broker,
      new URL(req.originalUrl, broker.publicUrl),
      async () => (await browserOf(req))?.principal,
      provider,
    );
    res.redirect(303, `${DONE_PATH}?n=${navigation.id}`);
  });

  return router;
}
