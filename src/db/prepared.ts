import { createHash } from 'node:crypto';
import type pg from 'pg';

const names = new Map<string, string>();

/**
 * `text` as a named prepared statement (PostgreSQL, Extended Query protocol): each connection parses
 * it once and, once a generic plan serves, plans it once. For a statement a hot path runs on every
 * call, where planning costs more than running it (measured for the connected call's one read:
 * planning 0.18 ms, execution 0.04 ms). The name is the text's digest, so two texts never share one.
 * Through a transaction-mode pooler, which cannot keep a statement on a connection, createPool
 * (pool.ts) drops the name and the statement is sent unnamed.
 */
export function prepared(text: string, values: unknown[]): pg.QueryConfig<unknown[]> {
  let name = names.get(text);
  if (name === undefined) {
    name = `cb_${createHash('sha256').update(text).digest('base64url').slice(0, 24)}`;
    // Bounded by the statements the code has: texts are built from the code's own SQL only.
    if (names.size < 1_000) names.set(text, name);
  }
  return { name, text, values };
}

/** `query` without the prepared statement's name (pool.ts, through a transaction-mode pooler). */
export function unnamed<Q>(query: Q): Q {
  if (typeof query !== 'object' || query === null || !('name' in query)) return query;
  const { name: _name, ...rest } = query as { name?: unknown };
  return rest as Q;
}
