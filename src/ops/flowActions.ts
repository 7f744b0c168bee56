import {
  canTransition,
  navigationStates,
  openStates,
  transitions,
  type NavigationState,
} from '../flow/navigationStates.js';

// Which recovery actions a flow's page offers. The use cases
// in ops/recovery.ts decide for real; this only hides forms that would be
// refused, and is derived from the transition table like everything else.

/** The state the expiry leads to, from the table. */
const expiredState = transitions.find((t) => t.event === 'expire')?.to;

export interface FlowFacts {
  status: string;
  expiresAt: Date;
  receipt: { outcomeStatus: string } | undefined;
  /** The flow that replaced this one, when it was re-issued. */
  reissuedAs: string | undefined;
}

export interface FlowActions {
  /** Mark terminal: the flow is still waiting for the user or the provider. */
  close: boolean;
  /** Re-issue the connect link: expired (or open past its expiry), nothing accepted, not re-issued yet. */
  reissue: boolean;
  /** Re-drive: the operation was accepted and its outcome is unknown. */
  redrive: boolean;
}

const isState = (s: string): s is NavigationState => (navigationStates as readonly string[]).includes(s);

export function flowActions(flow: FlowFacts, now: Date): FlowActions {
  if (!isState(flow.status)) return { close: false, reissue: false, redrive: false };
  const stuck = openStates.has(flow.status) && flow.expiresAt <= now;
  return {
    close: canTransition(flow.status, 'operator_close'),
    reissue: !flow.receipt && !flow.reissuedAs && (flow.status === expiredState || stuck),
    redrive: flow.receipt?.outcomeStatus === 'pending',
  };
}

/** What the flow page says after an action redirected back to it (POST, then 303, then GET). */
export const notices = ['closed', 'approved', 'rejected', 'redriven', 'redrive_waiting'] as const;
export type Notice = (typeof notices)[number];

export const NOTICES: Record<Notice, string> = {
  closed: 'The flow was marked terminal. The event below records your reason.',
  approved: 'Approved: the next retry of the original call performs the operation.',
  rejected: 'Rejected: the flow has ended and the operation will not be performed.',
  redriven:
    'Re-driven: the operation was performed again with the same idempotency key, and its outcome is recorded below.',
  redrive_waiting:
    'The re-drive is recorded, but it cannot be performed right now (the arguments were not kept, or the user has no connection to the provider any more). The reconcile sweep will try again.',
};
