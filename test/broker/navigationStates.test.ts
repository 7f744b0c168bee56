import { describe, expect, it } from 'vitest';
import { InvalidTransitionError } from '../../src/errors/appError.js';
import {
  acceptedStates,
  acceptEvents,
  completableStates,
  consentableStates,
  declinedStates,
  expirableStates,
  navigationEvents,
  navigationStates,
  nextState,
  openStates,
  State,
  terminalStates,
  transitions,
  verifiedStates,
} from '../../src/flow/navigationStates.js';

describe('navigation state machine', () => {
  const allowed = new Map(transitions.map((t) => [`${t.from}|${t.event}`, t.to]));

  // Every (state, event) pair: the table's edges lead where the table says; every other pair throws.
  for (const from of navigationStates) {
    for (const event of navigationEvents) {
      const to = allowed.get(`${from}|${event}`);
      it(`${from} on ${event} ${to ? `→ ${to}` : 'is refused'}`, () => {
        if (to) expect(nextState(from, event)).toBe(to);
        else expect(() => nextState(from, event)).toThrow(InvalidTransitionError);
      });
    }
  }

  it('has the edges of docs/architecture.md, the three lineages included', () => {
    const edges = new Set(transitions.map((t) => `${t.from}>${t.to}`));
    for (const edge of [
      'CREATED>USER_REVIEW',
      'USER_REVIEW>DECLINED',
      'USER_REVIEW>CANCELLED',
      'USER_REVIEW>NAVIGATION_ACCEPTED',
      'NAVIGATION_ACCEPTED>OUT_OF_BAND_PENDING',
      'OUT_OF_BAND_PENDING>COMPLETION_NOTIFIED',
      'COMPLETION_NOTIFIED>REQUIREMENT_VERIFIED',
      'OUT_OF_BAND_PENDING>EXPIRED',
      'OUT_OF_BAND_PENDING>USER_RETRY',
      'REQUIREMENT_VERIFIED>NESTED_SERVER_CONTINUES',
      'NESTED_SERVER_CONTINUES>ORIGINAL_RESPONSE_ACCEPTED',
      'REQUIREMENT_VERIFIED>ERROR_RETRY_ELIGIBLE',
      'ERROR_RETRY_ELIGIBLE>OPTIONAL_CLIENT_RETRY',
      'OPTIONAL_CLIENT_RETRY>RETRY_RESPONSE_ACCEPTED',
      'REQUIREMENT_VERIFIED>MRTR_RETRY_ACCEPTED',
      'REQUIREMENT_VERIFIED>OPERATION_REJECTED',
      'OUT_OF_BAND_PENDING>EXPIRED',
      'COMPLETION_NOTIFIED>EXPIRED',
      // A connection verified elsewhere settles every open flow of the same (principal, provider).
      'CREATED>REQUIREMENT_VERIFIED',
      'USER_REVIEW>REQUIREMENT_VERIFIED',
      'NAVIGATION_ACCEPTED>REQUIREMENT_VERIFIED',
      'OUT_OF_BAND_PENDING>REQUIREMENT_VERIFIED',
    ]) {
      expect(edges.has(edge), edge).toBe(true);
    }
  });

  it('is deterministic: no state has two edges for one event', () => {
    const keys = transitions.map((t) => `${t.from}|${t.event}`);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('derives the terminal states from the table', () => {
    expect([...terminalStates].sort()).toEqual(
      [
        'CANCELLED',
        'DECLINED',
        'EXPIRED',
        'MRTR_RETRY_ACCEPTED',
        'OPERATION_REJECTED',
        'ORIGINAL_RESPONSE_ACCEPTED',
        'RETRY_RESPONSE_ACCEPTED',
        'USER_RETRY',
      ].sort(),
    );
  });

  it('derives the open and the verified states from the table', () => {
    expect([...openStates].sort()).toEqual([
      'COMPLETION_NOTIFIED',
      'CREATED',
      'NAVIGATION_ACCEPTED',
      'OUT_OF_BAND_PENDING',
      'USER_REVIEW',
    ]);
    expect([...verifiedStates].sort()).toEqual([
      'ERROR_RETRY_ELIGIBLE',
      'MRTR_RETRY_ACCEPTED',
      'NESTED_SERVER_CONTINUES',
      'OPERATION_REJECTED',
      'OPTIONAL_CLIENT_RETRY',
      'ORIGINAL_RESPONSE_ACCEPTED',
      'REQUIREMENT_VERIFIED',
      'RETRY_RESPONSE_ACCEPTED',
    ]);
  });

  it('derives the expirable, consentable and declined states from the table', () => {
    expect([...expirableStates].sort()).toEqual(['NAVIGATION_ACCEPTED', 'OUT_OF_BAND_PENDING', 'USER_REVIEW']);
    expect([...consentableStates].sort()).toEqual(['NAVIGATION_ACCEPTED', 'OUT_OF_BAND_PENDING', 'USER_REVIEW']);
    expect([...declinedStates].sort()).toEqual(['CANCELLED', 'DECLINED']);
  });

  it('derives the states a completion may come from', () => {
    expect([...completableStates].sort()).toEqual(['COMPLETION_NOTIFIED', 'OUT_OF_BAND_PENDING']);
  });

  it("derives each lineage's acceptance from the table, ending in its accepted state", () => {
    expect(acceptEvents).toEqual({
      mrtr: ['mrtr_accept'],
      nested: ['nested_continue', 'nested_accept'],
      error_retry: ['error_retry_eligible', 'client_retry', 'retry_accept'],
    });
    for (const lineage of ['mrtr', 'nested', 'error_retry'] as const) {
      expect(acceptEvents[lineage].reduce(nextState, State.REQUIREMENT_VERIFIED), lineage).toBe(
        acceptedStates[lineage],
      );
    }
  });

  it('names every state, and only states, in State', () => {
    expect(Object.entries(State)).toEqual(navigationStates.map((s) => [s, s]));
    expect(Object.isFrozen(State)).toBe(true);
  });

  it('reaches every state from CREATED', () => {
    const seen = new Set(['CREATED']);
    for (let grew = true; grew;) {
      grew = false;
      for (const t of transitions) {
        if (seen.has(t.from) && !seen.has(t.to)) {
          seen.add(t.to);
          grew = true;
        }
      }
    }
    expect([...seen].sort()).toEqual([...navigationStates].sort());
  });
});
