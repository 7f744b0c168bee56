import { z } from 'zod';

export interface Note {
  id: string;
  workspaceUri: string;
  noteUri: string;
  title: string;
  body: string;
  createdAt: Date;
}

export const NoteIdSchema = z.string().regex(/^note_[a-z0-9]{12}$/, 'must be a note id such as note_0a1b2c3d4e5f');
export const TitleSchema = z.string().trim().min(1).max(200);
export const BodySchema = z.string().max(20_000);
