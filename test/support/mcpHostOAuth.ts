import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type {
  OAuthClientMetadata,
  OAuthDiscoveryState,
  OAuthClientProvider,
  StoredOAuthClientInformation,
  StoredOAuthTokens,
} from '@modelcontextprotocol/client';

/** A host's loopback redirect URI (RFC 8252 §7.3): an ephemeral port on 127.0.0.1, as desktop hosts use. */
export interface LoopbackCallback {
  /** e.g. http://127.0.0.1:40123/oauth/callback */
  redirectUrl: string;
  /** The query of the first request to the callback path (the authorization response). */
  received: Promise<URLSearchParams>;
  close(): Promise<void>;
}

export async function listenLoopbackCallback(path = '/oauth/callback'): Promise<LoopbackCallback> {
  let deliver: (params: URLSearchParams) => void = () => undefined;
  const received = new Promise<URLSearchParams>((resolve) => {
    deliver = resolve;
  });
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== path) {
      res.writeHead(404).end();
      return;
    }
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end('<!doctype html><link rel="icon" href="data:,"><title>Done</title><h1>You may close this window</h1>');
    deliver(url.searchParams);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo; // listen() on a TCP port always yields AddressInfo
  return {
    redirectUrl: `http://127.0.0.1:${port}${path}`,
    received,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}

export interface HostOAuthOptions {
  redirectUrl: string;
  clientName: string;
  /** A Client ID Metadata Document URL: the SDK then skips registration and uses it as client_id. */
  clientMetadataUrl?: string;
  /** What a desktop host does with the authorization URL: open it in the user's browser. */
  openAuthorization: (url: URL) => Promise<void>;
}

/**
 * The state an MCP host keeps for one server (the SDK's OAuthClientProvider),
 * in memory: a public client (no secret, PKCE only), as desktop hosts are.
 */
export class InMemoryHostOAuth implements OAuthClientProvider {
  registered: StoredOAuthClientInformation | undefined;
  saved: StoredOAuthTokens | undefined;
  authorizationUrls: URL[] = [];
  readonly clientMetadataUrl?: string;
  private verifier = '';
  private discovery: OAuthDiscoveryState | undefined;

  constructor(private readonly options: HostOAuthOptions) {
    if (options.clientMetadataUrl) this.clientMetadataUrl = options.clientMetadataUrl;
  }

  get redirectUrl(): string {
    return this.options.redirectUrl;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.options.clientName,
      redirect_uris: [this.options.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  clientInformation(): StoredOAuthClientInformation | undefined {
    return this.registered;
  }

  saveClientInformation(info: StoredOAuthClientInformation): void {
    this.registered = info;
  }

  tokens(): StoredOAuthTokens | undefined {
    return this.saved;
  }

  saveTokens(tokens: StoredOAuthTokens): void {
    this.saved = tokens;
  }

  async redirectToAuthorization(url: URL): Promise<void> {
    this.authorizationUrls.push(url);
    await this.options.openAuthorization(url);
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }

  codeVerifier(): string {
    return this.verifier;
  }

  // Kept with the verifier, so the callback leg checks it talks to the server it was sent to.
  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.discovery = state;
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.discovery;
  }
}
