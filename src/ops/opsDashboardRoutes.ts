import { Router } from 'express';
import { z } from 'zod';
import { findApprovals } from '../broker/approvalRepo.js';
import { navigationStates, openStates, verifiedStates, type NavigationState } from '../flow/navigationStates.js';
import { countEventsByState } from '../events/webhookOutboxRepo.js';
import { evaluateGates, verdictOf } from '../ledger/gates.js';
import { pauseConnections, resumeConnections } from '../ledger/killSwitch.js';
import { findStuckFlows } from '../ledger/ledgerQueriesRepo.js';
import { findSwitch, URL_ELICITATION_PAUSED } from '../ledger/operatorRepo.js';
import { parseInput } from '../web/parse.js';
import {
  columnChart,
  dailySeries,
  fillBuckets,
  LATENCY_BOUNDS_SECONDS,
  latencyLabels,
  rowChart,
  seriesStart,
} from './charts.js';
import {
  countConnectionsByProvider,
  countFlowsByState,
  countFlowsPerDay,
  countReceiptsByProvider,
  findCompletionLatencyHistogram,
} from './dashboardRepo.js';
import { operatorForm, pageModel, readAct } from './opsForms.js';
import type { OpsRoutesDeps } from './opsDeps.js';
import { listPins } from '../oauth/issuerPinsRepo.js';
import { upstreamRows } from './upstreamFigures.js';

const DAYS = 30;
/** The latency histogram covers this many of the newest verifications (a bounded read at any ledger size). */
const LATENCY_WINDOW = 5000;
/** Counts on the dashboard stop here ("100+"): the pages behind the links list them. */
const COUNT_CAP = 100;

/** The state's family, for the bar colour: still waiting, connected, or ended without connecting. */
export function toneOf(state: NavigationState): string {
  if (openStates.has(state)) return 'open';
  return verifiedStates.has(state) ? 'verified' : 'ended';
}

/** GET /ops: release gates, flows by state, completion latency, flows per day, webhook events, upstream MCP servers, the kill switch. */
export function opsDashboardRoutes(deps: OpsRoutesDeps): Router {
  const router = Router();
  const { pool, clock } = deps;
  const upstreams = [...deps.ops.broker.providers.values()].flatMap(({ provider: p }) =>
    p.upstream ? [{ id: p.id, prefix: p.upstream.prefix, url: p.upstream.url }] : [],
  );
  const upstreamIds = upstreams.map((u) => u.id);

  router.get('/', async (req, res) => {
    parseInput(z.strictObject({}), req.query, 'query');
    const now = clock.now();
    const [gates, byState, perDay, latency, paused, stuck, pending, webhookEvents, connections, receipts, calls, pins] =
      await Promise.all([
        deps.ops.gateFigures(),
        countFlowsByState(pool),
        countFlowsPerDay(pool, seriesStart(now, DAYS)),
        findCompletionLatencyHistogram(pool, LATENCY_BOUNDS_SECONDS, LATENCY_WINDOW),
        findSwitch(pool, URL_ELICITATION_PAUSED),
        findStuckFlows(pool, now, COUNT_CAP),
        findApprovals(pool, 'pending', COUNT_CAP),
        countEventsByState(pool),
        countConnectionsByProvider(pool, upstreamIds),
        countReceiptsByProvider(pool, upstreamIds),
        deps.ops.upstreamCalls(),
        listPins(pool),
      ]);
    const states = navigationStates.map((s) => ({ label: s, value: byState.get(s) ?? 0, tone: toneOf(s) }));
    const latencyCounts = fillBuckets(latency.buckets, LATENCY_BOUNDS_SECONDS.length + 1);
    const days = dailySeries(perDay, now, DAYS);
    const capped = (n: number) => (n >= COUNT_CAP ? `${COUNT_CAP}+` : String(n));
    res.type('html').send(
      deps.render('ops/dashboard', {
        ...pageModel(res, 'Operator dashboard', 'dashboard'),
        paused: paused?.engaged ? { reason: paused.reason } : undefined,
        gates: evaluateGates(gates.figures).map((g) => ({ ...g, verdict: verdictOf(g) })),
        gatesAt: gates.at.toISOString(),
        totalFlows: states.reduce((sum, s) => sum + s.value, 0),
        stuck: capped(stuck.length),
        pendingApprovals: capped(pending.length),
        // WEBHOOK_URL's events: those given up after every attempt, and those still to be sent.
        webhookEvents: deps.ops.webhooksConfigured
          ? { dead: webhookEvents.dead, pending: webhookEvents.pending }
          : undefined,
        byState: rowChart(states),
        latency: columnChart(
          latencyLabels(LATENCY_BOUNDS_SECONDS).map((label, i) => ({ label, value: latencyCounts[i] ?? 0 })),
        ),
        latencySample: latency.sample,
        latencyWindow: LATENCY_WINDOW,
        perDay: columnChart(
          days.map((d) => ({ ...d, label: d.label.slice(5) })),
          { labelEvery: 5 },
        ),
        days: DAYS,
        upstreams: upstreamRows(
          upstreams,
          connections,
          receipts,
          calls.counts,
          new Map(pins.map((p) => [p.provider, p])),
        ),
        upstreamCallsSince: calls.since.toISOString(),
      }),
    );
  });

  // The kill switch from the page (the CLI's pause-connections / resume-connections).
  router.post('/connections/:change', operatorForm(deps.ops.broker.publicUrl.origin), async (req, res) => {
    const { change } = parseInput(z.strictObject({ change: z.enum(['pause', 'resume']) }), req.params, 'path');
    const act = readAct(req, res);
    if (change === 'pause') await pauseConnections(pool, act.reason, act.actor, clock.now());
    else await resumeConnections(pool, act.reason, act.actor, clock.now());
    res.redirect(303, '/ops');
  });

  return router;
}
