import { beforeAll, describe, expect, it } from 'vitest';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { operatorCli } from '../support/operatorCli.js';
import { elicitConnection, openConnectLink, URL_CAPS } from '../support/connectFlow.js';
import { callTool, tokenFor } from '../support/mcpWire.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

describe('the kill switch (broker ledger pause-connections)', () => {
  const { stack } = useBrokerStack();
  let cli: Awaited<ReturnType<typeof operatorCli>>;

  beforeAll(async () => {
    cli = await operatorCli(stack);
  });

  it('stops new connect links, revokes pending authorizations, leaves flows at the provider as they are, and keeps queries working', async () => {
    const [bob, mallory] = await Promise.all([tokenFor(stack, 'bob'), tokenFor(stack, 'mallory')]);
    // bob is at the Report Service's sign-in when the operator pulls the switch.
    const elicited = await elicitConnection(stack, bob, 'reports_create', { title: 'In flight', body: '' });
    const run = await openConnectLink(stack, elicited.url, 'bob');
    const atProvider = await run.browser.submitForm(run.review, {}, { form: '/connect/' });
    expect(atProvider.text).toContain('name="password"');
    expect((await stack.db.pool.query('SELECT count(*)::int AS n FROM oauth_transactions')).rows[0].n).toBe(1);

    // alice got a link before the switch and opens it after.
    const alice = await tokenFor(stack, 'alice');
    const early = await elicitConnection(stack, alice, 'reports_create', { title: 'Link from before', body: '' });

    expect((await cli('pause-connections')).code).toBe(2);
    const paused = await cli('pause-connections', '--reason', 'incident 42: provider compromised');
    expect(paused.code).toBe(0);
    expect(paused.output).toContain('1 pending OAuth transaction(s) revoked');

    const refused = await callTool(
      stack,
      mallory,
      'reports_create',
      { title: 'After the switch', body: '' },
      {},
      URL_CAPS,
    );
    expect(refused.json.result).toMatchObject({
      isError: true,
      content: [{ text: expect.stringContaining('paused by the operator (incident 42: provider compromised)') }],
    });
    expect(
      (
        await stack.db.pool.query(
          "SELECT count(*)::int AS n FROM elicitation_navigations WHERE subject_sub = 'mallory'",
        )
      ).rows[0].n,
    ).toBe(0);
    expect((await cli('flows', '--subject', 'bob')).code).toBe(0);
    const earlyRun = await openConnectLink(stack, early.url, 'alice');
    const refusedConsent = await earlyRun.browser.submitForm(earlyRun.review, {}, { form: '/connect/' });
    expect(refusedConsent.status).toBe(503);
    expect(refusedConsent.text).toContain('Connecting is paused by the operator');
    expect((await stack.db.pool.query('SELECT count(*)::int AS n FROM oauth_transactions')).rows[0].n).toBe(0);
    expect(
      (await stack.db.pool.query("SELECT status FROM elicitation_navigations WHERE subject_sub = 'alice'")).rows,
    ).toEqual([{ status: 'USER_REVIEW' }]);

    // bob finishes at the provider: the callback finds no transaction; the flow is neither failed nor verified.
    const consent = await run.browser.submitForm(atProvider, { login: 'bob', password: DEV_PASSWORD });
    const back = await run.browser.submitForm(consent, {}, { form: '/confirm' });
    expect(back.status).toBe(400);
    const status = await stack.db.pool.query("SELECT status FROM elicitation_navigations WHERE subject_sub = 'bob'");
    expect(status.rows).toEqual([{ status: 'OUT_OF_BAND_PENDING' }]);
    expect((await stack.db.pool.query('SELECT count(*)::int AS n FROM secrets')).rows[0].n).toBe(0);

    expect((await cli('resume-connections', '--reason', 'incident 42 closed')).code).toBe(0);
    const again = await callTool(
      stack,
      mallory,
      'reports_create',
      { title: 'After the switch', body: '' },
      {},
      URL_CAPS,
    );
    expect(again.json.result?.['resultType']).toBe('input_required');

    const actions = await stack.db.pool.query('SELECT action, reason, actor FROM operator_actions ORDER BY id');
    expect(actions.rows).toEqual([
      { action: 'pause_connections', reason: 'incident 42: provider compromised', actor: 'cli:ops' },
      { action: 'resume_connections', reason: 'incident 42 closed', actor: 'cli:ops' },
    ]);
    await expect(stack.db.pool.query("UPDATE operator_actions SET reason = 'nothing happened'")).rejects.toThrow(
      /append-only/,
    );
  });
});
