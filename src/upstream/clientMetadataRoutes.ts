import { Router } from 'express';
import type { ProviderClient } from '../oauth/providerClient.js';
import { CLIENT_METADATA_ROUTE, clientMetadataDocument } from './clientMetadata.js';

/**
 * GET /oauth/clients/:provider: the broker's Client ID Metadata Document for an upstream MCP
 * server's authorization server, which fetches it to learn the client its client_id names. Public,
 * like any client's metadata: it holds no secret. Any other id falls through to the 404.
 */
export function clientMetadataRoutes(deps: { providers: ReadonlyMap<string, ProviderClient>; publicUrl: URL }): Router {
  const router = Router();
  router.get(CLIENT_METADATA_ROUTE, (req, res, next) => {
    const id = req.params['provider'] ?? '';
    if (deps.providers.get(id)?.provider.upstream === undefined) return next();
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.json(clientMetadataDocument(deps.publicUrl, id));
  });
  return router;
}
