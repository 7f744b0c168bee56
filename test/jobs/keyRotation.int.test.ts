import { afterEach, describe, expect, it } from 'vitest';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { sweepOnce } from '../../src/jobs/sweeps.js';
import { verifyChain } from '../../src/ledger/chainVerifyRepo.js';
import { systemClock } from '../../src/shared/clock.js';
import { createLogger } from '../../src/shared/logger.js';
import { elicitConnection, openConnectLink, REPORTS_FORMS, URL_CAPS } from '../support/connectFlow.js';
import { connectThroughList } from '../support/deadToken.js';
import { internalErrors } from '../support/legacySdkClient.js';
import { callTool } from '../support/mcpWire.js';
import { operatorCli } from '../support/operatorCli.js';
import { keyIdsInUse, newKey, resealEntries, secretKeysEnv } from '../support/sealedKeys.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

const logger = createLogger({ level: 'silent' });

// A key rotation as an operator runs it on a live deployment: add a key first in SECRET_KEYS and
// roll the instances, let the sweep re-seal what the old key sealed, check `broker keys status`,
// retire the old key and roll again. Nobody connects again, and a flow in progress finishes.
describe('a key rotation through the running broker', () => {
  const { stack, tokens } = useBrokerStack({}, { users: ['alice', 'bob'] });
  afterEach(() => {
    expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
  });

  const sweep = () => sweepOnce({ pool: stack.db.pool, clock: systemClock, logger, reseal: stack.reseal });
  const listAs = async (token: string) =>
    (await callTool(stack, token, 'reports_list', {}, {}, URL_CAPS)).json.result as Record<string, unknown>;
  const keysStatus = async (keys: readonly { kid: string; key: string }[], ...args: string[]) =>
    (await operatorCli(stack, 'ops', { command: 'keys', env: { SECRET_KEYS: secretKeysEnv(keys) } }))(
      'status',
      ...args,
    );

  it('re-seals every value to the new key in the sweep, counted in the ledger, so the old key retires with every connection and a flow in progress still working', async () => {
    const old = stack.secrets.secretKeys;
    const k2 = newKey('k2');
    // alice is connected (tokens, her flow's link, her accepted call's kept arguments); bob has
    // consented and waits at the provider's sign-in page (his PKCE verifier is pending).
    await connectThroughList(stack, tokens.alice, 'alice');
    const bob = await elicitConnection(stack, tokens.bob, 'reports_list', {});
    const run = await openConnectLink(stack, bob.url, 'bob');
    const atProvider = await run.browser.submitForm(run.review, {}, { form: '/connect/' });
    expect(atProvider.text).toContain('name="password"');
    expect(await keyIdsInUse(stack.db.pool)).toEqual(old.map((k) => k.kid));

    // Roll 1: SECRET_KEYS=k2,<old>. What the old key sealed still opens.
    await stack.restartWithKeys([k2, ...old]);
    expect(await listAs(tokens.alice)).toMatchObject({ resultType: 'complete' });
    const before = await keysStatus([k2, ...old]);
    expect(before.code).toBe(0);
    // An operator's command: alice is refused, and the refusal is recorded.
    const env = { SECRET_KEYS: secretKeysEnv([k2, ...old]) };
    expect((await (await operatorCli(stack, 'alice', { command: 'keys', env }))('status')).code).toBe(3);
    expect(
      (await stack.db.pool.query("SELECT reason FROM operator_actions WHERE action = 'access_refused'")).rows,
    ).toEqual([{ reason: 'not an operator: broker keys status' }]);
    expect(before.output).toContain('Active key: k2 (the first of SECRET_KEYS).');
    expect(before.output).toMatch(/\bdev1\s+configured\s+\d+\s+not yet/);

    // The sweep re-seals all of it, once, with a ledger entry per flow counting what left the old key.
    const sealedUnderOld = Number(
      (
        await stack.db.pool.query<{ n: string }>(
          `SELECT (SELECT count(*) FROM secrets) + (SELECT count(*) FROM oauth_transactions)
                + (SELECT count(*) FROM operation_receipts WHERE arguments_key_id IS NOT NULL)
                + (SELECT count(*) FROM elicitation_navigations WHERE handle_key_id IS NOT NULL) AS n`,
        )
      ).rows[0]!.n,
    );
    expect((await sweep()).resealedValues).toBe(sealedUnderOld);
    expect(await keyIdsInUse(stack.db.pool)).toEqual(['k2']);
    const entries = await resealEntries(stack.db.pool);
    expect(entries.every((e) => e.actor === 'system:reseal' && e.evidence.keyId === 'k2')).toBe(true);
    expect(entries.reduce((n, e) => n + (e.evidence.from['dev1'] ?? 0), 0)).toBe(sealedUnderOld);
    expect((await verifyChain(stack.db.pool)).firstBreak).toBeUndefined();
    expect((await sweep()).resealedValues).toBe(0);

    const after = await keysStatus([k2, ...old], '--json');
    expect(after.code).toBe(0);
    const status = JSON.parse(after.output.trim().split('\n').at(-1)!) as { activeKeyId: string; keys: unknown[] };
    expect(status).toMatchObject({ activeKeyId: 'k2' });
    expect(status.keys).toEqual([
      { keyId: 'k2', state: 'active', values: sealedUnderOld, retirable: false },
      { keyId: 'dev1', state: 'configured', values: 0, retirable: true },
    ]);

    // Roll 2: the old key is retired. alice's connection works as it is.
    await stack.restartWithKeys([k2]);
    expect(await listAs(tokens.alice)).toMatchObject({
      resultType: 'complete',
      structuredContent: { reports: expect.any(Array) },
    });
    // bob's identical call gets his flow's own link again: its handle opens under k2.
    const again = await callTool(stack, tokens.bob, 'reports_list', {}, {}, URL_CAPS);
    expect(again.json.result).toMatchObject({ inputRequests: { connect: { params: { url: bob.url } } } });
    // bob finishes at the provider: the callback opens his verifier, re-sealed under k2.
    const consent = await run.browser.submitForm(atProvider, { login: 'bob', password: DEV_PASSWORD });
    const done = await run.browser.submitForm(consent, {}, { form: REPORTS_FORMS.allow });
    expect(done.text).toContain('Report Service is connected');
    expect(await listAs(tokens.bob)).toMatchObject({ resultType: 'complete' });
    expect(await keyIdsInUse(stack.db.pool)).toEqual(['k2']);
  });
});
