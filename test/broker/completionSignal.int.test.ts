import { describe, expect, it } from 'vitest';
import { startBrokerStack } from '../support/brokerStack.js';
import { elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { tokenFor } from '../support/mcpWire.js';
import { useBrokerStack } from '../support/useBrokerStack.js';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';

describe('completion reaches a waiting retry on another instance (LISTEN/NOTIFY)', () => {
  const { stack, tokens } = useBrokerStack({ retryWaitMs: 8_000 }, { users: ['alice'] });

  it('completes a retry waiting on instance 2 as soon as the callback lands on instance 1', async () => {
    const args = { title: 'Across instances', body: 'x' };
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_create', args);
    const run = await openConnectLink(stack, elicited.url, 'alice');
    // Consent and authorize, but hold the browser at the redirect back to our callback.
    const atCallback = (url: URL) => url.pathname === '/oauth/callback/reports';
    const reportsLogin = await run.browser.submitForm(run.review, {}, { form: '/connect/' });
    const consentPage = await run.browser.submitForm(reportsLogin, { login: 'alice', password: DEV_PASSWORD });
    const held = await run.browser.submitForm(consentPage, {}, { form: '/confirm', stopAt: atCallback });
    const callback = held.location!;

    const started = Date.now();
    const waiting = retryConnection(
      stack,
      tokens.alice,
      'reports_create',
      args,
      elicited.requestState,
      'accept',
      stack.secondUrl,
    );
    await new Promise((r) => setTimeout(r, 400));
    const landed = await run.browser.get(callback);
    expect(landed.text).toContain('Report Service is connected');
    const answer = await waiting;
    const elapsed = Date.now() - started;

    expect(answer.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'created' } });
    expect(elapsed).toBeLessThan(6_000); // woken by the signal, not by the 8 s bound
    const receipts = await stack.db.pool.query('SELECT count(*)::int AS n FROM operation_receipts');
    expect(receipts.rows[0].n).toBe(1);
  });

  it('answers a state-only input_required when the bound passes first, and the flow stays usable', async () => {
    const quick = await startBrokerStack({ retryWaitMs: 300 });
    try {
      const token = await tokenFor(quick, 'bob');
      const args = { title: 'Slow user', body: 'y' };
      const elicited = await elicitConnection(quick, token, 'reports_create', args);
      const pending = await retryConnection(quick, token, 'reports_create', args, elicited.requestState, 'accept');
      expect(pending.json.result).toEqual({
        resultType: 'input_required',
        requestState: expect.any(String),
        _meta: expect.any(Object),
      });
      expect(pending.json.result?.['requestState']).not.toBe(elicited.requestState);
      const status = await quick.db.pool.query('SELECT status FROM elicitation_navigations');
      expect(status.rows).toEqual([{ status: 'NAVIGATION_ACCEPTED' }]);
      expect((await quick.db.pool.query('SELECT count(*)::int AS n FROM operation_receipts')).rows[0].n).toBe(0);
    } finally {
      await quick.close();
    }
  });
});
