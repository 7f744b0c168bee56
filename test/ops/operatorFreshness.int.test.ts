import { beforeEach, describe, expect, it } from 'vitest';
import { OPERATOR_PROOF_MAX_AGE_SECONDS } from '../../src/auth/operatorRole.js';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { digestOf } from '../../src/shared/tokens.js';
import type { BrowserResponse } from '../support/testBrowser.js';
import { useBrokerStack } from '../support/useBrokerStack.js';
import { sessionCookieOf, signedInBrowser } from '../support/webSignIn.js';

// How long a sign-in's word on an operator holds, over the real stack with the broker's clock
// under the test's control (the identity provider keeps real time): the role is read again from
// the provider at most five minutes after it was read, and an action needs an authentication at
// the provider within five minutes.

const MINUTE = 60_000;
const BOUND_MS = OPERATOR_PROOF_MAX_AGE_SECONDS * 1000;

describe('operator sign-ins expire in five minutes', () => {
  let advancedMs = 0;
  const { stack } = useBrokerStack({ clock: { now: () => new Date(Date.now() + advancedMs) } });
  const url = (path: string) => `${stack.brokerUrl}${path}`;
  const atIdp = (page: BrowserResponse) => page.redirects.some((r) => r.startsWith(stack.dev.idp.issuer));
  const passwordForm = (page: BrowserResponse) => new URL(page.url).origin === stack.dev.idp.issuer;

  beforeEach(() => {
    advancedMs = 0;
    stack.dev.idp.roles.set('ops', ['operator']);
  });

  const signIn = (login: string) => signedInBrowser(stack, login);
  const pausedSwitch = async () =>
    (await stack.db.pool.query(`SELECT engaged FROM broker_switches WHERE name = 'url_elicitation_paused'`)).rows[0];
  const recordedCount = async () =>
    (await stack.db.pool.query('SELECT count(*)::int AS n FROM operator_actions')).rows[0].n as number;
  const actions = async (action: string) =>
    (await stack.db.pool.query('SELECT actor, reason FROM operator_actions WHERE action = $1 ORDER BY id', [action]))
      .rows;

  it('records when the user authenticated, and each session’s last use to the minute', async () => {
    const alice = await signIn('alice');
    const digest = digestOf(sessionCookieOf(stack, alice));
    const row = async () =>
      (
        await stack.db.pool.query<{ created_at: Date; authenticated_at: Date; last_seen_at: Date }>(
          'SELECT created_at, authenticated_at, last_seen_at FROM web_sessions WHERE id_digest = $1',
          [digest],
        )
      ).rows[0]!;
    const signedIn = await row();
    // The identity provider says auth_time (the broker's client asks for it): seconds before this sign-in.
    expect(signedIn.created_at.getTime() - signedIn.authenticated_at.getTime()).toBeGreaterThanOrEqual(0);
    expect(signedIn.created_at.getTime() - signedIn.authenticated_at.getTime()).toBeLessThan(MINUTE);
    expect(signedIn.last_seen_at).toEqual(signedIn.created_at);
    advancedMs = 30_000;
    await alice.get(url('/'));
    expect((await row()).last_seen_at).toEqual(signedIn.created_at);
    advancedMs = 2 * MINUTE;
    const before = Date.now() + advancedMs;
    await alice.get(url('/'));
    expect((await row()).last_seen_at.getTime()).toBeGreaterThanOrEqual(before);
  });

  it('keeps a demoted operator on /ops no longer than five minutes after the sign-in that read the role', async () => {
    const ops = await signIn('ops');
    expect((await ops.get(url('/ops'))).status).toBe(200);

    // The role is removed at the identity provider. Within the bound, the sign-in's word stands.
    stack.dev.idp.roles.set('ops', []);
    advancedMs = BOUND_MS - MINUTE;
    const stillIn = await ops.get(url('/ops/flows'));
    expect(stillIn.status).toBe(200);
    expect(atIdp(stillIn)).toBe(false);

    // Past it, the page sends the browser to sign in again, which reads the role afresh: no prompt
    // (the provider's own session stands), and no operator role any more.
    advancedMs = BOUND_MS + 1000;
    const out = await ops.get(url('/ops/flows'));
    expect(out.redirects[0]).toBe(url('/ops/flows'));
    expect(out.redirects[1]).toBe(url(`/login?return_to=${encodeURIComponent('/ops/flows')}`));
    expect(atIdp(out)).toBe(true);
    expect(out.url).toBe(url('/ops/flows'));
    expect(out.status).toBe(403);
    expect(out.text).toContain('Operators only');
    expect(await actions('access_refused')).toEqual([{ actor: 'web:ops', reason: 'not an operator: GET /ops/flows' }]);
    const home = await ops.get(url('/'));
    expect(home.text).toContain('Signed in as <strong>ops</strong>');
    expect(home.text).not.toContain('href="/ops"');
  });

  it('reads the role again, without a prompt, for an operator who still has it', async () => {
    const ops = await signIn('ops');
    const cookie = () => sessionCookieOf(stack, ops);
    const before = cookie();
    advancedMs = BOUND_MS + MINUTE;
    const page = await ops.get(url('/ops/approvals'));
    expect(atIdp(page)).toBe(true);
    expect(page.url).toBe(url('/ops/approvals'));
    expect(page.status).toBe(200);
    expect(cookie()).not.toBe(before);
    // The sign-in replaced the session: the old cookie names nothing any more.
    const rows = await stack.db.pool.query('SELECT id_digest FROM web_sessions WHERE id_digest = $1', [
      digestOf(before),
    ]);
    expect(rows.rowCount).toBe(0);
  });

  it('keeps pages readable but sends an action with an older authentication to sign in again, and does nothing', async () => {
    const ops = await signIn('ops');
    // The provider authenticated the user ten minutes before this sign-in (its own session stood);
    // the role was read just now.
    await stack.db.pool.query(
      `UPDATE web_sessions SET authenticated_at = created_at - interval '10 minutes' WHERE id_digest = $1`,
      [digestOf(sessionCookieOf(stack, ops))],
    );
    const dashboard = await ops.get(url('/ops'));
    expect(dashboard.status).toBe(200);
    expect(atIdp(dashboard)).toBe(false);

    const refused = await ops.submitForm(
      dashboard,
      { reason: 'incident 42' },
      { form: '/ops/connections/pause', stopAt: (u) => u.origin === stack.dev.idp.issuer },
    );
    expect(refused.redirects).toEqual([url('/ops/connections/pause')]);
    expect(refused.url).toBe(url('/login?return_to=%2Fops&reauth=1'));
    const authorize = new URL(refused.location!);
    expect(authorize.searchParams.get('prompt')).toBe('login');
    expect(authorize.searchParams.get('max_age')).toBe(String(OPERATOR_PROOF_MAX_AGE_SECONDS));
    expect(await pausedSwitch()).toEqual({ engaged: false });
    expect(await actions('pause_connections')).toEqual([]);

    // The provider asks for the password even though its session stands; then the same form works.
    const form = await ops.get(refused.location!);
    expect(passwordForm(form)).toBe(true);
    const back = await ops.submitForm(form, { login: 'ops', password: DEV_PASSWORD });
    expect(back.url).toBe(url('/ops'));
    const paused = await ops.submitForm(back, { reason: 'incident 42' }, { form: '/ops/connections/pause' });
    expect(paused.status).toBe(200);
    expect(await pausedSwitch()).toEqual({ engaged: true });
    expect(await actions('pause_connections')).toEqual([{ actor: 'operator:ops', reason: 'incident 42' }]);
  });

  it('sends an action after five minutes to sign in again with a password, back to the form’s page', async () => {
    const ops = await signIn('ops');
    const page = await ops.get(url('/ops'));
    const before = { paused: await pausedSwitch(), recorded: await recordedCount() };
    advancedMs = BOUND_MS + 1000;
    const refused = await ops.submitForm(
      page,
      { reason: 'all clear' },
      { form: '/ops/connections/', stopAt: (u) => u.origin === stack.dev.idp.issuer },
    );
    expect(refused.url).toBe(url('/login?return_to=%2Fops&reauth=1'));
    expect({ paused: await pausedSwitch(), recorded: await recordedCount() }).toEqual(before);
    // A flow page's form comes back to that flow's page.
    const flowForm = await ops.post(
      url('/ops/flows/00000000-0000-4000-8000-000000000000/close'),
      { _csrf: 'x', reason: 'nobody' },
      { origin: stack.brokerUrl, followRedirects: false },
    );
    expect(flowForm.location).toBe(
      url(`/login?return_to=${encodeURIComponent('/ops/flows/00000000-0000-4000-8000-000000000000')}&reauth=1`),
    );
  });
});
