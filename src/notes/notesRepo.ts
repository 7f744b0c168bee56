import type { Queryable } from '../db/pool.js';
import type { Principal } from '../auth/principal.js';
import type { Note } from './note.js';

interface NoteRow {
  id: string;
  workspace_uri: string;
  note_uri: string;
  title: string;
  body: string;
  created_at: Date;
}

function fromRow(row: NoteRow): Note {
  return {
    id: row.id,
    workspaceUri: row.workspace_uri,
    noteUri: row.note_uri,
    title: row.title,
    body: row.body,
    createdAt: row.created_at,
  };
}

// LIKE metacharacters in a canonical URI are matched literally.
function likePrefix(uri: string): string {
  return `${uri.replace(/[\\%_]/g, (c) => `\\${c}`)}/%`;
}

export async function findGrantedWorkspaces(db: Queryable, principal: Principal): Promise<string[]> {
  const { rows } = await db.query<{ workspace_uri: string }>(
    'SELECT workspace_uri FROM workspace_grants WHERE principal_iss = $1 AND principal_sub = $2 ORDER BY workspace_uri',
    [principal.iss, principal.sub],
  );
  return rows.map((r) => r.workspace_uri);
}

export async function insertGrant(db: Queryable, principal: Principal, workspaceUri: string): Promise<void> {
  await db.query(
    'INSERT INTO workspace_grants (principal_iss, principal_sub, workspace_uri) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
    [principal.iss, principal.sub, workspaceUri],
  );
}

/** Notes whose URI lies below `workspaceUri` (canonical), oldest first. */
export async function findNotesWithin(db: Queryable, workspaceUri: string, limit: number): Promise<Note[]> {
  const { rows } = await db.query<NoteRow>(
    `SELECT id, workspace_uri, note_uri, title, body, created_at FROM notes
      WHERE note_uri LIKE $1 ORDER BY created_at, id LIMIT $2`,
    [likePrefix(workspaceUri), limit],
  );
  return rows.map(fromRow);
}

/** Notes below `workspaceUri` whose title contains `title`, case-insensitively. */
export async function findNotesByTitle(
  db: Queryable,
  workspaceUri: string,
  title: string,
  limit: number,
): Promise<Note[]> {
  const { rows } = await db.query<NoteRow>(
    `SELECT id, workspace_uri, note_uri, title, body, created_at FROM notes
      WHERE note_uri LIKE $1 AND strpos(lower(title), lower($2)) > 0
      ORDER BY created_at, id LIMIT $3`,
    [likePrefix(workspaceUri), title, limit],
  );
  return rows.map(fromRow);
}

export async function findNotesByIds(db: Queryable, ids: readonly string[]): Promise<Note[]> {
  const { rows } = await db.query<NoteRow>(
    'SELECT id, workspace_uri, note_uri, title, body, created_at FROM notes WHERE id = ANY($1::text[]) ORDER BY created_at, id',
    [ids],
  );
  return rows.map(fromRow);
}

/** The live note, locked until the transaction ends so a concurrent delete waits. */
export async function lockNote(db: Queryable, id: string): Promise<Note | undefined> {
  // FOR UPDATE: the deleting transaction re-checks this row and must not race another writer.
  const { rows } = await db.query<NoteRow>(
    'SELECT id, workspace_uri, note_uri, title, body, created_at FROM notes WHERE id = $1 FOR UPDATE',
    [id],
  );
  return rows[0] ? fromRow(rows[0]) : undefined;
}

export async function insertNote(db: Queryable, note: Omit<Note, 'createdAt'>, author: Principal): Promise<Note> {
  const { rows } = await db.query<NoteRow>(
    `INSERT INTO notes (id, workspace_uri, note_uri, title, body, created_by_iss, created_by_sub)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     RETURNING id, workspace_uri, note_uri, title, body, created_at`,
    [note.id, note.workspaceUri, note.noteUri, note.title, note.body, author.iss, author.sub],
  );
  return fromRow(rows[0]!);
}

export async function deleteNote(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM notes WHERE id = $1', [id]);
  return rowCount === 1;
}
