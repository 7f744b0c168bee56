import { describe, expect, it } from 'vitest';
import { readAnswer } from '../../../src/mcp/declared/providerAnswer.js';
import { pickFields, planResponse, renderText, type ResponsePlan } from '../../../src/mcp/declared/responsePlan.js';

function plan(response: Parameters<typeof planResponse>[0]): ResponsePlan {
  const planned = planResponse(response);
  if (!planned.plan) throw new Error(planned.problems.join('; '));
  return planned.plan;
}

const ISSUE = {
  number: 7,
  title: 'Crash \u202eon\u202c start\n(again)',
  state: 'open',
  user: { login: 'alice', site_admin: false },
  labels: [{ name: 'bug' }, { name: 'ui' }, { id: 3 }],
  milestone: null,
  body: { nested: true },
  html_url: 'https://github.example/alice/demo/issues/7',
};

describe('the response picker', () => {
  const issue = plan({
    fields: {
      number: 'number',
      title: 'title',
      author: 'user.login',
      admin: 'user.site_admin',
      labels: 'labels.*.name',
      milestone: 'milestone',
      body: 'body',
      missing: 'a.b.c',
      first: 'labels.0.name',
    },
    text: '#{number} {title} by {author} [{labels}] {milestone} {missing}',
    maxBytes: 1024,
  });

  it('picks scalars by path, lists with *, leaves out objects and what is not there, and makes strings plain', () => {
    expect(pickFields(issue, ISSUE)).toEqual({
      number: 7,
      title: 'Crash on start (again)',
      author: 'alice',
      admin: false,
      labels: ['bug', 'ui'],
      milestone: null,
      first: 'bug',
    });
  });

  it('maps over a top-level array with "*.title"', () => {
    expect(
      pickFields(plan({ fields: { titles: '*.title', count: 'length' }, maxBytes: 10 }), [
        { title: 'a' },
        { title: 'b' },
        {},
      ]),
    ).toEqual({ titles: ['a', 'b'] });
    expect(pickFields(plan({ fields: { titles: '*.title' }, maxBytes: 10 }), { not: 'a list' })).toEqual({});
  });

  it('renders the text template: a list as its items joined, a missing or null field as (none)', () => {
    expect(renderText(issue, 'Read an issue', pickFields(issue, ISSUE))).toBe(
      '#7 Crash on start (again) by alice [bug, ui] (none) (none)',
    );
  });

  it('shows at most ten items of a list and how many more there are', () => {
    const list = plan({ fields: { titles: '*.t' }, text: 'Titles: {titles}', maxBytes: 10 });
    const picked = pickFields(
      list,
      Array.from({ length: 13 }, (_, i) => ({ t: `#${i}` })),
    );
    expect(renderText(list, 'x', picked)).toBe('Titles: #0, #1, #2, #3, #4, #5, #6, #7, #8, #9 (and 3 more)');
  });

  it('without a text template, writes one line per field', () => {
    const fields = plan({ fields: { id: 'id', url: 'html_url' }, maxBytes: 10 });
    expect(renderText(fields, 'Comment on an issue', { id: 12, url: 'https://x.example/c/12' })).toBe(
      'Comment on an issue: done.\nid: 12\nurl: https://x.example/c/12',
    );
  });

  it('refuses, at load, a text variable that is not a field, an empty segment, and two "*"', () => {
    expect(planResponse({ fields: { a: 'x..y', b: '*.c.*.d' }, text: 'Got {c}', maxBytes: 10 }).problems).toEqual([
      'response.fields.a: "x..y" has an empty segment (write a.b.c)',
      'response.fields.b: "*.c.*.d" maps over more than one array (one "*" at most)',
      'response.text: {c} is not one of response.fields',
    ]);
  });
});

describe('the provider answer, by status', () => {
  const read = (
    status: number,
    body: string,
    maxBytes = 1024,
    headers: Record<string, string> = { 'content-type': 'application/json' },
  ) =>
    readAnswer(new Response(status === 204 ? null : body, { status, headers }), {
      provider: 'GitHub',
      tool: 'github_get_issue',
      maxBytes,
      json: true,
    });
  const failure = async (promise: Promise<unknown>) => {
    const err = (await promise.catch((e: unknown) => e)) as { code: string; message: string; expose: boolean };
    return { code: err.code, message: err.message, expose: err.expose };
  };

  it('reads a 2xx answer as JSON, and an empty one as nothing', async () => {
    expect(await read(200, '{"number":7}')).toEqual({ number: 7 });
    expect(await read(204, '')).toBeUndefined();
  });

  it.each([403, 404, 409, 422])(
    "makes a %i a clear tool error with the provider's message, plain and bounded",
    async (status) => {
      const message = `Not \u202eFound\r\n${'x'.repeat(500)}`;
      const error = await failure(
        read(status, JSON.stringify({ message, documentation_url: 'https://docs.github.com/rest' })),
      );
      expect(error).toEqual({
        code: 'invalid_input',
        expose: true,
        message: `GitHub refused to run github_get_issue (HTTP ${status}: Not Found ${'x'.repeat(190)}).`,
      });
    },
  );

  it.each([429, 500, 502, 503])('makes a %i a retryable tool error that says so', async (status) => {
    expect(await failure(read(status, '{"message":"Slow down"}'))).toEqual({
      code: 'unavailable',
      expose: true,
      message: `GitHub could not run github_get_issue now (HTTP ${status}: Slow down). Try again later.`,
    });
  });

  it('makes any other status a clear error, with the message of RFC 6749 or RFC 9457 bodies', async () => {
    expect(await failure(read(400, '{"error":"invalid_request","error_description":"bad cursor"}'))).toMatchObject({
      code: 'invalid_input',
      message: 'GitHub refused to run github_get_issue (HTTP 400: bad cursor).',
    });
    expect(await failure(read(410, '{"type":"about:blank","title":"Gone","detail":"deleted"}'))).toMatchObject({
      message: 'GitHub refused to run github_get_issue (HTTP 410: deleted).',
    });
    expect(await failure(read(418, '<html>teapot</html>', 1024, { 'content-type': 'text/html' }))).toMatchObject({
      message: 'GitHub refused to run github_get_issue (HTTP 418).',
    });
  });

  it('refuses an answer over maxBytes, declared or streamed, and one that is not JSON', async () => {
    expect(await failure(read(200, JSON.stringify({ big: 'x'.repeat(2000) }), 1024))).toEqual({
      code: 'payload_too_large',
      expose: true,
      message:
        "GitHub answered github_get_issue with more than 1024 bytes, over the tool's response.maxBytes; nothing of it was kept.",
    });
    const declared = new Response('{}', { status: 200, headers: { 'content-length': '999999' } });
    expect(
      await failure(readAnswer(declared, { provider: 'GitHub', tool: 't', maxBytes: 1024, json: true })),
    ).toMatchObject({ code: 'payload_too_large' });
    expect(await failure(read(200, '<html>ok</html>'))).toMatchObject({
      expose: true,
      message: 'GitHub answered github_get_issue (HTTP 200) with a body that is not JSON.',
    });
  });
});
