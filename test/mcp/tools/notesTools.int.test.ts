import { describe, expect, it } from 'vitest';
import { callTool } from '../../support/mcpWire.js';
import { useBrokerStack } from '../../support/useBrokerStack.js';

describe('notes_workspaces, notes_list, notes_create', () => {
  const { stack, tokens } = useBrokerStack({}, { users: ['alice', 'mallory'] });

  const count = async () =>
    (await stack.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM notes')).rows[0]!.n;

  it('lists the workspaces granted to the caller, and only those', async () => {
    expect((await callTool(stack, tokens.alice, 'notes_workspaces', {})).json.result?.['structuredContent']).toEqual({
      workspaces: ['file:///work/notes/alice'],
    });
    expect((await callTool(stack, tokens.mallory, 'notes_workspaces', {})).json.result?.['structuredContent']).toEqual({
      workspaces: ['file:///work/notes/mallory'],
    });
  });

  it('creates a note in a granted workspace and lists it there', async () => {
    const created = await callTool(stack, tokens.mallory, 'notes_create', {
      workspaceUri: 'file:///work/notes/mallory',
      title: 'Plans',
      body: 'world domination',
    });
    const note = (created.json.result?.['structuredContent'] as { note: { id: string; uri: string } }).note;
    expect(note.uri).toBe(`file:///work/notes/mallory/${note.id}.md`);
    const listed = await callTool(stack, tokens.mallory, 'notes_list', { workspaceUri: 'file:///work/notes/mallory' });
    expect((listed.json.result?.['structuredContent'] as { notes: { id: string }[] }).notes.map((n) => n.id)).toContain(
      note.id,
    );
    const row = await stack.db.pool.query('SELECT created_by_sub, workspace_uri FROM notes WHERE id = $1', [note.id]);
    expect(row.rows).toEqual([{ created_by_sub: 'mallory', workspace_uri: 'file:///work/notes/mallory' }]);
  });

  it.each([
    ["another user's workspace", 'file:///work/notes/alice'],
    ['a prefix look-alike', 'file:///work/notes/mallory-evil'],
    ['an encoded traversal out of the workspace', 'file:///work/notes/mallory/%2e%2e/alice'],
    ['a plain traversal out of the workspace', 'file:///work/notes/mallory/../alice'],
    ['the parent of the workspace', 'file:///work/notes'],
  ])('refuses %s, for reading and for writing, and changes nothing', async (_name, workspaceUri) => {
    const before = await count();
    const listed = await callTool(stack, tokens.mallory, 'notes_list', { workspaceUri });
    expect(listed.json.result).toMatchObject({ isError: true, structuredContent: { error: 'forbidden' } });
    expect(JSON.stringify(listed.json)).not.toContain('TPS');
    const created = await callTool(stack, tokens.mallory, 'notes_create', { workspaceUri, title: 'x', body: 'y' });
    expect(created.json.result).toMatchObject({ isError: true, structuredContent: { error: 'forbidden' } });
    expect(await count()).toBe(before);
  });

  it('accepts a folder inside a granted workspace', async () => {
    const response = await callTool(stack, tokens.alice, 'notes_list', {
      workspaceUri: 'file:///work/notes/alice/projects',
    });
    expect(response.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { workspaceUri: 'file:///work/notes/alice/projects', notes: [] },
    });
  });

  it.each([
    ['a non-file URI', { workspaceUri: 'https://evil.example/notes', title: 't', body: 'b' }, 'must be a file: URI'],
    ['an empty title', { workspaceUri: 'file:///work/notes/alice', title: '  ', body: 'b' }, 'title'],
    ['an unknown argument', { workspaceUri: 'file:///work/notes/alice', title: 't', body: 'b', owner: 'bob' }, 'owner'],
    ['a missing argument', { workspaceUri: 'file:///work/notes/alice', title: 't' }, 'body'],
  ])('answers %s with a precise isError result and creates nothing', async (_name, args, hint) => {
    const before = await count();
    const response = await callTool(stack, tokens.alice, 'notes_create', args);
    expect(response.status).toBe(200);
    expect(response.json.result).toMatchObject({
      isError: true,
      structuredContent: { error: 'invalid_input', message: expect.stringContaining(hint) },
    });
    expect(await count()).toBe(before);
  });
});
