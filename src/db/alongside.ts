/** SQL with parameters of its own, numbered through `param` where it is put (1 for the first of `values`). */
export interface SqlPart {
  text: (param: (i: number) => string) => string;
  values: unknown[];
}

/** `part` as a statement of its own, its parameters numbered from $1. */
export const statementText = (part: SqlPart): string => part.text((i) => `$${i}`);

/** `parts` joined by AND, each its own parenthesised condition, their parameters numbered in turn (none: true). */
export function allOf(parts: readonly SqlPart[]): SqlPart {
  if (parts.length === 0) return { text: () => 'true', values: [] };
  return {
    text: (param) => {
      let offset = 0;
      return parts
        .map((part) => {
          const from = offset;
          offset += part.values.length;
          return `(${part.text((i) => param(from + i))})`;
        })
        .join(' AND ');
    },
    values: parts.flatMap((part) => part.values),
  };
}

/**
 * A data-modifying statement run as one item of another statement's WITH, so that both are done,
 * or neither, in one round trip and without a transaction of their own (PostgreSQL, WITH Queries,
 * data-modifying statements in WITH). It may read the items named before it, e.g. `written` in
 * ledgerRepo.ts writeWithEntries, to write only when that wrote something.
 */
export type Alongside = SqlPart;

/**
 * `alongside` as WITH items (`alongside0 AS (…), …`: a data-modifying WITH cannot nest), their
 * parameters numbered after the `before` the statement has of its own; '' for none.
 */
export function alongsideItems(alongside: readonly Alongside[], before: number): { text: string; values: unknown[] } {
  let offset = before;
  const text = alongside
    .map((a, n) => {
      const from = offset;
      offset += a.values.length;
      return `alongside${n} AS (${a.text((i) => `$${from + i}`)})`;
    })
    .join(', ');
  return { text, values: alongside.flatMap((a) => a.values) };
}
