import { afterEach, describe, expect, it } from 'vitest';
import { URL_CAPS, retryConnection } from '../support/connectFlow.js';
import { connectThroughList } from '../support/deadToken.js';
import { internalErrors } from '../support/legacySdkClient.js';
import { callTool } from '../support/mcpWire.js';
import { keyIdsInUse, newKey } from '../support/sealedKeys.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// A key rotation rolled as the README says, on two instances of one database: the new key first in
// SECRET_KEYS, then the instances restarted one by one. While one instance still holds only the old
// keys, nothing may be sealed or re-sealed under the new one: that instance would meet a value it
// cannot open. Each instance announces its keys (secrets/keyAgreement.ts) and the code waits.
describe('adding a key with instances rolled one by one', () => {
  const { stack, tokens } = useBrokerStack({ keyRegistry: { liveMs: 60_000 } }, { users: ['alice', 'bob'] });
  const k2 = newKey('k2');
  afterEach(() => {
    expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
  });
  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;
  const instances = () => [stack.brokerUrl, stack.secondUrl];
  const listOn = async (baseUrl: string) =>
    (await callTool(stack, tokens.alice, 'reports_list', {}, {}, URL_CAPS, { baseUrl })).json.result as {
      resultType?: string;
      isError?: boolean;
      content?: { text: string }[];
    };

  it('logs nobody out: calls on both instances keep working through both rolls, and re-sealing waits for the last one', async () => {
    const old = stack.secrets.secretKeys;
    await connectThroughList(stack, tokens.alice, 'alice');

    // Calls in flight through the whole roll, on both instances in turn.
    const answers: string[] = [];
    let rolling = true;
    const caller = (async () => {
      for (let i = 0; rolling; i += 1) {
        const result = await listOn(instances()[i % 2]!);
        answers.push(result.resultType === 'complete' && !result.isError ? 'ok' : JSON.stringify(result));
      }
    })();

    // Roll 1: the second instance holds k2 first; the first still holds only the old keys.
    await stack.restartOneWithKeys(1, [k2, ...old]);
    await stack.announceKeys();
    // Its re-seal waits, so the first instance never meets alice's tokens under k2.
    expect(await stack.resealOn(1, () => true)).toEqual({ resealed: 0, unopened: 0 });
    expect(await keyIdsInUse(stack.db.pool)).toEqual(old.map((k) => k.kid));
    // What it seals meanwhile (a request state for bob, not yet connected) opens on the first instance.
    const asked = (await callTool(stack, tokens.bob, 'reports_list', {}, {}, URL_CAPS, { baseUrl: stack.secondUrl }))
      .json.result as { resultType: string; requestState: string };
    expect(asked.resultType).toBe('input_required');
    const retried = await retryConnection(stack, tokens.bob, 'reports_list', {}, asked.requestState, 'accept');
    // Still waiting for bob at the provider: the first instance opened the state the second sealed.
    expect(retried.json.result).toMatchObject({ resultType: 'input_required' });

    // Roll 2: the first instance too. Once both have announced, k2 seals and the old values move to it.
    await stack.restartOneWithKeys(0, [k2, ...old]);
    await stack.announceKeys();
    const moved = await stack.resealOn(0, () => true);
    expect(moved.resealed).toBeGreaterThan(0);
    expect(await keyIdsInUse(stack.db.pool)).toEqual(['k2']);

    for (const url of instances()) expect(await listOn(url)).toMatchObject({ resultType: 'complete' });
    rolling = false;
    await caller;
    expect(answers.length).toBeGreaterThan(2);
    expect(answers.filter((a) => a !== 'ok')).toEqual([]);
    expect(await query("SELECT state FROM connections WHERE subject_sub = 'alice'")).toEqual([{ state: 'active' }]);
    expect(
      await query("SELECT count(*)::int AS n FROM navigation_events WHERE event = 'connection_key_missing'"),
    ).toEqual([{ n: 0 }]);
  });

  it('an instance rolled back to the old keys refuses values under the new key, changes nothing, and serves them again once rolled forward', async () => {
    const current = await query(
      "SELECT connection_id, key_id, ciphertext FROM secrets WHERE subject_sub = 'alice' ORDER BY kind",
    );
    expect(current.map((r) => r.key_id)).toEqual(current.map(() => 'k2'));
    const old = stack.secrets.secretKeys;

    // A rollback of the first instance: it holds the old keys only; the second still holds k2.
    await stack.restartOneWithKeys(0, old);
    await stack.announceKeys();
    const refused = await listOn(stack.brokerUrl);
    expect(refused.isError).toBe(true);
    expect(refused.content?.[0]?.text).toContain('a key rotation is rolling out. Try again in a moment.');
    expect(
      await query("SELECT connection_id, key_id, ciphertext FROM secrets WHERE subject_sub = 'alice' ORDER BY kind"),
    ).toEqual(current);
    expect(await query("SELECT state FROM connections WHERE subject_sub = 'alice'")).toEqual([{ state: 'active' }]);
    // The second instance serves alice meanwhile.
    expect(await listOn(stack.secondUrl)).toMatchObject({ resultType: 'complete' });

    // Rolled forward again: the first instance serves her, nothing was lost.
    await stack.restartOneWithKeys(0, [k2, ...old]);
    await stack.announceKeys();
    expect(await listOn(stack.brokerUrl)).toMatchObject({ resultType: 'complete' });
  });
});
