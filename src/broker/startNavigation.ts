import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import { withTransaction } from '../db/transaction.js';
import { NotFoundError, UnavailableError } from '../errors/appError.js';
import { findSwitch, URL_ELICITATION_PAUSED } from '../ledger/operatorRepo.js';
import { checkUrl } from '../security/urlPolicy.js';
import { digestOf, randomToken } from '../shared/tokens.js';
import { advance, recordWithoutMoving } from './advance.js';
import { CALLBACK_PATH, DONE_PATH, type BrokerDeps } from './brokerDeps.js';
import type { Lineage, NavigationRecord } from './navigationRecord.js';
import { insertNavigation } from './navigationRepo.js';

export interface NavigationRequest {
  principal: Principal;
  clientId: string | undefined;
  tool: string;
  requestDigest: string;
  provider: string;
  purpose: string;
  lineage: Lineage;
  /**
   * The principal is already connected to the provider: the record is born
   * verified (no link is presented), for an operation that must still pass an
   * approval and be accepted once (a high-risk tool).
   */
  alreadyConnected?: boolean;
  /** An operator's re-issue (issue #6): the flow this one replaces, in the same lineage. */
  reissue?: { from: string; actor: string; reason: string; destination: { scheme: string; host: string } };
}

/**
 * Creates an elicitationNavigation.v1 record for a connection the caller
 * lacks and returns the connect link: our own origin, a random handle, no
 * token, no personal data, nothing pre-authenticated (spec brief §5.6).
 */
export async function startNavigation(deps: BrokerDeps, request: NavigationRequest): Promise<{ navigation: NavigationRecord; connectUrl: string }> {
  // The kill switch stops new links; an operation of a user already connected presents none.
  const paused = request.alreadyConnected ? undefined : await findSwitch(deps.pool, URL_ELICITATION_PAUSED);
  if (paused?.engaged) throw new UnavailableError(`New connections are paused by the operator (${paused.reason}). Try again later.`, { expose: true });
  // A re-issue keeps the destination its user was shown (and works from the CLI, which runs no provider clients).
  const client = deps.providers.get(request.provider);
  if (!client && !request.reissue) throw new NotFoundError(`No provider ${request.provider} is configured.`);
  const destination = request.reissue?.destination ?? (await client!.destination());
  const handle = randomToken();
  const now = deps.clock.now();
  const created: NavigationRecord = {
    id: randomUUID(),
    recordVersion: 'elicitationNavigation.v1',
    serverId: deps.publicUrl.origin,
    subject: request.principal,
    clientId: request.clientId,
    requestDigest: request.requestDigest,
    tool: request.tool,
    targetScheme: destination.scheme,
    targetHost: destination.host,
    redirectPolicy: { callback: new URL(CALLBACK_PATH, deps.publicUrl).href, done: DONE_PATH },
    purpose: request.purpose,
    provider: request.provider,
    handleDigest: digestOf(handle),
    stateNonceDigest: undefined,
    sessionGeneration: 0,
    lineage: request.lineage,
    retryGeneration: 0,
    status: 'CREATED',
    rowVersion: 1,
    createdAt: now,
    expiresAt: new Date(now.getTime() + deps.navigationTtlSeconds * 1000),
    updatedAt: now,
  };
  const connectUrl = checkUrl(new URL(`/connect/${handle}`, deps.publicUrl).href, { allowLoopback: deps.allowLoopback, allowIpLiteral: true }, 'connect link').href;
  const evidence = { tool: request.tool, provider: request.provider, lineage: request.lineage, ...(request.alreadyConnected ? { alreadyConnected: true } : {}), ...(request.reissue ? { reissuedFrom: request.reissue.from, reason: request.reissue.reason } : {}) };
  const by = { actor: request.reissue?.actor ?? `mcp:${request.principal.sub}`, now, evidence };
  const navigation = await withTransaction(deps.pool, async (tx) => {
    await insertNavigation(tx, created, request.reissue?.from);
    await recordWithoutMoving(tx, created, 'created', by);
    return advance(tx, created, request.alreadyConnected ? 'connection_present' : 'present', by);
  });
  return { navigation, connectUrl };
}
