import { describe, expect, it } from 'vitest';
import { canTransition, navigationStates, openStates } from '../../src/flow/navigationStates.js';
import { flowActions } from '../../src/ops/flowActions.js';

const now = new Date('2026-03-02T12:00:00Z');
const later = new Date('2026-03-02T12:10:00Z');
const earlier = new Date('2026-03-02T11:50:00Z');

describe('which recovery actions a flow page offers', () => {
  it('offers mark terminal exactly where the transition table allows operator_close', () => {
    for (const status of navigationStates) {
      expect(
        flowActions({ status, expiresAt: later, receipt: undefined, reissuedAs: undefined }, now).close,
        status,
      ).toBe(canTransition(status, 'operator_close'));
    }
  });

  it('offers a re-issue for an expired flow, or an open one past its expiry, with nothing accepted and no successor', () => {
    const reissuable = navigationStates.filter(
      (status) => flowActions({ status, expiresAt: later, receipt: undefined, reissuedAs: undefined }, now).reissue,
    );
    expect(reissuable).toEqual(['EXPIRED']);
    const stuck = navigationStates.filter(
      (status) => flowActions({ status, expiresAt: earlier, receipt: undefined, reissuedAs: undefined }, now).reissue,
    );
    expect(stuck.sort()).toEqual(['EXPIRED', ...navigationStates.filter((s) => openStates.has(s))].sort());
    expect(
      flowActions({ status: 'EXPIRED', expiresAt: earlier, receipt: undefined, reissuedAs: 'b2c4' }, now).reissue,
    ).toBe(false);
    expect(
      flowActions(
        { status: 'EXPIRED', expiresAt: earlier, receipt: { outcomeStatus: 'succeeded' }, reissuedAs: undefined },
        now,
      ).reissue,
    ).toBe(false);
  });

  it('offers a re-drive only for an accepted operation whose outcome is unknown', () => {
    const at = (outcomeStatus: string | undefined) =>
      flowActions(
        {
          status: 'MRTR_RETRY_ACCEPTED',
          expiresAt: later,
          receipt: outcomeStatus ? { outcomeStatus } : undefined,
          reissuedAs: undefined,
        },
        now,
      ).redrive;
    expect([at('pending'), at('succeeded'), at('failed'), at(undefined)]).toEqual([true, false, false, false]);
  });

  it('offers nothing for a state it does not know', () => {
    expect(
      flowActions(
        { status: 'NOT_A_STATE', expiresAt: earlier, receipt: { outcomeStatus: 'pending' }, reissuedAs: undefined },
        now,
      ),
    ).toEqual({ close: false, reissue: false, redrive: false });
  });
});
