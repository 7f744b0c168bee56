import type { Pool } from '../db/pool.js';
import { withTransaction } from '../db/transaction.js';
import { findNotesWithin, insertGrant, insertNote } from '../notes/notesRepo.js';
import { devUsers } from './devUsers.js';

export const devWorkspaceOf = (login: string): string => `file:///work/notes/${login}`;

// Alice starts with three notes that all match "TPS report", so a delete shows the choice.
const ALICE_NOTES = [
  { id: 'note_a1ce00000001', title: 'TPS report (Q1, old)', body: 'Cover sheet missing. Superseded by Q2.' },
  { id: 'note_a1ce00000002', title: 'TPS report (Q2)', body: 'Filed on time.' },
  { id: 'note_a1ce00000003', title: 'TPS report draft', body: 'Half written; ask Bill about the cover sheets.' },
  { id: 'note_a1ce00000004', title: 'Lunch ideas', body: 'Thai place on 5th.' },
];

/**
 * Development data, written once per database: each demo user owns
 * file:///work/notes/<login> (grants are keyed by the development issuer),
 * and alice's workspace has a few notes. Idempotent.
 */
export async function seedDevelopmentData(pool: Pool, issuer: string): Promise<void> {
  await withTransaction(pool, async (tx) => {
    for (const user of devUsers) await insertGrant(tx, { iss: issuer, sub: user.login }, devWorkspaceOf(user.login));
    const workspace = devWorkspaceOf('alice');
    if ((await findNotesWithin(tx, workspace, 1)).length > 0) return;
    for (const note of ALICE_NOTES) {
      await insertNote(
        tx,
        { ...note, workspaceUri: workspace, noteUri: `${workspace}/${note.id}.md` },
        { iss: issuer, sub: 'alice' },
      );
    }
  });
}
