import { afterEach, describe, expect, it } from 'vitest';
import { disconnectConnection } from '../../src/broker/disconnectConnection.js';
import { ConflictError, InvalidInputError, NotFoundError } from '../../src/errors/appError.js';
import type { Fetch } from '../../src/shared/httpClient.js';
import { githubDevProvider } from '../../src/dev/devStack.js';
import { consentAndAuthorize, elicitConnection, GITHUB_FORMS, openConnectLink } from '../support/connectFlow.js';
import { connectThroughList, secretsBox } from '../support/deadToken.js';
import { disconnectDeps, recordingFetch, type SentRequest } from '../support/disconnectDeps.js';
import { internalErrors } from '../support/legacySdkClient.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// Disconnecting a connection for real, against the development Report Service (oidc-provider, whose
// /token/revocation is RFC 7009): the grant is revoked at the provider, the broker's tokens are
// deleted and the connection is `revoked`, recorded on its flow's ledger; with the provider down, the
// tokens are deleted all the same and the answer says the provider did not revoke them.
describe('disconnectConnection', () => {
  const { stack, tokens } = useBrokerStack({}, { users: ['alice', 'bob'] });
  const logs: string[][] = [];
  /** disconnectConnection's dependencies on `fetch`; what they log is checked for tokens after each test. */
  const depsFor = (fetch: Fetch, entries?: unknown[]) => {
    const deps = disconnectDeps(stack, fetch, entries);
    logs.push(deps.logs);
    return deps;
  };
  const held: string[] = [];

  afterEach(() => {
    expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
    for (const line of [...logs.flat(), ...stack.logs])
      for (const token of held) expect(line.includes(token), 'a token in a log line').toBe(false);
  });

  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;
  const connectionOf = async (sub: string) =>
    (
      await query("SELECT id, state, navigation_id FROM connections WHERE subject_sub = $1 AND provider = 'reports'", [
        sub,
      ])
    )[0] as { id: string; state: string; navigation_id: string };
  const secretsOf = async (sub: string) =>
    (await query('SELECT kind FROM secrets WHERE subject_sub = $1', [sub])).length;
  /** The stored tokens of `sub`, opened (to check what reached the provider, and that none leaks). */
  const storedTokens = async (sub: string) => {
    const rows = await query(
      "SELECT subject_iss, connection_id, kind, ciphertext, key_id FROM secrets WHERE subject_sub = $1 AND provider = 'reports'",
      [sub],
    );
    const box = secretsBox(stack);
    const opened = Object.fromEntries(
      rows.map((r) => [
        r.kind as string,
        box.open(
          { ciphertext: r.ciphertext, keyId: r.key_id },
          `${r.subject_iss}\n${sub}\nreports\n${r.kind}\n${r.connection_id}`,
        ),
      ]),
    ) as { access_token: string; refresh_token: string };
    held.push(opened.access_token, opened.refresh_token);
    return opened;
  };
  /** The development servers' log lines with message `msg`, parsed. */
  const logged = (msg: string) =>
    stack.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line['msg'] === msg);
  const revokedEntries = async (navigationId: string) =>
    await query(
      "SELECT actor, evidence FROM navigation_events WHERE navigation_id = $1 AND event = 'connection_revoked'",
      [navigationId],
    );
  /** The Report Service's answer to a refresh with `refreshToken`, made as the broker's client. */
  const refreshAtProvider = async (refreshToken: string) => {
    const credentials = Buffer.from(
      `${stack.dev.reports.brokerClientId}:${stack.secrets.brokerReportsClientSecret}`,
    ).toString('base64');
    const response = await stack.fetch(`${stack.dev.reports.issuer}/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${credentials}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken }).toString(),
    });
    return { status: response.status, error: ((await response.json()) as { error?: string }).error };
  };

  it('revokes the refresh token at the provider once, deletes the tokens, marks the connection revoked and records it; the next call asks to connect again', async () => {
    await connectThroughList(stack, tokens.alice, 'alice');
    const stored = await storedTokens('alice');
    const before = await connectionOf('alice');
    const sent: SentRequest[] = [];

    const result = await disconnectConnection(depsFor(recordingFetch(stack.fetch, sent)), {
      connectionId: before.id,
      subject: { iss: stack.dev.idp.issuer, sub: 'alice' },
      actor: 'browser:alice',
      reason: 'disconnected from the connections page',
    });

    expect(result).toEqual({ connectionId: before.id, provider: 'reports', atProvider: 'revoked' });
    const revocations = sent.filter((r) => r.url === `${stack.dev.reports.issuer}/token/revocation`);
    expect(revocations).toHaveLength(1);
    expect(revocations[0]!.method).toBe('POST');
    const form = new URLSearchParams(revocations[0]!.body);
    expect(form.get('token')).toBe(stored.refresh_token);
    expect(form.get('token_type_hint')).toBe('refresh_token');
    // The grant is gone at the provider: its refresh token no longer works; the Report Service logged the call.
    expect(await refreshAtProvider(stored.refresh_token)).toEqual({ status: 400, error: 'invalid_grant' });
    expect(logged('token revocation')).toContainEqual(
      expect.objectContaining({
        server: 'reports',
        clientId: 'connect-broker',
        tokenKind: 'RefreshToken',
        status: 200,
      }),
    );

    expect(await secretsOf('alice')).toBe(0);
    expect((await connectionOf('alice')).state).toBe('revoked');
    expect(await revokedEntries(before.navigation_id)).toEqual([
      {
        actor: 'browser:alice',
        evidence: {
          connectionId: before.id,
          provider: 'reports',
          reason: 'disconnected from the connections page',
          atProvider: 'revoked',
          token: 'refresh_token',
        },
      },
    ]);
    // The webhook's event, written in the same transaction: ids and names only.
    expect(
      await query("SELECT data FROM webhook_events WHERE type = 'connection.revoked' AND data->>'connectionId' = $1", [
        before.id,
      ]),
    ).toEqual([
      {
        data: { connectionId: before.id, provider: 'reports', subject: { iss: stack.dev.idp.issuer, sub: 'alice' } },
      },
    ]);
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_list', {});
    expect(elicited.url).toMatch(/\/connect\//);
  });

  it('deletes the tokens when the provider cannot be reached, and says it was not revoked there', async () => {
    await connectThroughList(stack, tokens.bob, 'bob');
    const stored = await storedTokens('bob');
    const { id, navigation_id: navigationId } = await connectionOf('bob');
    const down = (async () => {
      throw new TypeError('fetch failed');
    }) as Fetch;

    const result = await disconnectConnection(depsFor(down), {
      connectionId: id,
      actor: 'operator:ops',
      reason: 'laptop stolen',
    });

    expect(result).toEqual({
      connectionId: id,
      provider: 'reports',
      atProvider: 'failed',
      detail: 'not revoked at the provider (could not be reached)',
    });
    expect(await secretsOf('bob')).toBe(0);
    expect((await connectionOf('bob')).state).toBe('revoked');
    expect((await revokedEntries(navigationId))[0]).toMatchObject({
      actor: 'operator:ops',
      evidence: { atProvider: 'failed', detail: 'not revoked at the provider (could not be reached)' },
    });
    // Not revoked there indeed: the provider still honours the refresh token the broker forgot.
    expect((await refreshAtProvider(stored.refresh_token)).status).toBe(200);
  });

  it('deletes the GitHub token with "Delete an app token", once, and GitHub refuses it afterwards', async () => {
    const github = stack.dev.github!;
    const elicited = await elicitConnection(stack, tokens.bob, 'github_list_issues', { filter: 'created' });
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'bob'), 'bob', 'Allow', GITHUB_FORMS);
    const [row] = await query(
      "SELECT c.id, s.subject_iss, s.ciphertext, s.key_id FROM connections c JOIN secrets s ON s.connection_id = c.id WHERE c.subject_sub = 'bob' AND c.provider = 'github'",
    );
    const token = secretsBox(stack).open(
      { ciphertext: row.ciphertext, keyId: row.key_id },
      `${row.subject_iss}\nbob\ngithub\naccess_token\n${row.id}`,
    );
    held.push(token);
    const sent: SentRequest[] = [];
    const deps = depsFor(recordingFetch(stack.fetch, sent), [githubDevProvider(github)]);

    const result = await disconnectConnection(deps, {
      connectionId: row.id,
      actor: 'cli:ops',
      reason: 'left the team',
    });

    expect(result).toEqual({ connectionId: row.id, provider: 'github', atProvider: 'revoked' });
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      method: 'DELETE',
      url: `${github.apiUrl}/applications/${github.brokerClientId}/token`,
    });
    expect(sent[0]!.headers.get('authorization')).toBe(
      `Basic ${Buffer.from(`${github.brokerClientId}:${github.clientSecret}`).toString('base64')}`,
    );
    expect(JSON.parse(sent[0]!.body)).toEqual({ access_token: token });
    const user = await stack.fetch(`${github.apiUrl}/user`, { headers: { authorization: `Bearer ${token}` } });
    expect(user.status).toBe(401);
    expect(logged('delete an app token')).toContainEqual(
      expect.objectContaining({ server: 'github', clientId: github.brokerClientId, status: 204, login: 'bob' }),
    );
    expect(await query('SELECT state FROM connections WHERE id = $1', [row.id])).toEqual([{ state: 'revoked' }]);
    expect(await query("SELECT kind FROM secrets WHERE subject_sub = 'bob' AND provider = 'github'")).toEqual([]);
  });

  it("refuses another subject's connection as unknown, and changes nothing", async () => {
    await connectThroughList(stack, tokens.alice, 'alice');
    await storedTokens('alice');
    const { id } = await connectionOf('alice');
    const sent: SentRequest[] = [];
    const deps = depsFor(recordingFetch(stack.fetch, sent));

    await expect(
      disconnectConnection(deps, {
        connectionId: id,
        subject: { iss: stack.dev.idp.issuer, sub: 'bob' },
        actor: 'browser:bob',
        reason: 'not mine',
      }),
    ).rejects.toBeInstanceOf(NotFoundError);
    await expect(
      disconnectConnection(deps, { connectionId: 'not-a-uuid', actor: 'cli:ops', reason: 'typo' }),
    ).rejects.toBeInstanceOf(NotFoundError);
    await expect(
      disconnectConnection(deps, { connectionId: id, actor: 'cli:ops', reason: ' ' }),
    ).rejects.toBeInstanceOf(InvalidInputError);
    expect(sent).toEqual([]);
    expect(await secretsOf('alice')).toBe(2);
    expect((await connectionOf('alice')).state).toBe('active');
  });

  it('answers a second disconnect with a conflict, and a reconnect afterwards keeps the connection id', async () => {
    await connectThroughList(stack, tokens.alice, 'alice');
    await storedTokens('alice');
    const { id } = await connectionOf('alice');
    const deps = depsFor(stack.fetch);
    await disconnectConnection(deps, { connectionId: id, actor: 'cli:ops', reason: 'first' });
    await expect(
      disconnectConnection(deps, { connectionId: id, actor: 'cli:ops', reason: 'second' }),
    ).rejects.toBeInstanceOf(ConflictError);

    await connectThroughList(stack, tokens.alice, 'alice');
    await storedTokens('alice');
    expect(await connectionOf('alice')).toMatchObject({ id, state: 'active' });
  });
});
