import { ProtocolError, type ElicitRequestFormParams, type ElicitResult } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { connectSdkClient, toolCalls } from '../support/sdkClient.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// The real SDK v2 client (`@modelcontextprotocol/client`, 2026-07-28 over
// Streamable HTTP) against the real broker over HTTPS. The
// SDK answers `input_required` itself: it hands each embedded
// `elicitation/create` to the handler registered with setRequestHandler and
// retries the call with `inputResponses` and the echoed `requestState`.

const WORKSPACE = 'file:///work/notes/alice';
const Q2 = { id: 'note_a1ce00000002', title: 'TPS report (Q2)' };
const LUNCH = { id: 'note_a1ce00000004', title: 'Lunch ideas' };

describe('the MCP SDK v2 client', () => {
  const { stack, tokens } = useBrokerStack({}, { users: ['alice'] });

  /** alice's 2026-07-28 client: with an `answer` it declares form elicitation and answers every form with it; without one it declares no capability. */
  async function connect(answer: ((params: ElicitRequestFormParams) => ElicitResult) | undefined) {
    const {
      client,
      sent: wire,
      formAsks: asked,
      errors,
    } = await connectSdkClient(stack, tokens.alice, { era: '2026-07-28', ...(answer ? { form: answer } : {}) });
    return { client, wire, asked, errors };
  }

  async function noteExists(id: string): Promise<boolean> {
    const { rowCount } = await stack.db.pool.query('SELECT 1 FROM notes WHERE id = $1', [id]);
    return rowCount === 1;
  }

  it('connects at 2026-07-28 and lists the notes tools', async () => {
    const { client, wire, errors } = await connect(() => ({ action: 'cancel' }));
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      expect(client.getServerVersion()).toMatchObject({ name: 'connect-broker' });
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(
        expect.arrayContaining(['notes_create', 'notes_delete', 'notes_list', 'notes_workspaces']),
      );
      const list = wire.find((e) => e.body?.['method'] === 'tools/list');
      expect(list?.status).toBe(200);
      expect(list?.headers['mcp-protocol-version']).toBe('2026-07-28');
      expect(list?.response).toMatchObject({
        jsonrpc: '2.0',
        id: list?.body?.['id'],
        result: { resultType: 'complete', cacheScope: 'public' },
      });
      expect(errors, 'the SDK reported no protocol errors').toEqual([]);
    } finally {
      await client.close();
    }
  });

  it('deletes a note the user confirmed in the form, through the SDK retry', async () => {
    const { client, wire, asked, errors } = await connect((params) => {
      const noteId = (params.requestedSchema.properties['note_id'] as { enum?: string[] }).enum?.[0] ?? '';
      return { action: 'accept', content: { note_id: noteId, confirm: true } };
    });
    try {
      const { tools } = await client.listTools();
      expect(tools.find((t) => t.name === 'notes_delete')).toBeDefined();
      expect(await noteExists(Q2.id)).toBe(true);

      const result = await client.callTool({
        name: 'notes_delete',
        arguments: { workspaceUri: WORKSPACE, title: Q2.title },
      });

      expect(result.isError ?? false).toBe(false);
      expect(result.structuredContent).toMatchObject({ status: 'deleted', note: { id: Q2.id, title: Q2.title } });
      expect(asked).toHaveLength(1);
      expect(asked[0]?.requestedSchema.properties['note_id']).toMatchObject({ type: 'string', enum: [Q2.id] });
      expect(asked[0]?.requestedSchema.properties['confirm']).toMatchObject({ type: 'boolean' });

      // On the wire: input_required, then one retry with a new id, the answer and the same requestState.
      const [first, retry, ...more] = toolCalls(wire);
      expect(more).toEqual([]);
      expect(first?.status).toBe(200);
      expect(first?.headers['mcp-method']).toBe('tools/call');
      expect(first?.headers['mcp-name']).toBe('notes_delete');
      const firstResult = first?.response?.['result'] as {
        resultType: string;
        requestState: string;
        inputRequests: Record<string, unknown>;
      };
      expect(firstResult.resultType).toBe('input_required');
      expect(Object.keys(firstResult.inputRequests)).toEqual(['delete_choice']);
      const retryParams = retry?.body?.['params'] as Record<string, unknown>;
      expect(retry?.body?.['id']).not.toEqual(first?.body?.['id']);
      expect(retryParams['requestState']).toBe(firstResult.requestState);
      expect(retryParams['arguments']).toEqual({ workspaceUri: WORKSPACE, title: Q2.title });
      expect(retryParams['inputResponses']).toEqual({
        delete_choice: { action: 'accept', content: { note_id: Q2.id, confirm: true } },
      });
      expect(retry?.status).toBe(200);
      expect(retry?.response).toMatchObject({
        jsonrpc: '2.0',
        id: retry?.body?.['id'],
        result: { resultType: 'complete', structuredContent: { status: 'deleted' } },
      });

      // In the database: the note is gone, its confirmation nonce used up as "deleted".
      expect(await noteExists(Q2.id)).toBe(false);
      const nonces = await stack.db.pool.query(
        "SELECT outcome FROM mrtr_nonces WHERE principal_sub = 'alice' AND outcome = 'deleted'",
      );
      expect(nonces.rowCount).toBe(1);
      const others = await stack.db.pool.query("SELECT count(*)::int AS n FROM notes WHERE title LIKE 'TPS report%'");
      expect(others.rows[0].n).toBe(2);
      expect(errors, 'the SDK reported no protocol errors').toEqual([]);
    } finally {
      await client.close();
    }
  });

  it('leaves the note in place when the user declines the form', async () => {
    const { client, wire, asked, errors } = await connect(() => ({ action: 'decline' }));
    try {
      await client.listTools();
      const result = await client.callTool({
        name: 'notes_delete',
        arguments: { workspaceUri: WORKSPACE, title: LUNCH.title },
      });

      expect(result.isError ?? false).toBe(false);
      expect(result.structuredContent).toEqual({ status: 'declined' });
      expect(asked).toHaveLength(1);
      const [first, retry, ...more] = toolCalls(wire);
      expect(more).toEqual([]);
      expect((first?.response?.['result'] as { resultType: string }).resultType).toBe('input_required');
      expect((retry?.body?.['params'] as Record<string, unknown>)['inputResponses']).toEqual({
        delete_choice: { action: 'decline' },
      });
      expect(retry?.response).toMatchObject({
        result: { resultType: 'complete', structuredContent: { status: 'declined' } },
      });

      expect(await noteExists(LUNCH.id)).toBe(true);
      const nonces = await stack.db.pool.query(
        "SELECT outcome FROM mrtr_nonces WHERE principal_sub = 'alice' AND outcome = 'declined'",
      );
      expect(nonces.rowCount).toBe(1);
      expect(errors, 'the SDK reported no protocol errors').toEqual([]);
    } finally {
      await client.close();
    }
  });

  it('surfaces -32021 as a ProtocolError to a client without form elicitation, and deletes nothing', async () => {
    const { client, wire, errors } = await connect(undefined);
    try {
      await client.listTools();
      const failure = await client
        .callTool({ name: 'notes_delete', arguments: { workspaceUri: WORKSPACE, title: LUNCH.title } })
        .then(
          () => undefined,
          (err: unknown) => err,
        );

      expect(failure).toBeInstanceOf(ProtocolError);
      expect(failure).toMatchObject({ code: -32021, data: { requiredCapabilities: { elicitation: { form: {} } } } });
      const [call, ...more] = toolCalls(wire);
      expect(more).toEqual([]);
      expect(call?.status).toBe(400);
      expect(call?.response).toMatchObject({ jsonrpc: '2.0', id: call?.body?.['id'], error: { code: -32021 } });
      expect(await noteExists(LUNCH.id)).toBe(true);
      expect(errors, 'the SDK reported no protocol errors').toEqual([]);
    } finally {
      await client.close();
    }
  });
});
