/** A moment as pages show it: to the minute, in UTC (`2026-12-08 01:23 UTC`), with its ISO form for `<time datetime>`. */
export function displayTime(at: Date): { iso: string; text: string } {
  return { iso: at.toISOString(), text: `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC` };
}
