import type { Pool } from '../db/pool.js';
import type { AuthorizationServer, UpstreamDiscovery } from './discovery.js';
import { recordIssuerChange } from './issuerChange.js';
import { findPin, pinIfNone, repin, type IssuerPin, type PinnedEndpoints } from '../oauth/issuerPinsRepo.js';
import { IssuerChangedError } from '../errors/upstreamErrors.js';

export interface IssuerPinDeps {
  pool: Pool;
  now: () => Date;
}

export const endpointsOf = (server: AuthorizationServer): PinnedEndpoints => ({
  authorizationEndpoint: server.authorizationEndpoint,
  tokenEndpoint: server.tokenEndpoint,
  registrationEndpoint: server.registrationEndpoint,
  revocationEndpoint: server.revocationEndpoint,
});

const sameEndpoints = (a: PinnedEndpoints, b: PinnedEndpoints) =>
  a.authorizationEndpoint === b.authorizationEndpoint &&
  a.tokenEndpoint === b.tokenEndpoint &&
  a.registrationEndpoint === b.registrationEndpoint &&
  a.revocationEndpoint === b.revocationEndpoint;

/**
 * Discovery held to the upstream's pinned authorization server: the operator's (`declared`, the
 * PROVIDERS_FILE entry's `issuer`), else the one pinned on first successful use. Discovery that
 * names another, or the pinned issuer with other endpoints, is recorded (issuerChange.ts) and
 * throws IssuerChangedError before anything is sent to it; so does every later resolution until
 * an operator re-pins. A refresh token, a client secret or a registration request therefore only
 * ever reaches the endpoints pinned here.
 */
export async function heldToPin(
  deps: IssuerPinDeps,
  provider: string,
  declared: string | undefined,
  discover: (pinned: string | undefined) => Promise<UpstreamDiscovery>,
): Promise<UpstreamDiscovery> {
  const stored = await findPin(deps.pool, provider);
  // An entry that declares another issuer than the stored pin is the operator's re-pin.
  const pin = stored && (declared === undefined || stored.issuer === declared) ? stored : undefined;
  if (pin?.changedTo !== undefined) throw new IssuerChangedError(provider, pin.issuer, pin.changedTo);
  const expected = declared ?? pin?.issuer;
  const refuse = async (kept: Omit<IssuerPin, 'changedTo' | 'changedAt'>, named: string): Promise<never> => {
    await recordIssuerChange(deps.pool, { provider, pin: kept, named }, deps.now());
    throw new IssuerChangedError(provider, kept.issuer, named);
  };
  let discovery: UpstreamDiscovery;
  try {
    discovery = await discover(expected);
  } catch (err) {
    if (!(err instanceof IssuerChangedError)) throw err;
    // A declared issuer not used yet has no endpoints to keep: the change is recorded against it alone.
    const kept = pin ?? {
      provider,
      issuer: err.pinned,
      endpoints: {} as PinnedEndpoints,
      pinnedBy: 'config',
      pinnedAt: deps.now(),
    };
    return refuse(kept, err.named);
  }
  const server = discovery.authorizationServer;
  const found = { provider, issuer: server.issuer, endpoints: endpointsOf(server), pinnedAt: deps.now() };
  // A declared issuer's first use stores its endpoints (the row may hold none yet).
  const firstUse = pin === undefined || pin.endpoints.tokenEndpoint === undefined;
  if (firstUse && declared !== undefined) {
    await repin(deps.pool, { ...found, pinnedBy: 'config' });
    return discovery;
  }
  const held = firstUse ? await pinIfNone(deps.pool, { ...found, pinnedBy: 'first_use' }) : pin;
  if (held.issuer !== server.issuer || !sameEndpoints(held.endpoints, found.endpoints))
    return refuse(held, server.issuer);
  return discovery;
}

/**
 * A catalog provider's discovered authorization server held to its pin (createProviderClient's
 * `holdDiscovered`): pinned on first use; its endpoints named otherwise later are recorded and
 * refused as an upstream's are. The issuer itself is the entry's (discovery checks it exactly), so a
 * new one is the operator's change of the entry: pinned again, and older grants stay refused
 * (`connections.issuer`).
 */
export async function holdDiscoveredServer(
  deps: IssuerPinDeps,
  provider: string,
  found: { issuer: string } & PinnedEndpoints,
): Promise<void> {
  const { issuer, ...endpoints } = found;
  const stored = await findPin(deps.pool, provider);
  if (stored !== undefined && stored.issuer !== issuer) {
    await repin(deps.pool, { provider, issuer, endpoints, pinnedBy: 'config', pinnedAt: deps.now() });
    return;
  }
  if (stored?.changedTo !== undefined) throw new IssuerChangedError(provider, stored.issuer, stored.changedTo);
  const held =
    stored ??
    (await pinIfNone(deps.pool, { provider, issuer, endpoints, pinnedBy: 'first_use', pinnedAt: deps.now() }));
  if (held.issuer === issuer && sameEndpoints(held.endpoints, endpoints)) return;
  await recordIssuerChange(deps.pool, { provider, pin: held, named: issuer }, deps.now());
  throw new IssuerChangedError(provider, held.issuer, issuer);
}
