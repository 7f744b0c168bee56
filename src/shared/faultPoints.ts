/**
 * Crash points for the faults suite (test/faults/): BROKER_FAULT_POINT=<name> makes the process
 * SIGKILL itself the first time it reaches that point, so a test can stop a real broker between
 * two steps of a flow and check that a restart loses and doubles nothing. Development and test
 * only: loadConfig refuses the variable with NODE_ENV=production.
 *
 * The rule that makes this one module the exception to "dependencies are passed in": main.ts alone
 * arms it, once, from the parsed config; every other caller only calls `reachFaultPoint(name)`,
 * which does nothing when unarmed or armed for another point. No other state lives here.
 */
export const FAULT_POINTS = [
  /** The provider's token answer is in hand, the callback's transaction is written but not committed. */
  'callback.before_commit',
  /** The operation's receipt is committed (its perform lease taken), the business call not yet sent. */
  'operation.before_call',
  /** The provider answered the business call; its outcome is not yet recorded. */
  'operation.before_outcome',
  /** A 2025-11-25 nested call: the host accepted the elicitation, the call starts waiting for the user. */
  'legacy.nested_waiting',
  /** The provider answered a refresh; the new tokens are not yet stored. */
  'refresh.before_store',
  /** A sweep's expiry transaction: overdue flows moved to EXPIRED, not yet committed. */
  'sweep.before_commit',
  /** A re-seal batch: values written under the active key, not yet committed. */
  'reseal.before_commit',
] as const;
export type FaultPoint = (typeof FAULT_POINTS)[number];

let armed: FaultPoint | undefined;

/** Arms one point for this process (main.ts, from BROKER_FAULT_POINT); undefined leaves every point a no-op. */
export function armFaultPoint(point: FaultPoint | undefined): void {
  armed = point;
}

/** Kills this process at once (SIGKILL: no handler, no cleanup, no flush) when `point` is the armed one. */
export function reachFaultPoint(point: FaultPoint): void {
  if (armed !== point) return;
  process.stderr.write(`fault point reached: ${point}\n`);
  process.kill(process.pid, 'SIGKILL');
}
