import { beforeAll, describe, expect, it } from 'vitest';
import { connectThroughList, secretsBox } from '../support/deadToken.js';
import { elicitConnection } from '../support/connectFlow.js';
import { operatorCli } from '../support/operatorCli.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// `broker connections list` and `revoke` as a separate process against a running stack, as an
// operator runs them: the CLI reaches the stack's Report Service as the running broker does (the
// development providers at the configured ports, the development CA), and revokes there for real.

type Cli = Awaited<ReturnType<typeof operatorCli>>;

describe('broker connections', () => {
  const { stack, tokens } = useBrokerStack({}, { users: ['alice', 'bob'] });
  let connections: Cli;
  const held: string[] = [];
  const portOf = (url: string) => new URL(url).port;
  const devPorts = () => ({
    DEV_REPORTS_PORT: portOf(stack.dev.reports.issuer),
    DEV_GITHUB_PORT: portOf(stack.dev.github!.origin),
  });

  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;
  const connectionOf = async (sub: string) =>
    (
      await query("SELECT id, state, navigation_id FROM connections WHERE subject_sub = $1 AND provider = 'reports'", [
        sub,
      ])
    )[0] as { id: string; state: string; navigation_id: string };
  /** Connects `sub` to the Report Service and keeps its tokens, which no output may show. */
  const connect = async (sub: 'alice' | 'bob') => {
    await connectThroughList(stack, tokens[sub], sub);
    const box = secretsBox(stack);
    for (const r of await query(
      'SELECT subject_iss, connection_id, kind, ciphertext, key_id FROM secrets WHERE subject_sub = $1',
      [sub],
    ))
      held.push(
        box.open(
          { ciphertext: r.ciphertext, keyId: r.key_id },
          `${r.subject_iss}\n${sub}\nreports\n${r.kind}\n${r.connection_id}`,
        ),
      );
    return connectionOf(sub);
  };
  const expectNoToken = (output: string) => {
    for (const token of held) expect(output.includes(token), 'a token in the output').toBe(false);
  };

  beforeAll(async () => {
    connections = await operatorCli(stack, 'ops', { command: 'connections', env: devPorts() });
  });

  it('lists connections with their account label, default flag, state, scopes and times, filtered, as a table or JSON, never a token', async () => {
    const alice = await connect('alice');
    const bob = await connect('bob');

    const listed = await connections('list');
    expect(listed.code, listed.output).toBe(0);
    const lines = listed.output.split('\n');
    expect(lines.find((l) => l.startsWith('id '))).toMatch(
      /^id\s+subject\s+provider\s+account\s+default\s+state\s+granted scopes\s+connected\s+last used$/,
    );
    expect(lines.find((l) => l.startsWith(alice.id))).toMatch(
      new RegExp(
        `^${alice.id}\\s+alice\\s+reports\\s+rs-user-alice\\s+yes\\s+active\\s+.*reports:read.*\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d\\s+`,
      ),
    );
    expect(listed.output).toContain(bob.id);
    expectNoToken(listed.output);

    const json = await connections(
      'list',
      '--subject',
      'alice',
      '--provider',
      'reports',
      '--state',
      'active',
      '--json',
    );
    expect(json.code, json.output).toBe(0);
    const rows = JSON.parse(json.output) as Record<string, unknown>[];
    expect(rows).toEqual([
      {
        id: alice.id,
        subject: { iss: stack.dev.idp.issuer, sub: 'alice' },
        provider: 'reports',
        account: { id: 'rs-user-alice', name: null, label: 'rs-user-alice' },
        preferred: true,
        preferredChosen: false,
        state: 'active',
        grantedScopes: expect.arrayContaining(['reports:read']),
        connectedAt: expect.stringMatching(/Z$/),
        lastUsedAt: expect.stringMatching(/Z$/),
      },
    ]);
    expect((await connections('list', '--state', 'revoked', '--subject', 'alice')).output).toContain('No connections.');
    const bad = await connections('list', '--state', 'gone');
    expect(bad.code).toBe(2);
    expect(bad.output).toContain('--state must be one of: active, refreshing, needs_reauth, revoked');
  });

  it('revokes one at the provider, deletes its tokens, records it; the next call asks to connect again', async () => {
    const { id, navigation_id: navigationId } = await connect('alice');
    const revoked = await connections('revoke', id, '--reason', 'laptop lost');
    expect(revoked.code, revoked.output).toBe(0);
    expect(revoked.output).toContain(`Connection ${id} (reports) is revoked: its tokens are deleted`);
    expect(revoked.output).toContain('reports revoked the grant too.');
    expectNoToken(revoked.output);

    expect(await query("SELECT kind FROM secrets WHERE subject_sub = 'alice'")).toEqual([]);
    expect((await connectionOf('alice')).state).toBe('revoked');
    expect(
      await query(
        "SELECT actor, evidence FROM navigation_events WHERE navigation_id = $1 AND event = 'connection_revoked'",
        [navigationId],
      ),
    ).toEqual([
      {
        actor: 'cli:ops',
        evidence: expect.objectContaining({ reason: 'laptop lost', atProvider: 'revoked', token: 'refresh_token' }),
      },
    ]);
    expect(
      await query("SELECT reason, actor, details FROM operator_actions WHERE action = 'revoke_connection'"),
    ).toContainEqual({
      reason: 'laptop lost',
      actor: 'cli:ops',
      details: { connectionId: id, provider: 'reports', atProvider: 'revoked' },
    });
    // The Report Service was asked, once, by the broker's client.
    expect(
      stack.logs.filter((line) => line.includes('"token revocation"') && line.includes('"status":200')),
    ).toHaveLength(1);
    expect((await elicitConnection(stack, tokens.alice, 'reports_list', {})).url).toMatch(/\/connect\//);

    const again = await connections('revoke', id, '--reason', 'twice');
    expect(again.code).toBe(1);
    expect(again.output).toContain('This connection is already disconnected.');
  });

  it('deletes the tokens when the provider cannot be reached, says so and exits 1', async () => {
    const { id } = await connect('bob');
    // Nothing listens on port 9 (discard): the Report Service is down as far as this CLI knows.
    const cut = await operatorCli(stack, 'ops', {
      command: 'connections',
      env: { ...devPorts(), DEV_REPORTS_PORT: '9' },
    });
    const revoked = await cut('revoke', id, '--reason', 'provider outage');
    expect(revoked.code, revoked.output).toBe(1);
    expect(revoked.output).toContain('Not revoked at the provider (could not be reached)');
    expect(await query("SELECT kind FROM secrets WHERE subject_sub = 'bob'")).toEqual([]);
    expect((await connectionOf('bob')).state).toBe('revoked');
  });

  it('refuses a non-operator (recorded) and an unknown or malformed id, and wants a reason', async () => {
    const asAlice = await operatorCli(stack, 'alice', { command: 'connections', env: devPorts() });
    const refused = await asAlice('list');
    expect(refused.code).toBe(3);
    expect(refused.output).toContain('alice is not an operator');
    expect(
      await query("SELECT details FROM operator_actions WHERE action = 'access_refused' AND actor = 'cli:alice'"),
    ).toContainEqual({ details: { command: 'connections list' } });

    const unknown = await connections('revoke', '00000000-0000-4000-8000-000000000000', '--reason', 'typo');
    expect(unknown.code).toBe(1);
    expect(unknown.output).toContain('No such connection.');
    expect((await connections('revoke', 'not-an-id', '--reason', 'typo')).output).toContain('No such connection.');
    const noReason = await connections('revoke', '00000000-0000-4000-8000-000000000000');
    expect(noReason.code).toBe(2);
    expect(noReason.output).toContain('revoke needs --reason');
  });
});
