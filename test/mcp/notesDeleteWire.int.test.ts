import { describe, expect, it } from 'vitest';
import { FORM, mcpPost, meta } from '../support/mcpWire.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// notes_delete's contract over the real wire, one test per checkpoint: discovery, the MRTR form and its
// sealed state, containment, a decline, two instances racing one confirmation, and the version errors.
describe('notes_delete over the 2026-07-28 wire', () => {
  const { stack, tokens } = useBrokerStack({}, { users: ['alice'] });
  const ws = 'file:///work/notes/alice';
  const args = { workspaceUri: ws, title: 'TPS report (Q2)' };

  const post = (body: unknown, headers: Record<string, string> = {}) =>
    mcpPost(stack, body, { token: tokens.alice, headers });
  const call = (id: number, extra: Record<string, unknown> = {}, a: object = args, capabilities: object = FORM) =>
    post({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'notes_delete', arguments: a, ...extra, _meta: meta(capabilities) },
    });
  const exists = async (id: string) =>
    (await stack.db.pool.query('SELECT 1 FROM notes WHERE id = $1', [id])).rowCount === 1;

  it('1. discovery declares tools but not roots', async () => {
    const { json } = await post({ jsonrpc: '2.0', id: 'd', method: 'server/discover', params: { _meta: meta() } });
    expect(json.result?.['capabilities']).toEqual({ tools: {} });
  });

  it('2. tool discovery returns notes_delete with resultType, server identity and cache hints', async () => {
    const { json } = await post({ jsonrpc: '2.0', id: 't', method: 'tools/list', params: { _meta: meta() } });
    expect(json.result).toMatchObject({
      resultType: 'complete',
      ttlMs: expect.any(Number),
      cacheScope: 'public',
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'connect-broker' } },
    });
    expect((json.result?.['tools'] as { name: string }[]).some((t) => t.name === 'notes_delete')).toBe(true);
  });

  let requestState = '';
  it('3. request id 1 returns a form in inputRequests.delete_choice', async () => {
    const { json } = await call(1);
    expect(json.id).toBe(1);
    expect(json.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: {
        delete_choice: {
          method: 'elicitation/create',
          params: { mode: 'form', requestedSchema: { type: 'object', required: ['note_id', 'confirm'] } },
        },
      },
    });
    requestState = json.result?.['requestState'] as string;
  });

  it('4. request id 2 echoes the signed state and completes the deletion', async () => {
    const { json } = await call(2, {
      requestState,
      inputResponses: { delete_choice: { action: 'accept', content: { note_id: 'note_a1ce00000002', confirm: true } } },
    });
    expect(json).toMatchObject({ id: 2, result: { resultType: 'complete', structuredContent: { status: 'deleted' } } });
    expect(await exists('note_a1ce00000002')).toBe(false);
  });

  it('5. a prefix path and an encoded traversal both fail containment', async () => {
    for (const workspaceUri of [
      'file:///work/notes/alice-evil/secret.md',
      'file:///work/notes/alice/%2e%2e/private.md',
    ]) {
      const { json } = await call(5, {}, { workspaceUri, title: 'TPS' });
      expect(json.result).toMatchObject({ isError: true, structuredContent: { error: 'forbidden' } });
    }
  });

  it('6. changing the title cannot reuse the confirmation state', async () => {
    const first = await call(6, {}, { workspaceUri: ws, title: 'TPS report draft' });
    const state = first.json.result?.['requestState'];
    const { json } = await call(
      7,
      {
        requestState: state,
        inputResponses: {
          delete_choice: { action: 'accept', content: { note_id: 'note_a1ce00000003', confirm: true } },
        },
      },
      { workspaceUri: ws, title: 'Lunch' },
    );
    expect(json.error).toMatchObject({ code: -32602 });
    expect(await exists('note_a1ce00000003')).toBe(true);
  });

  it('7. decline leaves the note unchanged', async () => {
    const first = await call(8, {}, { workspaceUri: ws, title: 'Lunch ideas' });
    const { json } = await call(
      9,
      { requestState: first.json.result?.['requestState'], inputResponses: { delete_choice: { action: 'decline' } } },
      { workspaceUri: ws, title: 'Lunch ideas' },
    );
    expect(json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'declined' } });
    expect(await exists('note_a1ce00000004')).toBe(true);
  });

  it('8. two server instances sharing notes and replay state cannot both execute one confirmation', async () => {
    const a = { workspaceUri: ws, title: 'TPS report (Q1, old)' };
    const first = await call(10, {}, a);
    const body = (id: number) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: {
        name: 'notes_delete',
        arguments: a,
        requestState: first.json.result?.['requestState'],
        inputResponses: {
          delete_choice: { action: 'accept', content: { note_id: 'note_a1ce00000001', confirm: true } },
        },
        _meta: meta(FORM),
      },
    });
    const [one, two] = await Promise.all([
      mcpPost(stack, body(11), { token: tokens.alice }),
      mcpPost(stack, body(12), { token: tokens.alice, baseUrl: stack.secondUrl }),
    ]);
    const deleted = [one, two].filter(
      (r) => (r.json.result?.['structuredContent'] as { status?: string }).status === 'deleted',
    );
    expect(deleted).toHaveLength(1);
    expect(await exists('note_a1ce00000001')).toBe(false);
  });

  it('9. empty and explicit form declarations work; URL-only support returns the exact -32021 form requirement', async () => {
    for (const capabilities of [{ elicitation: {} }, { elicitation: { form: {} } }]) {
      expect((await call(13, {}, { workspaceUri: ws, title: 'TPS' }, capabilities)).json.result?.['resultType']).toBe(
        'input_required',
      );
    }
    const refused = await call(14, {}, { workspaceUri: ws, title: 'TPS' }, { elicitation: { url: {} } });
    expect(refused.status).toBe(400);
    expect(refused.json).toEqual({
      jsonrpc: '2.0',
      id: 14,
      error: {
        code: -32021,
        message: expect.any(String),
        data: { requiredCapabilities: { elicitation: { form: {} } } },
      },
    });
  });

  it('10. unsupported version failures use the exact -32022 data shape', async () => {
    const body = {
      jsonrpc: '2.0',
      id: 15,
      method: 'tools/list',
      params: { _meta: { ...meta(), 'io.modelcontextprotocol/protocolVersion': '2024-01-01' } },
    };
    const { status, json } = await post(body, { 'mcp-protocol-version': '2024-01-01' });
    expect(status).toBe(400);
    expect(json.error).toEqual({
      code: -32022,
      message: 'Unsupported protocol version',
      data: { supported: ['2026-07-28', '2025-11-25'], requested: '2024-01-01' },
    });
  });

  it('11. a notification without id produces no JSON-RPC response', async () => {
    const response = await post({ jsonrpc: '2.0', method: 'tools/list', params: { _meta: meta() } });
    expect(response.status).toBe(202);
    expect(response.text).toBe('');
  });
});
