import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { configProblems as problemsOf, PRODUCTION_ENV as production } from '../support/productionSettings.js';
import { FAULT_POINTS, reachFaultPoint } from '../../src/shared/faultPoints.js';

// The kill itself is what test/faults/ proves on real processes; here, who may set a point at all.

describe('BROKER_FAULT_POINT', () => {
  it('is off unless set, and names one of the fault points outside production', () => {
    expect(loadConfig({}).faultPoint).toBeUndefined();
    for (const point of FAULT_POINTS) expect(loadConfig({ BROKER_FAULT_POINT: point }).faultPoint).toBe(point);
    expect(loadConfig({ NODE_ENV: 'test', BROKER_FAULT_POINT: 'operation.before_call' }).faultPoint).toBe(
      'operation.before_call',
    );
  });

  it('refuses a name that is not a fault point', () => {
    expect(problemsOf({ BROKER_FAULT_POINT: 'operation.somewhere' })[0]).toMatch(/^BROKER_FAULT_POINT: /);
  });

  it('refuses to start in production with a fault point set', () => {
    expect(problemsOf({ ...production, BROKER_FAULT_POINT: 'operation.before_call' })).toEqual([
      'BROKER_FAULT_POINT: is a development setting',
    ]);
  });

  it('does nothing where no point is armed', () => {
    for (const point of FAULT_POINTS) reachFaultPoint(point);
    expect(process.exitCode ?? 0).toBe(0);
  });
});
