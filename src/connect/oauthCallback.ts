import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import { samePrincipal } from '../auth/principal.js';
import { MissingKeyError } from '../crypto/secretBox.js';
import { withTransaction } from '../db/transaction.js';
import { AppError, ConflictError, ForbiddenError, InvalidInputError, NotFoundError } from '../errors/appError.js';
import type { WebhookEvent } from '../events/webhookEvent.js';
import { enqueueEventAlongside } from '../events/webhookOutboxRepo.js';
import { pkceAad, type PendingAuthorization } from '../oauth/pendingAuthRepo.js';
import { claimForCallback } from './callbackRepo.js';
import { scopesToRequest } from '../providers/scopes.js';
import {
  connectionInsertAlongside,
  connectionReplaceAlongside,
  findConnectionsFor,
  secretOwnerOf,
  type ConnectionRecord,
} from '../secrets/connectionsRepo.js';
import { findSecrets } from '../secrets/secretsRepo.js';
import type { Queryable } from '../db/pool.js';
import { flowTargetOf, targetConnectionOf } from '../broker/startReconnect.js';
import { replaceTokensAlongside } from '../secrets/tokenVault.js';
import { digestOf } from '../shared/tokens.js';
import { recordRefusal, type REFUSAL_EVENTS } from '../broker/advance.js';
import type { BrokerDeps } from '../broker/brokerDeps.js';
import type { NavigationRecord } from '../flow/navigationRecord.js';
import { lockOpenNavigationsFor } from '../broker/navigationRepo.js';
import { RECONNECT, State } from '../flow/navigationStates.js';
import { verifyAndSettle } from '../broker/settleOpenFlows.js';
import { reachFaultPoint } from '../shared/faultPoints.js';
import { inFlowSpan } from '../flow/flowSpan.js';

/**
 * GET /oauth/callback/{provider}. Claims the OAuth transaction once, then
 * checks, in order: it belongs to the provider whose path the response came
 * back to (a code is never sent to another provider's token endpoint, RFC
 * 9700 §4.4); it has not expired; the redirect URI is exactly the registered one;
 * the browser is the subject that consented and the navigation's subject;
 * the navigation is waiting for this; the provider did not refuse; and, via
 * openid-client, state, PKCE, `iss` (RFC 9207), nonce and ID Token; then the
 * access token's audience. Only then are the tokens stored and the
 * navigation verified, in one transaction that also signals every instance.
 * Any refusal stores nothing and leaves the flow where it was.
 */
export async function completeCallback(
  deps: BrokerDeps,
  currentUrl: URL,
  /** The browser's signed-in subject, read beside the claim: two reads, one wait. */
  browserOf: () => Promise<Principal | undefined>,
  deliveredTo: string,
): Promise<NavigationRecord> {
  const startedAt = Date.now();
  const state = currentUrl.searchParams.get('state');
  if (!state || state.length > 512)
    throw new InvalidInputError('This page needs the state the service sent back. Start again from your app.');
  const [claimed, browser] = await Promise.all([claimForCallback(deps.pool, digestOf(state)), browserOf()]);
  if (!claimed) {
    deps.logger.warn({ path: currentUrl.pathname }, 'callback with an unknown or already used state');
    throw new InvalidInputError('This sign-in response was already used or is not known. Start again from your app.');
  }
  const { pending, navigation } = claimed;
  if (!navigation) throw new NotFoundError('The connection this response belongs to is gone.');
  return inFlowSpan('connect callback', navigation, startedAt, () =>
    verifyCallback(deps, { currentUrl, state, browser, deliveredTo }, pending, navigation),
  );
}

/** The callback's checks, the code exchange and the verifying transaction, for its claimed transaction and flow. */
async function verifyCallback(
  deps: BrokerDeps,
  request: { currentUrl: URL; state: string; browser: Principal | undefined; deliveredTo: string },
  pending: PendingAuthorization,
  navigation: NavigationRecord,
): Promise<NavigationRecord> {
  const { currentUrl, state, browser, deliveredTo } = request;
  const refuse = async (
    event: (typeof REFUSAL_EVENTS)[number],
    error: AppError,
    evidence: Record<string, unknown> = {},
  ): Promise<never> => {
    const recorded = await withTransaction(deps.pool, (tx) =>
      recordRefusal(
        tx,
        navigation,
        event,
        { actor: `provider:${navigation.provider}`, now: deps.clock.now(), evidence },
        deps.quotas.refusalsPerFlow,
      ),
    );
    if (!recorded)
      deps.logger.warn(
        { navigationId: navigation.id, event },
        'refusal not recorded: the flow holds its quota of refusals',
      );
    throw error;
  };

  if (pending.provider !== deliveredTo || navigation.provider !== deliveredTo) {
    await refuse(
      'callback_redirect_mismatch',
      new ForbiddenError("This response came back to another service's address. Nothing was connected."),
      { deliveredTo, provider: navigation.provider },
    );
  }
  const now = deps.clock.now();
  if (pending.expiresAt <= now || navigation.expiresAt <= now) {
    await refuse(
      'callback_expired',
      new InvalidInputError(
        'This connection took too long and has expired; nothing was connected. Return to your app: it will give you a new link.',
      ),
    );
  }
  if (`${currentUrl.origin}${currentUrl.pathname}` !== pending.redirectUri)
    await refuse('callback_redirect_mismatch', new ForbiddenError('This response came back to the wrong address.'));
  if (
    !browser ||
    !samePrincipal(browser, { iss: pending.browserIss, sub: pending.browserSub }) ||
    !samePrincipal(browser, navigation.subject)
  ) {
    await refuse(
      'subject_mismatch',
      new ForbiddenError('You are not the user who started this connection. Nothing was connected.'),
      { where: 'callback', browserSub: browser?.sub ?? null },
    );
  }
  if (navigation.status !== State.OUT_OF_BAND_PENDING)
    await refuse(
      'callback_out_of_order',
      new ConflictError('This connection is not waiting for a response any more. Return to your app.'),
      { status: navigation.status },
    );
  const providerError = currentUrl.searchParams.get('error');
  if (providerError !== null) {
    const code = /^[a-z_]{1,40}$/.test(providerError) ? providerError : 'error';
    await refuse(
      'provider_refused',
      new InvalidInputError(`The service did not grant access (${code}). You can open the link from your app again.`),
      { error: code },
    );
  }

  const client = deps.providers.get(navigation.provider);
  if (!client) throw new NotFoundError(`Provider ${navigation.provider} is no longer configured.`);
  // The scopes the consent asked for (connectFlow.ts): granted, where the provider's answer names none.
  // A transaction written before they were kept asks the connection what the consent asked.
  const requested =
    pending.requestedScopes ??
    scopesToRequest(client.provider, (await targetConnectionOf(deps.pool, navigation))?.grantedScopes ?? []);
  let grant;
  try {
    grant = await client.completeAuthorization(
      currentUrl,
      pending.redirectUri,
      { state, nonce: pending.nonce, codeVerifier: openVerifier(deps, pending) },
      requested,
    );
  } catch (err) {
    const code = err instanceof AppError ? err.code : 'internal';
    return refuse(
      'callback_failed',
      err instanceof AppError ? err : new AppError('internal', 'Internal error.', { cause: err }),
      { error: code },
    );
  }

  const stored = await withTransaction(deps.pool, async (tx) => {
    // Every open flow of the pair first, in id order, before anything is written: locking only this
    // one, two callbacks of one user (or a callback beside a consent, queued on the ledger's chain
    // lock) would each hold a flow the other must settle, and Postgres would abort one of them.
    const open = await lockOpenNavigationsFor(tx, navigation.subject, navigation.provider);
    // Waiting for this callback, it is one of them, locked and read just now; else it moved meanwhile.
    const locked = open.find((n) => n.id === navigation.id);
    if (locked?.status !== State.OUT_OF_BAND_PENDING)
      throw new ConflictError('This connection was completed meanwhile. Return to your app.');
    const { connection } = grant;
    const into = await connectionToStore(tx, locked, connection.upstreamSubject);
    if ('mismatch' in into) return { mismatch: into.mismatch };
    const existing = into.connection;
    const by = {
      actor: `provider:${locked.provider}`,
      now,
      evidence: {
        upstreamSubject: connection.upstreamSubject,
        grantedScopes: connection.grantedScopes,
        ...(existing && { connectionId: existing.id }),
        ...(!existing && flowTargetOf(locked).kind === 'add' && { addedAccount: true }),
        ...(existing?.upstreamSubject !== undefined &&
          existing.upstreamSubject !== connection.upstreamSubject && { replacedAccount: existing.upstreamSubject }),
      },
    };
    // The issuer the grant came from: its refresh token is only ever sent back there (tokenRefresh.ts).
    const facts = {
      subject: locked.subject,
      provider: locked.provider,
      ...connection,
      navigationId: locked.id,
      issuer: client.provider.issuer,
    };
    const record = { id: existing?.id ?? randomUUID(), ...facts };
    // The connection, its whole token set (a refresh token of the previous grant never outlives it)
    // and its webhook event are written in the statement that verifies and settles the flows, and
    // undone with it when one of them moved meanwhile.
    const { verified } = await verifyAndSettle(tx, locked, ['callback_received', 'callback_verified'], by, open, [
      existing ? connectionReplaceAlongside(record.id, facts, now) : connectionInsertAlongside(record.id, facts, now),
      ...replaceTokensAlongside(deps, secretOwnerOf(record), grant.tokens, locked.id),
      enqueueEventAlongside(connectionCreated(record, locked.id, now)),
    ]);
    reachFaultPoint('callback.before_commit');
    return { verified };
  });
  if ('verified' in stored) return stored.verified;
  const again =
    navigation.lineage === RECONNECT ? 'reconnect from your connections page' : 'open the link from your app again';
  return refuse('account_mismatch', accountMismatch(client.provider.displayName, stored.mismatch, grant, again), {
    connectionId: stored.mismatch.id,
    connectedAs: stored.mismatch.upstreamSubject,
    signedInAs: grant.connection.upstreamSubject,
  });
}

/**
 * Which connection a verified callback stores into, in its transaction: `connection` to update in
 * place (its id kept), none to create one, or the connection whose account the user did not sign in
 * as (refused, and recorded by the caller). The same account as one of the user's connections is
 * always that connection. Otherwise: a reconnect flow (broker/startReconnect.ts) is refused, as the
 * user asked to reconnect that account; an "add another account" flow creates a connection; a tool's
 * flow creates the first, is refused beside a live default (another account is never swapped in under
 * it), and makes a default whose tokens are gone again as the new account. A provider whose accounts
 * cannot be known (an upstream MCP server, identity `none`) records none, so its one connection is
 * always "the same account".
 */
async function connectionToStore(
  tx: Queryable,
  navigation: NavigationRecord,
  account: string | undefined,
): Promise<{ connection: ConnectionRecord | undefined } | { mismatch: ConnectionRecord }> {
  const all = await findConnectionsFor(tx, navigation.subject, navigation.provider);
  const same = all.find((c) => c.upstreamSubject === account);
  const target = flowTargetOf(navigation);
  if (target.kind === 'reconnect') {
    const asked = all.find((c) => c.id === target.connectionId);
    if (!asked) throw new NotFoundError('The connection this reconnect was for is gone.');
    if (same && same.id !== asked.id) return { mismatch: asked };
    if (!same && asked.upstreamSubject !== undefined) return { mismatch: asked };
    return { connection: asked };
  }
  if (same) return { connection: same };
  if (target.kind === 'add') return { connection: undefined };
  const preferred = all[0];
  if (!preferred) return { connection: undefined };
  // FOR UPDATE: a 401's forget or a refresh of the default is serialised with this.
  const live = (await findSecrets(tx, preferred.id, true)).length > 0;
  if (live && preferred.upstreamSubject !== undefined) return { mismatch: preferred };
  return { connection: preferred };
}

/** The webhook event of a stored connection: its ids and the account's, never a token. */
function connectionCreated(
  record: Pick<ConnectionRecord, 'id' | 'provider' | 'subject' | 'upstreamSubject' | 'upstreamName'>,
  navigationId: string,
  occurredAt: Date,
): WebhookEvent & { occurredAt: Date } {
  const { upstreamSubject, upstreamName } = record;
  return {
    type: 'connection.created',
    data: {
      connectionId: record.id,
      provider: record.provider,
      subject: { iss: record.subject.iss, sub: record.subject.sub },
      navigationId,
      ...(upstreamSubject !== undefined && {
        account: { id: upstreamSubject, ...(upstreamName !== undefined && { name: upstreamName }) },
      }),
    },
    occurredAt,
  };
}

function accountMismatch(
  providerName: string,
  held: ConnectionRecord,
  grant: { connection: { upstreamName?: string | undefined; upstreamSubject: string | undefined } },
  again: string,
): ForbiddenError {
  const connected = held.upstreamName ?? held.upstreamSubject ?? 'another account';
  const signedIn = grant.connection.upstreamName ?? grant.connection.upstreamSubject ?? 'another account';
  return new ForbiddenError(
    `You signed in to ${providerName} as ${signedIn}, but your ${providerName} connection is ${connected}. Nothing was changed: ${again} and sign in to ${providerName} as ${connected}.`,
  );
}

function openVerifier(deps: BrokerDeps, pending: PendingAuthorization): string {
  try {
    return deps.box.open(
      { ciphertext: pending.codeVerifierSealed, keyId: pending.keyId },
      pkceAad(pending.stateDigest, pending.navigationId),
    );
  } catch (err) {
    // Sealed under a key retired while the user was at the provider: this sign-in cannot finish,
    // but the flow's link still works, and a new consent seals under the active key.
    if (!(err instanceof MissingKeyError)) throw err;
    deps.logger.warn(
      { navigationId: pending.navigationId, keyId: err.keyId },
      'pending authorization sealed under a key SECRET_KEYS no longer holds',
    );
    throw new InvalidInputError(
      'This sign-in can no longer be completed: the service changed its keys while you were away. Nothing was connected. Open the link from your app again to start over.',
    );
  }
}
