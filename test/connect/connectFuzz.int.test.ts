import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { REFUSAL_EVENTS } from '../../src/broker/advance.js';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { elicitConnection, openConnectLink } from '../support/connectFlow.js';
import { createTestBrowser } from '../support/testBrowser.js';
import { internalErrors } from '../support/legacySdkClient.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// Property-based fuzzing of the browser's side of a connection, over real HTTPS against the real
// broker: the connect page and its consent (GET/POST /connect/{handle}), the provider's callback
// (GET /oauth/callback/{provider}), the done page, and the broker's own sign-in (GET /login, GET
// /auth/callback). Requests come from signed-in users (alice, whose flows exist; bob, who may not
// touch them), from no one, and with garbled cookies. No generated request is a valid step of a
// flow: each carries at least one defect. So for every answer: no 5xx, no error in the log, no
// unescaped echo of what was sent, no redirect off the broker's origin (but to its own sign-in
// service), and afterwards every flow where it was and nothing stored; the ledger may only have
// gained refusals, which it records for whoever holds a link. A failure prints its seed and path:
// replay with FUZZ_SEED=<seed> FUZZ_PATH=<path>.

const replay = {
  ...(process.env['FUZZ_SEED'] ? { seed: Number(process.env['FUZZ_SEED']) } : {}),
  ...(process.env['FUZZ_PATH'] ? { path: process.env['FUZZ_PATH'] } : {}),
};

/** Text a page must never show as it was sent: markup and attribute breakers. */
const INJECTIONS = [
  '<script>alert(1)</script>',
  '"><img src=x onerror=alert(1)>',
  "'><svg onload=alert(1)>",
  'javascript:alert(1)',
  '%3Cscript%3E',
  '\u202e<b>rtl</b>',
  '../../etc/passwd',
  '\r\nSet-Cookie: x=1',
];

const text = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 2, arbitrary: fc.constantFrom(...INJECTIONS) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', 'x'.repeat(5000), 'null', 'undefined', '0', '-1') },
);

/** A value that is one character away from a real one, or the real one cut, doubled or reversed. */
function near(real: string): fc.Arbitrary<string> {
  return fc.oneof(
    fc
      .nat({ max: real.length - 1 })
      .map((i) => `${real.slice(0, i)}${real[i] === 'A' ? 'B' : 'A'}${real.slice(i + 1)}`),
    fc.nat({ max: real.length - 1 }).map((i) => real.slice(0, i)),
    fc.constantFrom(`${real}${real}`, [...real].reverse().join(''), `${real} `, real.toLowerCase()),
  );
}

type Who = 'alice' | 'bob' | 'none' | 'garbled';

interface FuzzRequest {
  method: 'GET' | 'POST';
  /** Path and query, as sent (already encoded). */
  target: string;
  who: Who;
  headers: Record<string, string>;
  body?: string;
  /** What was generated: none of it may come back unescaped in a page. */
  inputs: string[];
  [fc.toStringMethod](): string;
}

function request(r: Omit<FuzzRequest, typeof fc.toStringMethod>): FuzzRequest {
  return {
    ...r,
    [fc.toStringMethod]: () =>
      `${r.method} ${r.target} as ${r.who} ${JSON.stringify(r.headers)}${r.body === undefined ? '' : ` body=${JSON.stringify(r.body.slice(0, 200))}`}`,
  };
}

const query = (params: readonly (readonly [string, string])[]) =>
  params.length === 0
    ? ''
    : `?${params.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')}`;

describe('the connect and callback routes under property-based fuzzing', () => {
  const { stack, tokens } = useBrokerStack({}, { users: ['alice'] });
  let cookies: Record<Who, string>;
  /** alice's flow on its review page, and her flow sent on to the provider. */
  let reviewHandle: string;
  let consentedHandle: string;
  let csrf: string;
  let realState: string;
  let flowIds: string[];
  let before: Snapshot;

  interface Snapshot {
    flows: { id: string; status: string }[];
    rows: Record<string, number>;
    events: number;
  }

  const STORED = ['secrets', 'connections', 'consent_receipts', 'oauth_transactions', 'web_sessions', 'mrtr_nonces'];

  async function snapshot(): Promise<Snapshot> {
    const pool = stack.db.pool;
    const flows = (
      await pool.query<{ id: string; status: string }>('SELECT id, status FROM elicitation_navigations ORDER BY id')
    ).rows;
    const rows: Record<string, number> = {};
    for (const table of STORED)
      rows[table] = (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]!.n;
    const events = (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM navigation_events')).rows[0]!.n;
    return { flows, rows, events };
  }

  async function signIn(login: string): Promise<string> {
    const browser = createTestBrowser({ fetch: stack.fetch });
    const idpForm = await browser.get(`${stack.brokerUrl}/login`);
    const home = await browser.submitForm(idpForm, { login, password: DEV_PASSWORD });
    expect(home.url).toBe(`${stack.brokerUrl}/`);
    return cookieHeader(browser.cookiesFor(stack.brokerUrl));
  }

  const cookieHeader = (jar: { name: string; value: string }[]) => jar.map((c) => `${c.name}=${c.value}`).join('; ');

  beforeAll(async () => {
    const review = await elicitConnection(stack, tokens.alice, 'reports_create', { title: 'fuzz review', body: '' });
    const sent = await elicitConnection(stack, tokens.alice, 'reports_create', { title: 'fuzz consented', body: '' });
    reviewHandle = new URL(review.url).pathname.split('/').at(-1)!;
    consentedHandle = new URL(sent.url).pathname.split('/').at(-1)!;
    const run = await openConnectLink(stack, review.url, 'alice');
    csrf = run.browser.forms(run.review)[0]!.fields.find((f) => f.name === '_csrf')!.value;
    const consent = await run.browser.get(sent.url);
    const atProvider = await run.browser.submitForm(consent, {}, { stopAt: (u) => u.origin !== stack.brokerUrl });
    realState = new URL(atProvider.location!).searchParams.get('state')!;
    cookies = {
      alice: cookieHeader(run.browser.cookiesFor(stack.brokerUrl)),
      bob: await signIn('bob'),
      none: '',
      garbled: `${cookieHeader(run.browser.cookiesFor(stack.brokerUrl)).replace(/=(.)/g, '=X$1')}; __Host-x=${'%'.repeat(30)}`,
    };
    before = await snapshot();
    flowIds = before.flows.map((f) => f.id);
    expect(before.flows).toHaveLength(2);
    expect(before.rows['oauth_transactions']).toBe(1);
  });

  const who = fc.constantFrom<Who>('alice', 'bob', 'none', 'garbled');

  function handleArb(): fc.Arbitrary<string> {
    return fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(reviewHandle, consentedHandle) },
      { weight: 3, arbitrary: near(reviewHandle) },
      { weight: 2, arbitrary: text },
      { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9_-]{43}$/) },
    );
  }

  function connectPage(): fc.Arbitrary<FuzzRequest> {
    return fc.tuple(handleArb(), who, fc.array(fc.tuple(text, text), { maxLength: 2 })).map(([handle, by, extra]) =>
      request({
        method: 'GET',
        target: `/connect/${encodeURIComponent(handle)}${query(extra)}`,
        who: by,
        headers: {},
        inputs: [handle, ...extra.flat()],
      }),
    );
  }

  /** A consent POST with at least one thing wrong with it: the handle, the user, the origin, the body or its type. */
  function consentPost(): fc.Arbitrary<FuzzRequest> {
    const body = fc.oneof(
      fc.constant(`_csrf=${encodeURIComponent(csrf)}`),
      near(csrf).map((c) => `_csrf=${encodeURIComponent(c)}`),
      fc
        .tuple(text, text)
        .map(([k, v]) => `_csrf=${encodeURIComponent(csrf)}&${encodeURIComponent(k)}=${encodeURIComponent(v)}`),
      text.map((t) => t),
      fc.constant(`_csrf=${'a'.repeat(3000)}`),
      fc.constant(JSON.stringify({ _csrf: csrf })),
    );
    const origin = fc.constantFrom<string | undefined>(undefined, 'self', 'https://evil.example', 'null', 'self-http');
    const type = fc.constantFrom<string | undefined>(
      'application/x-www-form-urlencoded',
      undefined,
      'application/json',
      'text/plain',
      'multipart/form-data; boundary=x',
    );
    return fc
      .record({ handle: handleArb(), by: who, origin, type, body })
      .filter(
        (r) =>
          !(
            [reviewHandle, consentedHandle].includes(r.handle) &&
            r.by === 'alice' &&
            // A browser's POST carries its Origin; without one the CSRF token alone decides (as it should).
            (r.origin === 'self' || r.origin === undefined) &&
            r.type === 'application/x-www-form-urlencoded' &&
            r.body === `_csrf=${encodeURIComponent(csrf)}`
          ),
      )
      .map((r) => {
        const headers: Record<string, string> = {};
        if (r.type) headers['content-type'] = r.type;
        if (r.origin === 'self') headers['origin'] = stack.brokerUrl;
        else if (r.origin === 'self-http') headers['origin'] = stack.brokerUrl.replace('https:', 'http:');
        else if (r.origin) headers['origin'] = r.origin;
        return request({
          method: 'POST',
          target: `/connect/${encodeURIComponent(r.handle)}`,
          who: r.by,
          headers,
          body: r.body,
          inputs: [r.handle, r.body, ...(r.origin ? [r.origin] : [])],
        });
      });
  }

  /** A provider's answer that is never the real one: its state is unknown, or the rest is wrong. */
  function providerCallback(): fc.Arbitrary<FuzzRequest> {
    const state = fc.oneof(near(realState), text, fc.constant('x'.repeat(600)));
    const param = fc.oneof(
      state.map((v) => ['state', v] as const),
      text.map((v) => ['code', v] as const),
      fc
        .oneof(fc.constantFrom('access_denied', 'server_error', 'temporarily_unavailable'), text)
        .map((v) => ['error', v] as const),
      text.map((v) => ['error_description', v] as const),
      fc.oneof(fc.constantFrom('https://evil.example', stack.brokerUrl), text).map((v) => ['iss', v] as const),
      fc.tuple(text, text),
    );
    const provider = fc.oneof(
      { weight: 4, arbitrary: fc.constant('reports') },
      { weight: 1, arbitrary: fc.constantFrom('github', 'unknown', 'REPORTS', 'reports%2F..') },
      { weight: 1, arbitrary: text.map(encodeURIComponent) },
    );
    return fc.tuple(provider, fc.array(param, { maxLength: 5 }), state, who).map(([p, params, s, by]) => {
      // Without a state the callback claims nothing; give most answers one (never the real one).
      const all = params.some(([k]) => k === 'state') ? params : [['state', s] as const, ...params];
      return request({
        method: 'GET',
        target: `/oauth/callback/${p}${query(all)}`,
        who: by,
        headers: {},
        inputs: [p, ...all.flat()],
      });
    });
  }

  function donePage(): fc.Arbitrary<FuzzRequest> {
    const n = fc.oneof(fc.constantFrom(...flowIds), fc.uuid(), text);
    return fc
      .tuple(n, fc.constantFrom<Who>('bob', 'none', 'garbled'))
      .map(([id, by]) =>
        request({ method: 'GET', target: `/connect/done${query([['n', id]])}`, who: by, headers: {}, inputs: [id] }),
      );
  }

  function signInRoutes(): fc.Arbitrary<FuzzRequest> {
    const login = fc
      .tuple(
        fc.oneof(
          text,
          fc.constantFrom(
            '//evil.example',
            '/\\evil.example',
            'https://evil.example/',
            '/%2F%2Fevil.example',
            '/\t/evil',
          ),
        ),
        fc.oneof(fc.constant(undefined), text),
        who,
      )
      .map(([returnTo, reauth, by]) => {
        const params: [string, string][] = [['return_to', returnTo]];
        if (reauth !== undefined) params.push(['reauth', reauth]);
        return request({
          method: 'GET',
          target: `/login${query(params)}`,
          who: by,
          headers: {},
          inputs: params.flat(),
        });
      });
    const callback = fc
      .tuple(
        fc.array(fc.tuple(fc.constantFrom('state', 'code', 'error', 'iss', 'session_state'), text), { maxLength: 4 }),
        who,
      )
      .map(([params, by]) =>
        request({
          method: 'GET',
          target: `/auth/callback${query(params)}`,
          who: by,
          headers: {},
          inputs: params.flat(),
        }),
      );
    return fc.oneof(login, callback);
  }

  interface Answer {
    status: number;
    type: string;
    location: string | null;
    setCookie: string[];
    text: string;
  }

  async function send(r: FuzzRequest): Promise<Answer> {
    const headers: Record<string, string> = { ...r.headers };
    if (cookies[r.who]) headers['cookie'] = cookies[r.who];
    const response = await stack.fetch(`${stack.brokerUrl}${r.target}`, {
      method: r.method,
      headers,
      redirect: 'manual',
      ...(r.body === undefined ? {} : { body: r.body }),
    });
    return {
      status: response.status,
      type: response.headers.get('content-type') ?? '',
      location: response.headers.get('location'),
      setCookie: response.headers.getSetCookie(),
      text: await response.text(),
    };
  }

  function violations(r: FuzzRequest, a: Answer): string[] {
    const problems: string[] = [];
    if (a.status >= 500) problems.push(`status ${a.status}`);
    if (a.type.includes('html'))
      for (const input of r.inputs)
        for (const piece of INJECTIONS.filter((i) => /[<>"']/.test(i)))
          if (input.includes(piece) && a.text.includes(piece)) problems.push(`echoes ${JSON.stringify(piece)}`);
    if (a.type.includes('html'))
      for (const input of r.inputs)
        if (input.length >= 4 && /[<>"]/.test(input) && a.text.includes(input))
          problems.push(`echoes ${JSON.stringify(input.slice(0, 60))}`);
    if (a.location !== null) {
      const to = new URL(a.location, stack.brokerUrl);
      const signIn = r.target.startsWith('/login') && to.origin === new URL(stack.dev.idp.issuer).origin;
      if (to.origin !== stack.brokerUrl && !signIn) problems.push(`redirects to ${to.href}`);
    }
    // Only a sign-in may set a session; every one generated here is invalid.
    if (a.setCookie.some((c) => /session/i.test(c.split('=')[0]!) && !/Max-Age=0|Expires=Thu, 01 Jan 1970/i.test(c)))
      problems.push(`sets ${a.setCookie.join(' | ').slice(0, 120)}`);
    return problems;
  }

  async function runBatch(batch: FuzzRequest[]): Promise<void> {
    const mark = internalErrors(stack).length;
    // In order, not at once: a refusal's quota check and its entry race between requests (harmless, but it makes the count below vary).
    const failures: string[] = [];
    for (const r of batch) {
      const a = await send(r);
      const problems = violations(r, a);
      if (problems.length > 0)
        failures.push(
          `${String(r[fc.toStringMethod]())}\n  → ${a.status} ${a.text.slice(0, 300)}\n  ✗ ${problems.join('; ')}`,
        );
    }
    expect(failures, 'answers that break the contract').toEqual([]);
    expect(internalErrors(stack).slice(mark), 'error lines in the broker log').toEqual([]);
    const after = await snapshot();
    expect(after.flows, 'every flow where it was').toEqual(before.flows);
    expect(after.rows, 'nothing stored, nothing consumed').toEqual(before.rows);
    const { rows: added } = await stack.db.pool.query<{ event: string }>(
      'SELECT event FROM navigation_events ORDER BY id OFFSET $1',
      [before.events],
    );
    expect(
      added.filter((e) => !(REFUSAL_EVENTS as readonly string[]).includes(e.event)),
      'ledger entries other than refusals',
    ).toEqual([]);
  }

  const batches = (arb: () => fc.Arbitrary<FuzzRequest>) => fc.array(arb(), { minLength: 1, maxLength: 6 });

  it('answers the connect page and a consent that is not quite right without a 5xx, an echo, a redirect away or a change', async () => {
    await fc.assert(
      fc.asyncProperty(
        batches(() => fc.oneof(connectPage(), consentPost())),
        runBatch,
      ),
      {
        numRuns: 60,
        ...replay,
      },
    );
  });

  it("answers a provider's callback that is not the real one, and the done page, without a 5xx, an echo or a change", async () => {
    await fc.assert(
      fc.asyncProperty(
        batches(() => fc.oneof(providerCallback(), donePage())),
        runBatch,
      ),
      {
        numRuns: 60,
        ...replay,
      },
    );
  });

  it('answers sign-in starts and sign-in callbacks that are not real without a 5xx, an open redirect or a session', async () => {
    await fc.assert(fc.asyncProperty(batches(signInRoutes), runBatch), { numRuns: 40, ...replay });
  });

  it('still shows alice her review page after the fuzzing', async () => {
    const answer = await send(
      request({ method: 'GET', target: `/connect/${reviewHandle}`, who: 'alice', headers: {}, inputs: [] }),
    );
    expect(answer.status).toBe(200);
    expect(answer.text).toContain('Connect');
  });
});
