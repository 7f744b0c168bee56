import { z } from 'zod';
import type { Anchor } from './anchorRepo.js';

// The exported anchor: what `broker ledger anchor export` prints and
// `broker ledger verify --anchor FILE` reads back. Kept outside the database,
// it pins every event the anchor and the anchors before it sealed; seq and
// hash are what verify checks, the rest says when it was written.

export const ANCHOR_FORMAT = 'connect-broker ledger anchor v1';

const AnchorFileSchema = z.strictObject({
  format: z.literal(ANCHOR_FORMAT),
  seq: z.number().int().positive(),
  hash: z.string().regex(/^[0-9a-f]{64}$/, 'a SHA-256 in lowercase hex'),
  createdAt: z.iso.datetime(),
  flows: z.number().int().positive(),
});

export type AnchorFile = z.infer<typeof AnchorFileSchema>;

export class AnchorFileError extends Error {
  override name = 'AnchorFileError';
}

export function toAnchorFile(anchor: Anchor): AnchorFile {
  return {
    format: ANCHOR_FORMAT,
    seq: anchor.seq,
    hash: anchor.hash,
    createdAt: anchor.createdAt.toISOString(),
    flows: anchor.flows,
  };
}

/** Parses an exported anchor's text; throws AnchorFileError naming what is wrong. */
export function parseAnchorFile(text: string): AnchorFile {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new AnchorFileError('not JSON; expected the output of `broker ledger anchor export`');
  }
  const parsed = AnchorFileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new AnchorFileError(
      `not an exported anchor: ${issue?.path.join('.') || 'the file'}: ${issue?.message ?? 'invalid'}`,
    );
  }
  return parsed.data;
}
