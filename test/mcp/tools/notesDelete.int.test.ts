import { beforeEach, describe, expect, it } from 'vitest';
import { sweepOnce } from '../../../src/jobs/sweeps.js';
import { createLogger } from '../../../src/shared/logger.js';
import { callTool } from '../../support/mcpWire.js';
import { useBrokerStack } from '../../support/useBrokerStack.js';

const ALICE_WS = 'file:///work/notes/alice';

describe('notes_delete through MRTR form elicitation', () => {
  const clock = { offsetMs: 0, now: () => new Date(Date.now() + clock.offsetMs) };
  const { stack, tokens } = useBrokerStack({ clock }, { users: ['alice', 'bob'] });

  beforeEach(() => {
    clock.offsetMs = 0;
  });

  let counter = 0;
  /** A fresh note in alice's workspace with a unique title. */
  async function aliceNote(prefix = 'Delete me'): Promise<{ id: string; title: string }> {
    const title = `${prefix} ${++counter} ${Math.random().toString(36).slice(2, 8)}`;
    const created = await callTool(stack, tokens.alice, 'notes_create', { workspaceUri: ALICE_WS, title, body: 'x' });
    const id = (created.json.result?.['structuredContent'] as { note: { id: string } }).note.id;
    return { id, title };
  }

  async function ask(title: string, token = tokens.alice) {
    const response = await callTool(stack, token, 'notes_delete', { workspaceUri: ALICE_WS, title });
    expect(response.json.result?.['resultType']).toBe('input_required');
    return response.json.result as {
      requestState: string;
      inputRequests: {
        delete_choice: { params: { requestedSchema: { properties: { note_id: { enum: string[] } } } } };
      };
    };
  }

  const retry = (title: string, requestState: string, reply: unknown, token = tokens.alice, baseUrl?: string) =>
    callTool(
      stack,
      token,
      'notes_delete',
      { workspaceUri: ALICE_WS, title },
      { requestState, inputResponses: reply === undefined ? {} : { delete_choice: reply } },
      undefined,
      baseUrl ? { baseUrl } : {},
    );

  const exists = async (id: string) =>
    (await stack.db.pool.query('SELECT 1 FROM notes WHERE id = $1', [id])).rowCount === 1;
  const nonces = async () =>
    (await stack.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM mrtr_nonces')).rows[0]!.n;
  const accept = (id: string, confirm = true) => ({ action: 'accept', content: { note_id: id, confirm } });

  it('offers one candidate as an enum with a required confirm, and deletes it on accept', async () => {
    const note = await aliceNote();
    const form = await ask(note.title);
    expect(form.inputRequests.delete_choice.params.requestedSchema.properties.note_id.enum).toEqual([note.id]);
    const done = await retry(note.title, form.requestState, accept(note.id));
    expect(done.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { status: 'deleted', note: { id: note.id } },
    });
    expect(done.json.result?.['isError']).toBeUndefined();
    expect(await exists(note.id)).toBe(false);
  });

  it('deletes at most once when the same accepted state is sent twice', async () => {
    const [keep, target] = [await aliceNote('Twin'), await aliceNote('Twin')];
    const form = await ask('Twin');
    expect(form.inputRequests.delete_choice.params.requestedSchema.properties.note_id.enum).toEqual(
      expect.arrayContaining([keep.id, target.id]),
    );
    expect(
      (await retry('Twin', form.requestState, accept(target.id))).json.result?.['structuredContent'],
    ).toMatchObject({ status: 'deleted' });
    const again = await retry('Twin', form.requestState, accept(keep.id));
    expect(again.json.result).toMatchObject({ isError: true, structuredContent: { error: 'conflict' } });
    expect(await exists(keep.id)).toBe(true);
  });

  it('deletes exactly once when two instances receive the same accepted state at the same time', async () => {
    const note = await aliceNote('Race');
    const form = await ask(note.title);
    const before = await nonces();
    const answers = await Promise.all([
      retry(note.title, form.requestState, accept(note.id), tokens.alice, stack.brokerUrl),
      retry(note.title, form.requestState, accept(note.id), tokens.alice, stack.secondUrl),
    ]);
    const statuses = answers
      .map(
        (a) =>
          (a.json.result?.['structuredContent'] as { status?: string; error?: string }).status ??
          (a.json.result?.['structuredContent'] as { error: string }).error,
      )
      .sort();
    expect(statuses).toEqual(['conflict', 'deleted']);
    expect(await exists(note.id)).toBe(false);
    expect(await nonces()).toBe(before + 1);
  });

  it('treats decline as terminal: nonce used, nothing deleted, a complete non-error result', async () => {
    const note = await aliceNote();
    const form = await ask(note.title);
    const declined = await retry(note.title, form.requestState, { action: 'decline' });
    expect(declined.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'declined' } });
    expect(declined.json.result?.['isError']).toBeUndefined();
    expect(await exists(note.id)).toBe(true);
    const after = await retry(note.title, form.requestState, accept(note.id));
    expect(after.json.result).toMatchObject({ isError: true, structuredContent: { error: 'conflict' } });
    expect(await exists(note.id)).toBe(true);
  });

  it('refuses a declined confirmation replayed to an instance whose clock lags the sweeper by more than the state has left', async () => {
    const note = await aliceNote();
    const form = await ask(note.title);
    expect(
      (await retry(note.title, form.requestState, { action: 'decline' })).json.result?.['structuredContent'],
    ).toMatchObject({ status: 'declined' });
    // Another instance, six minutes ahead, sweeps: to it the state (five minutes) has expired.
    await sweepOnce({
      pool: stack.db.pool,
      clock: { now: () => new Date(Date.now() + 6 * 60_000) },
      logger: createLogger({ level: 'silent' }),
    });
    // To this instance the state is still valid; its nonce must still say "used".
    const replayed = await retry(note.title, form.requestState, accept(note.id));
    expect(replayed.json.result).toMatchObject({ isError: true, structuredContent: { error: 'conflict' } });
    expect(await exists(note.id)).toBe(true);
  });

  it('treats accept without confirm as a decline', async () => {
    const note = await aliceNote();
    const form = await ask(note.title);
    expect(
      (await retry(note.title, form.requestState, accept(note.id, false))).json.result?.['structuredContent'],
    ).toMatchObject({ status: 'declined' });
    expect(await exists(note.id)).toBe(true);
  });

  it('treats cancel as non-terminal: nothing changes and the same state still works', async () => {
    const note = await aliceNote();
    const form = await ask(note.title);
    const before = await nonces();
    const cancelled = await retry(note.title, form.requestState, { action: 'cancel' });
    expect(cancelled.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'cancelled' } });
    expect(await nonces()).toBe(before);
    expect(await exists(note.id)).toBe(true);
    expect(
      (await retry(note.title, form.requestState, accept(note.id))).json.result?.['structuredContent'],
    ).toMatchObject({ status: 'deleted' });
  });

  it('asks again, with the same state, when the answer is missing', async () => {
    const note = await aliceNote();
    const form = await ask(note.title);
    const again = await retry(note.title, form.requestState, undefined);
    expect(again.json.result).toMatchObject({ resultType: 'input_required', requestState: form.requestState });
    expect(
      (again.json.result as typeof form).inputRequests.delete_choice.params.requestedSchema.properties.note_id.enum,
    ).toEqual([note.id]);
    expect(await exists(note.id)).toBe(true);
  });

  it.each([
    ['an id that was not offered', { action: 'accept', content: { note_id: 'note_a1ce00000004', confirm: true } }],
    ['a missing confirm', { action: 'accept', content: { note_id: 'PLACEHOLDER' } }],
    ['confirm as a string', { action: 'accept', content: { note_id: 'PLACEHOLDER', confirm: 'true' } }],
    ['an extra field', { action: 'accept', content: { note_id: 'PLACEHOLDER', confirm: true, all: true } }],
    ['an unknown action', { action: 'approve' }],
    ['not an object', 'yes'],
  ])('refuses %s without mutating, and the state stays usable', async (_name, reply) => {
    const note = await aliceNote();
    const form = await ask(note.title);
    const before = await nonces();
    const patched = JSON.parse(JSON.stringify(reply).replace('PLACEHOLDER', note.id));
    const refused = await retry(note.title, form.requestState, patched);
    expect(refused.json.result).toMatchObject({
      resultType: 'complete',
      isError: true,
      structuredContent: { error: 'invalid_input' },
    });
    expect(await exists(note.id)).toBe(true);
    expect(await exists('note_a1ce00000004')).toBe(true);
    expect(await nonces()).toBe(before);
    expect(
      (await retry(note.title, form.requestState, accept(note.id))).json.result?.['structuredContent'],
    ).toMatchObject({ status: 'deleted' });
  });

  it('rejects a tampered state with -32602 and changes nothing', async () => {
    const note = await aliceNote();
    const form = await ask(note.title);
    const parts = form.requestState.split('.');
    parts[3] = `${parts[3]!.slice(0, -2)}${parts[3]!.endsWith('AA') ? 'BB' : 'AA'}`;
    const refused = await retry(note.title, parts.join('.'), accept(note.id));
    expect(refused.status).toBe(200);
    expect(refused.json.error).toMatchObject({ code: -32602 });
    expect(await exists(note.id)).toBe(true);
  });

  it('rejects an expired state', async () => {
    const note = await aliceNote();
    const form = await ask(note.title);
    clock.offsetMs = 6 * 60 * 1000;
    const refused = await retry(note.title, form.requestState, accept(note.id));
    expect(refused.json.error).toMatchObject({ code: -32602, message: expect.stringContaining('expired') });
    expect(await exists(note.id)).toBe(true);
  });

  it("rejects alice's state presented by bob", async () => {
    const note = await aliceNote();
    const form = await ask(note.title);
    await stack.db.pool.query(
      `INSERT INTO workspace_grants (principal_iss, principal_sub, workspace_uri) VALUES ($1, 'bob', $2) ON CONFLICT DO NOTHING`,
      [stack.dev.idp.issuer, 'file:///work/notes/bob'],
    );
    const refused = await retry(note.title, form.requestState, accept(note.id), tokens.bob);
    expect(refused.json.error).toMatchObject({ code: -32602, message: expect.stringContaining('another caller') });
    expect(await exists(note.id)).toBe(true);
  });

  it('rejects the state on a call with other arguments', async () => {
    const note = await aliceNote();
    const form = await ask(note.title);
    const refused = await retry(`${note.title} `.trim() + 'x', form.requestState, accept(note.id));
    expect(refused.json.error).toMatchObject({ code: -32602, message: expect.stringContaining('different arguments') });
    expect(await exists(note.id)).toBe(true);
  });

  it('re-authorizes on the retry: a grant revoked in between deletes nothing', async () => {
    const note = await aliceNote();
    const form = await ask(note.title);
    const grant = [stack.dev.idp.issuer, 'alice', ALICE_WS];
    await stack.db.pool.query(
      'DELETE FROM workspace_grants WHERE principal_iss = $1 AND principal_sub = $2 AND workspace_uri = $3',
      grant,
    );
    try {
      const refused = await retry(note.title, form.requestState, accept(note.id));
      expect(refused.json.result).toMatchObject({ isError: true, structuredContent: { error: 'forbidden' } });
      expect(await exists(note.id)).toBe(true);
    } finally {
      await stack.db.pool.query(
        'INSERT INTO workspace_grants (principal_iss, principal_sub, workspace_uri) VALUES ($1, $2, $3)',
        grant,
      );
    }
    expect(
      (await retry(note.title, form.requestState, accept(note.id))).json.result?.['structuredContent'],
    ).toMatchObject({ status: 'deleted' });
  });

  it('re-checks the live note: one deleted in between is reported, and the state is not used up', async () => {
    const note = await aliceNote();
    const form = await ask(note.title);
    await stack.db.pool.query('DELETE FROM notes WHERE id = $1', [note.id]);
    const before = await nonces();
    const refused = await retry(note.title, form.requestState, accept(note.id));
    expect(refused.json.result).toMatchObject({ isError: true, structuredContent: { error: 'not_found' } });
    expect(await nonces()).toBe(before);
  });

  it('answers a title that matches nothing with a hint naming the titles there', async () => {
    const response = await callTool(stack, tokens.alice, 'notes_delete', {
      workspaceUri: ALICE_WS,
      title: 'no such note at all',
    });
    expect(response.json.result).toMatchObject({
      isError: true,
      structuredContent: { error: 'not_found', message: expect.stringContaining('Titles there') },
    });
  });
});
