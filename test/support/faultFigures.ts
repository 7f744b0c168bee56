import { appendFile } from 'node:fs/promises';
import { afterAll, expect, inject } from 'vitest';
import { createFaultBroker, type FaultBroker } from './faultBroker.js';
import type { HostOp } from './faultHost.js';

// What every faults run asserts and prints: no operation lost (each one the host asked for is done,
// or recorded for an operator: an accepted receipt with no outcome, which `broker ledger reconcile`
// lists), none done twice at the provider (the Report Service's own record of what it created), and
// the ledger's chain intact.

export interface RunFigures {
  run: string;
  kills: number;
  asked: number;
  done: number;
  /** Accepted, no outcome recorded: listed for an operator to reconcile. */
  operator: number;
  doubled: number;
  lost: number;
  ledgerIntact: boolean;
  /** Milliseconds each broker start of the run took to serve. */
  startsMs: number[];
}

export async function figuresOf(run: string, broker: FaultBroker, ops: HostOp[], kills: number): Promise<RunFigures> {
  const seen = [...(await broker.reportsSeen()), ...(await broker.issuesSeen())];
  const pending = (
    await broker.db.query<{ id: string }>("SELECT id FROM operation_receipts WHERE outcome_status = 'pending'")
  ).rows.map((r) => r.id);
  let done = 0;
  let operator = 0;
  let doubled = 0;
  let lost = 0;
  // An operation the host did not get back is the operator's when an accepted receipt waits for one.
  let pendingLeft = pending.length;
  for (const op of ops) {
    const reports = seen.filter((r) => r.title === op.title);
    if (reports.length > 1) doubled += 1;
    if (op.done && reports.length >= 1) done += 1;
    else if (pendingLeft > 0) {
      operator += 1;
      pendingLeft -= 1;
    } else lost += 1;
  }
  return {
    run,
    kills,
    asked: ops.length,
    done,
    operator,
    doubled,
    lost,
    ledgerIntact: (await broker.ledgerBreak()) === undefined,
    startsMs: broker.startTimes.map(Math.round),
  };
}

export function printFigures(figures: RunFigures): void {
  const f = figures;
  process.stdout.write(
    `faults: ${f.run.padEnd(44)} kills=${f.kills} asked=${f.asked} done=${f.done} operator=${f.operator} doubled=${f.doubled} lost=${f.lost} ledger=${f.ledgerIntact ? 'intact' : 'BROKEN'} starts_ms=${f.startsMs.join('/')}\n`,
  );
}

export function printTotals(title: string, all: RunFigures[]): void {
  const sum = (k: 'kills' | 'asked' | 'done' | 'operator' | 'doubled' | 'lost') => all.reduce((n, f) => n + f[k], 0);
  const starts = all.flatMap((f) => f.startsMs);
  const mean = starts.length ? Math.round(starts.reduce((a, b) => a + b, 0) / starts.length) : 0;
  process.stdout.write(
    `faults: ${title} total: runs=${all.length} kills=${sum('kills')} asked=${sum('asked')} done=${sum('done')} operator=${sum('operator')} doubled=${sum('doubled')} lost=${sum('lost')} ledger_broken=${all.filter((f) => !f.ledgerIntact).length} broker_starts=${starts.length} mean_start_ms=${mean}\n`,
  );
}

/**
 * A describe's runs: `open()` a broker of its own for each test, `check()` its figures once the host
 * and the sweeps are done; after them all, the describe's totals are printed and every broker closed.
 */
export function useFaultRuns(title: string) {
  const runs: RunFigures[] = [];
  const brokers: FaultBroker[] = [];
  afterAll(async () => {
    printTotals(title, runs);
    await Promise.all(brokers.map((b) => b.close()));
  });
  return {
    async open(): Promise<FaultBroker> {
      const broker = await createFaultBroker(inject('databaseUrl'));
      brokers.push(broker);
      return broker;
    },
    /** `forOperator`: how many of `ops` must end recorded for an operator rather than done. */
    async check(run: string, broker: FaultBroker, ops: HostOp[], kills: number, forOperator = 0): Promise<void> {
      const figures = await figuresOf(run, broker, ops, kills);
      runs.push(figures);
      printFigures(figures);
      await appendFile(inject('faultFiguresFile'), `${JSON.stringify(figures)}\n`);
      expect(figures).toMatchObject({
        lost: 0,
        doubled: 0,
        ledgerIntact: true,
        done: ops.length - forOperator,
        operator: forOperator,
      });
    },
  };
}
