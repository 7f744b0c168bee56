import type { Principal } from '../auth/principal.js';
import { missingScopes } from '../providers/scopes.js';
import { openFlowIdPart, type OperationKey } from './navigationRepo.js';
import { findConnectionsWithAccessFor, type ConnectionRecord } from '../secrets/connectionsRepo.js';
import { accessTokenForConnection, type TokenVaultDeps } from '../secrets/tokenVault.js';
import { chooseConnection, type ConnectionChoice } from './connectionChoice.js';

/** Whether a call needing `scopes` of a provider can run on the user's connection now. */
export type ConnectionAccess =
  | {
      kind: 'connected';
      token: string;
      connection: ConnectionRecord;
      /** With `operation` asked about: its open flow's id (openFlowIdPart), read in the same statement, when it has one. */
      openFlowId?: string | undefined;
    }
  /** No usable connection; `connection` is the one a connect flow reconnects, when there is one. */
  | { kind: 'not_connected'; connection?: ConnectionRecord | undefined }
  /** Connected, but the grant lacks some of the scopes: a second consent, for the union, is needed. */
  | { kind: 'scopes_missing'; missing: string[]; connection: ConnectionRecord }
  /** Several usable connections and nothing names one: the user is asked which (connectionChoice.ts). */
  | { kind: 'choose'; candidates: ConnectionRecord[] }
  /** The `account` argument names no connection of the user's to the provider. */
  | { kind: 'unknown_account'; account: string; known: string[] };

/**
 * The one answer to "is this user connected for this call": the connection the call runs on
 * (connectionChoice.ts), with a usable token (refreshed if stale) whose grant covers every scope the
 * call needs, or why not. A connection recorded before granted scopes were kept is taken as covering them.
 * With `operation`, whether that operation has an open flow (openFlowIdPart) is read in the same statement.
 */
export async function connectionAccessFor(
  vault: TokenVaultDeps,
  subject: Principal,
  provider: string,
  scopes: readonly string[],
  choice: ConnectionChoice = {},
  operation?: { key: OperationKey; now: Date },
): Promise<ConnectionAccess> {
  // The connections and their access tokens in one read: a connected call's first round trip is its only one here.
  const { listed, beside } = await findConnectionsWithAccessFor(
    vault.pool,
    subject,
    provider,
    operation && openFlowIdPart(operation.key, operation.now),
  );
  const chosen = chooseConnection(
    listed.map((l) => l.connection),
    choice,
  );
  if (chosen.kind === 'ask') return { kind: 'choose', candidates: chosen.candidates };
  if (chosen.kind === 'unknown_account') return chosen;
  const { connection } = chosen;
  const read = connection && listed.find((l) => l.connection.id === connection.id)?.access;
  const token = connection && (await accessTokenForConnection(vault, connection.id, read));
  if (!connection || !token) return { kind: 'not_connected', connection };
  const facts = vault.providers.get(provider)?.provider;
  const missing = scopes.length === 0 || !facts ? [] : missingScopes(facts, connection.grantedScopes, scopes);
  return missing.length === 0
    ? { kind: 'connected', token, connection, ...(typeof beside === 'string' && { openFlowId: beside }) }
    : { kind: 'scopes_missing', missing, connection };
}
