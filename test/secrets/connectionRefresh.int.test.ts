import { describe, expect, it } from 'vitest';
import type { Fetch } from '../../src/shared/httpClient.js';
import {
  consentAndAuthorize,
  elicitConnection,
  openConnectLink,
  retryConnection,
  URL_CAPS,
} from '../support/connectFlow.js';
import { secretsBox } from '../support/deadToken.js';
import { callTool } from '../support/mcpWire.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// Refresh under concurrency and rotation, against the development Report Service (oidc-provider,
// which rotates refresh tokens and refuses, ending the grant, a spent one used again).

/** The Report Service's token endpoint as the broker's instances call it: every refresh, and a switch that holds them. */
function refreshTap() {
  const spent: string[] = [];
  let hold: Promise<void> | undefined;
  let release = () => {};
  const wrap =
    (fetch: Fetch): Fetch =>
    async (input, init) => {
      const body = init?.body;
      if (body instanceof URLSearchParams && body.get('grant_type') === 'refresh_token') {
        spent.push(body.get('refresh_token') ?? '');
        if (hold) await hold;
      }
      return fetch(input, init);
    };
  return {
    wrap,
    spent,
    holdRefreshes() {
      hold = new Promise((resolve) => (release = resolve));
    },
    release() {
      hold = undefined;
      release();
    },
  };
}

describe('refresh that survives rotation and races', () => {
  const tap = refreshTap();
  const { stack, tokens } = useBrokerStack({ brokerFetch: tap.wrap, retryWaitMs: 200 }, { users: ['alice', 'bob'] });
  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;

  const connect = async (login: 'alice' | 'bob') => {
    const args = { title: `Setup ${login}`, body: 'connect once' };
    const elicited = await elicitConnection(stack, tokens[login], 'reports_create', args);
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, login), login);
    await retryConnection(stack, tokens[login], 'reports_create', args, elicited.requestState, 'accept');
  };
  const expire = (login: string) =>
    stack.db.pool.query(
      "UPDATE secrets SET expires_at = now() - interval '1 minute' WHERE subject_sub = $1 AND kind = 'access_token'",
      [login],
    );
  const connection = async (login: string) =>
    (
      await query(
        "SELECT id, state, version, lease_until FROM connections WHERE subject_sub = $1 AND provider = 'reports'",
        [login],
      )
    )[0] as { id: string; state: string; version: string; lease_until: Date | null };
  const storedRefreshToken = async (login: string) => {
    const { rows } = await stack.db.pool.query<{
      ciphertext: Buffer;
      key_id: string;
      subject_iss: string;
      connection_id: string;
    }>(
      "SELECT ciphertext, key_id, subject_iss, connection_id FROM secrets WHERE subject_sub = $1 AND provider = 'reports' AND kind = 'refresh_token'",
      [login],
    );
    return secretsBox(stack).open(
      { ciphertext: rows[0]!.ciphertext, keyId: rows[0]!.key_id },
      `${rows[0]!.subject_iss}\n${login}\nreports\nrefresh_token\n${rows[0]!.connection_id}`,
    );
  };

  it('50 concurrent calls on an expired token across two instances: one refresh reaches the provider, all 50 succeed, and the spent refresh token is never sent again', async () => {
    await connect('alice');
    const first = await storedRefreshToken('alice');
    const before = await connection('alice');
    await expire('alice');
    const calls = Array.from({ length: 50 }, (_, i) =>
      callTool(stack, tokens.alice, 'reports_list', {}, {}, {}, i % 2 === 0 ? {} : { baseUrl: stack.secondUrl }),
    );
    const answers = await Promise.all(calls);
    for (const answer of answers) expect(answer.json.result).toMatchObject({ resultType: 'complete' });
    expect(tap.spent).toEqual([first]);

    // Rotated: the new refresh token was stored with the new access token, and the lease is over.
    const rotated = await storedRefreshToken('alice');
    expect(rotated).not.toBe(first);
    const after = await connection('alice');
    expect(after).toMatchObject({ id: before.id, state: 'active', lease_until: null });
    expect(Number(after.version)).toBe(Number(before.version) + 2);
    expect(
      await query(
        "SELECT e.evidence FROM navigation_events e JOIN connections c ON c.navigation_id = e.navigation_id WHERE c.id = $1 AND e.event = 'connection_refreshed'",
        [before.id],
      ),
    ).toEqual([{ evidence: { connectionId: before.id, provider: 'reports', rotated: true } }]);

    // The next expiry spends the rotated one; the provider (which would end the grant on a reused one) answers.
    await expire('alice');
    const again = await callTool(stack, tokens.alice, 'reports_list', {}, {}, {}, { baseUrl: stack.secondUrl });
    expect(again.json.result).toMatchObject({ resultType: 'complete' });
    expect(tap.spent).toEqual([first, rotated]);
  });

  it('a refresh that hangs at the provider holds no pooled connection and no lock: other requests are served meanwhile', async () => {
    await connect('bob');
    await expire('alice');
    tap.holdRefreshes();
    try {
      const spentBefore = tap.spent.length;
      // More waiting calls than either instance's pool has connections (5).
      const waiting = Array.from({ length: 12 }, (_, i) =>
        callTool(stack, tokens.alice, 'reports_list', {}, {}, {}, i % 2 === 0 ? {} : { baseUrl: stack.secondUrl }),
      );
      await expect.poll(() => tap.spent.length, { timeout: 5_000 }).toBe(spentBefore + 1);
      expect((await connection('alice')).state).toBe('refreshing');
      // bob's calls, on both instances, and a database read of the test's own are answered while alice's refresh hangs.
      for (const baseUrl of [stack.brokerUrl, stack.secondUrl]) {
        const started = Date.now();
        const answer = await callTool(stack, tokens.bob, 'reports_list', {}, {}, {}, { baseUrl });
        expect(answer.json.result).toMatchObject({ resultType: 'complete' });
        // Bounded well below the hold (released only after these): a call queued behind the refresh never answers in time.
        expect(Date.now() - started).toBeLessThan(8_000);
      }
      const held = await query(
        "SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE a.state = 'idle in transaction'",
      );
      expect(held[0]!.n).toBe(0);
      tap.release();
      for (const answer of await Promise.all(waiting))
        expect(answer.json.result).toMatchObject({ resultType: 'complete' });
      expect(tap.spent).toHaveLength(spentBefore + 1);
    } finally {
      tap.release();
    }
  });

  it('the proactive refresh renews a token about to expire, once across instances, so the next call does not wait for a refresh', async () => {
    await stack.db.pool.query(
      "UPDATE secrets SET expires_at = now() + interval '2 minutes' WHERE subject_sub = 'alice' AND kind = 'access_token'",
    );
    const spentBefore = tap.spent.length;
    const options = { horizonMs: 5 * 60_000, batch: 50, concurrency: 4 };
    // Two runs at once, as two instances would: one renews, the other finds it renewed or leased.
    const [one, two] = await Promise.all([stack.refreshExpiring(options), stack.refreshExpiring(options)]);
    expect(one.refreshed + two.refreshed).toBe(1);
    expect(one.failed + two.failed + one.needsReauth + two.needsReauth).toBe(0);
    expect(tap.spent).toHaveLength(spentBefore + 1);
    const expiry = await query(
      "SELECT expires_at > now() + interval '5 minutes' AS renewed FROM secrets WHERE subject_sub = 'alice' AND kind = 'access_token'",
    );
    expect(expiry[0]!.renewed).toBe(true);
    // A later run finds nothing due; a call uses the renewed token as it is.
    expect(await stack.refreshExpiring(options)).toEqual({ refreshed: 0, skipped: 0, needsReauth: 0, failed: 0 });
    const answer = await callTool(stack, tokens.alice, 'reports_list', {}, {}, {});
    expect(answer.json.result).toMatchObject({ resultType: 'complete' });
    expect(tap.spent).toHaveLength(spentBefore + 1);
  });

  it('invalid_grant makes the connection needs_reauth and the next call asks to reconnect; reconnecting keeps the connection id', async () => {
    const before = await connection('bob');
    const refreshToken = await storedRefreshToken('bob');
    const basic = Buffer.from(
      `${stack.dev.reports.brokerClientId}:${stack.secrets.brokerReportsClientSecret}`,
    ).toString('base64');
    const revoked = await stack.fetch(`${stack.dev.reports.issuer}/token/revocation`, {
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: refreshToken, token_type_hint: 'refresh_token' }),
    });
    expect(revoked.status).toBe(200);
    await expire('bob');

    const answer = await callTool(stack, tokens.bob, 'reports_list', {}, {}, URL_CAPS);
    expect(answer.json.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { connect: { params: { mode: 'url' } } },
    });
    expect(await connection('bob')).toMatchObject({ id: before.id, state: 'needs_reauth', lease_until: null });
    expect(await query("SELECT kind FROM secrets WHERE subject_sub = 'bob'")).toEqual([]);
    expect(
      await query(
        "SELECT e.event, e.evidence FROM navigation_events e WHERE e.navigation_id = (SELECT navigation_id FROM connections WHERE id = $1) AND e.event LIKE 'connection_%'",
        [before.id],
      ),
    ).toEqual([{ event: 'connection_refresh_refused', evidence: { connectionId: before.id, provider: 'reports' } }]);

    await connect('bob');
    expect(await connection('bob')).toMatchObject({ id: before.id, state: 'active' });
    const listed = await callTool(stack, tokens.bob, 'reports_list', {}, {}, {});
    expect(listed.json.result).toMatchObject({ resultType: 'complete' });
  });
});
