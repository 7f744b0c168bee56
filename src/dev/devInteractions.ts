import express, { type Request, type Response, Router } from 'express';
import { errors, type Interaction, type Provider } from 'oidc-provider';
import { z } from 'zod';
import { InvalidInputError } from '../errors/appError.js';
import type { Render } from '../web/render.js';
import { withFormActionTarget } from './devProviderPages.js';
import { demoUsersText, devUsers, verifyDevCredentials } from './devUsers.js';

export interface InteractionDeps {
  provider: Provider;
  render: Render;
  brand: string;
  /** The issuer's origin; a POST whose Origin header names another origin is refused. */
  origin: string;
  /** 'implicit' applies to `staticClientIds` only: a client that registered itself is a third party, and the user is asked. */
  consent: 'implicit' | 'prompt';
  staticClientIds: ReadonlySet<string>;
  subjectOf: (login: string) => string;
}

const ParamsSchema = z.strictObject({ uid: z.string().regex(/^[\w-]{1,64}$/) });
const LoginFormSchema = z.strictObject({ login: z.string().max(100), password: z.string().max(200) });
const EmptyFormSchema = z.strictObject({});
// oidc-provider's consent prompt details (lib/helpers/interaction_policy/prompts/consent.js);
// not strict, since other checks (e.g. rar_prompt) add their own keys.
const ConsentDetailsSchema = z.object({
  missingOIDCScope: z.array(z.string()).optional(),
  missingOIDCClaims: z.array(z.string()).optional(),
  missingResourceScopes: z.record(z.string(), z.array(z.string())).optional(),
});

/**
 * Our sign-in and consent pages for oidc-provider (devInteractions disabled).
 * CSRF: every POST needs the interaction cookie, which is SameSite=Lax and
 * scoped to /interaction/<uid>, and its uid must equal the one in the path.
 */
export function createInteractionRouter(deps: InteractionDeps): Router {
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '4kb', parameterLimit: 10 });

  router.get('/:uid', async (req, res) => {
    const interaction = await loadInteraction(deps, req, res);
    if (interaction.prompt.name === 'login') {
      const hint = interaction.params['login_hint'];
      sendPage(res, interaction, await loginPage(deps, interaction, { login: typeof hint === 'string' ? hint : '' }));
      return;
    }
    if (interaction.prompt.name !== 'consent') throw new InvalidInputError('Unsupported sign-in step.');
    if (deps.consent === 'implicit' && deps.staticClientIds.has(String(interaction.params['client_id']))) {
      await finishConsent(deps, req, res, interaction);
      return;
    }
    sendPage(res, interaction, await consentPage(deps, interaction));
  });

  router.post('/:uid/login', form, async (req, res) => {
    const interaction = await loadInteraction(deps, req, res, 'login');
    const body = parseForm(LoginFormSchema, req);
    const user = verifyDevCredentials(body.login, body.password);
    if (!user) {
      const error = 'That user name and password do not match. Try again.';
      sendPage(res.status(400), interaction, await loginPage(deps, interaction, { login: body.login, error }));
      return;
    }
    const result = { login: { accountId: deps.subjectOf(user.login) } };
    await deps.provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
  });

  router.post('/:uid/confirm', form, async (req, res) => {
    const interaction = await loadInteraction(deps, req, res, 'consent');
    parseForm(EmptyFormSchema, req);
    await finishConsent(deps, req, res, interaction);
  });

  router.post('/:uid/abort', form, async (req, res) => {
    await loadInteraction(deps, req, res);
    parseForm(EmptyFormSchema, req);
    const result = { error: 'access_denied', error_description: 'The user denied the request.' };
    await deps.provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
  });

  return router;
}

async function loadInteraction(
  deps: InteractionDeps,
  req: Request,
  res: Response,
  expectedPrompt?: string,
): Promise<Interaction> {
  const { uid } = parse(ParamsSchema, req.params);
  const origin = req.get('origin');
  if (req.method === 'POST' && origin !== undefined && origin !== deps.origin) {
    throw new InvalidInputError('This form was posted from another site.');
  }
  let interaction: Interaction;
  try {
    interaction = await deps.provider.interactionDetails(req, res);
  } catch (err) {
    if (err instanceof errors.SessionNotFound) throw expired(err);
    throw err;
  }
  if (interaction.uid !== uid || (expectedPrompt && interaction.prompt.name !== expectedPrompt)) throw expired();
  return interaction;
}

// oidc-provider checked redirect_uri against the client before it created the interaction.
function sendPage(res: Response, interaction: Interaction, html: string): void {
  const redirectUri = interaction.params['redirect_uri'];
  const csp = res.getHeader('content-security-policy');
  if (typeof redirectUri === 'string' && typeof csp === 'string')
    res.setHeader('Content-Security-Policy', withFormActionTarget(csp, redirectUri));
  res.send(html);
}

function expired(cause?: unknown): InvalidInputError {
  const message = 'This sign-in request has expired or was already used. Start again from the application.';
  return new InvalidInputError(message, cause === undefined ? {} : { cause });
}

/** Grants everything the consent prompt found missing (RFC 8707 resource scopes included). */
async function finishConsent(deps: InteractionDeps, req: Request, res: Response, interaction: Interaction) {
  const details = ConsentDetailsSchema.parse(interaction.prompt.details);
  const accountId = interaction.session?.accountId;
  const clientId = interaction.params['client_id'];
  if (!accountId || typeof clientId !== 'string') throw expired();
  const existing = interaction.grantId ? await deps.provider.Grant.find(interaction.grantId) : undefined;
  const grant = existing ?? new deps.provider.Grant({ accountId, clientId });
  if (details.missingOIDCScope) grant.addOIDCScope(details.missingOIDCScope.join(' '));
  if (details.missingOIDCClaims) grant.addOIDCClaims(details.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(details.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  const grantId = await grant.save();
  const consent = existing ? {} : { grantId };
  await deps.provider.interactionFinished(req, res, { consent }, { mergeWithLastSubmission: true });
}

async function clientName(deps: InteractionDeps, interaction: Interaction): Promise<string> {
  const clientId = String(interaction.params['client_id']);
  const client = await deps.provider.Client.find(clientId);
  return client?.clientName ?? clientId;
}

async function loginPage(deps: InteractionDeps, interaction: Interaction, model: { login: string; error?: string }) {
  return deps.render('dev/login', {
    title: 'Sign in',
    brand: deps.brand,
    clientName: await clientName(deps, interaction),
    action: `/interaction/${interaction.uid}/login`,
    abortAction: `/interaction/${interaction.uid}/abort`,
    demoUsers: demoUsersText(),
    ...model,
  });
}

async function consentPage(deps: InteractionDeps, interaction: Interaction) {
  const details = ConsentDetailsSchema.parse(interaction.prompt.details);
  const clientId = String(interaction.params['client_id']);
  return deps.render('dev/consent', {
    title: 'Allow access?',
    brand: deps.brand,
    signedInAs: devUsers.find((u) => deps.subjectOf(u.login) === interaction.session?.accountId)?.login,
    clientName: await clientName(deps, interaction),
    // A self-registered client's name is its own claim: show what identifies it and where the code goes.
    thirdParty: deps.staticClientIds.has(clientId)
      ? undefined
      : { clientId, returnsTo: new URL(String(interaction.params['redirect_uri'])).origin },
    oidcScopes: details.missingOIDCScope ?? [],
    resources: Object.entries(details.missingResourceScopes ?? {}).map(([identifier, scopes]) => ({
      identifier,
      scopes,
    })),
    action: `/interaction/${interaction.uid}/confirm`,
    abortAction: `/interaction/${interaction.uid}/abort`,
  });
}

function parseForm<T>(schema: z.ZodType<T>, req: Request): T {
  return parse(schema, req.body ?? {});
}

function parse<T>(schema: z.ZodType<T>, input: unknown): T {
  const result = schema.safeParse(input);
  if (!result.success) throw new InvalidInputError('The form was not filled in as expected.', { cause: result.error });
  return result.data;
}
