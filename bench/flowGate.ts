/**
 * The development servers know three users, and a connection belongs to a
 * user: once alice is connected, her next reports_create runs at once instead
 * of asking to connect. So each flow forgets its user's connection before
 * asking, and two kinds of step must not overlap for one user:
 *
 * - `elicit`: forget the connection, then call reports_create (it must find none);
 * - `connected`: from "Allow" at the Report Service (whose callback stores the
 *   tokens) until the retry has created the report (it needs them).
 *
 * Steps of one kind share the user; the kinds take turns, first come first
 * served, so neither starves. Nothing else waits: the sign-in pages of many
 * flows of one user run side by side.
 */
export type GateMode = 'elicit' | 'connected';

export interface UserGates {
  /** Runs fn while `login` is in `mode`; resolves with fn's result and the time spent waiting for the turn. */
  hold<T>(login: string, mode: GateMode, fn: () => Promise<T>): Promise<{ value: T; waitedMs: number }>;
}

interface Gate {
  mode: GateMode | undefined;
  holders: number;
  queue: { mode: GateMode; enter: () => void }[];
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

  return {
    async hold(login, mode, fn) {
      let gate = gates.get(login);
      if (!gate) gates.set(login, (gate = { mode: undefined, holders: 0, queue: [] }));
      const asked = performance.now();
      const entered = new Promise<void>((enter) => gate.queue.push({ mode, enter }));
      admit(gate);
      await entered;
      const waitedMs = performance.now() - asked;
      try {
        return { value: await fn(), waitedMs };
      } finally {
        gate.holders--;
        if (gate.holders === 0) gate.mode = undefined;
        admit(gate);
      }
    },
  };
}
