import type { Principal } from '../auth/principal.js';
import { samePrincipal } from '../auth/principal.js';
import { withTransaction } from '../db/transaction.js';
import { ConflictError, ForbiddenError, NotFoundError, UnavailableError } from '../errors/appError.js';
import { readSwitchHoldingPause, switchEngaged, URL_ELICITATION_PAUSED } from '../ledger/operatorRepo.js';
import { pendingAuthorizationAlongside, pendingAuthorizationInsert, pkceAad } from '../oauth/pendingAuthRepo.js';
import { missingScopes, scopesToRequest } from '../providers/scopes.js';
import { accountLabelOf } from '../secrets/connectionsRepo.js';
import { flowTargetOf, targetConnectionOf } from '../broker/startReconnect.js';
import { checkUrl } from '../security/urlPolicy.js';
import { digestOf } from '../shared/tokens.js';
import { advance, advanceUnlessMoved, recordRefusal } from '../broker/advance.js';
import type { BrokerDeps } from '../broker/brokerDeps.js';
import { consentAlongside, recordConsent } from './consentRepo.js';
import type { NavigationRecord } from '../flow/navigationRecord.js';
import { findNavigationByHandle, lockNavigation } from '../broker/navigationRepo.js';
import { consentableStates, declinedStates, RECONNECT, State, verifiedStates } from '../flow/navigationStates.js';
import { inFlowSpan } from '../flow/flowSpan.js';

const PENDING_TTL_MS = 10 * 60 * 1000;

export type ConnectView =
  | { kind: 'sign_in' }
  | { kind: 'mismatch' }
  | { kind: 'closed'; reason: 'expired' | 'declined' | 'verified' }
  | {
      kind: 'review';
      navigation: NavigationRecord;
      providerName: string;
      destination: string;
      /** A second consent: the account already connected, and the scopes this one adds to its grant. */
      grows: { account: string | undefined; addedScopes: string[] } | undefined;
      /** A reconnect the user asked for on the connections page, and the account it reconnects. */
      reconnect: { account: string | undefined } | undefined;
      /** "Add another account" (the connections page): sign in at the provider as the account to add. */
      addsAccount: boolean;
    };

async function byHandle(deps: BrokerDeps, handle: string): Promise<NavigationRecord> {
  const navigation = /^[A-Za-z0-9_-]{43}$/.test(handle)
    ? await findNavigationByHandle(deps.pool, digestOf(handle))
    : undefined;
  if (!navigation) throw new NotFoundError('This connect link is not known. Go back to your app and try again.');
  return navigation;
}

function closedReason(deps: BrokerDeps, navigation: NavigationRecord): 'expired' | 'declined' | 'verified' | undefined {
  if (verifiedStates.has(navigation.status)) return 'verified';
  if (declinedStates.has(navigation.status)) return 'declined';
  if (
    navigation.status === State.EXPIRED ||
    navigation.expiresAt <= deps.clock.now() ||
    !consentableStates.has(navigation.status)
  )
    return 'expired';
  return undefined;
}

/** Refuses a browser that is not the navigation's subject, leaving a ledger entry and binding nothing. */
async function refuseMismatch(
  deps: BrokerDeps,
  navigation: NavigationRecord,
  browser: Principal,
  where: string,
): Promise<void> {
  const recorded = await withTransaction(deps.pool, (tx) =>
    recordRefusal(
      tx,
      navigation,
      'subject_mismatch',
      {
        actor: `browser:${browser.sub}`,
        now: deps.clock.now(),
        evidence: { where, browserIss: browser.iss, browserSub: browser.sub },
      },
      deps.quotas.refusalsPerFlow,
    ),
  );
  deps.logger.warn({ navigationId: navigation.id, where, recorded }, 'connect link opened by another user');
}

/**
 * GET /connect/{handle}: what the page shows. Changes no state: a prefetch
 * or a link scanner burns nothing (only a subject mismatch is recorded).
 */
export async function viewConnect(
  deps: BrokerDeps,
  handle: string,
  browser: Principal | undefined,
): Promise<ConnectView> {
  const startedAt = Date.now();
  const navigation = await byHandle(deps, handle);
  return inFlowSpan('connect page', navigation, startedAt, () => viewOf(deps, navigation, browser));
}

async function viewOf(
  deps: BrokerDeps,
  navigation: NavigationRecord,
  browser: Principal | undefined,
): Promise<ConnectView> {
  if (!browser) return { kind: 'sign_in' };
  if (!samePrincipal(browser, navigation.subject)) {
    await refuseMismatch(deps, navigation, browser, 'connect_page');
    return { kind: 'mismatch' };
  }
  const reason = closedReason(deps, navigation);
  if (reason) return { kind: 'closed', reason };
  const client = deps.providers.get(navigation.provider);
  if (!client) throw new NotFoundError(`Provider ${navigation.provider} is no longer configured.`);
  const existing = await targetConnectionOf(deps.pool, navigation);
  const addedScopes = existing ? missingScopes(client.provider, existing.grantedScopes, client.provider.scopes) : [];
  const account = existing && accountLabelOf(existing);
  const target = flowTargetOf(navigation);
  const reconnect = target.kind === 'reconnect';
  return {
    kind: 'review',
    navigation,
    providerName: client.provider.displayName,
    destination: `${navigation.targetScheme}://${navigation.targetHost}`,
    grows:
      existing && addedScopes.length > 0 && navigation.lineage !== RECONNECT ? { account, addedScopes } : undefined,
    reconnect: reconnect ? { account } : undefined,
    addsAccount: target.kind === 'add',
  };
}

/** USER_REVIEW → NAVIGATION_ACCEPTED → OUT_OF_BAND_PENDING, or the last step only, or none. */
const consentSteps = (navigation: NavigationRecord): 'browser_consent'[] =>
  Array<'browser_consent'>(
    navigation.status === State.USER_REVIEW ? 2 : navigation.status === State.NAVIGATION_ACCEPTED ? 1 : 0,
  ).fill('browser_consent');

/**
 * POST /connect/{handle}: the signed-in subject's explicit consent. Records
 * the consent receipt, moves the navigation to OUT_OF_BAND_PENDING and stores
 * a one-time OAuth transaction (state digest, sealed PKCE verifier, nonce,
 * exact redirect URI, browser subject); returns the provider's authorize URL.
 */
export async function consentToConnect(deps: BrokerDeps, handle: string, browser: Principal): Promise<URL> {
  const startedAt = Date.now();
  const found = await byHandle(deps, handle);
  return inFlowSpan('connect consent', found, startedAt, () => consent(deps, found, browser));
}

async function consent(deps: BrokerDeps, found: NavigationRecord, browser: Principal): Promise<URL> {
  if (!samePrincipal(browser, found.subject)) {
    await refuseMismatch(deps, found, browser, 'consent');
    throw new ForbiddenError('This connect link belongs to another user. Nothing was connected.');
  }
  const client = deps.providers.get(found.provider);
  if (!client) throw new NotFoundError(`Provider ${found.provider} is no longer configured.`);
  const existing = await targetConnectionOf(deps.pool, found);
  const requestedScopes = scopesToRequest(client.provider, existing?.grantedScopes ?? []);
  const authorization = await client.beginAuthorization(found.redirectPolicy.callback, requestedScopes);
  const policy = { allowLoopback: deps.allowLoopback, expectedHost: found.targetHost };
  const target = checkUrl(`${authorization.url.origin}${authorization.url.pathname}`, policy, 'authorization endpoint');
  const now = deps.clock.now();
  const stateDigest = digestOf(authorization.state);
  const sealed = deps.box.seal(authorization.codeVerifier, pkceAad(stateDigest, found.id));
  const pending = {
    stateDigest,
    navigationId: found.id,
    provider: found.provider,
    codeVerifierSealed: sealed.ciphertext,
    keyId: sealed.keyId,
    nonce: authorization.nonce,
    redirectUri: found.redirectPolicy.callback,
    browserIss: browser.iss,
    browserSub: browser.sub,
    createdAt: now,
    // Never outlives the navigation it belongs to.
    expiresAt: new Date(Math.min(now.getTime() + PENDING_TTL_MS, found.expiresAt.getTime())),
    requestedScopes,
  };
  const destination = `${target.protocol}//${target.host}`;
  const by = { actor: `browser:${browser.sub}`, now, evidence: { destination: target.host } };
  // The flow as read above, moved by compare-and-set, which holds its row from then on as the lock
  // would, with the consent receipt and the OAuth transaction, in one statement that reads the kill
  // switch as a pause waits for it (operatorRepo.ts switchEngaged): the switch also stops links
  // issued before it, and nobody is sent to a provider.
  const moved =
    !closedReason(deps, found) && consentSteps(found).length > 0
      ? await advanceUnlessMoved(deps.pool, found, consentSteps(found), by, {
          stateNonceDigest: stateDigest,
          unless: switchEngaged(URL_ELICITATION_PAUSED),
          alongside: [consentAlongside(found.id, browser, destination, now), pendingAuthorizationAlongside(pending)],
        })
      : undefined;
  if (moved) return authorization.url;
  // Not moved: the switch is engaged, or this consent does not move the flow, or another writer
  // moved it meanwhile (a second consent at once). Locked, it is decided on again.
  await withTransaction(deps.pool, async (tx) => {
    const paused = await readSwitchHoldingPause(tx, URL_ELICITATION_PAUSED);
    if (paused?.engaged)
      throw new UnavailableError(
        `Connecting is paused by the operator (${paused.reason}). Nothing was sent to the provider; try again later.`,
        { expose: true },
      );
    const locked = await lockNavigation(tx, found.id);
    if (!locked) throw new NotFoundError('This connect link is not known.');
    const reason = closedReason(deps, locked);
    if (reason)
      throw new ConflictError(
        reason === 'verified'
          ? 'This service is already connected. Return to your app.'
          : 'This connect link has expired or was declined. Return to your app and try again.',
      );
    const steps = consentSteps(locked);
    if (steps.length > 0) await advance(tx, locked, steps, by, { stateNonceDigest: stateDigest });
    await recordConsent(tx, locked.id, browser, destination, now, pendingAuthorizationInsert(pending));
  });
  return authorization.url;
}
