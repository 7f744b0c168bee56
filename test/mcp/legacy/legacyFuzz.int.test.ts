import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { internalErrors } from '../../support/legacySdkClient.js';
import { useBrokerStack } from '../../support/useBrokerStack.js';

// Property-based fuzzing of /mcp on the 2025-11-25 era, inside real sessions: the other fuzz
// suite (test/mcp/mcpFuzz.int.test.ts) reaches a legacy session only as far as its initialize.
// Here alice holds two live sessions, and the fuzzer sends into them (or into a mutated, another
// user's or no session) requests, notifications, answers to requests the broker never sent,
// batches and non-objects, as alice, bob, no one or a garbled bearer, over real HTTPS. The tools
// that would change something get arguments their strict schemas refuse. For every answer: no
// 5xx, no internal error, no unescaped echo in a page; afterwards nothing stored, no error in the
// log, and both sessions still serve alice (a fuzzed request cannot end or take over a session).
// Replay a failure with FUZZ_SEED=<seed> FUZZ_PATH=<path>.

const LEGACY = '2025-11-25';
const CAPS = { elicitation: { form: {}, url: {} } };
const ACCEPT = 'application/json, text/event-stream';

const replay = {
  ...(process.env['FUZZ_SEED'] ? { seed: Number(process.env['FUZZ_SEED']) } : {}),
  ...(process.env['FUZZ_PATH'] ? { path: process.env['FUZZ_PATH'] } : {}),
};

type Who = 'alice' | 'bob' | 'none' | 'garbled';

interface FuzzRequest {
  httpMethod: 'POST' | 'GET' | 'DELETE';
  who: Who;
  /** Which session header: one of alice's, a mutated one, a random one, or none. */
  session: string | undefined;
  version: string | undefined;
  body: string | undefined;
  [fc.toStringMethod](): string;
}

const anyText = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.constantFrom('<script>alert(1)</script>', '"><img src=x onerror=1>', '\u0000', '\r\n', 'x'.repeat(3000)),
);
const anyJson = fc.jsonValue({ maxDepth: 3 });
const requestId = fc.oneof(fc.integer(), fc.string({ maxLength: 12 }), fc.constantFrom(null, 1.5, true, {}, []));

/** A tools/call of a tool that would change something, with an argument no strict schema takes. */
const refusedCall = fc
  .tuple(
    fc.constantFrom('notes_create', 'notes_delete', 'reports_create'),
    fc.dictionary(fc.string({ maxLength: 10 }), anyJson, { maxKeys: 3 }),
    fc.string({ maxLength: 8 }),
    anyJson,
  )
  .map(([name, args, extra, value]) => ({ name, arguments: { ...args, [`x-fuzz-${extra}`]: value } }));

/** A tools/call that only reads (any arguments), or of a tool that does not exist. */
const readingCall = fc.record({
  name: fc.oneof(fc.constantFrom('notes_list', 'notes_workspaces'), anyText),
  arguments: fc.oneof(fc.record({ workspaceUri: fc.oneof(fc.constant('file:///work/notes/alice'), anyText) }), anyJson),
});

const message = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      jsonrpc: fc.constant('2.0'),
      id: requestId,
      method: fc.constant('tools/call'),
      params: fc.oneof(refusedCall, readingCall),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      jsonrpc: fc.constantFrom('2.0', '1.0', undefined),
      id: requestId,
      method: fc.oneof(
        fc.constantFrom(
          'tools/list',
          'ping',
          'initialize',
          'resources/list',
          'prompts/list',
          'logging/setLevel',
          'completion/complete',
          'elicitation/create',
          'tasks/get',
        ),
        anyText,
      ),
      params: fc.oneof(fc.constant(undefined), anyJson),
    }),
  },
  {
    // Notifications, including the ones a host sends about requests and elicitations it knows of.
    weight: 2,
    arbitrary: fc.record({
      jsonrpc: fc.constant('2.0'),
      method: fc.constantFrom(
        'notifications/initialized',
        'notifications/cancelled',
        'notifications/elicitation/complete',
        'notifications/roots/list_changed',
        'notifications/progress',
        'notifications/unknown',
      ),
      params: fc.oneof(
        fc.record({ requestId, reason: anyText }),
        fc.record({ elicitationId: anyText }),
        fc.record({ progressToken: requestId, progress: fc.double() }),
        anyJson,
      ),
    }),
  },
  {
    // Answers to requests the broker never sent (it sends none unless a tool asks).
    weight: 2,
    arbitrary: fc.oneof(
      fc.record({
        jsonrpc: fc.constant('2.0'),
        id: requestId,
        result: fc.oneof(
          fc.record({ action: fc.constantFrom('accept', 'decline', 'cancel'), content: anyJson }),
          anyJson,
        ),
      }),
      fc.record({
        jsonrpc: fc.constant('2.0'),
        id: requestId,
        error: fc.record({ code: fc.integer(), message: anyText }),
      }),
    ),
  },
  { weight: 1, arbitrary: anyJson },
);

describe('/mcp on 2025-11-25 sessions under property-based fuzzing', () => {
  const { stack, tokens } = useBrokerStack(
    // A fuzzed initialize may open sessions; the session caps have their own tests.
    { legacyLimits: { maxSessions: 1_000_000, maxSessionsPerPrincipal: 1_000_000 } },
    { users: ['alice', 'bob'] },
  );
  let sessions: string[];
  let rows: Record<string, number>;
  const STORED = [
    'notes',
    'workspace_grants',
    'mrtr_nonces',
    'elicitation_navigations',
    'operation_receipts',
    'navigation_events',
  ];

  async function counts(): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const table of STORED)
      out[table] = (await stack.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]!.n;
    return out;
  }

  const bearer = (who: Who): Record<string, string> =>
    who === 'alice' || who === 'bob'
      ? { authorization: `Bearer ${tokens[who]}` }
      : who === 'garbled'
        ? { authorization: `Bearer ${tokens.alice.slice(0, -3)}abc` }
        : {};

  async function post(who: Who, session: string | undefined, body: unknown) {
    const response = await stack.fetch(`${stack.brokerUrl}/mcp`, {
      method: 'POST',
      headers: {
        ...bearer(who),
        accept: ACCEPT,
        'content-type': 'application/json',
        ...(session ? { 'mcp-session-id': session, 'mcp-protocol-version': LEGACY } : {}),
      },
      body: JSON.stringify(body),
    });
    return { status: response.status, session: response.headers.get('mcp-session-id'), text: await response.text() };
  }

  async function openSession(): Promise<string> {
    const init = await post('alice', undefined, {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: LEGACY, capabilities: CAPS, clientInfo: { name: 'fuzz', version: '1' } },
    });
    expect(init.status).toBe(200);
    const session = init.session!;
    expect((await post('alice', session, { jsonrpc: '2.0', method: 'notifications/initialized' })).status).toBe(202);
    return session;
  }

  /** tools/list in the session answers alice with the broker's tools. */
  async function stillServes(session: string): Promise<boolean> {
    const answer = await post('alice', session, { jsonrpc: '2.0', id: 'probe', method: 'tools/list' });
    return answer.status === 200 && answer.text.includes('"notes_list"');
  }

  beforeAll(async () => {
    sessions = [await openSession(), await openSession()];
    rows = await counts();
  });

  function requestArb(): fc.Arbitrary<FuzzRequest> {
    const session = fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom(...sessions) },
      {
        weight: 1,
        arbitrary: fc
          .tuple(fc.constantFrom(...sessions), fc.nat())
          .map(
            ([s, i]) =>
              `${s.slice(0, i % s.length)}${s[i % s.length] === 'a' ? 'b' : 'a'}${s.slice((i % s.length) + 1)}`,
          ),
      },
      {
        weight: 1,
        arbitrary: fc.oneof(
          fc.constant(undefined),
          anyText.filter((t) => /^[\x21-\x7e]{1,200}$/.test(t)),
        ),
      },
    );
    const version = fc.constantFrom(LEGACY, LEGACY, LEGACY, undefined, '2026-07-28', '2024-11-05', 'garbage');
    const body = fc.oneof(
      { weight: 6, arbitrary: message.map((m) => JSON.stringify(m)) },
      { weight: 1, arbitrary: fc.array(message, { minLength: 1, maxLength: 3 }).map((m) => JSON.stringify(m)) },
      { weight: 1, arbitrary: anyText },
    );
    const who = fc.constantFrom<Who>('alice', 'alice', 'alice', 'bob', 'none', 'garbled');
    const post = fc.record({ who, session, version, body }).map((r) => ({ httpMethod: 'POST' as const, ...r }));
    // GET opens a session's stream and DELETE ends it: only where the session is not alice's own (else they would wait or end it).
    const other = fc
      .record({
        httpMethod: fc.constantFrom<'GET' | 'DELETE'>('GET', 'DELETE'),
        who,
        session: session.filter((s) => s === undefined || !sessions.includes(s)),
        version,
      })
      .map((r) => ({ ...r, body: undefined }));
    return fc.oneof({ weight: 5, arbitrary: post }, { weight: 1, arbitrary: other }).map((r) => ({
      ...r,
      [fc.toStringMethod]: () =>
        `${r.httpMethod} as ${r.who} session=${r.session} v=${r.version} ${r.body?.slice(0, 300) ?? ''}`,
    }));
  }

  async function send(r: FuzzRequest) {
    const response = await stack.fetch(`${stack.brokerUrl}/mcp`, {
      method: r.httpMethod,
      headers: {
        ...bearer(r.who),
        accept: ACCEPT,
        ...(r.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(r.session === undefined ? {} : { 'mcp-session-id': r.session }),
        ...(r.version === undefined ? {} : { 'mcp-protocol-version': r.version }),
      },
      ...(r.body === undefined ? {} : { body: r.body }),
    });
    return {
      status: response.status,
      type: response.headers.get('content-type') ?? '',
      session: response.headers.get('mcp-session-id'),
      text: await response.text(),
    };
  }

  type Answer = Awaited<ReturnType<typeof send>>;

  function violations(r: FuzzRequest, a: Answer): string[] {
    const problems: string[] = [];
    if (a.status >= 500) problems.push(`status ${a.status}`);
    if (a.text.includes('"code":-32603')) problems.push('an internal error (-32603)');
    if (/"error"\s*:\s*"internal"/.test(a.text)) problems.push('an internal tool error');
    if (a.type.includes('html') && /<script>alert/.test(a.text)) problems.push('echoes markup');
    // Another user, or no valid bearer, is never served in alice's session: a 2xx that is not a
    // JSON-RPC error. An initialize is answered with a session of its own, whatever session header
    // it carried, or refused (-32602, on 200 as every JSON-RPC error of a request).
    const ownSession = a.session !== null && !sessions.includes(a.session);
    const refused = /^\s*\{"jsonrpc":"2\.0","id":[^{]*"error":\{/.test(a.text);
    if (r.who !== 'alice' && r.session && sessions.includes(r.session) && a.status < 300 && !ownSession && !refused)
      problems.push(`${r.who} served in alice's session`);
    return problems;
  }

  async function runBatch(batch: FuzzRequest[]): Promise<void> {
    const mark = internalErrors(stack).length;
    const answers = await Promise.all(batch.map(send));
    const failures = batch.flatMap((r, i) => {
      const problems = violations(r, answers[i]!);
      return problems.length === 0
        ? []
        : [
            `${String(r[fc.toStringMethod]())}\n  → ${answers[i]!.status} ${answers[i]!.text.slice(0, 300)}\n  ✗ ${problems.join('; ')}`,
          ];
    });
    expect(failures, 'answers that break the contract').toEqual([]);
    expect(internalErrors(stack).slice(mark), 'error lines in the broker log').toEqual([]);
    expect(await counts(), 'rows stored').toEqual(rows);
  }

  it('answers requests, notifications, stray answers and garbage inside live sessions without a 5xx, an internal error or a change', async () => {
    await fc.assert(fc.asyncProperty(fc.array(requestArb(), { minLength: 1, maxLength: 6 }), runBatch), {
      numRuns: 150,
      ...replay,
    });
  });

  it('refuses an initialize whose params are not those of an initialize request, and opens no session', async () => {
    const valid = { protocolVersion: LEGACY, capabilities: CAPS, clientInfo: { name: 'fuzz', version: '1' } };
    for (const params of [
      undefined,
      false,
      [],
      {},
      { ...valid, protocolVersion: 20251125 },
      { ...valid, capabilities: 'all' },
      { ...valid, clientInfo: { name: 'fuzz' } },
    ]) {
      const answer = await post('alice', undefined, { jsonrpc: '2.0', id: 'init', method: 'initialize', params });
      expect(answer.session, JSON.stringify(params)).toBeNull();
      expect(JSON.parse(answer.text), JSON.stringify(params)).toMatchObject({ id: 'init', error: { code: -32602 } });
    }
  });

  it("keeps both of alice's sessions serving her after the fuzzing", async () => {
    for (const session of sessions) expect(await stillServes(session)).toBe(true);
  });
});
