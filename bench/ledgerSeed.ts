import type { Pool, PoolClient } from '../src/db/pool.js';
import { seedPaths, type SeedPath } from './ledgerPaths.js';

// Bulk seeding for the ledger bench: N navigations in one INSERT … SELECT over
// generate_series, their events following the paths of bench/ledgerPaths.ts,
// then consent receipts, operation receipts, secrets and OAuth transactions.
// The hash chains are not left empty: the chain trigger is disabled while the
// events are inserted, and flow_seq / prev_hash / hash are computed in the
// same statement by a running aggregate over navigation_event_hash (the
// trigger's own function) per flow, exactly as the trigger would have; then
// each flow's head, and one anchor sealing them all (ledger_anchor, as the
// sweep writes it).

export const SUBJECTS = 3000;
export const TTL_SECONDS = 900;

// Provider shares, hosts and tools (each tool equally likely within its provider).
const PROVIDERS: { provider: string; host: string; share: number; tools: string[] }[] = [
  {
    provider: 'reports',
    host: 'reports.example.com',
    share: 0.6,
    tools: ['reports_create', 'reports_list', 'reports_delete'],
  },
  {
    provider: 'calendar',
    host: 'calendar.example.com',
    share: 0.25,
    tools: ['calendar_create_event', 'calendar_list_events'],
  },
  { provider: 'drive', host: 'drive.example.com', share: 0.15, tools: ['drive_upload', 'drive_search', 'drive_share'] },
];
/** Outcomes of accepted operations: still pending (outcome unknown), failed, else succeeded. */
const PENDING_SHARE = 0.002;
const FAILED_SHARE = 0.02;

const EVENT_COLUMNS = [
  'id',
  'navigation_id',
  'from_status',
  'to_status',
  'event',
  'actor',
  'evidence',
  'created_at',
  'prev_hash',
  'hash',
  'flow_seq',
  'tx_id',
];

export interface SeedReport {
  steps: { name: string; ms: number; rows: number }[];
  totalMs: number;
  statuses: { status: string; n: number }[];
}

export async function seedLedger(pool: Pool, n: number, now: Date): Promise<SeedReport> {
  const client = await pool.connect();
  const steps: SeedReport['steps'] = [];
  const started = performance.now();
  const step = async (name: string, sql: string, params: unknown[] = []) => {
    const t = performance.now();
    const result = await client.query(sql, params);
    steps.push({ name, ms: performance.now() - t, rows: result.rowCount ?? 0 });
  };
  try {
    await checkEventColumns(client);
    // This session only: no timeout, room to sort in memory, a fixed random sequence.
    await client.query(`SET statement_timeout = 0; SET work_mem = '256MB'; SET synchronous_commit = off`);
    await client.query('SELECT setseed(0.42)');
    await createScratch(client, seedPaths());
    await step('draw navigations (temp table)', DRAW_NAVIGATIONS, [n, now, TTL_SECONDS, SUBJECTS]);
    await step('elicitation_navigations', INSERT_NAVIGATIONS);
    await client.query('ALTER TABLE navigation_events DISABLE TRIGGER navigation_events_chain');
    try {
      await step('navigation_events + hash chain', INSERT_EVENTS);
    } finally {
      await client.query('ALTER TABLE navigation_events ENABLE TRIGGER navigation_events_chain');
    }
    await client.query(
      `SELECT setval(pg_get_serial_sequence('navigation_events', 'id'), (SELECT max(id) FROM navigation_events))`,
    );
    await step('ledger_heads', INSERT_HEADS);
    await step('first anchor (ledger_anchor_heads)', 'SELECT ledger_anchor(now(), pg_current_snapshot())');
    await step('consent_receipts', INSERT_CONSENT);
    await step('operation_receipts', INSERT_RECEIPTS, [PENDING_SHARE, FAILED_SHARE]);
    await step('connections', INSERT_CONNECTIONS);
    await step('secrets', INSERT_SECRETS);
    await step('oauth_transactions', INSERT_OAUTH);
    await client.query(
      'DROP AGGREGATE bench_chain(navigation_events, bigint); DROP FUNCTION bench_chain_step(bytea, navigation_events, bigint)',
    );
    // What autovacuum does to a table after a bulk load: statistics and the visibility map.
    await step(
      'VACUUM ANALYZE',
      'VACUUM ANALYZE elicitation_navigations, navigation_events, consent_receipts, operation_receipts, secrets, oauth_transactions',
    );
    const statuses = await client.query<{ status: string; n: string }>(
      'SELECT status, count(*) AS n FROM elicitation_navigations GROUP BY status ORDER BY count(*) DESC',
    );
    return {
      steps,
      totalMs: performance.now() - started,
      statuses: statuses.rows.map((r) => ({ status: r.status, n: Number(r.n) })),
    };
  } finally {
    await client.query('DISCARD ALL').catch(() => undefined);
    client.release();
  }
}

// The chain is computed over a row value of navigation_events: its columns must be the ones hashed.
async function checkEventColumns(client: PoolClient): Promise<void> {
  const { rows } = await client.query<{ name: string }>(
    `SELECT attname AS name FROM pg_attribute WHERE attrelid = 'navigation_events'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
  );
  const found = rows.map((r) => r.name).join(', ');
  if (found !== EVENT_COLUMNS.join(', '))
    throw new Error(`navigation_events has columns (${found}); the ledger bench seeds (${EVENT_COLUMNS.join(', ')})`);
}

async function createScratch(client: PoolClient, paths: SeedPath[]): Promise<void> {
  const lower: number[] = [];
  let sum = 0;
  for (const p of paths) {
    lower.push(sum);
    sum += p.weight;
  }
  await client.query(
    `CREATE TEMP TABLE seed_paths AS
       SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::text[], $5::int[], $6::int[], $7::float8[])
         AS p(path, kind, lineage, status, updates, last_phase, lower_bound)`,
    [
      paths.map((_, i) => i + 1),
      paths.map((p) => p.kind),
      paths.map((p) => p.lineage),
      paths.map((p) => p.status),
      paths.map((p) => p.updates),
      paths.map((p) => Math.max(...p.steps.map((s) => s.phase))),
      lower,
    ],
  );
  const flat = paths.flatMap((p, i) => p.steps.map((s, step) => ({ path: i + 1, step, ...s })));
  await client.query(
    `CREATE TEMP TABLE seed_steps AS
       SELECT * FROM unnest($1::int[], $2::int[], $3::text[], $4::text[], $5::text[], $6::int[]) AS s(path, step, from_status, to_status, event, phase)`,
    [
      flat.map((s) => s.path),
      flat.map((s) => s.step),
      flat.map((s) => s.from),
      flat.map((s) => s.to),
      flat.map((s) => s.event),
      flat.map((s) => s.phase),
    ],
  );
  const bounds: number[] = [];
  let acc = 0;
  for (const p of PROVIDERS) {
    bounds.push(acc);
    acc += p.share;
  }
  await client.query(
    `CREATE TEMP TABLE seed_providers AS
       SELECT p.provider, p.host, p.lo, coalesce(lead(p.lo) OVER (ORDER BY p.lo), 1.0) AS hi, string_to_array(p.tools, ',') AS tools
         FROM unnest($1::text[], $2::text[], $3::float8[], $4::text[]) AS p(provider, host, lo, tools)`,
    [PROVIDERS.map((p) => p.provider), PROVIDERS.map((p) => p.host), bounds, PROVIDERS.map((p) => p.tools.join(','))],
  );
  // One step of a flow's chain: the trigger's hash of this row, at its place, after its predecessor's hash.
  await client.query(`CREATE FUNCTION bench_chain_step(prev bytea, e navigation_events, seq bigint) RETURNS bytea LANGUAGE sql STABLE AS 'SELECT navigation_event_hash(prev, seq, e)';
    CREATE AGGREGATE bench_chain(navigation_events, bigint) (SFUNC = bench_chain_step, STYPE = bytea)`);
}

// Per navigation: its path (weighted), subject (skewed: a few heavy users), provider and tool, and
// the durations of each phase. Finished flows start over the last 30 days, open ones in the last
// minutes (fresh) or hours (overdue). Phase times: p1 after review, p2 consent, p3 the provider's
// callback (p3 - p2 is the gate's completion → verified), p4 acceptance, p5 the sweep after expiry.
const DRAW_NAVIGATIONS = `
CREATE TEMP TABLE seed_nav AS
SELECT r.g, gen_random_uuid() AS id, gen_random_uuid() AS receipt_id, r.u_outcome,
       p.path, p.kind, p.lineage, p.status, p.updates, p.last_phase,
       EXISTS (SELECT 1 FROM seed_steps s WHERE s.path = p.path AND s.to_status = 'OUT_OF_BAND_PENDING') AS consented,
       EXISTS (SELECT 1 FROM seed_steps s WHERE s.path = p.path AND s.event = 'callback_verified') AS verified,
       EXISTS (SELECT 1 FROM seed_steps s WHERE s.path = p.path AND s.phase = 4) AS accepted,
       'user-' || lpad(floor($4::int * power(r.u_sub, 1.5))::int::text, 5, '0') AS sub,
       v.provider, v.host, v.tools[1 + floor(r.u_tool * cardinality(v.tools))::int] AS tool,
       t.t0, t.t0 + make_interval(secs => $3::int) AS expires_at,
       t.t0 + make_interval(secs => d.review) AS p1,
       t.t0 + make_interval(secs => d.review + d.consent) AS p2,
       t.t0 + make_interval(secs => d.review + d.consent + d.provider) AS p3,
       t.t0 + make_interval(secs => d.review + d.consent + d.provider + d.accept) AS p4,
       t.t0 + make_interval(secs => $3::int + d.sweep_lag) AS p5
  FROM (SELECT g, random() AS u_path, random() AS u_sub, random() AS u_prov, random() AS u_tool, random() AS u_t,
               random() AS u1, random() AS u2, random() AS u3, random() AS u4, random() AS u5, random() AS u_outcome
          FROM generate_series(1, $1::int) AS g OFFSET 0) r
  JOIN seed_paths p ON p.path = width_bucket(r.u_path, (SELECT array_agg(lower_bound ORDER BY path) FROM seed_paths))
  JOIN seed_providers v ON r.u_prov >= v.lo AND r.u_prov < v.hi
 CROSS JOIN LATERAL (SELECT 2 + 20 * r.u1 ^ 2 AS review, 3 + 40 * r.u2 ^ 2 AS consent, 4 + 110 * r.u3 ^ 4 AS provider,
                            0.2 + 5 * r.u4 ^ 2 AS accept, 1 + 59 * r.u5 AS sweep_lag) d
 CROSS JOIN LATERAL (SELECT CASE p.kind
          WHEN 'done' THEN $2::timestamptz - make_interval(secs => 1000 + r.u_t * (30 * 86400 - 1000))
          WHEN 'fresh' THEN $2::timestamptz - make_interval(secs => 120 + r.u_t * 700)
          ELSE $2::timestamptz - make_interval(secs => $3::int + 60 + r.u_t * 6 * 3600) END AS t0) t`;

const INSERT_NAVIGATIONS = `
INSERT INTO elicitation_navigations (id, server_id, subject_iss, subject_sub, client_id, request_digest, tool, target_scheme,
  target_host, redirect_policy, purpose, provider, handle_digest, state_nonce_digest, session_generation, lineage,
  retry_generation, status, row_version, created_at, expires_at, updated_at)
SELECT id, 'https://broker.example', 'https://idp.example', sub, 'mcp-host-' || (g % 5), encode(sha256(convert_to('request ' || g, 'UTF8')), 'hex'),
       tool, 'https', host, '{"callback": "https://broker.example/oauth/callback", "done": "/connect/done"}'::jsonb,
       'Run ' || tool || ' for ' || sub, provider, sha256(convert_to('handle ' || id, 'UTF8')),
       CASE WHEN consented THEN sha256(convert_to('state ' || id, 'UTF8')) END, 0, lineage, 0, status, 1 + updates,
       t0, expires_at, CASE last_phase WHEN 0 THEN t0 WHEN 1 THEN p1 WHEN 2 THEN p2 WHEN 3 THEN p3 WHEN 4 THEN p4 ELSE p5 END
  FROM seed_nav ORDER BY t0`;

// Ids follow time, so one flow's events are spread through the table as in production; each flow's chain follows its steps.
const INSERT_EVENTS = `
INSERT INTO navigation_events (${EVENT_COLUMNS.join(', ')})
SELECT id, navigation_id, from_status, to_status, event, actor, evidence, created_at,
       lag(hash) OVER (PARTITION BY navigation_id ORDER BY flow_seq), hash, flow_seq, pg_current_xact_id()
  FROM (SELECT e.*, bench_chain((e.id, e.navigation_id, e.from_status, e.to_status, e.event, e.actor, e.evidence, e.created_at, NULL, NULL, e.flow_seq, NULL)::navigation_events, e.flow_seq)
                      OVER (PARTITION BY e.navigation_id ORDER BY e.flow_seq) AS hash
          FROM (SELECT row_number() OVER (ORDER BY x.created_at, x.g, x.step) AS id,
                       row_number() OVER (PARTITION BY x.navigation_id ORDER BY x.step) AS flow_seq, x.*
                  FROM (SELECT n.g, s.step, n.id AS navigation_id, s.from_status, s.to_status, s.event,
                               CASE WHEN s.event = 'browser_consent' THEN 'browser:' || n.sub
                                    WHEN s.phase = 3 THEN 'provider:' || n.provider
                                    WHEN s.event = 'expire' THEN 'system:sweep'
                                    ELSE 'mcp:' || n.sub END AS actor,
                               CASE WHEN s.phase = 0 THEN jsonb_build_object('tool', n.tool, 'provider', n.provider, 'lineage', n.lineage)
                                    WHEN s.event = 'browser_consent' THEN jsonb_build_object('destination', n.host)
                                    WHEN s.phase = 3 THEN jsonb_build_object('upstreamSubject', 'upstream-' || n.sub)
                                    WHEN s.phase = 4 THEN jsonb_build_object('receiptId', n.receipt_id, 'lineage', n.lineage)
                                    WHEN s.event = 'expire' THEN jsonb_build_object('expiresAt', to_char(n.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
                                    ELSE '{}'::jsonb END AS evidence,
                               CASE s.phase WHEN 0 THEN n.t0 WHEN 1 THEN n.p1 WHEN 2 THEN n.p2 WHEN 3 THEN n.p3 WHEN 4 THEN n.p4 ELSE n.p5 END AS created_at
                          FROM seed_nav n JOIN seed_steps s ON s.path = n.path) x) e) c`;

const INSERT_HEADS = `
INSERT INTO ledger_heads (navigation_id, seq, prev_hash, hash)
SELECT DISTINCT ON (navigation_id) navigation_id, flow_seq, prev_hash, hash FROM navigation_events ORDER BY navigation_id, flow_seq DESC`;

const INSERT_CONSENT = `
INSERT INTO consent_receipts (id, navigation_id, browser_iss, browser_sub, displayed_destination, created_at)
SELECT gen_random_uuid(), id, 'https://idp.example', sub, host, p2 FROM seed_nav WHERE consented ORDER BY p2`;

const INSERT_RECEIPTS = `
INSERT INTO operation_receipts (id, operation_key, navigation_id, lineage, jsonrpc_id, retry_generation, requirement_receipt,
  outcome_status, outcome, result_digest, created_at, completed_at)
SELECT receipt_id, encode(sha256(convert_to('operation ' || id, 'UTF8')), 'hex'), id, lineage,
       CASE WHEN lineage = 'nested' THEN (g % 1000)::text END, CASE WHEN lineage = 'error_retry' THEN 1 END,
       'verified:' || id || ':v' || updates, o.status,
       CASE o.status WHEN 'succeeded' THEN jsonb_build_object('status', 201, 'id', 'item-' || g) WHEN 'failed' THEN jsonb_build_object('status', 409) END,
       CASE WHEN o.status <> 'pending' THEN md5(g::text) END, p4, CASE WHEN o.status <> 'pending' THEN p4 + interval '1 second' END
  FROM seed_nav
 CROSS JOIN LATERAL (SELECT CASE WHEN u_outcome < $1::float8 THEN 'pending' WHEN u_outcome < $1::float8 + $2::float8 THEN 'failed' ELSE 'succeeded' END AS status) o
 WHERE accepted ORDER BY p4`;

// One connection per subject and provider, from that subject's latest verified flow (its default).
const INSERT_CONNECTIONS = `
INSERT INTO connections (id, subject_iss, subject_sub, provider, upstream_subject, navigation_id, connected_at, updated_at, preferred)
SELECT gen_random_uuid(), 'https://idp.example', v.sub, v.provider, 'upstream-' || v.sub, v.id, v.p3, v.p3, true
  FROM (SELECT DISTINCT ON (sub, provider) * FROM seed_nav WHERE verified ORDER BY sub, provider, t0 DESC) v`;

// One access and one refresh token per connection.
const INSERT_SECRETS = `
INSERT INTO secrets (id, connection_id, subject_iss, subject_sub, provider, kind, ciphertext, key_id, expires_at, navigation_id, created_at, updated_at)
SELECT gen_random_uuid(), c.id, c.subject_iss, c.subject_sub, c.provider, k.kind, sha256(convert_to(k.kind || c.navigation_id, 'UTF8')), 'key-1',
       CASE k.kind WHEN 'access_token' THEN c.connected_at + interval '1 hour' END, c.navigation_id, c.connected_at, c.connected_at
  FROM connections c
 CROSS JOIN (VALUES ('access_token'), ('refresh_token')) AS k(kind)`;

// Flows waiting at the provider still hold their OAuth transaction (10 minutes; the overdue ones are the sweep's).
const INSERT_OAUTH = `
INSERT INTO oauth_transactions (state_digest, navigation_id, provider, code_verifier_sealed, key_id, nonce, redirect_uri, browser_iss, browser_sub, created_at, expires_at)
SELECT sha256(convert_to('state ' || id, 'UTF8')), id, provider, sha256(convert_to('verifier ' || id, 'UTF8')), 'key-1', md5('nonce' || g),
       'https://broker.example/oauth/callback', 'https://idp.example', sub, p2, p2 + interval '10 minutes'
  FROM seed_nav WHERE status = 'OUT_OF_BAND_PENDING'`;
