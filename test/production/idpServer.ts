import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import express, { type Request, type Response } from 'express';
import { exportJWK, generateKeyPair } from 'jose';
import { type Configuration, errors, Provider } from 'oidc-provider';
import { z } from 'zod';
import { memoryAdapter } from '../../src/dev/devProviderAdapter.js';

// The rehearsal's identity provider, in its own process: oidc-provider set up as an enterprise IdP
// is (not the development stack's): a confidential client for the broker's sign-in with its one
// redirect URI, a pre-registered public client for MCP hosts (authorization code + PKCE, loopback
// redirect, RFC 8707 resource = the broker's /mcp, JWT access tokens with scope `mcp`), users in a
// directory with passwords, and roles in the claim the deployment's OPERATOR_ROLE_CLAIM names (a
// dotted name is nested, as Keycloak's realm_access.roles).
// First-party clients are consented by policy (no consent page). Started by idpProcess.ts's caller
// with its settings as one JSON argument; prints `READY` once it listens.

const Settings = z.strictObject({
  port: z.number().int(),
  issuer: z.url(),
  certFile: z.string(),
  keyFile: z.string(),
  broker: z.strictObject({ clientId: z.string(), clientSecret: z.string(), redirectUri: z.url() }),
  hostClientId: z.string(),
  mcpResource: z.url(),
  roleClaim: z.string(),
  users: z.array(
    z.strictObject({ login: z.string(), password: z.string(), name: z.string(), roles: z.array(z.string()) }),
  ),
});
type Settings = z.infer<typeof Settings>;

async function providerFor(settings: Settings): Promise<Provider> {
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), alg: 'ES256', use: 'sig', kid: randomBytes(8).toString('hex') };
  const userOf = (sub: string) => settings.users.find((u) => u.login === sub);
  const [topClaim = 'roles', ...nested] = settings.roleClaim.split('.');
  const rolesClaim = (roles: string[]) => ({
    [topClaim]: nested.reduceRight<unknown>((inner, name) => ({ [name]: inner }), roles),
  });
  const config: Configuration = {
    clients: [
      {
        client_id: settings.broker.clientId,
        client_secret: settings.broker.clientSecret,
        client_name: 'Connect Broker',
        redirect_uris: [settings.broker.redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
      {
        client_id: settings.hostClientId,
        client_name: 'MCP host',
        token_endpoint_auth_method: 'none',
        application_type: 'native',
        // RFC 8252 §7.3: a native client's loopback redirect, any port at the time of the request.
        redirect_uris: ['http://127.0.0.1/oauth/callback'],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      },
    ],
    clientDefaults: { id_token_signed_response_alg: 'ES256' },
    responseTypes: ['code'],
    jwks: { keys: [jwk] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    claims: { openid: ['sub'], profile: ['name', 'preferred_username', topClaim] },
    scopes: ['openid', 'offline_access', 'profile'],
    findAccount: async (_ctx, sub) => {
      const user = userOf(sub);
      if (!user) return undefined;
      return {
        accountId: sub,
        claims: () => ({ sub, name: user.name, preferred_username: user.login, ...rolesClaim(user.roles) }),
      };
    },
    // The roles ride in the access tokens too: the operator CLI presents one.
    extraTokenClaims: async (_ctx, token) => {
      const user = token.accountId ? userOf(token.accountId) : undefined;
      return user ? rolesClaim(user.roles) : undefined;
    },
    pkce: { required: () => true },
    adapter: memoryAdapter(),
    features: {
      devInteractions: { enabled: false },
      userinfo: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (_ctx, _client, oneOf) => oneOf ?? undefined,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, indicator) => {
          if (indicator !== settings.mcpResource) throw new errors.InvalidTarget();
          return {
            scope: 'mcp',
            audience: settings.mcpResource,
            accessTokenTTL: 600,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'ES256' } },
          };
        },
      },
    },
  } as Configuration;
  return new Provider(settings.issuer, config);
}

function loginPage(uid: string, client: string, error = ''): string {
  return `<!doctype html><html lang="en"><head><title>Sign in</title><link rel="icon" href="data:,"></head><body>
<h1>Sign in to ${client}</h1>${error ? `<p role="alert">${error}</p>` : ''}
<form method="post" action="/interaction/${uid}/login">
<label>Username <input name="login" autocomplete="username"></label>
<label>Password <input name="password" type="password" autocomplete="current-password"></label>
<button type="submit">Sign in</button></form></body></html>`;
}

async function main(): Promise<void> {
  const settings = Settings.parse(JSON.parse(process.argv[2] ?? '{}'));
  const provider = await providerFor(settings);
  const app = express();
  app.disable('x-powered-by');
  app.get('/interaction/:uid', async (req: Request, res: Response) => {
    const interaction = await provider.interactionDetails(req, res);
    const clientId = String(interaction.params['client_id']);
    if (interaction.prompt.name === 'login') return void res.type('html').send(loginPage(interaction.uid, clientId));
    // Consent: the organisation's own clients are consented by policy, every scope and resource asked.
    const details = interaction.prompt.details as {
      missingOIDCScope?: string[];
      missingOIDCClaims?: string[];
      missingResourceScopes?: Record<string, string[]>;
    };
    const accountId = interaction.session?.accountId;
    if (!accountId) return void res.status(400).send('no session');
    const existing = interaction.grantId ? await provider.Grant.find(interaction.grantId) : undefined;
    const grant = existing ?? new provider.Grant({ accountId, clientId });
    if (details.missingOIDCScope) grant.addOIDCScope(details.missingOIDCScope.join(' '));
    if (details.missingOIDCClaims) grant.addOIDCClaims(details.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(details.missingResourceScopes ?? {}))
      grant.addResourceScope(indicator, scopes.join(' '));
    const grantId = await grant.save();
    await provider.interactionFinished(
      req,
      res,
      { consent: existing ? {} : { grantId } },
      { mergeWithLastSubmission: true },
    );
  });
  app.post('/interaction/:uid/login', express.urlencoded({ extended: false, limit: '4kb' }), async (req, res) => {
    const interaction = await provider.interactionDetails(req, res);
    const body = req.body as { login?: unknown; password?: unknown };
    const user = settings.users.find((u) => u.login === body.login && u.password === body.password);
    if (!user)
      return void res
        .status(401)
        .type('html')
        .send(loginPage(interaction.uid, 'continue', 'Wrong username or password.'));
    await provider.interactionFinished(
      req,
      res,
      { login: { accountId: user.login } },
      { mergeWithLastSubmission: false },
    );
  });
  app.use(provider.callback());
  const server = createServer(
    { cert: readFileSync(settings.certFile), key: readFileSync(settings.keyFile) },
    (req, res) => app(req, res),
  );
  server.listen(settings.port, '127.0.0.1', () => process.stdout.write(`READY ${settings.issuer}\n`));
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

await main();
