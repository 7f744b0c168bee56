import { Router } from 'express';

export interface ProtectedResourceOptions {
  mcpResourceUrl: string;
  issuer: string;
  scope: string;
}

/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) for the MCP endpoint, at
 * the root and at the path-inserted location (RFC 9728 §3.1). Public: any
 * origin may read it.
 */
export function protectedResourceRoutes(options: ProtectedResourceOptions): Router {
  const router = Router();
  const pathInserted = `/.well-known/oauth-protected-resource${new URL(options.mcpResourceUrl).pathname}`;
  const document = {
    resource: options.mcpResourceUrl,
    authorization_servers: [options.issuer],
    scopes_supported: [options.scope],
    bearer_methods_supported: ['header'],
    resource_name: 'Connect Broker',
  };
  router.get(['/.well-known/oauth-protected-resource', pathInserted], (_req, res) => {
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.json(document);
  });
  return router;
}

export function resourceMetadataUrl(mcpResourceUrl: string): string {
  const url = new URL(mcpResourceUrl);
  return `${url.origin}/.well-known/oauth-protected-resource${url.pathname}`;
}
