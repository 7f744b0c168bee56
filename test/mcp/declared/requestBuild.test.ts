import { describe, expect, it } from 'vitest';
import { AppError, InvalidInputError } from '../../../src/errors/appError.js';
import { requestUrl } from '../../../src/mcp/connectionFetch.js';
import type { DeclaredEntry } from '../../../src/mcp/declared/declaredEntry.js';
import { translateInputSchema } from '../../../src/mcp/declared/inputSchema.js';
import { buildRequest } from '../../../src/mcp/declared/requestBuild.js';
import { planRequest, type RequestPlan } from '../../../src/mcp/declared/requestPlan.js';
import { parseTemplate } from '../../../src/mcp/declared/template.js';
import { checkForUses, pathValueProblem } from '../../../src/mcp/declared/valueRules.js';

const KEY = '0b6f3c2e-5a34-4b7e-9a0e-0c3f2d9b1a77';
const BASE = { provider: 'github', apiBase: 'https://api.github.example/api/v3' };

function plan(request: DeclaredEntry['request'], idempotency?: DeclaredEntry['idempotency']) {
  const planned = planRequest({ request, ...(idempotency ? { idempotency } : {}) });
  if (!planned.plan) throw new Error(planned.problems.join('; '));
  return planned;
}

const issue = plan({
  method: 'GET',
  path: '/repos/{owner}/{repo}/issues/{number}',
  query: { per_page: '{limit}', labels: '{labels}' },
  headers: { 'X-GitHub-Api-Version': '{version}' },
});
const input = translateInputSchema(
  {
    type: 'object',
    additionalProperties: false,
    required: ['owner', 'repo', 'number'],
    properties: {
      owner: { type: 'string', maxLength: 100 },
      repo: { type: 'string', maxLength: 1_000_000 },
      number: { type: 'integer', minimum: 1 },
      limit: { type: 'integer', maximum: 100 },
      labels: { type: 'array', maxItems: 5, items: { type: 'string', maxLength: 50 } },
      version: { type: 'string', maxLength: 1_000_000 },
    },
  },
  (name) => checkForUses(issue.uses.get(name)),
).input!;

const build = (args: Record<string, unknown>, p: RequestPlan = issue.plan) =>
  buildRequest('github_get_issue', p, args, KEY);

const HOSTILE: [string, string][] = [
  ['../', '../orgs'],
  ['..', '..'],
  ['%2e%2e', '%2e%2e'],
  ['%2f', 'a%2fb'],
  ['//evil', '//evil.example'],
  ['@evil', '@evil.example'],
  ['http:', 'http:'],
  ['a scheme with a host', 'https://evil.example'],
  ['CR/LF', 'demo\r\nHost: evil.example'],
  ['NUL', 'demo\u0000'],
  ['"\\"', 'a\\b'],
  ['"."', '.'],
  ['an empty string', ''],
  ['a 2 MB string', 'a'.repeat(2 * 1024 * 1024)],
];

describe('a path variable', () => {
  it.each(HOSTILE)('refuses %s when the arguments are parsed', (_what, value) => {
    const parsed = input.schema.safeParse({ owner: 'alice', repo: value, number: 1 });
    expect(parsed.success).toBe(false);
  });

  it.each(HOSTILE)('refuses %s again when the request is built, before it is sent', (_what, value) => {
    expect(() => build({ owner: 'alice', repo: value, number: 1 })).toThrow(InvalidInputError);
    expect(() => build({ owner: 'alice', repo: value, number: 1 })).toThrow(
      /^Invalid arguments for github_get_issue\. repo: .*Nothing was sent\.$/,
    );
  });

  it('names what it refuses', () => {
    expect(pathValueProblem('../x')).toBe('must not contain "/" or "\\" (one path segment)');
    expect(pathValueProblem('..')).toBe('must not be "." or contain ".."');
    expect(pathValueProblem('%2e%2e')).toBe('must not contain percent-encoded characters (%xx)');
    expect(pathValueProblem('javascript:x')).toBe('must not start with a scheme ("x:")');
    expect(pathValueProblem('a\nb')).toBe('must not contain control characters (CR, LF, NUL, …)');
    expect(pathValueProblem('a@b')).toBe('must not contain "@"');
  });

  // A provider (or a proxy before it) that normalises Unicode reads these as "..", "/" or "\\".
  const LOOKALIKES: [string, string][] = [
    ['fullwidth full stops (U+FF0E)', '\uFF0E\uFF0E'],
    ['one dot leaders (U+2024)', '\u2024\u2024'],
    ['a two dot leader (U+2025)', '\u2025'],
    ['small full stops (U+FE52)', 'a\uFE52\uFE52b'],
    ['a division slash (U+2215)', 'a\u2215orgs'],
    ['a fraction slash (U+2044)', 'a\u2044b'],
    ['a fullwidth solidus (U+FF0F)', 'a\uFF0Fb'],
    ['a fullwidth reverse solidus (U+FF3C)', 'a\uFF3Cb'],
    ['a set minus (U+2216)', 'a\u2216b'],
    ['fullwidth percent-encoding (U+FF05)', '\uFF05\uFF12\uFF45'],
  ];
  it.each(LOOKALIKES)('refuses a path value with look-alikes of "." and "/": %s', (_what, value) => {
    expect(pathValueProblem(value)).toMatch(/after Unicode normalisation/);
    expect(input.schema.safeParse({ owner: 'alice', repo: value, number: 1 }).success).toBe(false);
    expect(() => build({ owner: 'alice', repo: value, number: 1 })).toThrow(InvalidInputError);
  });

  it('keeps other non-ASCII path values', () => {
    for (const value of ['café', '日本語', 'straße', 'a·b', 'ﬁle']) expect(pathValueProblem(value)).toBeUndefined();
  });

  it('percent-encodes a normal value into one segment below the API base', () => {
    const built = build({ owner: 'alice', repo: 'my repo?#&=+ü', number: 42 });
    expect(built.path).toBe('/repos/alice/my%20repo%3F%23%26%3D%2B%C3%BC/issues/42');
    expect(requestUrl(BASE, built.path).href).toBe(
      'https://api.github.example/api/v3/repos/alice/my%20repo%3F%23%26%3D%2B%C3%BC/issues/42',
    );
    expect(build({ owner: 'alice', repo: '12:30', number: 1 }).path).toBe('/repos/alice/12%3A30/issues/1');
  });
});

describe('query, headers and bodies', () => {
  it('encodes query values with URLSearchParams, lists comma-separated, "/" kept as a plain query character', () => {
    const built = build({ owner: 'alice', repo: 'demo', number: 1, limit: 20, labels: ['bug', 'a/b', 'x y&z'] });
    expect(built.path).toBe('/repos/alice/demo/issues/1?per_page=20&labels=bug%2Ca/b%2Cx+y%26z');
    expect(requestUrl(BASE, built.path).searchParams.get('labels')).toBe('bug,a/b,x y&z');
  });

  it('drops the query parameter and the header of an absent optional argument', () => {
    const built = build({ owner: 'alice', repo: 'demo', number: 1 });
    expect(built.path).toBe('/repos/alice/demo/issues/1');
    expect(built.init).toEqual({ method: 'GET', headers: {} });
  });

  it('refuses CR, LF and NUL in a header value, and CR/LF or "\\" in a query value', () => {
    expect(
      input.schema.safeParse({ owner: 'a', repo: 'b', number: 1, version: '2022-11-28\r\nX-Evil: 1' }).success,
    ).toBe(false);
    expect(() => build({ owner: 'a', repo: 'b', number: 1, version: '2022\u0000' })).toThrow(
      /version: must not contain control characters/,
    );
    expect(() => build({ owner: 'a', repo: 'b', number: 1, labels: ['a\nb'] })).toThrow(
      'labels: must not contain control characters or "\\" in a query parameter',
    );
    expect(build({ owner: 'a', repo: 'b', number: 1, version: '2022-11-28' }).init.headers).toEqual({
      'X-GitHub-Api-Version': '2022-11-28',
    });
  });

  it('sends the idempotency key in the declared header', () => {
    const post = plan(
      { method: 'POST', path: '/issues', body: { json: { title: '{title}' } } },
      { mode: 'header', header: 'Idempotency-Key' },
    );
    expect(build({ title: 'x' }, post.plan).init.headers).toEqual({
      'content-type': 'application/json',
      'Idempotency-Key': KEY,
    });
    const none = plan({ method: 'POST', path: '/issues', body: { json: { title: '{title}' } } }, { mode: 'none' });
    expect(build({ title: 'x' }, none.plan).init.headers).toEqual({ 'content-type': 'application/json' });
  });

  it('fills a JSON body: "{var}" is the typed value, other strings interpolate, an absent argument drops its member', () => {
    const post = plan(
      {
        method: 'POST',
        path: '/issues',
        body: {
          json: {
            title: '{title}',
            body: 'Reported by {who}: {text}',
            labels: '{labels}',
            milestone: '{milestone}',
            draft: '{draft}',
            fixed: [1, 'two', { three: '{number}' }],
            meta: null,
          },
        },
      },
      { mode: 'none' },
    );
    const body = (args: Record<string, unknown>) => JSON.parse(build(args, post.plan).init.body!) as unknown;
    expect(
      body({ title: 'T', who: 'alice', text: '"quoted"\n', labels: ['a', 'b'], milestone: 3, draft: false, number: 7 }),
    ).toEqual({
      title: 'T',
      body: 'Reported by alice: "quoted"\n',
      labels: ['a', 'b'],
      milestone: 3,
      draft: false,
      fixed: [1, 'two', { three: 7 }],
      meta: null,
    });
    expect(body({ title: 'T', who: 'alice' })).toEqual({ title: 'T', fixed: [1, 'two', {}], meta: null });
  });

  it('sends a query parameter written as a list once per item, in order', () => {
    const get = plan({
      method: 'GET',
      path: '/messages/{id}',
      query: { format: 'metadata', metadataHeaders: ['From', 'Subject', '{extra}'] },
    });
    expect(build({ id: 'm1', extra: 'X-Tag' }, get.plan).path).toBe(
      '/messages/m1?format=metadata&metadataHeaders=From&metadataHeaders=Subject&metadataHeaders=X-Tag',
    );
    expect(build({ id: 'm1' }, get.plan).path).toBe(
      '/messages/m1?format=metadata&metadataHeaders=From&metadataHeaders=Subject',
    );
    expect(get.uses.get('extra')).toEqual(new Set(['query']));
  });

  it('posts a GraphQL body: the document as written (braces and all), the variables a JSON template', () => {
    const document = 'query Mine($first: Int!) { viewer { assignedIssues(first: $first) { nodes { id } } } }';
    const graphql = plan(
      {
        method: 'POST',
        path: '/graphql',
        body: { graphql: { query: document, variables: { first: '{limit}', team: '{team}' } } },
      },
      { mode: 'none' },
    );
    const built = build({ limit: 5 }, graphql.plan);
    expect(built.init.headers).toEqual({ 'content-type': 'application/json' });
    expect(JSON.parse(built.init.body!)).toEqual({ query: document, variables: { first: 5 } });
    const bare = plan(
      { method: 'POST', path: '/graphql', body: { graphql: { query: '{ teams { nodes { id } } }' } } },
      { mode: 'none' },
    );
    expect(JSON.parse(build({}, bare.plan).init.body!)).toEqual({ query: '{ teams { nodes { id } } }' });
  });

  it('fills a form body, dropping absent fields', () => {
    const form = plan(
      {
        method: 'POST',
        path: '/chat.postMessage',
        body: { form: { channel: '{channel}', text: '{text}', thread_ts: '{thread}' } },
      },
      { mode: 'none' },
    );
    const built = build({ channel: 'C1', text: 'a&b=c d' }, form.plan);
    expect(built.init.headers).toEqual({ 'content-type': 'application/x-www-form-urlencoded' });
    expect(built.init.body).toBe('channel=C1&text=a%26b%3Dc+d');
  });
});

describe('connection metadata in the path', () => {
  const site = plan({ method: 'GET', path: '/ex/jira/{connection.cloudId}/rest/api/3/issue/{key}' });
  const jira = (metadata: Record<string, string>) =>
    buildRequest('jira_get_issue', site.plan, { key: 'ENG-1' }, KEY, { displayName: 'Atlassian', metadata });

  it('fills {connection.<field>} from what the connection recorded, percent-encoded as a path segment', () => {
    expect(site.plan.path.connectionFields).toEqual(['cloudId']);
    expect(site.uses.has('connection')).toBe(false);
    expect(jira({ cloudId: '11223344-a1b2-3b33-c444-def123456789', siteUrl: 'https://acme.atlassian.net' }).path).toBe(
      '/ex/jira/11223344-a1b2-3b33-c444-def123456789/rest/api/3/issue/ENG-1',
    );
    expect(jira({ cloudId: 'a b' }).path).toBe('/ex/jira/a%20b/rest/api/3/issue/ENG-1');
  });

  it.each([
    [
      'not recorded',
      {},
      "jira_get_issue needs the Atlassian connection's cloudId, which is not recorded for this connection. Nothing was sent; connecting Atlassian again records it anew.",
    ],
    [
      'inherited, not its own',
      Object.create({ cloudId: 'x' }) as Record<string, string>,
      "jira_get_issue needs the Atlassian connection's cloudId, which is not recorded for this connection. Nothing was sent; connecting Atlassian again records it anew.",
    ],
    [
      'another segment',
      { cloudId: '../admin' },
      'jira_get_issue needs the Atlassian connection\'s cloudId, which must not contain "/" or "\\" (one path segment). Nothing was sent; connecting Atlassian again records it anew.',
    ],
    [
      'already encoded',
      { cloudId: '%2e%2e' },
      "jira_get_issue needs the Atlassian connection's cloudId, which must not contain percent-encoded characters (%xx). Nothing was sent; connecting Atlassian again records it anew.",
    ],
  ])('refuses a field that is %s, before anything is sent', (_what, metadata, message) => {
    let thrown: unknown;
    try {
      jira(metadata);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(AppError);
    expect(thrown).toMatchObject({ code: 'upstream_auth_failed', expose: true, message });
  });

  it.each([
    [
      'the query',
      { method: 'GET', path: '/x', query: { site: '{connection.cloudId}' } },
      'request.query.site: {connection.cloudId}: connection metadata may be used only in request.path',
    ],
    [
      'a header',
      { method: 'GET', path: '/x', headers: { 'X-Site': '{connection.cloudId}' } },
      'request.headers.X-Site: {connection.cloudId}: connection metadata may be used only in request.path',
    ],
    [
      'a JSON body',
      { method: 'PUT', path: '/x', body: { json: { site: '{connection.cloudId}' } } },
      'request.body.json.site: {connection.cloudId}: connection metadata may be used only in request.path',
    ],
    [
      'a form body',
      { method: 'PUT', path: '/x', body: { form: { site: '{connection.cloudId}' } } },
      'request.body.form.site: {connection.cloudId}: connection metadata may be used only in request.path',
    ],
    [
      'a dotted field',
      { method: 'GET', path: '/x/{connection.team.id}' },
      'request.path: {connection.team.id}: a connection field name must match ^[A-Za-z][A-Za-z0-9]{0,63}$',
    ],
  ] as [string, DeclaredEntry['request'], string][])(
    'refuses connection metadata in %s at load',
    (_where, request, problem) => {
      expect(planRequest({ request, idempotency: { mode: 'none' } }).problems).toEqual([problem]);
    },
  );
});

describe('the request at load', () => {
  const problems = (request: DeclaredEntry['request'], idempotency?: DeclaredEntry['idempotency']) =>
    planRequest({ request, ...(idempotency ? { idempotency } : {}) }).problems;

  it.each([
    [
      'a scheme and host',
      'https://evil.example/repos',
      'request.path: must start with a single "/": it is below the provider\'s API base (no scheme or host)',
    ],
    [
      'a scheme-relative host',
      '//evil.example/repos',
      'request.path: must start with a single "/": it is below the provider\'s API base (no scheme or host)',
    ],
    [
      'a relative path',
      'repos/{owner}',
      'request.path: must start with a single "/": it is below the provider\'s API base (no scheme or host)',
    ],
    [
      'a dot segment',
      '/repos/../admin',
      'request.path: the path "/repos/../admin" must not contain "." or ".." segments',
    ],
    [
      'an encoded dot',
      '/repos/%2e%2e/admin',
      'request.path: the path "/repos/%2e%2e/admin" must not percent-encode ".", "/", "\\" or control characters',
    ],
    [
      'a query in the path',
      '/search?q={q}',
      'request.path: must not contain "?", "#", "\\", spaces or control characters (query parameters go in request.query)',
    ],
    [
      'a level 2 expression',
      '/repos/{+path}',
      'request.path: {+path}: only simple {name} expressions are supported (RFC 6570 level 1)',
    ],
    ['an unclosed expression', '/repos/{owner', 'request.path: has a "{" that is never closed at character 8'],
  ])('refuses a path with %s', (_what, path, problem) => {
    expect(problems({ method: 'GET', path })).toContain(problem);
  });

  it.each([
    'Authorization',
    'host',
    'Cookie',
    'Proxy-Authorization',
    'Content-Length',
    'Transfer-Encoding',
    'X-Forwarded-Host',
    'User-Agent',
  ])('refuses the reserved header %s', (name) => {
    expect(problems({ method: 'GET', path: '/user', headers: { [name]: 'x' } })).toEqual([
      `request.headers.${name}: is set by the broker, not by a tool`,
    ]);
  });

  it('refuses a body on GET, a missing idempotency choice on a write, and a reserved idempotency header', () => {
    expect(problems({ method: 'GET', path: '/user', body: { json: {} } })).toEqual([
      'request.body: a GET request has no body',
    ]);
    expect(problems({ method: 'POST', path: '/issues' })).toEqual([
      'idempotency: is required for POST (choose {"mode": "header", "header": "Idempotency-Key"} or {"mode": "none"})',
    ]);
    expect(problems({ method: 'DELETE', path: '/x' }, { mode: 'header', header: 'Cookie' })).toEqual([
      'idempotency.header: is set by the broker, not by a tool',
    ]);
  });

  it('records where each variable is used', () => {
    expect(issue.uses).toEqual(
      new Map([
        ['owner', new Set(['path'])],
        ['repo', new Set(['path'])],
        ['number', new Set(['path'])],
        ['limit', new Set(['query'])],
        ['labels', new Set(['query'])],
        ['version', new Set(['header'])],
      ]),
    );
    expect(parseTemplate('a}b')).toEqual({ problem: 'has a "}" without its "{" at character 2' });
  });
});
