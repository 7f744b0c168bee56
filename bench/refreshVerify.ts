import type { Principal } from '../src/auth/principal.js';
import { PROACTIVE_REFRESH } from '../src/jobs/proactiveRefresh.js';
import { findDefaultConnection } from '../src/secrets/connectionsRepo.js';
import { openSecret } from '../src/secrets/sealedTokens.js';
import { findSecrets } from '../src/secrets/secretsRepo.js';
import type { RefreshStack } from './refreshStack.js';

/** What the database holds after the storm, connection by connection, read with the vault's own functions. */
export interface StoredCheck {
  connections: number;
  /** `active`, holding the refresh token the provider issued last, and an access token past the refresh horizon. */
  settled: number;
  /** Up to five connections that are not, and why (no token material). */
  problems: string[];
}

// Connections read at once: a fraction of the bench pool.
const AT_ONCE = 8;

/**
 * Each connection should have come out of the storm renewed exactly once and kept what that
 * renewal brought: had an instance stored an older refresh token than the provider's last one, the
 * next refresh would spend a dead token, so the rotation is checked here rather than left to it.
 */
export async function checkStored(
  stack: RefreshStack,
  provider: string,
  subjects: readonly Principal[],
): Promise<StoredCheck> {
  const { vault } = stack;
  const horizon = Date.now() + PROACTIVE_REFRESH.horizonMs;
  const problems: string[] = [];
  let settled = 0;
  const check = async (subject: Principal) => {
    const connection = await findDefaultConnection(vault.pool, subject, provider);
    const secrets = connection ? await findSecrets(vault.pool, connection.id) : [];
    const access = secrets.find((s) => s.kind === 'access_token');
    const refresh = secrets.find((s) => s.kind === 'refresh_token');
    const problem =
      connection?.state !== 'active'
        ? `state ${connection?.state ?? 'missing'}`
        : !access || (access.expiresAt !== undefined && access.expiresAt.getTime() <= horizon)
          ? 'access token not renewed'
          : !refresh || openSecret(vault.box, refresh) !== stack.provider.liveRefreshTokenOf(subject.sub)
            ? "the stored refresh token is not the provider's last one"
            : undefined;
    if (problem === undefined) settled++;
    else if (problems.length < 5) problems.push(`${subject.sub}: ${problem}`);
  };
  for (let i = 0; i < subjects.length; i += AT_ONCE) await Promise.all(subjects.slice(i, i + AT_ONCE).map(check));
  return { connections: subjects.length, settled, problems };
}
