import { randomBytes } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import type { Pool, Queryable } from '../db/pool.js';
import { withTransaction } from '../db/transaction.js';
import { ConflictError, ForbiddenError, NotFoundError } from '../errors/appError.js';
import { claimNonce } from './mrtrNonceRepo.js';
import { digestOf } from '../shared/tokens.js';
import type { Note } from './note.js';
import {
  deleteNote,
  findGrantedWorkspaces,
  findNotesByIds,
  findNotesByTitle,
  findNotesWithin,
  insertNote,
  lockNote,
} from './notesRepo.js';
import { canonicalFileUri, childUri, isWithin, type CanonicalUri } from './workspaceUri.js';

export interface NotesDeps {
  pool: Pool;
}

const MAX_LIST = 200;
const MAX_CANDIDATES = 20;

export async function listWorkspaces(deps: NotesDeps, principal: Principal): Promise<string[]> {
  return findGrantedWorkspaces(deps.pool, principal);
}

/**
 * Layers 1 and 2 of src/notes/README.md: the canonical URI must lie inside a workspace
 * granted to this principal (component-wise, after percent-decoding).
 */
export async function authorizeWorkspace(db: Queryable, principal: Principal, rawUri: string): Promise<CanonicalUri> {
  const requested = canonicalFileUri(rawUri);
  const granted = await findGrantedWorkspaces(db, principal);
  if (!granted.some((g) => isWithin(requested, canonicalFileUri(g)))) {
    const yours = granted.length > 0 ? ` Your workspaces: ${granted.join(', ')}.` : ' You have no workspaces.';
    throw new ForbiddenError(`You may not use ${requested.uri}.${yours}`);
  }
  return requested;
}

export async function listNotes(
  deps: NotesDeps,
  principal: Principal,
  rawUri: string,
): Promise<{ workspace: string; notes: Note[] }> {
  const workspace = await authorizeWorkspace(deps.pool, principal, rawUri);
  const notes = await findNotesWithin(deps.pool, workspace.uri, MAX_LIST);
  // Stored URIs are canonical (written through childUri), so a component-boundary prefix check is exact.
  return { workspace: workspace.uri, notes: notes.filter((n) => n.noteUri.startsWith(`${workspace.uri}/`)) };
}

export async function createNote(
  deps: NotesDeps,
  principal: Principal,
  rawUri: string,
  title: string,
  body: string,
): Promise<Note> {
  const workspace = await authorizeWorkspace(deps.pool, principal, rawUri);
  const id = `note_${randomBytes(8).toString('hex').slice(0, 12)}`;
  const noteUri = childUri(workspace, `${id}.md`);
  return insertNote(deps.pool, { id, workspaceUri: workspace.uri, noteUri: noteUri.uri, title, body }, principal);
}

/** The notes a delete could mean: every note below the workspace whose title contains `title`. */
export async function findDeleteCandidates(
  deps: NotesDeps,
  principal: Principal,
  rawUri: string,
  title: string,
): Promise<{ workspace: string; candidates: Note[] }> {
  const workspace = await authorizeWorkspace(deps.pool, principal, rawUri);
  const candidates = (await findNotesByTitle(deps.pool, workspace.uri, title, MAX_CANDIDATES)).filter((n) =>
    isWithin(canonicalFileUri(n.noteUri), workspace),
  );
  if (candidates.length === 0) {
    const known = (await findNotesWithin(deps.pool, workspace.uri, 20)).map((n) => n.title);
    const hint =
      known.length > 0
        ? ` Titles there: ${known.map((t) => JSON.stringify(t)).join(', ')}.`
        : ' The workspace has no notes.';
    throw new NotFoundError(`No note in ${workspace.uri} has a title containing ${JSON.stringify(title)}.${hint}`);
  }
  return { workspace: workspace.uri, candidates };
}

/** The offered candidates that still exist and are still inside the (re-authorized) workspace. */
export async function findOfferedCandidates(
  deps: NotesDeps,
  principal: Principal,
  rawUri: string,
  ids: readonly string[],
): Promise<{ workspace: string; candidates: Note[] }> {
  const workspace = await authorizeWorkspace(deps.pool, principal, rawUri);
  const candidates = (await findNotesByIds(deps.pool, ids)).filter((n) =>
    isWithin(canonicalFileUri(n.noteUri), workspace),
  );
  if (candidates.length === 0)
    throw new NotFoundError('The notes offered for deletion no longer exist; nothing was deleted.');
  return { workspace: workspace.uri, candidates };
}

export interface ConfirmedDelete {
  principal: Principal;
  workspaceUri: string;
  noteId: string;
  nonce: string;
  expiresAt: Date;
}

/**
 * Deletes one confirmed note. In one transaction: re-authorize the workspace,
 * re-check containment and the live note (locked), claim the confirmation's
 * nonce, delete. Any failure rolls back, so the nonce stays unclaimed and
 * nothing changes; a second use of the same confirmation finds the nonce taken.
 */
export async function confirmDelete(deps: NotesDeps, request: ConfirmedDelete): Promise<Note> {
  return withTransaction(deps.pool, async (tx) => {
    const workspace = await authorizeWorkspace(tx, request.principal, request.workspaceUri);
    const note = await lockNote(tx, request.noteId);
    const claimed = await claimNonce(tx, {
      nonceDigest: digestOf(request.nonce),
      principal: request.principal,
      purpose: 'notes_delete',
      outcome: 'deleted',
      expiresAt: request.expiresAt,
    });
    if (!claimed)
      throw new ConflictError('This confirmation was already used. Call notes_delete again to start a new one.');
    if (!note) throw new NotFoundError(`Note ${request.noteId} no longer exists; nothing was deleted.`);
    if (!isWithin(canonicalFileUri(note.noteUri), workspace))
      throw new ForbiddenError(`Note ${request.noteId} is no longer inside ${workspace.uri}; nothing was deleted.`);
    await deleteNote(tx, note.id);
    return note;
  });
}

/** An explicit decline is terminal: the confirmation is used up and nothing is deleted. */
export async function declineDelete(
  deps: NotesDeps,
  request: Omit<ConfirmedDelete, 'noteId' | 'workspaceUri'>,
): Promise<void> {
  const claimed = await claimNonce(deps.pool, {
    nonceDigest: digestOf(request.nonce),
    principal: request.principal,
    purpose: 'notes_delete',
    outcome: 'declined',
    expiresAt: request.expiresAt,
  });
  if (!claimed)
    throw new ConflictError('This confirmation was already used. Call notes_delete again to start a new one.');
}
