/** One line of `broker doctor`: what was checked, and what to do about it. */
export interface Finding {
  level: 'OK' | 'WARN' | 'FAIL';
  /** The setting or thing checked: a variable name, `database`, `provider github`. */
  subject: string;
  message: string;
}

export const ok = (subject: string, message: string): Finding => ({ level: 'OK', subject, message });
export const warn = (subject: string, message: string): Finding => ({ level: 'WARN', subject, message });
export const fail = (subject: string, message: string): Finding => ({ level: 'FAIL', subject, message });

/** A system error's code (ENOENT, ECONNREFUSED) where it has one, else its message. */
export function reasonOf(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code === 'string' && /^[A-Z][A-Z0-9_]+$/.test(code)) return code;
  return err instanceof Error ? err.message : String(err);
}
