import { z } from 'zod';

export interface Note {
  id: string;
  workspaceUri: string;
  noteUri: string;
  title: string;
  body: string;
  createdAt: Date;
}

export const TitleSchema = z.string().trim().min(1).max(200);
export const BodySchema = z.string().max(20_000);
