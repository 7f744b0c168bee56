import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import { MissingKeyError } from '../crypto/secretBox.js';
import { withTransaction } from '../db/transaction.js';
import { allOf, type SqlPart } from '../db/alongside.js';
import type { Queryable } from '../db/pool.js';
import { ConflictError, NotFoundError, RateLimitedError, UnavailableError } from '../errors/appError.js';
import { findSwitch, switchReleased, URL_ELICITATION_PAUSED } from '../ledger/operatorRepo.js';
import { checkUrl } from '../security/urlPolicy.js';
import { digestOf, randomToken } from '../shared/tokens.js';
import { insertAdvanced } from './advance.js';
import { callbackPathFor, DONE_PATH, type BrokerDeps } from './brokerDeps.js';
import type { NavigationRecord } from '../flow/navigationRecord.js';
import {
  countQuotaFlows,
  findOpenFlow,
  findSealedHandle,
  insertNavigationWrite,
  lockPrincipalQuota,
  quotasAllow,
  type OperationKey,
} from './navigationRepo.js';
import { State, type FlowLineage } from '../flow/navigationStates.js';
import { inSpan, markRequest } from '../telemetry/spans.js';
import { activeTraceparent } from '../telemetry/traceContext.js';

export interface NavigationRequest {
  principal: Principal;
  clientId: string | undefined;
  tool: string;
  requestDigest: string;
  provider: string;
  purpose: string;
  /** A tool's flow, on the lineage of the host's call; or a reconnect, which has no tool (broker/startReconnect.ts). */
  lineage: FlowLineage;
  /**
   * The principal is already connected to the provider: the record is born
   * verified (no link is presented), for an operation that must still pass an
   * approval and be accepted once (a high-risk tool).
   */
  alreadyConnected?: boolean;
  /** An operator's re-issue: the flow this one replaces, in the same lineage. */
  reissue?: { from: string; actor: string; reason: string; destination: { scheme: string; host: string } };
}

/**
 * Creates an elicitationNavigation.v1 record for a connection the caller
 * lacks and returns the connect link: our own origin, a random handle, no
 * token, no personal data, nothing pre-authenticated (MCP 2025-11-25 and
 * 2026-07-28, Elicitation, Safe URL Handling).
 */
export function startNavigation(
  deps: BrokerDeps,
  request: NavigationRequest,
): Promise<{ navigation: NavigationRecord; connectUrl: string }> {
  markRequest({ 'broker.lineage': request.lineage });
  const attributes = {
    'broker.lineage': request.lineage,
    'broker.provider': request.provider,
    'broker.tool': request.tool,
  };
  return inSpan('broker startNavigation', attributes, async (span) => {
    const started = await createNavigation(deps, request);
    span.setAttribute('broker.navigation.id', started.navigation.id);
    return started;
  });
}

async function createNavigation(
  deps: BrokerDeps,
  request: NavigationRequest,
): Promise<{ navigation: NavigationRecord; connectUrl: string }> {
  // A re-issue keeps the destination its user was shown (and works from the CLI, which runs no provider clients).
  const client = deps.providers.get(request.provider);
  if (!client && !request.reissue) throw new NotFoundError(`No provider ${request.provider} is configured.`);
  const destination = request.reissue?.destination ?? (await client!.destination());
  const handle = randomToken();
  const now = deps.clock.now();
  // This span's context: the flow's browser leg, another request, continues its trace (connectFlow.ts).
  const traceParent = activeTraceparent();
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
    redirectPolicy: { callback: new URL(callbackPathFor(request.provider), deps.publicUrl).href, done: DONE_PATH },
    purpose: request.purpose,
    provider: request.provider,
    handleDigest: digestOf(handle),
    stateNonceDigest: undefined,
    sessionGeneration: 0,
    lineage: request.lineage,
    retryGeneration: 0,
    status: State.CREATED,
    rowVersion: 1,
    createdAt: now,
    expiresAt: new Date(now.getTime() + deps.navigationTtlSeconds * 1000),
    updatedAt: now,
    ...(traceParent && { traceParent }),
  };
  const connectUrl = connectLink(deps, handle);
  const evidence = {
    tool: request.tool,
    provider: request.provider,
    lineage: request.lineage,
    ...(request.alreadyConnected ? { alreadyConnected: true } : {}),
    ...(request.reissue ? { reissuedFrom: request.reissue.from, reason: request.reissue.reason } : {}),
  };
  const by = { actor: request.reissue?.actor ?? `mcp:${request.principal.sub}`, now, evidence };
  const sealedHandle = deps.box.seal(handle, handleAad(created.id));
  const navigation = await withTransaction(deps.pool, async (tx) => {
    if (!request.reissue) await lockPrincipalQuota(tx, request.principal);
    const born = await insertAdvanced(
      tx,
      created,
      request.alreadyConnected ? 'connection_present' : 'present',
      by,
      (b) => insertNavigationWrite(b, request.reissue?.from, sealedHandle, admission(deps, request, now)),
    );
    return born ?? refuseAdmission(tx, deps, request, now);
  });
  return { navigation, connectUrl };
}

/**
 * What the statement inserting a flow reads first, and inserts it only if it holds: the kill switch
 * stops new links (an operation of a user already connected presents none), and, but for an
 * operator's re-issue, the principal's quotas, under its lock (lockPrincipalQuota).
 */
function admission(deps: BrokerDeps, request: NavigationRequest, now: Date): SqlPart {
  const { quotas } = deps;
  return allOf([
    ...(request.alreadyConnected ? [] : [switchReleased(URL_ELICITATION_PAUSED)]),
    ...(request.reissue
      ? []
      : [
          quotasAllow(request.principal, request.provider, new Date(now.getTime() - HOUR_MS), now, {
            perHour: quotas.navigationsPerHour,
            // A flow born verified presents no link and is not counted as open.
            openPerProvider: request.alreadyConnected ? undefined : quotas.openPerProvider,
          }),
        ]),
  ]);
}

/** Why the admission held a flow back, read again in its transaction (the quota lock still held): thrown. */
async function refuseAdmission(tx: Queryable, deps: BrokerDeps, request: NavigationRequest, now: Date): Promise<never> {
  const paused = request.alreadyConnected ? undefined : await findSwitch(tx, URL_ELICITATION_PAUSED);
  if (paused?.engaged)
    throw new UnavailableError(`New connections are paused by the operator (${paused.reason}). Try again later.`, {
      expose: true,
    });
  if (!request.reissue) await checkQuotas(tx, deps, request, now);
  // Released and within quotas now: the switch was released meanwhile.
  throw new ConflictError('New connections were paused a moment ago. Try again.');
}

/** The AAD of a flow's sealed connect-link handle: the flow itself. */
export const handleAad = (navigationId: string) => `connect-handle\n${navigationId}`;
const connectLink = (deps: BrokerDeps, handle: string) =>
  checkUrl(
    new URL(`/connect/${handle}`, deps.publicUrl).href,
    { allowLoopback: deps.allowLoopback, allowIpLiteral: true },
    'connect link',
  ).href;
const HOUR_MS = 3600_000;

/**
 * The principal's quotas, as the admission read them under its lock: new flows per rolling hour,
 * and open flows per provider (a flow born verified presents no link and is not counted as open).
 * A refusal changes nothing.
 */
async function checkQuotas(tx: Queryable, deps: BrokerDeps, request: NavigationRequest, now: Date): Promise<void> {
  const { quotas } = deps;
  const { recent, open } = await countQuotaFlows(
    tx,
    request.principal,
    request.provider,
    new Date(now.getTime() - HOUR_MS),
    now,
  );
  if (recent.count >= quotas.navigationsPerHour) {
    const retryAfter = ((recent.oldest?.getTime() ?? now.getTime()) + HOUR_MS - now.getTime()) / 1000;
    throw new RateLimitedError(
      `You started ${recent.count} connection flows in the last hour, the most allowed (${quotas.navigationsPerHour}). Retry in ${Math.ceil(retryAfter / 60)} min, or finish a link you already have; nothing was done.`,
      retryAfter,
    );
  }
  if (request.alreadyConnected) return;
  if (open.count >= quotas.openPerProvider) {
    const retryAfter = ((open.firstExpiry?.getTime() ?? now.getTime()) - now.getTime()) / 1000;
    throw new RateLimitedError(
      `You have ${open.count} unfinished links to connect ${request.provider}, the most allowed (${quotas.openPerProvider}): finish or decline one in your app, or retry after the first expires (${open.firstExpiry?.toISOString() ?? 'soon'}); nothing was done.`,
      retryAfter,
    );
  }
}

/**
 * An identical call (same principal, client, tool, arguments and lineage)
 * while its flow is still open gets that flow and its link again, instead of
 * a second flow for one operation.
 */
export async function findReusableNavigation(
  deps: BrokerDeps,
  request: NavigationRequest,
): Promise<{ navigation: NavigationRecord; connectUrl: string } | undefined> {
  const open = await findOpenFlowFor(deps, request);
  const sealed = open ? await findSealedHandle(deps.pool, open.id) : undefined;
  if (!open || !sealed) return undefined;
  let handle: string;
  try {
    handle = deps.box.open(sealed, handleAad(open.id));
  } catch (err) {
    // Its link was sealed under a key SECRET_KEYS no longer holds: a new flow gets a link that opens.
    if (err instanceof MissingKeyError) return undefined;
    throw err;
  }
  return { navigation: open, connectUrl: connectLink(deps, handle) };
}

/** The open, unexpired flow of this operation (principal, client, tool, arguments, lineage), if there is one. */
export async function findOpenFlowFor(
  deps: Pick<BrokerDeps, 'pool' | 'clock'>,
  request: NavigationRequest,
): Promise<NavigationRecord | undefined> {
  return findOpenFlow(deps.pool, operationKey(request), deps.clock.now());
}

/** The operation a request is for, as the navigations record it. */
export const operationKey = (request: NavigationRequest): OperationKey => ({
  subjectIss: request.principal.iss,
  subjectSub: request.principal.sub,
  clientId: request.clientId,
  tool: request.tool,
  requestDigest: request.requestDigest,
  lineage: request.lineage,
});
