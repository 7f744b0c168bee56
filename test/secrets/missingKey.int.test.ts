import { afterEach, describe, expect, it } from 'vitest';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import {
  consentAndAuthorize,
  elicitConnection,
  openConnectLink,
  REPORTS_FORMS,
  retryConnection,
  URL_CAPS,
} from '../support/connectFlow.js';
import { connectThroughList, secretsBox } from '../support/deadToken.js';
import { internalErrors } from '../support/legacySdkClient.js';
import { callTool } from '../support/mcpWire.js';
import { operatorCli } from '../support/operatorCli.js';
import { newKey, secretKeysEnv } from '../support/sealedKeys.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// A value sealed under a key SECRET_KEYS no longer holds (retired before the re-seal moved it, or a
// deployment that lost it) can never be opened: each kind ends in "connect again", "start again" or
// "an operator decides", never an internal error.
describe('values sealed under a key that is no longer configured', () => {
  const { stack, tokens } = useBrokerStack({}, { users: ['alice', 'bob'] });
  afterEach(() => {
    expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
  });

  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;
  let generation = 0;
  /** Rolls both instances onto a key of their own: whatever was sealed before is under a key they lack. */
  const retireEveryKey = async () => {
    const key = newKey(`fresh${(generation += 1)}`);
    await stack.restartWithKeys([key]);
    return key;
  };

  it('a connection whose tokens no live instance can open needs its user again (connection_key_missing), its values are kept until connecting replaces them, and connecting makes it work', async () => {
    await connectThroughList(stack, tokens.alice, 'alice');
    const [row] = await query(
      "SELECT subject_iss, connection_id, ciphertext, key_id, navigation_id FROM secrets WHERE subject_sub = 'alice' AND kind = 'access_token'",
    );
    const retiredKid = row.key_id as string;
    // The token itself, as a canary: it must appear in no answer, page or log line.
    const token = secretsBox(stack).open(
      { ciphertext: row.ciphertext as Buffer, keyId: retiredKid },
      `${row.subject_iss as string}\nalice\nreports\naccess_token\n${row.connection_id as string}`,
    );
    const key = await retireEveryKey();

    const status = await (
      await operatorCli(stack, 'ops', { command: 'keys', env: { SECRET_KEYS: secretKeysEnv([key]) } })
    )('status');
    expect(status.code).toBe(1);
    expect(status.output).toMatch(new RegExp(`^${retiredKid} +missing +\\d+ +not configured`, 'm'));

    const asked = await callTool(stack, tokens.alice, 'reports_list', {}, {}, URL_CAPS);
    expect(asked.json.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { connect: { method: 'elicitation/create', params: { mode: 'url' } } },
    });
    // Kept, not deleted: a value under a key id this instance does not know may be one an instance
    // about to start can open (a rollback). keys status names the key as missing meanwhile.
    expect(await query("SELECT DISTINCT key_id FROM secrets WHERE subject_sub = 'alice'")).toEqual([
      { key_id: retiredKid },
    ]);
    expect(await query("SELECT state FROM connections WHERE subject_sub = 'alice'")).toEqual([
      { state: 'needs_reauth' },
    ]);
    expect(
      await query(
        "SELECT actor, evidence FROM navigation_events WHERE navigation_id = $1 AND event = 'connection_key_missing'",
        [row.navigation_id],
      ),
    ).toEqual([
      {
        actor: 'system:vault',
        evidence: {
          provider: 'reports',
          keyId: retiredKid,
          reason: 'sealed under a key SECRET_KEYS no longer holds',
        },
      },
    ]);

    const { requestState, inputRequests } = asked.json.result as {
      requestState: string;
      inputRequests: { connect: { params: { url: string } } };
    };
    await consentAndAuthorize(stack, await openConnectLink(stack, inputRequests.connect.params.url, 'alice'), 'alice');
    const listed = await retryConnection(stack, tokens.alice, 'reports_list', {}, requestState, 'accept');
    expect(listed.json.result).toMatchObject({ resultType: 'complete' });
    expect(await query("SELECT DISTINCT key_id FROM secrets WHERE subject_sub = 'alice'")).toEqual([
      { key_id: key.kid },
    ]);
    for (const text of [asked.text, listed.text, ...stack.logs]) expect(text).not.toContain(token);
  });

  it('a pending authorization no key opens: the callback answers a clear start-again page, and the link works again', async () => {
    const elicited = await elicitConnection(stack, tokens.bob, 'reports_list', {});
    const run = await openConnectLink(stack, elicited.url, 'bob');
    const atProvider = await run.browser.submitForm(run.review, {}, { form: '/connect/' });
    const [flow] = await query(
      "SELECT id FROM elicitation_navigations WHERE subject_sub = 'bob' ORDER BY created_at DESC LIMIT 1",
    );
    await retireEveryKey();

    // An identical call while the flow is open would get its link again, but its handle no longer opens: a new flow.
    const repeated = await callTool(stack, tokens.bob, 'reports_list', {}, {}, URL_CAPS);
    const repeatedUrl = (repeated.json.result as { inputRequests: { connect: { params: { url: string } } } })
      .inputRequests.connect.params.url;
    expect(repeatedUrl).not.toBe(elicited.url);

    const consent = await run.browser.submitForm(atProvider, { login: 'bob', password: DEV_PASSWORD });
    const page = await run.browser.submitForm(consent, {}, { form: REPORTS_FORMS.allow });
    expect(page.status).toBe(400);
    expect(page.text).toContain('the service changed its keys while you were away. Nothing was connected.');
    expect(page.text).toContain('Open the link from your app again to start over.');
    expect(await query("SELECT kind FROM secrets WHERE subject_sub = 'bob'")).toEqual([]);
    expect(
      await query(
        "SELECT to_status, evidence FROM navigation_events WHERE navigation_id = $1 AND event = 'callback_failed'",
        [flow.id],
      ),
    ).toEqual([{ to_status: 'OUT_OF_BAND_PENDING', evidence: { error: 'invalid_input' } }]);

    // The same link again: a new consent, sealed under the key now configured, connects bob. The
    // Report Service remembers his sign-in and grant from the first attempt, so it may answer at once.
    const again = await openConnectLink(stack, elicited.url, 'bob', run.browser);
    let done = await run.browser.submitForm(again.review, {}, { form: '/connect/' });
    if (!done.text.includes('Report Service is connected'))
      done = await run.browser.submitForm(done, {}, { form: REPORTS_FORMS.allow });
    expect(done.text).toContain('Report Service is connected');
    expect((await callTool(stack, tokens.bob, 'reports_list', {}, {}, URL_CAPS)).json.result).toMatchObject({
      resultType: 'complete',
    });
  });

  it('kept tool arguments no key opens: the re-drive holds the receipt for an operator and the ledger says why', async () => {
    await connectThroughList(stack, tokens.alice, 'alice');
    const [receipt] = await query(
      `SELECT r.id, r.navigation_id, r.arguments_key_id FROM operation_receipts r
         JOIN elicitation_navigations n ON n.id = r.navigation_id
        WHERE n.subject_sub = 'alice' ORDER BY r.created_at DESC LIMIT 1`,
    );
    // Its outcome unknown, as after a crash between acceptance and outcome: the reconcile sweep would re-drive it.
    await stack.db.pool.query(
      "UPDATE operation_receipts SET outcome_status = 'pending', outcome = NULL, result_digest = NULL, completed_at = NULL WHERE id = $1",
      [receipt.id],
    );
    await retireEveryKey();

    expect(await stack.reconcile(0, 10)).toEqual({ redriven: 0, waiting: 1 });
    expect(await stack.reconcile(0, 10)).toEqual({ redriven: 0, waiting: 0 });
    expect(
      await query('SELECT outcome_status, redrive_after FROM operation_receipts WHERE id = $1', [receipt.id]),
    ).toEqual([{ outcome_status: 'pending', redrive_after: Infinity }]);
    const withheld = await query(
      "SELECT actor, evidence FROM navigation_events WHERE navigation_id = $1 AND event = 'redrive_withheld'",
      [receipt.navigation_id],
    );
    expect(withheld).toEqual([
      {
        actor: 'system:reconcile',
        evidence: {
          receiptId: receipt.id,
          keyId: receipt.arguments_key_id,
          reason: expect.stringContaining('which SECRET_KEYS no longer holds: an operator decides'),
        },
      },
    ]);
  });
});
