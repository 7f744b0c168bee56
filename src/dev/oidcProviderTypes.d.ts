// oidc-provider 9 ships no type declarations. These cover only what src/dev/
// uses, written against lib/provider.js and lib/helpers/defaults.js (9.13).
// If @types/oidc-provider is added to package.json, delete this file.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export type UnknownObject = Record<string, unknown>;

  export interface KoaContextWithOIDC {
    body: unknown;
    type: string;
    status: number;
    host: string;
    set(field: string, value: string): void;
    response: { get(field: string): string };
    oidc: {
      params?: UnknownObject;
      client?: Client;
      /** The matched route's name, e.g. 'registration'. */
      route?: string;
      /** What the request loaded, by model name (AccessToken, RefreshToken, Client…). */
      entities: Partial<Record<string, TokenLike>>;
      urlFor(name: string, options?: UnknownObject): string;
    };
  }

  export interface AccountClaims {
    sub: string;
    [claim: string]: unknown;
  }

  export interface Account {
    accountId: string;
    claims(use: string, scope: string): AccountClaims | Promise<AccountClaims>;
  }

  export interface ClientMetadata {
    client_id: string;
    client_secret?: string;
    client_name?: string;
    redirect_uris?: string[];
    post_logout_redirect_uris?: string[];
    grant_types?: string[];
    response_types?: string[];
    token_endpoint_auth_method?: string;
    id_token_signed_response_alg?: string;
    application_type?: 'web' | 'native';
    scope?: string;
  }

  export interface Client {
    clientId: string;
    clientName?: string;
    redirectUris: string[];
    grantTypeAllowed(type: string): boolean;
  }

  export interface ResourceServerInfo {
    scope: string;
    audience?: string;
    accessTokenTTL?: number;
    accessTokenFormat?: 'opaque' | 'jwt';
    jwt?: { sign?: { alg: string } };
  }

  export interface TokenLike {
    resourceServer?: { accessTokenTTL?: number };
    /** The model's name: AccessToken, RefreshToken, ClientCredentials… */
    kind?: string;
    clientId?: string;
  }

  export type TtlFunction = (ctx: KoaContextWithOIDC, token: TokenLike, client: Client) => number;

  export interface ErrorOut {
    error: string;
    error_description?: string;
    scope?: string;
    state?: string;
  }

  export type AdapterPayload = Record<string, unknown>;

  /** lib/adapters/memory_adapter.js is the reference implementation. */
  export interface Adapter {
    upsert(id: string, payload: AdapterPayload, expiresIn: number | undefined): Promise<void>;
    find(id: string): Promise<AdapterPayload | undefined>;
    findByUid(uid: string): Promise<AdapterPayload | undefined>;
    findByUserCode(userCode: string): Promise<AdapterPayload | undefined>;
    consume(id: string): Promise<void>;
    destroy(id: string): Promise<void>;
    revokeByGrantId(grantId: string): Promise<void>;
  }

  export type AdapterFactory = (model: string) => Adapter;

  export interface Configuration {
    adapter?: AdapterFactory;
    clients?: ClientMetadata[];
    clientDefaults?: Partial<ClientMetadata>;
    jwks?: { keys: UnknownObject[] };
    cookies?: {
      names?: { session?: string; interaction?: string; resume?: string };
      keys?: string[];
      long?: UnknownObject;
      short?: UnknownObject;
    };
    claims?: Record<string, string[] | null>;
    scopes?: string[];
    responseTypes?: string[];
    clientAuthMethods?: string[];
    pkce?: { required?: (ctx: KoaContextWithOIDC, client: Client) => boolean };
    findAccount?: (ctx: KoaContextWithOIDC, sub: string) => Promise<Account | undefined>;
    issueRefreshToken?: (ctx: KoaContextWithOIDC, client: Client, code: unknown) => Promise<boolean>;
    expiresWithSession?: (ctx: KoaContextWithOIDC, code: unknown) => Promise<boolean>;
    rotateRefreshToken?: boolean | ((ctx: KoaContextWithOIDC) => boolean | Promise<boolean>);
    extraTokenClaims?: (ctx: KoaContextWithOIDC, token: { accountId?: string }) => Promise<UnknownObject | undefined>;
    interactions?: { url?: (ctx: KoaContextWithOIDC, interaction: Interaction) => Promise<string> };
    renderError?: (ctx: KoaContextWithOIDC, out: ErrorOut, error: Error) => Promise<void>;
    ttl?: Record<string, number | TtlFunction>;
    /** `validator` runs for every client, static or not, and may change `metadata` (defaults.js). */
    extraClientMetadata?: {
      properties: string[];
      validator: (ctx: KoaContextWithOIDC | undefined, key: string, value: unknown, metadata: ClientMetadata) => void;
    };
    /** Used for every outgoing request (Client ID Metadata Documents among them). */
    fetch?: (url: string | URL, options: RequestInit) => Promise<Response>;
    features?: {
      registration?: { enabled: boolean; initialAccessToken?: boolean; issueRegistrationAccessToken?: boolean };
      clientIdMetadataDocument?: {
        enabled: boolean;
        /** The experimental draft's version this code was written against. */
        ack?: string;
        allowFetch?: (ctx: KoaContextWithOIDC | undefined, clientId: string) => Promise<boolean>;
        allowClient?: (ctx: KoaContextWithOIDC | undefined, client: Client) => Promise<boolean>;
      };
      devInteractions?: { enabled: boolean };
      revocation?: {
        enabled: boolean;
        allowedPolicy?: (ctx: KoaContextWithOIDC, client: Client, token: TokenLike) => Promise<boolean>;
      };
      userinfo?: { enabled: boolean };
      rpInitiatedLogout?: {
        enabled: boolean;
        logoutSource?: (ctx: KoaContextWithOIDC, form: string) => Promise<void>;
        postLogoutSuccessSource?: (ctx: KoaContextWithOIDC) => Promise<void>;
      };
      resourceIndicators?: {
        enabled: boolean;
        defaultResource?: (
          ctx: KoaContextWithOIDC,
          client: Client,
          oneOf?: string[],
        ) => Promise<string | string[] | undefined>;
        useGrantedResource?: (ctx: KoaContextWithOIDC, model: unknown) => Promise<boolean>;
        getResourceServerInfo?: (
          ctx: KoaContextWithOIDC,
          resourceIndicator: string,
          client: Client,
        ) => Promise<ResourceServerInfo>;
      };
    };
  }

  export interface PromptDetail {
    name: string;
    reasons: string[];
    details: UnknownObject;
  }

  export interface Interaction {
    uid: string;
    prompt: PromptDetail;
    params: UnknownObject;
    session?: { accountId?: string; uid?: string };
    grantId?: string;
  }

  export interface InteractionResults {
    login?: { accountId: string; remember?: boolean };
    consent?: { grantId?: string };
    error?: string;
    error_description?: string;
  }

  export class Grant {
    constructor(properties: { accountId: string; clientId: string });
    addOIDCScope(scope: string): void;
    addOIDCClaims(claims: string[]): void;
    addResourceScope(resource: string, scope: string): void;
    save(): Promise<string>;
  }

  export class Provider {
    constructor(issuer: string, configuration?: Configuration);
    readonly issuer: string;
    proxy: boolean;
    readonly Client: { find(id: string): Promise<Client | undefined> };
    readonly Grant: typeof Grant & { find(id: string): Promise<Grant | undefined> };
    /** Opaque access tokens by value (lib/models/access_token.js). */
    readonly AccessToken: {
      find(value: string): Promise<{ accountId: string; isExpired: boolean; scope?: string } | undefined>;
    };
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    use(middleware: (ctx: KoaContextWithOIDC, next: () => Promise<void>) => Promise<void>): this;
    on(event: string, listener: (...args: unknown[]) => void): this;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<Interaction>;
    interactionFinished(
      req: IncomingMessage,
      res: ServerResponse,
      result: InteractionResults,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<void>;
  }

  export namespace errors {
    class OIDCProviderError extends Error {
      error: string;
      status: number;
      error_description?: string;
    }
    class InvalidTarget extends OIDCProviderError {
      constructor(description?: string);
    }
    class SessionNotFound extends OIDCProviderError {}
    class InvalidClientMetadata extends OIDCProviderError {
      constructor(description?: string);
    }
  }

  export default Provider;
}
