import { beforeAll, describe, expect, it } from 'vitest';
import { digestOf } from '../../src/shared/tokens.js';
import { operatorCli } from '../support/operatorCli.js';
import type { TestBrowser } from '../support/testBrowser.js';
import { useBrokerStack } from '../support/useBrokerStack.js';
import { sessionCookieOf, signedInBrowser } from '../support/webSignIn.js';

// Ending browser sessions before they expire, from /ops and from `broker sessions`, over the real
// stack: real sign-ins at the development identity provider, the broker's pages, and the CLI as a
// separate process. A revoked session's cookie is worthless on its very next request.

type Cli = Awaited<ReturnType<typeof operatorCli>>;

describe('revoking browser sessions', () => {
  const { stack } = useBrokerStack();
  let sessions: Cli;
  let opsWeb: TestBrowser;
  const url = (path: string) => `${stack.brokerUrl}${path}`;

  const signIn = (login: string) => signedInBrowser(stack, login);
  const cookieOf = (browser: TestBrowser) => sessionCookieOf(stack, browser);
  const signedInAs = async (browser: TestBrowser) =>
    /Signed in as <strong>([^<]+)<\/strong>/.exec((await browser.get(url('/'))).text)?.[1];
  const publicIdOf = async (browser: TestBrowser) =>
    (
      await stack.db.pool.query('SELECT public_id FROM web_sessions WHERE id_digest = $1', [
        digestOf(cookieOf(browser)),
      ])
    ).rows[0]?.public_id as string;
  const revocations = async () =>
    (
      await stack.db.pool.query<{ reason: string; actor: string; details: Record<string, unknown> }>(
        `SELECT reason, actor, details FROM operator_actions WHERE action = 'revoke_sessions' ORDER BY id`,
      )
    ).rows;

  beforeAll(async () => {
    sessions = await operatorCli(stack, 'ops', { command: 'sessions' });
    opsWeb = await signIn('ops');
  });

  it('lists live sessions on the CLI without a secret: ids, subject, times', async () => {
    const alice = await signIn('alice');
    const id = await publicIdOf(alice);
    expect(id).toMatch(/^sess_[0-9a-f]{32}$/);

    const listed = await sessions('list');
    expect(listed.code, listed.output).toBe(0);
    const header = listed.output.split('\n').find((line) => line.startsWith('id '));
    expect(header).toMatch(/^id\s+subject\s+operator\s+signed in\s+last seen\s+expires$/);
    const line = listed.output.split('\n').find((l) => l.startsWith(id))!;
    expect(line).toMatch(/^sess_[0-9a-f]{32}\s+alice\s+\d{4}-\d\d-\d\dT[\d:.]+Z\s+\d{4}-.+Z\s+\d{4}-.+Z$/);
    expect(listed.output).toMatch(/\sops\s+yes\s/);
    // Neither a cookie nor its digest (the key a cookie is looked up by) is printed.
    for (const browser of [alice, opsWeb]) {
      expect(listed.output).not.toContain(cookieOf(browser));
      expect(listed.output).not.toContain(digestOf(cookieOf(browser)).toString('hex'));
    }

    const json = await sessions('list', '--subject', 'alice', '--json');
    expect(json.code, json.output).toBe(0);
    const rows = JSON.parse(json.output.trim().split('\n').pop()!) as Record<string, unknown>[];
    expect(rows.map((r) => r['subject'])).toEqual(rows.map(() => 'alice'));
    expect(rows.find((r) => r['id'] === id)).toMatchObject({ operator: false, displayName: 'alice' });
    expect(Object.keys(rows[0]!).sort()).toEqual(
      ['createdAt', 'displayName', 'expiresAt', 'id', 'lastSeenAt', 'operator', 'subject'].sort(),
    );
  });

  it('revokes one session by id from /ops: that browser is signed out on its next request, the others are not', async () => {
    const first = await signIn('bob');
    const second = await signIn('bob');
    const id = await publicIdOf(first);

    const page = await opsWeb.get(url('/ops/sessions?subject=bob'));
    expect(page.status).toBe(200);
    expect(page.text).toContain(`<code>${id}</code>`);
    expect(page.text).not.toContain(cookieOf(first));
    const done = await opsWeb.submitForm(page, { reason: 'lost laptop' }, { form: `/ops/sessions/${id}/revoke` });
    expect(done.url).toBe(url('/ops/sessions?revoked=1'));
    expect(done.text).toContain('1 session revoked');

    // The browser still presents its cookie; the session it names is gone.
    expect(await signedInAs(first)).toBeUndefined();
    expect(await signedInAs(second)).toBe('bob');
    const row = (
      await stack.db.pool.query('SELECT revoked_at FROM web_sessions WHERE id_digest = $1', [digestOf(cookieOf(first))])
    ).rows[0];
    expect(row?.revoked_at).toBeInstanceOf(Date);
    expect((await revocations()).at(-1)).toEqual({
      reason: 'lost laptop',
      actor: 'operator:ops',
      details: { target: { sessionId: id }, revoked: [{ id, subject: 'bob' }] },
    });
  });

  it("revokes every session of a subject from the CLI, an operator's too, and says what it did", async () => {
    const malloryA = await signIn('mallory');
    const malloryB = await signIn('mallory');
    const alice = await signIn('alice');
    const ids = [await publicIdOf(malloryA), await publicIdOf(malloryB)].sort();

    const revoked = await sessions('revoke', 'mallory', '--reason', 'account compromised');
    expect(revoked.code, revoked.output).toBe(0);
    expect(revoked.output).toContain(
      'Revoked 2 sessions (every session of mallory); each browser is signed out on its next request.',
    );
    for (const id of ids) expect(revoked.output).toContain(id);
    expect(await signedInAs(malloryA)).toBeUndefined();
    expect(await signedInAs(malloryB)).toBeUndefined();
    expect(await signedInAs(alice)).toBe('alice');
    expect((await revocations()).at(-1)).toEqual({
      reason: 'account compromised',
      actor: 'cli:ops',
      details: { target: { subject: 'mallory' }, revoked: ids.map((id) => ({ id, subject: 'mallory' })) },
    });

    // Again: nothing is left to revoke; exit 1, and the attempt is on record all the same.
    const again = await sessions('revoke', 'mallory', '--reason', 'making sure');
    expect(again.code).toBe(1);
    expect(again.output).toContain('No live session matched every session of mallory: nothing revoked (recorded).');
    expect((await revocations()).at(-1)).toMatchObject({ details: { target: { subject: 'mallory' }, revoked: [] } });

    // An operator's sessions end too: the operator's browser is sent to sign in at its next page.
    const otherOps = await signIn('ops');
    const own = await sessions('revoke', 'ops', '--reason', 'rotating operators', '--json');
    expect(own.code, own.output).toBe(0);
    expect(JSON.parse(own.output.trim().split('\n').pop()!)).toMatchObject({ target: { subject: 'ops' } });
    for (const browser of [opsWeb, otherOps]) {
      const page = await browser.get(url('/ops'), { followRedirects: false });
      expect(page.status).toBe(303);
      expect(page.location).toBe(url(`/login?return_to=${encodeURIComponent('/ops')}`));
    }
    opsWeb = await signIn('ops');
  });

  it('refuses a revoke without a reason, and a non-operator (recorded), and revokes nothing', async () => {
    const bob = await signIn('bob');
    const noReason = await sessions('revoke', 'bob');
    expect(noReason.code).toBe(2);
    expect(noReason.output).toContain('revoke needs --reason');
    const asAlice = await operatorCli(stack, 'alice', { command: 'sessions' });
    const refused = await asAlice('revoke', 'bob', '--reason', 'I am not an operator');
    expect(refused.code).toBe(3);
    expect(refused.output).toContain('alice is not an operator');
    const recorded = await stack.db.pool.query(
      `SELECT reason FROM operator_actions WHERE action = 'access_refused' AND actor = 'cli:alice'`,
    );
    expect(recorded.rows).toEqual([{ reason: 'not an operator: broker sessions revoke' }]);
    expect(await signedInAs(bob)).toBe('bob');

    // The page's form needs its CSRF token and a reason, as every operator form does.
    const page = await opsWeb.get(url('/ops/sessions?subject=bob'));
    const id = await publicIdOf(bob);
    const forged = await opsWeb.post(
      url(`/ops/sessions/${id}/revoke`),
      { _csrf: 'forged', reason: 'x'.repeat(10) },
      { origin: stack.brokerUrl },
    );
    expect(forged.status).toBe(403);
    const short = await opsWeb.submitForm(page, { reason: 'no' }, { form: `/ops/sessions/${id}/revoke` });
    expect(short.status).toBe(400);
    expect(await signedInAs(bob)).toBe('bob');
  });
});
