// The age filter of the operators' flow list (`broker ledger flows --older-than`,
// /ops/flows?age=): seconds, or minutes, hours or days. Bounded, so that no
// input can overflow the query's integer parameter: ten years is older than any
// flow the ledger can hold.

const UNITS = { s: 1, m: 60, h: 3600, d: 86_400 } as const;
export const MAX_AGE_DAYS = 3650;
const MAX_AGE_SECONDS = MAX_AGE_DAYS * UNITS.d;

export const AGE_HINT = `a number of seconds, or of minutes, hours or days such as 90, 30m, 2h, 7d, up to ${MAX_AGE_DAYS}d`;

/** Seconds from `90`, `90s`, `30m`, `2h` or `7d`; undefined when malformed or older than the bound. */
export function parseAge(text: string): number | undefined {
  const match = /^(\d{1,15})([smhd]?)$/.exec(text.trim());
  if (!match) return undefined;
  const seconds = Number(match[1]) * UNITS[(match[2] || 's') as keyof typeof UNITS];
  return seconds <= MAX_AGE_SECONDS ? seconds : undefined;
}
