/**
 * The development servers know three users, and a connection belongs to a
 * user: once alice is connected, her next reports_create runs at once instead
 * of asking to connect. So each flow forgets its user's connection before
 * asking, and two kinds of step must not overlap for one user:
 *
 * - `elicit`: forget the connection, then call reports_create (it must find none);
 * - `connected`: from opening the connect link until the retry has created the
 *   report. The first of the user's flows to be verified stores the tokens and
 *   settles the user's other open flows; their retries need those tokens too.
 *
 * Steps of one kind share the user; the kinds take turns, first come first
 * served, so neither starves: the sign-in pages of many flows of one user run
 * side by side.
 */
export type GateMode = 'elicit' | 'connected';

export interface UserGates {
  /**
   * Runs first while `login` is in `firstMode`, then next in `nextMode`, queued for it ahead of everyone who arrived
   * meanwhile: the flows of one turn move on together, and no turn of the other kind comes between.
   * Resolves with next's result and the time spent waiting for both turns.
   */
  holdThen<T, U>(
    login: string,
    firstMode: GateMode,
    first: () => Promise<T>,
    nextMode: GateMode,
    next: (value: T) => Promise<U>,
  ): Promise<{ value: U; waitedMs: number }>;
}

interface Waiting {
  mode: GateMode;
  /** Moving on from a step of the other kind: ahead of those who only arrived. */
  movingOn: boolean;
  enter: () => void;
}

interface Gate {
  mode: GateMode | undefined;
  holders: number;
  queue: Waiting[];
}

export function createUserGates(): UserGates {
  const gates = new Map<string, Gate>();

  const admit = (gate: Gate) => {
    for (let head = gate.queue[0]; head && (gate.holders === 0 || gate.mode === head.mode); head = gate.queue[0]) {
      gate.queue.shift();
      gate.mode = head.mode;
      gate.holders++;
      head.enter();
    }
  };
  const queue = (gate: Gate, mode: GateMode, movingOn: boolean) =>
    new Promise<void>((enter) => {
      const at = movingOn ? gate.queue.findIndex((w) => !w.movingOn) : -1;
      gate.queue.splice(at < 0 ? gate.queue.length : at, 0, { mode, movingOn, enter });
    });
  const leave = (gate: Gate) => {
    gate.holders--;
    if (gate.holders === 0) gate.mode = undefined;
  };
  const gateOf = (login: string) => {
    let gate = gates.get(login);
    if (!gate) gates.set(login, (gate = { mode: undefined, holders: 0, queue: [] }));
    return gate;
  };
  /** Runs fn in its turn; `then`, when given, is queued (moving on) before the turn is left. */
  const run = async <T>(gate: Gate, entered: Promise<void>, fn: () => Promise<T>, then?: GateMode) => {
    const asked = performance.now();
    admit(gate);
    await entered;
    const waitedMs = performance.now() - asked;
    let next: Promise<void> | undefined;
    try {
      const value = await fn();
      if (then) next = queue(gate, then, true);
      return { value, waitedMs, next };
    } finally {
      leave(gate);
      admit(gate);
    }
  };

  return {
    async holdThen(login, firstMode, first, nextMode, next) {
      const gate = gateOf(login);
      const one = await run(gate, queue(gate, firstMode, false), first, nextMode);
      const two = await run(gate, one.next!, () => next(one.value));
      return { value: two.value, waitedMs: one.waitedMs + two.waitedMs };
    },
  };
}
