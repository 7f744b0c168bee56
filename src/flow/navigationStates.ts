import { InvalidTransitionError } from '../errors/appError.js';

/** The three ways a host's call reaches its acceptance: 2026-07-28 MRTR retry, 2025-11-25 nested elicitation, 2025-11-25 -32042 retry. */
export const lineages = ['mrtr', 'nested', 'error_retry'] as const;
export type Lineage = (typeof lineages)[number];

/**
 * A flow the user starts on the connections page to reconnect a provider (broker/startReconnect.ts).
 * It has no tool operation and no accepted state: no acceptance names it (acceptOriginalOperation
 * takes a Lineage), and the schema ties every receipt's lineage to its flow's (migrations/*_reconnect_flows.sql).
 */
export const RECONNECT = 'reconnect';
/** What a flow was created for: a host's call on one of its lineages, or a reconnect. */
export type FlowLineage = Lineage | typeof RECONNECT;
export const flowLineages: readonly FlowLineage[] = [...lineages, RECONNECT];

// The navigation state machine (docs/architecture.md) as data, with the
// migrations' CHECK on elicitation_navigations.status holding the same states.
// This is the only module that names states or decides transitions;
// everything else asks nextState().

export const navigationStates = [
  'CREATED',
  'USER_REVIEW',
  'DECLINED',
  'CANCELLED',
  'NAVIGATION_ACCEPTED',
  'OUT_OF_BAND_PENDING',
  'COMPLETION_NOTIFIED',
  'REQUIREMENT_VERIFIED',
  'EXPIRED',
  'USER_RETRY',
  'NESTED_SERVER_CONTINUES',
  'ORIGINAL_RESPONSE_ACCEPTED',
  'ERROR_RETRY_ELIGIBLE',
  'OPTIONAL_CLIENT_RETRY',
  'RETRY_RESPONSE_ACCEPTED',
  'MRTR_RETRY_ACCEPTED',
  'OPERATION_REJECTED',
] as const;
export type NavigationState = (typeof navigationStates)[number];

/** Each state by its name, for code that compares or assigns one state (`status === State.EXPIRED`). */
// Object.fromEntries types its keys as string; each entry maps a state to itself, so the cast only restores that.
export const State = Object.freeze(Object.fromEntries(navigationStates.map((s) => [s, s]))) as {
  readonly [S in NavigationState]: S;
};

export const navigationEvents = [
  'present', // the elicitation went to the host
  'host_accept', // the host's user agreed to open the URL (consent to navigate only)
  'host_decline',
  'host_cancel',
  'browser_consent', // the signed-in user consented on our page and was sent to the provider
  'callback_received', // the provider redirected back and the transaction was claimed
  'callback_verified', // state, PKCE, iss, subject and audience all checked; tokens stored
  'expire',
  'user_retry',
  'nested_continue',
  'nested_accept',
  'error_retry_eligible',
  'client_retry',
  'retry_accept',
  'mrtr_accept',
  'operator_close', // an operator ended a flow nobody will finish (a recovery action)
  'operator_reject', // an operator rejected a held high-risk operation (the approval queue)
  'connection_present', // the principal holds a verified connection to the provider: another flow verified it, or it existed already
] as const;
export type NavigationEvent = (typeof navigationEvents)[number];

export interface Transition {
  from: NavigationState;
  event: NavigationEvent;
  to: NavigationState;
}

export const transitions: readonly Transition[] = [
  { from: 'CREATED', event: 'present', to: 'USER_REVIEW' },
  { from: 'USER_REVIEW', event: 'host_decline', to: 'DECLINED' },
  { from: 'USER_REVIEW', event: 'host_cancel', to: 'CANCELLED' },
  { from: 'USER_REVIEW', event: 'host_accept', to: 'NAVIGATION_ACCEPTED' },
  // The browser may arrive before the host reports the user's consent: consenting on our page is
  // itself acceptance of the navigation (recorded in consent_receipts).
  { from: 'USER_REVIEW', event: 'browser_consent', to: 'NAVIGATION_ACCEPTED' },
  { from: 'NAVIGATION_ACCEPTED', event: 'browser_consent', to: 'OUT_OF_BAND_PENDING' },
  { from: 'OUT_OF_BAND_PENDING', event: 'callback_received', to: 'COMPLETION_NOTIFIED' },
  { from: 'COMPLETION_NOTIFIED', event: 'callback_verified', to: 'REQUIREMENT_VERIFIED' },
  { from: 'OUT_OF_BAND_PENDING', event: 'expire', to: 'EXPIRED' },
  { from: 'OUT_OF_BAND_PENDING', event: 'user_retry', to: 'USER_RETRY' },
  // A flow nobody finished also expires before the browser ever reached the provider.
  { from: 'USER_REVIEW', event: 'expire', to: 'EXPIRED' },
  { from: 'NAVIGATION_ACCEPTED', event: 'expire', to: 'EXPIRED' },
  { from: 'REQUIREMENT_VERIFIED', event: 'nested_continue', to: 'NESTED_SERVER_CONTINUES' },
  { from: 'NESTED_SERVER_CONTINUES', event: 'nested_accept', to: 'ORIGINAL_RESPONSE_ACCEPTED' },
  { from: 'REQUIREMENT_VERIFIED', event: 'error_retry_eligible', to: 'ERROR_RETRY_ELIGIBLE' },
  { from: 'ERROR_RETRY_ELIGIBLE', event: 'client_retry', to: 'OPTIONAL_CLIENT_RETRY' },
  { from: 'OPTIONAL_CLIENT_RETRY', event: 'retry_accept', to: 'RETRY_RESPONSE_ACCEPTED' },
  { from: 'REQUIREMENT_VERIFIED', event: 'mrtr_accept', to: 'MRTR_RETRY_ACCEPTED' },
  // Operators: any flow still waiting for someone can be marked terminal; a verified
  // operation of a high-risk tool waits for approval and a rejection ends it.
  { from: 'CREATED', event: 'operator_close', to: 'EXPIRED' },
  { from: 'USER_REVIEW', event: 'operator_close', to: 'EXPIRED' },
  { from: 'NAVIGATION_ACCEPTED', event: 'operator_close', to: 'EXPIRED' },
  { from: 'OUT_OF_BAND_PENDING', event: 'operator_close', to: 'EXPIRED' },
  { from: 'COMPLETION_NOTIFIED', event: 'operator_close', to: 'EXPIRED' },
  { from: 'REQUIREMENT_VERIFIED', event: 'operator_reject', to: 'OPERATION_REJECTED' },
  // The requirement is a connection for (principal, provider). Once one is verified — through a
  // sibling flow's callback, or before this operation began (a connected user's high-risk call,
  // which still needs an approval and a receipt) — every open flow of that pair is settled, so its
  // operation is accepted once through its own lineage and never performed beside it.
  { from: 'CREATED', event: 'connection_present', to: 'REQUIREMENT_VERIFIED' },
  { from: 'USER_REVIEW', event: 'connection_present', to: 'REQUIREMENT_VERIFIED' },
  { from: 'NAVIGATION_ACCEPTED', event: 'connection_present', to: 'REQUIREMENT_VERIFIED' },
  { from: 'OUT_OF_BAND_PENDING', event: 'connection_present', to: 'REQUIREMENT_VERIFIED' },
];

/** The state `event` leads to from `from`; throws InvalidTransitionError for a pair the table lacks. */
export function nextState(from: NavigationState, event: NavigationEvent): NavigationState {
  const found = transitions.find((t) => t.from === from && t.event === event);
  if (!found) throw new InvalidTransitionError(`No transition from ${from} on ${event}.`);
  return found.to;
}

/** States with no outgoing edge: derived from the table, never listed twice. */
export const terminalStates: ReadonlySet<NavigationState> = new Set(
  navigationStates.filter((s) => !transitions.some((t) => t.from === s)),
);

/** Whether the event is allowed from the state (for callers that branch rather than throw). */
export function canTransition(from: NavigationState, event: NavigationEvent): boolean {
  return transitions.some((t) => t.from === from && t.event === event);
}

function reachableFrom(start: NavigationState): Set<NavigationState> {
  const seen = new Set<NavigationState>([start]);
  for (let grew = true; grew;) {
    grew = false;
    for (const t of transitions) {
      if (seen.has(t.from) && !seen.has(t.to)) {
        seen.add(t.to);
        grew = true;
      }
    }
  }
  return seen;
}

/**
 * Whether `event` is allowed from `from` or from any state the table can still reach from it. A flow
 * read in a state where this is false can never take the event, however it moves meanwhile.
 */
export function mayStillTake(from: NavigationState, event: NavigationEvent): boolean {
  const reachable = reachableFrom(from);
  return transitions.some((t) => t.event === event && reachable.has(t.from));
}

/** REQUIREMENT_VERIFIED and every state after it: the user finished connecting. Derived from the table. */
export const verifiedStates: ReadonlySet<NavigationState> = reachableFrom(State.REQUIREMENT_VERIFIED);

/** States that can still reach REQUIREMENT_VERIFIED: the flow is waiting for someone. Derived from the table. */
export const openStates: ReadonlySet<NavigationState> = new Set(
  navigationStates.filter((s) => !verifiedStates.has(s) && reachableFrom(s).has(State.REQUIREMENT_VERIFIED)),
);

const fromStatesOf = (events: readonly NavigationEvent[]): ReadonlySet<NavigationState> =>
  new Set(transitions.filter((t) => events.includes(t.event)).map((t) => t.from));
const toStatesOf = (events: readonly NavigationEvent[]): ReadonlySet<NavigationState> =>
  new Set(transitions.filter((t) => events.includes(t.event)).map((t) => t.to));

/** The states the expiry sweep moves on (`expire` leaves them). */
export const expirableStates: ReadonlySet<NavigationState> = fromStatesOf(['expire']);

/**
 * The states in which the user's consent on our page applies: before it (`browser_consent` moves them on)
 * or where it leads (a flow already sent to the provider may be sent again, with a new transaction).
 */
export const consentableStates: ReadonlySet<NavigationState> = new Set([
  ...fromStatesOf(['browser_consent']),
  ...toStatesOf(['browser_consent']),
]);

/** The states the host's user ends a flow in by declining or cancelling. */
export const declinedStates: ReadonlySet<NavigationState> = toStatesOf(['host_decline', 'host_cancel']);

/** The provider's redirect back, and its verification. */
export const completionEvents: readonly NavigationEvent[] = ['callback_received', 'callback_verified'];

/** The states the completion events may move a flow from; a completion from anywhere else is out of order. */
export const completableStates: ReadonlySet<NavigationState> = fromStatesOf(completionEvents);

/** Where each lineage's original operation ends once accepted. */
export const acceptedStates: Readonly<Record<Lineage, NavigationState>> = {
  mrtr: 'MRTR_RETRY_ACCEPTED',
  nested: 'ORIGINAL_RESPONSE_ACCEPTED',
  error_retry: 'RETRY_RESPONSE_ACCEPTED',
};

/** The events, in order, of the table's shortest path between two states. */
function pathBetween(from: NavigationState, to: NavigationState): readonly NavigationEvent[] {
  const paths = new Map<NavigationState, readonly NavigationEvent[]>([[from, []]]);
  for (let frontier: NavigationState[] = [from]; frontier.length > 0 && !paths.has(to);) {
    const next: NavigationState[] = [];
    for (const t of transitions) {
      if (frontier.includes(t.from) && !paths.has(t.to)) {
        paths.set(t.to, [...paths.get(t.from)!, t.event]);
        next.push(t.to);
      }
    }
    frontier = next;
  }
  const path = paths.get(to);
  if (!path) throw new InvalidTransitionError(`No path from ${from} to ${to}.`);
  return path;
}

/** The events that move a verified flow to its lineage's accepted state: the table's path, per lineage. */
export const acceptEvents: Readonly<Record<Lineage, readonly NavigationEvent[]>> = {
  mrtr: pathBetween(State.REQUIREMENT_VERIFIED, acceptedStates.mrtr),
  nested: pathBetween(State.REQUIREMENT_VERIFIED, acceptedStates.nested),
  error_retry: pathBetween(State.REQUIREMENT_VERIFIED, acceptedStates.error_retry),
};
