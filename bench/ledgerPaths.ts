import type { Lineage } from '../src/flow/navigationStates.js';
import { nextState, type NavigationEvent, type NavigationState } from '../src/flow/navigationStates.js';

// The paths the ledger bench seeds: each one a real walk through the
// transition table (nextState() checks every step), grouped as the broker
// writes them (one group = one advance() = one UPDATE of the navigation).

/** When a group happens: 0 at creation, then after review, consent, the provider, acceptance; 5 = the sweep after expiry. */
export type Phase = 0 | 1 | 2 | 3 | 4 | 5;

/** done: finished long ago; fresh: open and within its TTL; overdue: open past its TTL (the sweep's work). */
export type PathKind = 'done' | 'fresh' | 'overdue';

export interface SeedStep {
  from: NavigationState;
  to: NavigationState;
  event: string;
  phase: Phase;
}

export interface SeedPath {
  name: string;
  kind: PathKind;
  lineage: Lineage;
  /** Share of all seeded navigations. */
  weight: number;
  steps: SeedStep[];
  /** UPDATEs the broker made to the row (created + present is one). */
  updates: number;
  status: NavigationState;
}

type Group = { events: NavigationEvent[]; phase: Phase };

const ACCEPT: Record<Lineage, NavigationEvent[]> = {
  mrtr: ['mrtr_accept'],
  nested: ['nested_continue', 'nested_accept'],
  error_retry: ['error_retry_eligible', 'client_retry', 'retry_accept'],
};
const LINEAGE_SHARE: Record<Lineage, number> = { mrtr: 0.5, nested: 0.2, error_retry: 0.3 };

const present: Group = { events: ['present'], phase: 0 };
const hostAccept: Group = { events: ['host_accept'], phase: 1 };
// The host reports the user's answer first, or the browser consents first (both steps in one advance).
const hostFirst: Group[] = [present, hostAccept, { events: ['browser_consent'], phase: 2 }];
const browserFirst: Group[] = [present, { events: ['browser_consent', 'browser_consent'], phase: 2 }];
const callback: Group = { events: ['callback_received', 'callback_verified'], phase: 3 };
const expire: Group = { events: ['expire'], phase: 5 };

/** Finished flows by outcome; the shares of the remaining 0.7 % (open flows) are below. */
function donePaths(lineage: Lineage): [string, number, Group[]][] {
  const accept: Group = { events: ACCEPT[lineage], phase: 4 };
  return [
    ['accepted (host first)', 0.48, [...hostFirst, callback, accept]],
    ['accepted (browser first)', 0.2, [...browserFirst, callback, accept]],
    ['verified, never accepted', 0.01, [...hostFirst, callback]],
    ['declined', 0.06, [present, { events: ['host_decline'], phase: 1 }]],
    ['cancelled', 0.03, [present, { events: ['host_cancel'], phase: 1 }]],
    ['expired in review', 0.1, [present, expire]],
    ['expired after host accept', 0.05, [present, hostAccept, expire]],
    ['expired at the provider', 0.063, [...hostFirst, expire]],
  ];
}

const OPEN: [string, number, Group[]][] = [
  ['in review', 0.4, [present]],
  ['navigation accepted', 0.2, [present, hostAccept]],
  ['at the provider', 0.4, hostFirst],
];
/** Open within their TTL, and open past it (as if the sweepers had been down for a few hours). */
export const FRESH_SHARE = 0.002;
export const OVERDUE_SHARE = 0.005;

function toSteps(groups: Group[]): { steps: SeedStep[]; status: NavigationState } {
  const steps: SeedStep[] = [{ from: 'CREATED', to: 'CREATED', event: 'created', phase: 0 }];
  let status: NavigationState = 'CREATED';
  for (const group of groups) {
    for (const event of group.events) {
      const to = nextState(status, event);
      steps.push({ from: status, to, event, phase: group.phase });
      status = to;
    }
  }
  return { steps, status };
}

export function seedPaths(): SeedPath[] {
  const paths: SeedPath[] = [];
  for (const lineage of Object.keys(LINEAGE_SHARE) as Lineage[]) {
    const share = LINEAGE_SHARE[lineage];
    const add = (name: string, kind: PathKind, weight: number, groups: Group[]) =>
      paths.push({ name, kind, lineage, weight: weight * share, updates: groups.length, ...toSteps(groups) });
    for (const [name, weight, groups] of donePaths(lineage)) add(name, 'done', weight, groups);
    for (const [name, weight, groups] of OPEN) {
      add(name, 'fresh', weight * FRESH_SHARE, groups);
      add(name, 'overdue', weight * OVERDUE_SHARE, groups);
    }
  }
  const total = paths.reduce((sum, p) => sum + p.weight, 0);
  if (Math.abs(total - 1) > 1e-9) throw new Error(`seed path weights add up to ${total}, not 1`);
  return paths;
}
