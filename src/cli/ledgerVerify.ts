import { readFile } from 'node:fs/promises';
import type { Queryable } from '../db/pool.js';
import { AnchorFileError, parseAnchorFile, toAnchorFile } from '../ledger/anchorFile.js';
import { findLatestAnchor, writeAnchor } from '../ledger/anchorRepo.js';
import { verifyChain, type ChainBreak } from '../ledger/chainVerifyRepo.js';

// `broker ledger verify [--anchor FILE]` and `broker ledger anchor export`.

export class VerifyInputError extends Error {}

/** Reads and parses an exported anchor; a clear error for a missing or malformed file. */
export async function readAnchorFile(path: string): Promise<{ seq: number; hash: string }> {
  const text = await readFile(path, 'utf8').catch((err: NodeJS.ErrnoException) => {
    throw new VerifyInputError(`--anchor ${path}: cannot read it (${err.code ?? err.message})`);
  });
  try {
    return parseAnchorFile(text);
  } catch (err) {
    if (err instanceof AnchorFileError) throw new VerifyInputError(`--anchor ${path}: ${err.message}`);
    throw err;
  }
}

/** Returns the exit code: 0 intact, 1 broken. */
export async function runVerify(
  db: Queryable,
  input: { anchor: { seq: number; hash: string } | undefined; json: boolean },
  out: (line: string) => void,
  progress: (line: string) => void,
): Promise<number> {
  // A long walk at millions of rows: progress on stderr, so --json output stays one line.
  const result = await verifyChain(db, {
    ...(input.anchor ? { anchor: input.anchor } : {}),
    onProgress: (checked, total) =>
      checked < total && progress(`checked ${checked.toLocaleString('en')} of ${total.toLocaleString('en')} events`),
  });
  const b = result.firstBreak;
  if (input.json) {
    out(
      JSON.stringify({
        intact: !b,
        rows: result.rows,
        flows: result.flows,
        anchors: result.anchors,
        anchorChecked: result.anchorChecked ?? null,
        firstBreak: b ?? null,
      }),
    );
  } else if (!b) {
    const pinned =
      result.anchorChecked !== undefined
        ? `the exported anchor ${result.anchorChecked} matches, so every event it sealed is as it was then`
        : 'no exported anchor given: checked against what the database holds alone';
    out(
      `Ledger intact: ${result.rows} rows in ${result.flows} flows, every flow's chain and head verified, ${result.anchors} anchors chained; ${pinned}.`,
    );
  } else out(`Ledger BROKEN ${describeBreak(b)}.`);
  return b ? 1 : 0;
}

export function describeBreak(b: ChainBreak): string {
  const event = `at event ${b.flowSeq} of flow ${b.navigationId}${b.id !== undefined ? ` (event id ${b.id})` : ''}`;
  switch (b.reason) {
    case 'hash':
      return `${event}: the row was altered after it was written`;
    case 'gap':
      return `${event}: the event before it in its flow is missing`;
    case 'link':
      return `${event}: it names another event as its predecessor`;
    case 'head':
      return `${event}: it is not the last event the ledger recorded for its flow`;
    case 'truncated':
      return `in flow ${b.navigationId}: its newest events are missing (its chain ends at event ${b.flowSeq}, its head records event ${b.headSeq})`;
    case 'anchored':
      return `at event ${b.flowSeq} of flow ${b.navigationId}: anchor ${b.anchorSeq} sealed it, and it is missing or altered`;
    case 'anchor':
      return `at anchor ${b.anchorSeq}: the anchor or its list of heads was altered, or the anchor before it is missing`;
    case 'export':
      return `at anchor ${b.anchorSeq}: the database no longer holds the anchor exported there (removed, or the ledger rewritten since)`;
    case 'legacy':
      return `before migration 0018: the global chain it re-chained was broken at position ${b.legacy?.chainSeq} (${b.legacy?.reason}), as anchor ${b.anchorSeq} records`;
  }
}

/** Seals what is new (the sweep does so too), then prints the latest anchor as its file. */
export async function runAnchorExport(db: Queryable, now: Date, out: (line: string) => void): Promise<number> {
  await writeAnchor(db, now);
  const anchor = await findLatestAnchor(db);
  if (!anchor) throw new VerifyInputError('No anchor yet: the ledger has no event to seal.');
  out(JSON.stringify(toAnchorFile(anchor)));
  return 0;
}
