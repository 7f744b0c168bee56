import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { devUsers } from '../../src/dev/devUsers.js';
import { canonicalFileUri, isWithin } from '../../src/notes/workspaceUri.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// Property-based fuzzing of POST /mcp with fast-check, over real HTTPS against
// the real broker, with alice's real bearer token. Each run
// sends a small batch of requests in parallel; every answer is checked on the
// wire, and after every batch the database must hold the same rows and the
// broker must have logged no error. fast-check prints the seed and path of a
// failure; replay it with FUZZ_SEED=<seed> FUZZ_PATH=<path>.

const VERSION = '2026-07-28';
const ALICE = 'file:///work/notes/alice';
const TOOLS = ['notes_create', 'notes_delete', 'notes_list', 'notes_workspaces'] as const;
const ALICE_NOTE_IDS = ['note_a1ce00000001', 'note_a1ce00000002', 'note_a1ce00000003', 'note_a1ce00000004'];
const MAX_BODY_BYTES = 1024 * 1024;
const LADDER_400_CODES = new Set([-32700, -32600, -32602, -32020, -32021, -32022]);
const FORM = { elicitation: { form: {} } };

const replay = {
  ...(process.env['FUZZ_SEED'] ? { seed: Number(process.env['FUZZ_SEED']) } : {}),
  ...(process.env['FUZZ_PATH'] ? { path: process.env['FUZZ_PATH'] } : {}),
};

// ---------------------------------------------------------------- requests

/** Marks an optional member that the generated object leaves out. */
const ABSENT = Symbol('absent');
/** A header that repeats what the body says (so the request can get past the ladder). */
const MATCH = Symbol('match');
/** The same, as an RFC 2047-style =?base64?…?= value. */
const BASE64 = Symbol('base64');

type Maybe<T> = T | typeof ABSENT;
type HeaderChoice = string | typeof ABSENT | typeof MATCH | typeof BASE64;

interface Plan {
  httpMethod: string;
  auth: 'alice' | 'none' | 'garbled';
  contentType: Maybe<string>;
  accept: Maybe<string>;
  version: HeaderChoice;
  mcpMethod: HeaderChoice;
  mcpName: HeaderChoice;
  origin: Maybe<string>;
}

type Body =
  | { kind: 'json'; value: unknown }
  | { kind: 'text'; text: string }
  | { kind: 'bytes'; bytes: Uint8Array }
  | { kind: 'oversized'; bytes: number };

interface FuzzRequest {
  httpMethod: string;
  auth: Plan['auth'];
  headers: Record<string, string>;
  /** What goes on the wire; undefined for GET. */
  payload: string | Uint8Array | undefined;
  size: number;
  /** The body as the server will parse it, or undefined when it is not JSON. */
  parsed: unknown;
  [fc.toStringMethod](): string;
}

function compact(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).filter(([, v]) => v !== ABSENT));
}

function passesHttpGatesExceptMethod(request: { auth: string }, originOk: boolean, _acceptable: boolean): boolean {
  return request.auth === 'alice' && originOk;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isRequestId(value: unknown): value is string | number {
  return typeof value === 'string' || (typeof value === 'number' && Number.isInteger(value));
}

/** `arbitrary`, or left out; present `weight` times in `weight + absentWeight`. */
function present<T>(arbitrary: fc.Arbitrary<T>, weight = 9, absentWeight = 1): fc.Arbitrary<Maybe<T>> {
  return fc.oneof({ weight, arbitrary }, { weight: absentWeight, arbitrary: fc.constant(ABSENT) });
}

function clip(text: string, max = 240): string {
  return text.length > max ? `${text.slice(0, max)}…(${text.length} chars)` : text;
}

const anyJson = fc.jsonValue({ maxDepth: 3, stringUnit: 'binary' });
const headerText = fc.string({
  unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
  maxLength: 40,
});
const anyText = fc.string({ unit: 'binary', maxLength: 60 });

const planArb: fc.Arbitrary<Plan> = fc.record({
  httpMethod: fc.oneof(
    { weight: 40, arbitrary: fc.constant('POST') },
    { weight: 1, arbitrary: fc.constantFrom('GET', 'DELETE', 'PUT', 'PATCH', 'OPTIONS') },
  ),
  auth: fc.oneof(
    { weight: 30, arbitrary: fc.constant('alice' as const) },
    { weight: 1, arbitrary: fc.constantFrom('none' as const, 'garbled' as const) },
  ),
  contentType: fc.oneof(
    { weight: 20, arbitrary: fc.constant('application/json') },
    {
      weight: 2,
      arbitrary: fc.constantFrom('application/json; charset=utf-8', 'Application/JSON', 'application/json;'),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom<Maybe<string>>(
        'text/plain',
        'application/jsonx',
        'application/x-www-form-urlencoded',
        'json',
        ABSENT,
      ),
    },
    { weight: 1, arbitrary: headerText },
  ),
  accept: fc.oneof(
    { weight: 16, arbitrary: fc.constant('application/json, text/event-stream') },
    { weight: 3, arbitrary: fc.constantFrom('text/event-stream', 'application/json', '*/*', 'application/*') },
    { weight: 1, arbitrary: fc.constantFrom<Maybe<string>>('text/html', 'image/png', ABSENT) },
    { weight: 1, arbitrary: headerText },
  ),
  version: fc.oneof(
    { weight: 16, arbitrary: fc.constant<HeaderChoice>(MATCH) },
    { weight: 2, arbitrary: fc.constantFrom<HeaderChoice>(ABSENT, VERSION, '2025-11-25') },
    { weight: 1, arbitrary: headerText },
  ),
  mcpMethod: fc.oneof(
    { weight: 12, arbitrary: fc.constant<HeaderChoice>(MATCH) },
    { weight: 3, arbitrary: fc.constantFrom<HeaderChoice>(ABSENT, BASE64) },
    { weight: 1, arbitrary: headerText },
  ),
  mcpName: fc.oneof(
    { weight: 12, arbitrary: fc.constant<HeaderChoice>(MATCH) },
    { weight: 3, arbitrary: fc.constantFrom<HeaderChoice>(ABSENT, BASE64) },
    { weight: 1, arbitrary: headerText },
  ),
  origin: fc.oneof(
    { weight: 20, arbitrary: fc.constant<Maybe<string>>(ABSENT) },
    { weight: 2, arbitrary: fc.constantFrom('SELF', 'https://evil.example', 'null', 'https://127.0.0.1') },
    { weight: 1, arbitrary: headerText },
  ),
});

// ---- tool arguments

const workspaceUriArb = fc.oneof(
  { weight: 10, arbitrary: fc.constant(ALICE) },
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      `${ALICE}/`,
      `${ALICE}/sub/dir`,
      'file://localhost/work/notes/alice',
      'FILE:///work/notes/alice',
      'file:///work/notes/bob',
      'file:///work/notes/mallory',
      'file:///work/notes/alice/../bob',
      'file:///work/notes/alice/%2e%2e/bob',
      'file:///work/notes/alice%2f..%2fbob',
      'file:///work/notes/alice-evil',
      'file:///work/notes/alice\u0000',
      'file:///work/notes/al%ZZice',
      'file:///',
      'file:///..',
      'file://evil.example/work/notes/alice',
      'https://example.com/work/notes/alice',
      '',
      `file:///${'a'.repeat(3000)}`,
    ),
  },
  { weight: 2, arbitrary: anyText.map((t) => `file:///work/notes/alice/${t}`) },
  { weight: 1, arbitrary: anyText },
  { weight: 1, arbitrary: anyJson },
);

const titleArb = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      'TPS report',
      'TPS report (Q2)',
      'Lunch ideas',
      'tps',
      'nothing matches this',
      '%',
      '_',
      "'; DROP TABLE notes; --",
    ),
  },
  {
    weight: 4,
    arbitrary: fc.constantFrom('', '   ', '\u0000', 'TPS\u0000report', 'x'.repeat(201), 'é'.repeat(200), '\ud800'),
  },
  { weight: 3, arbitrary: anyText },
  { weight: 1, arbitrary: anyJson },
);

const bodyTextArb = fc.oneof(fc.constantFrom('', 'Filed on time.', 'y'.repeat(20_001)), anyText, anyJson);

/** notes_create arguments that can never create a note (see mayCreate). */
const createArgsArb = fc
  .oneof(
    fc.record({ workspaceUri: workspaceUriArb, title: titleArb, body: bodyTextArb, extra: anyJson }),
    fc.record({
      workspaceUri: fc.constantFrom('file:///work/notes/bob', 'file:///work/notes/mallory', 'file:///elsewhere'),
      title: titleArb,
      body: bodyTextArb,
    }),
    fc.record({ workspaceUri: workspaceUriArb, title: fc.constantFrom('', '   ', 'x'.repeat(201)), body: bodyTextArb }),
    fc.record({ workspaceUri: workspaceUriArb, title: titleArb, body: fc.constantFrom('y'.repeat(20_001), 42, null) }),
    fc.record({ workspaceUri: workspaceUriArb, title: titleArb }, { requiredKeys: [] }),
    anyJson,
  )
  .filter((args) => !mayCreate(args));

/** Conservative: true for any arguments the broker might accept for notes_create. */
function mayCreate(args: unknown): boolean {
  if (!isRecord(args)) return false;
  const keys = Object.keys(args).sort().join(',');
  if (keys !== 'body,title,workspaceUri') return false;
  const { workspaceUri, title, body } = args;
  if (typeof workspaceUri !== 'string' || typeof title !== 'string' || typeof body !== 'string') return false;
  if (title.trim().length === 0 || title.trim().length > 200 || body.length > 20_000) return false;
  try {
    return isWithin(canonicalFileUri(workspaceUri), canonicalFileUri(ALICE));
  } catch {
    return false;
  }
}

const deleteArgsArb = fc.oneof(
  { weight: 4, arbitrary: fc.record({ workspaceUri: fc.constant(ALICE), title: titleArb }) },
  { weight: 3, arbitrary: fc.record({ workspaceUri: workspaceUriArb, title: fc.constant('TPS report') }) },
  { weight: 3, arbitrary: fc.record({ workspaceUri: workspaceUriArb, title: titleArb }) },
  { weight: 2, arbitrary: fc.constant({ workspaceUri: ALICE, title: 'TPS report' }) },
  {
    weight: 1,
    arbitrary: fc.record({ workspaceUri: workspaceUriArb, title: titleArb, extra: anyJson }, { requiredKeys: [] }),
  },
  { weight: 1, arbitrary: anyJson },
);
const listArgsArb = fc.oneof(
  fc.record({ workspaceUri: workspaceUriArb }),
  fc.record({ workspaceUri: workspaceUriArb, more: anyJson }, { requiredKeys: [] }),
  anyJson,
);
const workspacesArgsArb = fc.oneof(
  fc.constant({}),
  fc.record({ workspaceUri: workspaceUriArb }, { requiredKeys: [] }),
  anyJson,
);

const elicitResultArb = fc.record(
  {
    action: fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom('accept', 'decline', 'cancel') },
      { weight: 1, arbitrary: anyJson },
    ),
    content: fc.oneof(
      fc.record(
        {
          note_id: fc.oneof(fc.constantFrom(...ALICE_NOTE_IDS, 'note_b0b000000001', ''), anyJson),
          confirm: fc.oneof(fc.boolean(), anyJson),
          extra: anyJson,
        },
        { requiredKeys: [] },
      ),
      anyJson,
    ),
  },
  { requiredKeys: [] },
);
const inputResponsesArb = fc.oneof(
  { weight: 4, arbitrary: fc.record({ delete_choice: elicitResultArb }) },
  { weight: 1, arbitrary: fc.record({ delete_choice: elicitResultArb, other: anyJson }) },
  { weight: 1, arbitrary: fc.dictionary(anyText, anyJson, { maxKeys: 3 }) },
  { weight: 1, arbitrary: anyJson },
);

/** True when a notes_delete retry with a genuine requestState could delete or decline (a mutation). */
function mayMutate(params: Record<string, unknown>): boolean {
  if (params['name'] !== 'notes_delete' || !isRecord(params['inputResponses'])) return false;
  const reply = params['inputResponses']['delete_choice'];
  if (!isRecord(reply)) return false;
  if (reply['action'] === 'decline') return true;
  if (reply['action'] !== 'accept') return false;
  const content = reply['content'];
  return isRecord(content) && typeof content['note_id'] === 'string' && ALICE_NOTE_IDS.includes(content['note_id']);
}

// ---- JSON-RPC envelopes

const capabilitiesArb = fc.oneof(
  { weight: 6, arbitrary: fc.constant<unknown>(FORM) },
  {
    weight: 2,
    arbitrary: fc.constantFrom<unknown>(
      {},
      { elicitation: {} },
      { elicitation: { url: {} } },
      { elicitation: { form: {}, url: {} } },
    ),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom<unknown>(
      { elicitation: null },
      { elicitation: [] },
      { elicitation: 'form' },
      { elicitation: { form: null } },
      [],
    ),
  },
  { weight: 1, arbitrary: anyJson },
);
const metaArb = fc
  .record({
    'io.modelcontextprotocol/protocolVersion': present(
      fc.oneof(
        { weight: 10, arbitrary: fc.constant<unknown>(VERSION) },
        { weight: 1, arbitrary: fc.constantFrom<unknown>('2025-11-25', '2025-06-18', '1900-01-01', '', 20260728) },
        { weight: 1, arbitrary: anyJson },
      ),
      14,
    ),
    'io.modelcontextprotocol/clientCapabilities': present(capabilitiesArb, 14),
    'io.modelcontextprotocol/clientInfo': present(
      fc.oneof(fc.constant<unknown>({ name: 'fuzz', version: '1' }), anyJson),
      3,
    ),
    progressToken: present(anyJson, 1, 6),
  })
  .map(compact);

function callParamsArb(name: fc.Arbitrary<unknown>, args: fc.Arbitrary<unknown>, requestState: fc.Arbitrary<unknown>) {
  return fc
    .record({
      _meta: present(fc.oneof({ weight: 12, arbitrary: metaArb }, { weight: 1, arbitrary: anyJson }), 20),
      name,
      arguments: present(args, 10),
      inputResponses: present(inputResponsesArb, 1, 2),
      requestState: present(requestState, 1, 2),
      extra: present(anyJson, 1, 4),
    })
    .map(compact);
}

/** A notes_delete retry: the arguments the genuine requestState was sealed for, and a random answer. */
function retryParamsArb(requestState: fc.Arbitrary<unknown>) {
  return fc
    .record({
      _meta: metaArb,
      name: fc.constant('notes_delete'),
      arguments: fc.oneof(
        { weight: 4, arbitrary: fc.constant<unknown>({ workspaceUri: ALICE, title: 'TPS report' }) },
        { weight: 1, arbitrary: deleteArgsArb },
      ),
      inputResponses: present(inputResponsesArb, 6, 1),
      requestState,
    })
    .map(compact);
}

function envelopeArb(requestState: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  const toolCall = fc.oneof(
    { weight: 3, arbitrary: retryParamsArb(requestState) },
    callParamsArb(fc.constant('notes_create'), createArgsArb, requestState),
    { weight: 3, arbitrary: callParamsArb(fc.constant('notes_delete'), deleteArgsArb, requestState) },
    callParamsArb(fc.constant('notes_list'), listArgsArb, requestState),
    callParamsArb(fc.constant('notes_workspaces'), workspacesArgsArb, requestState),
    callParamsArb(
      fc.oneof(fc.constantFrom('', 'NOTES_LIST', 'notes_list ', 'initialize', 'x'.repeat(500)), anyText, anyJson),
      anyJson,
      requestState,
    ),
  );
  const otherParams = fc
    .record({
      _meta: present(fc.oneof({ weight: 12, arbitrary: metaArb }, { weight: 1, arbitrary: anyJson }), 20),
      cursor: present(anyJson, 1, 8),
      uri: present(fc.oneof(fc.constant(ALICE), anyText), 1, 8),
      name: present(fc.oneof(fc.constantFrom(...TOOLS), anyText), 1, 4),
    })
    .map(compact);
  const methodAndParams = fc.oneof(
    { weight: 8, arbitrary: fc.record({ method: fc.constant<unknown>('tools/call'), params: toolCall }) },
    {
      weight: 3,
      arbitrary: fc.record({
        method: fc.constantFrom<unknown>(
          'tools/list',
          'server/discover',
          'initialize',
          'ping',
          'logging/setLevel',
          'resources/list',
          'resources/read',
          'prompts/get',
          'subscriptions/listen',
          'notifications/cancelled',
          'notifications/initialized',
        ),
        params: present(fc.oneof({ weight: 8, arbitrary: otherParams }, { weight: 1, arbitrary: anyJson }), 12),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        method: fc.oneof(anyText, fc.constantFrom('', 'm'.repeat(300)), anyJson),
        params: present(otherParams, 3),
      }),
    },
  );
  return fc
    .record({
      jsonrpc: fc.oneof(
        { weight: 20, arbitrary: fc.constant<unknown>('2.0') },
        { weight: 1, arbitrary: fc.constantFrom<unknown>(ABSENT, '1.0', 2, null) },
        { weight: 1, arbitrary: anyJson },
      ),
      id: fc.oneof(
        { weight: 12, arbitrary: fc.integer() },
        { weight: 6, arbitrary: fc.string({ maxLength: 24 }) },
        { weight: 2, arbitrary: fc.constant<unknown>(ABSENT) },
        { weight: 1, arbitrary: fc.constantFrom<unknown>(null, 1.5, -0, 2 ** 53 + 2, 'x'.repeat(5000)) },
        { weight: 1, arbitrary: anyJson },
      ),
      methodAndParams,
      stray: present(fc.oneof(fc.record({ result: anyJson }), fc.record({ error: anyJson })), 1, 20),
    })
    .map(({ jsonrpc, id, methodAndParams: mp, stray }) =>
      compact({ ...(stray === ABSENT ? {} : stray), jsonrpc, id, method: mp.method, params: mp.params }),
    )
    .filter((message) => !(isRecord(message['params']) && mayMutate(message['params'])));
}

function bodyArb(requestState: fc.Arbitrary<unknown>): fc.Arbitrary<Body> {
  return fc.oneof(
    { weight: 10, arbitrary: envelopeArb(requestState).map((value): Body => ({ kind: 'json', value })) },
    { weight: 2, arbitrary: anyJson.map((value): Body => ({ kind: 'json', value })) },
    {
      weight: 1,
      arbitrary: fc
        .oneof(
          anyText,
          fc.constantFrom('', '{', '[]', '[{}]', 'null', '{"jsonrpc":"2.0","id":1', '\ufeff{}', '{"a":1}{"b":2}'),
        )
        .map((text): Body => ({ kind: 'text', text })),
    },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 256 }).map((bytes): Body => ({ kind: 'bytes', bytes })) },
  );
}

const isHeaderSafe = (value: string) => /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(value);
const base64 = (value: string) => `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;

function headerFor(choice: HeaderChoice, bodyValue: unknown, fallback: string): string | undefined {
  if (choice === ABSENT) return undefined;
  if (typeof choice === 'string') return choice;
  const value = typeof bodyValue === 'string' ? bodyValue : fallback;
  if (choice === BASE64 || !isHeaderSafe(value)) return base64(value);
  return value;
}

function materialize(body: Body, plan: Plan, ctx: { token: string; selfOrigin: string }): FuzzRequest {
  let payload: string | Uint8Array;
  let parsed: unknown;
  if (body.kind === 'json') {
    payload = JSON.stringify(body.value) ?? 'null';
    parsed = JSON.parse(payload);
  } else if (body.kind === 'text') {
    payload = body.text;
  } else if (body.kind === 'bytes') {
    payload = body.bytes;
  } else {
    // A well-formed notes_list call whose workspaceUri makes the body exactly this big.
    const skeleton = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: 'notes_list',
        arguments: { workspaceUri: '' },
        _meta: { 'io.modelcontextprotocol/protocolVersion': VERSION, 'io.modelcontextprotocol/clientCapabilities': {} },
      },
    });
    payload = skeleton.replace('"workspaceUri":""', `"workspaceUri":"${'a'.repeat(body.bytes - skeleton.length)}"`);
    parsed = JSON.parse(payload);
  }
  if (parsed === undefined) {
    try {
      parsed = JSON.parse(Buffer.from(payload).toString('utf8'));
    } catch {
      parsed = undefined;
    }
  }
  const message = isRecord(parsed) ? parsed : {};
  const params = isRecord(message['params']) ? message['params'] : {};
  const meta = isRecord(params['_meta']) ? params['_meta'] : {};
  const headers: Record<string, string> = {};
  const set = (name: string, value: string | undefined) => {
    if (value !== undefined) headers[name] = value;
  };
  set('content-type', plan.contentType === ABSENT ? undefined : plan.contentType);
  set('accept', plan.accept === ABSENT ? undefined : plan.accept);
  set('mcp-protocol-version', headerFor(plan.version, meta['io.modelcontextprotocol/protocolVersion'], VERSION));
  set('mcp-method', headerFor(plan.mcpMethod, message['method'], 'tools/call'));
  set('mcp-name', headerFor(plan.mcpName, params['name'] ?? params['uri'], 'notes_list'));
  set('origin', plan.origin === ABSENT ? undefined : plan.origin === 'SELF' ? ctx.selfOrigin : plan.origin);
  if (plan.auth === 'alice') headers['authorization'] = `Bearer ${ctx.token}`;
  if (plan.auth === 'garbled') headers['authorization'] = `Bearer ${ctx.token.slice(0, -6)}AAAAAA`;
  const size = typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length;
  const withBody = plan.httpMethod !== 'GET' && plan.httpMethod !== 'OPTIONS';
  return {
    httpMethod: plan.httpMethod,
    auth: plan.auth,
    headers,
    payload: withBody ? payload : undefined,
    size: withBody ? size : 0,
    parsed: withBody ? parsed : undefined,
    [fc.toStringMethod]() {
      const shown = { ...headers, ...(headers['authorization'] ? { authorization: `Bearer <${plan.auth}>` } : {}) };
      const text = payload instanceof Uint8Array ? `bytes:${Buffer.from(payload).toString('hex')}` : payload;
      return `${plan.httpMethod} /mcp ${JSON.stringify(shown)} ${clip(withBody ? text : '', 1500)}`;
    },
  };
}

// ---------------------------------------------------------------- checks

interface WireResponse {
  status: number;
  contentType: string;
  sessionId?: string;
  text: string;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The elicitation modes the request declared (MCP 2026-07-28, Elicitation, Capabilities: `{}` means form). */
function declaredModes(parsed: unknown): Set<string> {
  const params = isRecord(parsed) && isRecord(parsed['params']) ? parsed['params'] : {};
  const meta = isRecord(params['_meta']) ? params['_meta'] : {};
  const caps = meta['io.modelcontextprotocol/clientCapabilities'];
  const elicitation = isRecord(caps) ? caps['elicitation'] : undefined;
  if (typeof elicitation !== 'object' || elicitation === null) return new Set();
  const modes = new Set<string>();
  if ('url' in elicitation) modes.add('url');
  if ('form' in elicitation || !('url' in elicitation)) modes.add('form');
  return modes;
}

/** Every way `response` breaks the contract for `request`; empty when it keeps it. */
function violations(request: FuzzRequest, response: WireResponse, selfOrigin: string): string[] {
  const problems: string[] = [];
  const { status } = response;
  const h = request.headers;
  const mediaType = (h['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  const accept = h['accept'] ?? '*/*';
  const acceptable = /application\/json|\*\/\*|application\/\*|text\/event-stream/i.test(accept);
  const originOk =
    h['origin'] === undefined ||
    h['origin'] === selfOrigin ||
    h['origin'] === selfOrigin.replace('127.0.0.1', 'localhost');
  const passesHttpGates =
    request.httpMethod === 'POST' &&
    request.auth === 'alice' &&
    originOk &&
    mediaType === 'application/json' &&
    acceptable &&
    request.size <= MAX_BODY_BYTES;

  if (status >= 500) problems.push(`a ${status}`);
  if (![200, 202, 400, 404, 401, 403, 405, 406, 413, 415].includes(status))
    problems.push(`an unexpected status ${status}`);
  if (status === 401 && request.auth === 'alice') problems.push('401 for a valid token');
  if (status === 403 && originOk) problems.push('403 without a foreign Origin');
  if (status === 405 && ['POST', 'GET', 'DELETE'].includes(request.httpMethod))
    problems.push(`405 for a ${request.httpMethod}`);
  if (status === 415 && mediaType === 'application/json') problems.push('415 for application/json');
  if (status === 406 && acceptable) problems.push(`406 for Accept: ${accept}`);
  if (status === 413 && request.size <= MAX_BODY_BYTES) problems.push(`413 for ${request.size} bytes`);
  if (passesHttpGates && ![200, 202, 400, 404].includes(status))
    problems.push(`${status} for a request that passes every HTTP gate`);

  // GET and DELETE belong to 2025-11-25 sessions: without a session header they are 400, never anything else.
  if (
    (request.httpMethod === 'GET' || request.httpMethod === 'DELETE') &&
    passesHttpGatesExceptMethod(request, originOk, acceptable)
  ) {
    if (status !== 400) problems.push(`${status} for a ${request.httpMethod} without a session`);
    if (!isRecord(parseJson(response.text))) problems.push(`${status} without a JSON object body`);
    return problems;
  }

  if (status === 202) {
    if (response.text !== '') problems.push('202 with a body');
    if (!isRecord(request.parsed) || 'id' in request.parsed)
      problems.push('202 for something that is not a notification');
    return problems;
  }

  if ([401, 403, 405, 406, 413, 415].includes(status)) {
    if (!/^application\/json/i.test(response.contentType))
      problems.push(`${status} with Content-Type ${response.contentType}`);
    if (!isRecord(parseJson(response.text))) problems.push(`${status} without a JSON object body`);
    return problems;
  }

  // 200, 400, 404: one JSON-RPC response, as JSON or as a single SSE event.
  let text = response.text;
  if (/^text\/event-stream/i.test(response.contentType)) {
    const events = [...response.text.matchAll(/^data: (.*)$/gm)];
    if (events.length !== 1) problems.push(`${events.length} SSE events`);
    text = events[0]?.[1] ?? '';
  } else if (!/^application\/json/i.test(response.contentType)) {
    problems.push(`Content-Type ${response.contentType}`);
  }
  const reply = parseJson(text);
  if (!isRecord(reply)) return [...problems, 'a body that is not a JSON object'];
  const extraKeys = Object.keys(reply).filter((k) => !['jsonrpc', 'id', 'result', 'error'].includes(k));
  if (reply['jsonrpc'] !== '2.0') problems.push('jsonrpc is not "2.0"');
  if (extraKeys.length > 0) problems.push(`extra members ${extraKeys.join(',')}`);
  if ('result' in reply === 'error' in reply) problems.push('not exactly one of result and error');
  const requestId = isRecord(request.parsed) && isRequestId(request.parsed['id']) ? request.parsed['id'] : null;
  if (JSON.stringify(reply['id']) !== JSON.stringify(requestId))
    problems.push(`id ${JSON.stringify(reply['id'])} instead of ${JSON.stringify(requestId)}`);

  if ('error' in reply) {
    const error = reply['error'];
    if (!isRecord(error) || !Number.isInteger(error['code']) || typeof error['message'] !== 'string')
      return [...problems, 'a malformed error object'];
    const code = error['code'] as number;
    if (code === -32603) problems.push('an internal error (-32603)');
    if (code === -32042 || code === -32002 || (code >= -32019 && code <= -32000))
      problems.push(`error code ${code}, which 2026-07-28 forbids`);
    if (status === 404 && code !== -32601) problems.push(`404 with code ${code}`);
    if (status === 400 && !LADDER_400_CODES.has(code)) problems.push(`400 with code ${code}`);
    if (status !== 404 && code === -32601) problems.push(`-32601 with HTTP ${status}`);
    if (status !== 400 && code === -32021) problems.push(`-32021 with HTTP ${status}`);
    return problems;
  }
  if (status !== 200) problems.push(`a result with HTTP ${status}`);
  const result = reply['result'];
  if (!isRecord(result)) return [...problems, 'a result that is not an object'];
  // initialize without a modern envelope starts a 2025-11-25 session (a dual-era endpoint, MCP 2026-07-28 basic/versioning.mdx).
  if (isRecord(request.parsed) && request.parsed['method'] === 'initialize') {
    if (result['protocolVersion'] !== '2025-11-25')
      problems.push(`initialize answered ${JSON.stringify(result['protocolVersion'])}`);
    if (!response.sessionId) problems.push('initialize without an Mcp-Session-Id header');
    return problems;
  }
  if (result['resultType'] !== 'complete' && result['resultType'] !== 'input_required')
    problems.push(`resultType ${JSON.stringify(result['resultType'])}`);
  if (result['resultType'] === 'input_required') {
    const method = isRecord(request.parsed) ? request.parsed['method'] : undefined;
    if (method !== 'tools/call') problems.push(`input_required on ${String(method)}`);
    if (result['inputRequests'] === undefined && result['requestState'] === undefined)
      problems.push('input_required without inputRequests or requestState');
    const modes = declaredModes(request.parsed);
    for (const [key, entry] of Object.entries(isRecord(result['inputRequests']) ? result['inputRequests'] : {})) {
      const params = isRecord(entry) && isRecord(entry['params']) ? entry['params'] : {};
      const mode = typeof params['mode'] === 'string' ? params['mode'] : 'form';
      if (isRecord(entry) && entry['method'] === 'elicitation/create' && !modes.has(mode))
        problems.push(`inputRequests.${key} asks for ${mode} elicitation, which the request did not declare`);
    }
  }
  const structured = result['structuredContent'];
  if (result['isError'] === true && isRecord(structured) && structured['error'] === 'internal')
    problems.push(`an internal tool error: ${JSON.stringify(result['content'])}`);
  return problems;
}

// ---------------------------------------------------------------- the tests

describe('POST /mcp under property-based fuzzing', () => {
  // The fuzzer opens 2025-11-25 sessions it never ends; the session caps have their own tests.
  const { stack, tokens } = useBrokerStack(
    { legacyLimits: { maxSessions: 1_000_000, maxSessionsPerPrincipal: 1_000_000 } },
    { users: ['alice'] },
  );
  let selfOrigin: string;
  /** A genuine requestState for notes_delete {alice, "TPS report"} (three candidates). */
  let realState: string;
  let rows: Counts;

  interface Counts {
    notes: number;
    nonces: number;
    grants: number;
  }

  async function counts(): Promise<Counts> {
    const { rows } = await stack.db.pool.query<Counts>(
      'SELECT (SELECT count(*)::int FROM notes) AS notes, (SELECT count(*)::int FROM mrtr_nonces) AS nonces, (SELECT count(*)::int FROM workspace_grants) AS grants',
    );
    return rows[0]!;
  }

  async function send(request: FuzzRequest): Promise<WireResponse> {
    const response = await stack.fetch(`${stack.brokerUrl}/mcp`, {
      method: request.httpMethod,
      headers: request.headers,
      ...(request.payload === undefined ? {} : { body: request.payload }),
    });
    const text = await response.text();
    return {
      status: response.status,
      contentType: response.headers.get('content-type') ?? '',
      sessionId: response.headers.get('mcp-session-id') ?? '',
      text,
    };
  }

  function errorLogLines(from: number): string[] {
    return stack.logs.slice(from).filter((line) => {
      const entry = parseJson(line);
      return isRecord(entry) && typeof entry['level'] === 'number' && entry['level'] >= 50;
    });
  }

  /** One property run: a batch in parallel, then the wire, the log and the database. */
  async function runBatch(batch: FuzzRequest[]): Promise<void> {
    const logMark = stack.logs.length;
    const responses = await Promise.all(batch.map(send));
    const failures = batch.flatMap((request, i) => {
      const problems = violations(request, responses[i]!, selfOrigin);
      return problems.length === 0
        ? []
        : [
            `${String(request[fc.toStringMethod]())}\n  → ${responses[i]!.status} ${clip(responses[i]!.text, 400)}\n  ✗ ${problems.join('; ')}`,
          ];
    });
    const errors = errorLogLines(logMark);
    expect(
      failures.map((f) => (errors.length > 0 ? `${f}\n  log: ${clip(errors.join(''), 1500)}` : f)),
      'responses that break the contract',
    ).toEqual([]);
    expect(
      errorLogLines(logMark).map((l) => clip(l, 600)),
      'error lines in the broker log',
    ).toEqual([]);
    expect(await counts(), 'rows in notes, mrtr_nonces, workspace_grants').toEqual(rows);
  }

  function batchArb(bodies: fc.Arbitrary<Body>): fc.Arbitrary<FuzzRequest[]> {
    return fc.array(
      fc.tuple(bodies, planArb).map(([body, plan]) => materialize(body, plan, { token: tokens.alice, selfOrigin })),
      { minLength: 1, maxLength: 8, size: 'medium' },
    );
  }

  function stateArb(): fc.Arbitrary<unknown> {
    return fc.oneof(
      { weight: 4, arbitrary: fc.constant(realState) },
      {
        weight: 1,
        arbitrary: fc
          .nat({ max: realState.length - 1 })
          .map((i) => `${realState.slice(0, i)}${realState[i] === 'A' ? 'B' : 'A'}${realState.slice(i + 1)}`),
      },
      {
        weight: 1,
        arbitrary: fc.constantFrom('', 'x'.repeat(9000), `${realState}.`, realState.split('.').reverse().join('.')),
      },
      { weight: 1, arbitrary: fc.oneof(anyText, anyJson) },
    );
  }

  beforeAll(async () => {
    selfOrigin = stack.brokerUrl;
    const first = await stack.fetch(`${stack.brokerUrl}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        'mcp-protocol-version': VERSION,
        'mcp-method': 'tools/call',
        'mcp-name': 'notes_delete',
        authorization: `Bearer ${tokens.alice}`,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'setup',
        method: 'tools/call',
        params: {
          name: 'notes_delete',
          arguments: { workspaceUri: ALICE, title: 'TPS report' },
          _meta: {
            'io.modelcontextprotocol/protocolVersion': VERSION,
            'io.modelcontextprotocol/clientCapabilities': FORM,
          },
        },
      }),
    });
    const reply = (await first.json()) as { result: { resultType: string; requestState: string } };
    expect(reply.result.resultType).toBe('input_required');
    realState = reply.result.requestState;
    rows = await counts();
    // The development seed: one workspace grant per demo user.
    expect(rows).toEqual({ notes: 4, nonces: 0, grants: devUsers.length });
  });

  it('answers any JSON value as a body with a JSON-RPC response or an HTTP error, never a 5xx', async () => {
    await fc.assert(fc.asyncProperty(batchArb(anyJson.map((value): Body => ({ kind: 'json', value }))), runBatch), {
      numRuns: 100,
      ...replay,
    });
  });

  it('answers near-valid JSON-RPC envelopes for the notes tools without a 5xx, an internal error or a change in the database', async () => {
    await fc.assert(fc.asyncProperty(batchArb(bodyArb(stateArb())), runBatch), { numRuns: 500, ...replay });
  });

  it('answers random bytes and oversized bodies with a JSON error, never a 5xx', async () => {
    const bodies = fc.oneof(
      fc.uint8Array({ maxLength: 512 }).map((bytes): Body => ({ kind: 'bytes', bytes })),
      anyText.map((text): Body => ({ kind: 'text', text })),
      fc
        .constantFrom(MAX_BODY_BYTES - 200, MAX_BODY_BYTES, MAX_BODY_BYTES + 1, 3 * MAX_BODY_BYTES)
        .map((bytes): Body => ({ kind: 'oversized', bytes })),
    );
    await fc.assert(fc.asyncProperty(batchArb(bodies), runBatch), { numRuns: 30, ...replay });
  });

  // Minimal reproductions of what the fuzzing found, one behaviour each.

  async function callTool(
    name: string,
    args: unknown,
  ): Promise<{ status: number; reply: Record<string, unknown>; errorLog: string[] }> {
    const logMark = stack.logs.length;
    const response = await stack.fetch(`${stack.brokerUrl}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        'mcp-protocol-version': VERSION,
        'mcp-method': 'tools/call',
        'mcp-name': name,
        authorization: `Bearer ${tokens.alice}`,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: {
          name,
          arguments: args,
          _meta: {
            'io.modelcontextprotocol/protocolVersion': VERSION,
            'io.modelcontextprotocol/clientCapabilities': FORM,
          },
        },
      }),
    });
    return {
      status: response.status,
      reply: (await response.json()) as Record<string, unknown>,
      errorLog: errorLogLines(logMark),
    };
  }

  it('answers a NUL character in a notes_delete title as invalid input, not as an internal error', async () => {
    const { status, reply, errorLog } = await callTool('notes_delete', {
      workspaceUri: ALICE,
      title: 'TPS\u0000report',
    });

    expect(status).toBe(200);
    expect(reply['result']).toMatchObject({
      resultType: 'complete',
      isError: true,
      structuredContent: { error: 'invalid_input' },
    });
    expect(errorLog.map((l) => clip(l, 300))).toEqual([]);
    expect(await counts()).toEqual(rows);
  });

  it('answers a NUL character in a notes_create title or body as invalid input, and creates nothing', async () => {
    for (const args of [
      { workspaceUri: ALICE, title: 'Fuzz\u0000title', body: 'ok' },
      { workspaceUri: ALICE, title: 'Fuzz body', body: 'nul \u0000 here' },
    ]) {
      const { status, reply, errorLog } = await callTool('notes_create', args);

      expect(status).toBe(200);
      expect(reply['result'], JSON.stringify(args)).toMatchObject({
        resultType: 'complete',
        isError: true,
        structuredContent: { error: 'invalid_input' },
      });
      expect(errorLog.map((l) => clip(l, 300))).toEqual([]);
      expect(await counts()).toEqual(rows);
    }
  });

  it('still answers a valid tools/list after the fuzzing and holds the same rows', async () => {
    const response = await stack.fetch(`${stack.brokerUrl}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': VERSION,
        'mcp-method': 'tools/list',
        authorization: `Bearer ${tokens.alice}`,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'after',
        method: 'tools/list',
        params: {
          _meta: {
            'io.modelcontextprotocol/protocolVersion': VERSION,
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      }),
    });
    expect(response.status).toBe(200);
    const reply = (await response.json()) as { id: unknown; result: { resultType: string; tools: { name: string }[] } };
    expect(reply.id).toBe('after');
    expect(reply.result.resultType).toBe('complete');
    expect(reply.result.tools.map((t) => t.name)).toEqual(expect.arrayContaining([...TOOLS]));
    expect(await counts()).toEqual(rows);
    const notes = await stack.db.pool.query<{ id: string }>('SELECT id FROM notes ORDER BY id');
    expect(notes.rows.map((r) => r.id)).toEqual(ALICE_NOTE_IDS);
  });
});
