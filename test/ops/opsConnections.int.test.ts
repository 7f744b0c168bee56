import { beforeAll, describe, expect, it } from 'vitest';
import { connectThroughList, secretsBox } from '../support/deadToken.js';
import { elicitConnection } from '../support/connectFlow.js';
import type { TestBrowser } from '../support/testBrowser.js';
import { useBrokerStack } from '../support/useBrokerStack.js';
import { signedInBrowser } from '../support/webSignIn.js';

// /ops/connections over the real stack: an operator signed in at the development identity provider
// lists connections and revokes one with a reason, the running broker revoking it at the Report
// Service (RFC 7009) before it forgets the tokens. No token on any page.
describe('/ops/connections', () => {
  const { stack, tokens } = useBrokerStack({}, { users: ['alice', 'bob'] });
  let opsWeb: TestBrowser;
  const held: string[] = [];
  const url = (path: string) => `${stack.brokerUrl}${path}`;
  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;

  /** Connects `sub` to the Report Service; returns the connection's id and keeps its tokens for the canary. */
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
    const [{ id }] = await query("SELECT id FROM connections WHERE subject_sub = $1 AND provider = 'reports'", [sub]);
    return id as string;
  };
  const expectNoToken = (text: string) => {
    for (const token of held) expect(text.includes(token), 'a token on a page').toBe(false);
  };

  beforeAll(async () => {
    opsWeb = await signedInBrowser(stack, 'ops');
  });

  it('lists connections filtered by subject, provider and state, without a token', async () => {
    const alice = await connect('alice');
    const bob = await connect('bob');
    const page = await opsWeb.get(url('/ops/connections'));
    expect(page.status).toBe(200);
    expect(page.text).toContain(`<code>${alice}</code>`);
    expect(page.text).toContain(`<code>${bob}</code>`);
    expect(page.text).toContain('<td>Report Service</td>');
    expect(page.text).toContain('<td>rs-user-alice</td>');
    expect(page.text).toContain(`action="/ops/connections/${alice}/revoke"`);
    expectNoToken(page.text);

    const filtered = await opsWeb.get(url('/ops/connections?subject=bob&provider=reports&state=active'));
    expect(filtered.text).toContain(`<code>${bob}</code>`);
    expect(filtered.text).not.toContain(`<code>${alice}</code>`);
    expect((await opsWeb.get(url('/ops/connections?state=revoked&subject=bob'))).text).toContain(
      'No connection matches.',
    );
    expect((await opsWeb.get(url('/ops/connections?state=gone'))).status).toBe(400);
  });

  it('revokes one from its form with a reason: revoked at the provider, tokens deleted, recorded; the next call asks to connect again', async () => {
    const id = await connect('alice');
    const page = await opsWeb.get(url('/ops/connections?subject=alice'));
    const done = await opsWeb.submitForm(page, { reason: 'account closed' }, { form: `/ops/connections/${id}/revoke` });
    expect(done.status).toBe(200);
    expect(done.text).toContain(`Connection ${id} (reports) is revoked: its tokens are deleted`);
    expect(done.text).toContain('reports revoked the grant too.');
    expect(done.text).not.toContain('Not revoked at');
    expectNoToken(done.text);

    expect(await query("SELECT kind FROM secrets WHERE subject_sub = 'alice'")).toEqual([]);
    expect(await query('SELECT state FROM connections WHERE id = $1', [id])).toEqual([{ state: 'revoked' }]);
    expect(
      await query("SELECT reason, actor, details FROM operator_actions WHERE action = 'revoke_connection'"),
    ).toContainEqual({
      reason: 'account closed',
      actor: 'operator:ops',
      details: { connectionId: id, provider: 'reports', atProvider: 'revoked' },
    });
    expect(
      await query(
        "SELECT e.actor FROM navigation_events e JOIN connections c ON c.navigation_id = e.navigation_id WHERE c.id = $1 AND e.event = 'connection_revoked'",
        [id],
      ),
    ).toEqual([{ actor: 'operator:ops' }]);
    expect(
      stack.logs.some((line) => line.includes('"token revocation"') && line.includes('"tokenKind":"RefreshToken"')),
    ).toBe(true);
    // A revoked connection has no revoke form any more, and the user is asked to connect again.
    expect((await opsWeb.get(url('/ops/connections?subject=alice'))).text).not.toContain(
      `action="/ops/connections/${id}/revoke"`,
    );
    expect((await elicitConnection(stack, tokens.alice, 'reports_list', {})).url).toMatch(/\/connect\//);
  });

  it('refuses a forged CSRF token, a missing reason and a non-operator, and revokes nothing', async () => {
    const id = await connect('bob');
    await opsWeb.get(url('/ops/connections'));
    const forged = await opsWeb.post(
      url(`/ops/connections/${id}/revoke`),
      { _csrf: 'forged', reason: 'a good reason' },
      { origin: stack.brokerUrl },
    );
    expect(forged.status).toBe(403);
    const page = await opsWeb.get(url('/ops/connections?subject=bob'));
    const noReason = await opsWeb.submitForm(page, { reason: '' }, { form: `/ops/connections/${id}/revoke` });
    expect(noReason.status).toBe(400);

    const bob = await signedInBrowser(stack, 'bob');
    expect((await bob.get(url('/ops/connections'))).status).toBe(403);
    expect(
      (
        await bob.post(
          url(`/ops/connections/${id}/revoke`),
          { _csrf: 'x', reason: 'mine now' },
          { origin: stack.brokerUrl },
        )
      ).status,
    ).toBe(403);

    expect(await query("SELECT count(*)::int AS n FROM secrets WHERE subject_sub = 'bob'")).toEqual([{ n: 2 }]);
    expect(await query('SELECT state FROM connections WHERE id = $1', [id])).toEqual([{ state: 'active' }]);
  });
});
