import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openReportStore } from '../../src/dev/reportStore.js';
import { authorizeCode, exchangeCode } from '../support/devOAuth.js';
import { type DevServersFixture, startDevServers } from '../support/devServers.js';
import { createTestBrowser } from '../support/testBrowser.js';

let dev: DevServersFixture;
let alice: string;
let bob: string;

beforeAll(async () => {
  dev = await startDevServers(await openReportStore());
  alice = await reportsToken('alice', 'reports:read reports:write');
  bob = await reportsToken('bob', 'reports:read reports:write');
});

afterAll(async () => {
  await dev?.close();
});

async function reportsToken(login: string, scope: string, resource = dev.reports.apiResource): Promise<string> {
  const server = dev.reports;
  const browser = createTestBrowser({ fetch: dev.fetch });
  const authorized = await authorizeCode(browser, {
    issuer: server.issuer,
    client: server.client,
    scope,
    resource,
    login,
    allowConsent: true,
  });
  const token = await exchangeCode(dev.fetch, server.issuer, server.client, authorized);
  return String(token.body['access_token']);
}

function api(
  path: string,
  token: string | undefined,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
  return dev.fetch(`${dev.reports.apiResource}${path}`, {
    method: init.method ?? 'GET',
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...init.headers,
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
}

async function listTitles(token: string): Promise<string[]> {
  const response = await api('/reports', token);
  expect(response.status).toBe(200);
  const body = (await response.json()) as { reports: { title: string }[] };
  return body.reports.map((r) => r.title);
}

describe('Report Service API', () => {
  it('accepts its own token and returns only the caller’s reports', async () => {
    const created = await api('/reports', alice, { method: 'POST', body: { title: 'Alice Q1', body: 'numbers' } });
    expect(created.status).toBe(201);
    const { report } = (await created.json()) as { report: Record<string, unknown> };
    expect(Object.keys(report).sort()).toEqual(['body', 'createdAt', 'id', 'title']);
    expect(report).toMatchObject({ title: 'Alice Q1', body: 'numbers' });
    await api('/reports', bob, { method: 'POST', body: { title: 'Bob Q1', body: '' } });

    expect(await listTitles(alice)).toContain('Alice Q1');
    expect(await listTitles(alice)).not.toContain('Bob Q1');
    expect(await listTitles(bob)).toEqual(['Bob Q1']);
  });

  it('refuses the IdP’s token for the same user (wrong issuer) with 401 invalid_token', async () => {
    const browser = createTestBrowser({ fetch: dev.fetch });
    const authorized = await authorizeCode(browser, {
      issuer: dev.idp.issuer,
      client: dev.idp.client,
      scope: 'mcp:tools',
      resource: dev.idp.mcpResource,
      login: 'alice',
    });
    const idpToken = await exchangeCode(dev.fetch, dev.idp.issuer, dev.idp.client, authorized);
    const response = await api('/reports', String(idpToken.body['access_token']));
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toContain('error="invalid_token"');
    expect(await response.json()).toEqual({ error: 'invalid_token' });
  });

  it('refuses its own token issued for another audience', async () => {
    const other = await reportsToken('alice', 'other:read', dev.reports.otherResource);
    const response = await api('/reports', other);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });

  it('answers 401 with a Bearer challenge when no token is sent', async () => {
    const response = await api('/reports', undefined);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer /);
  });

  it('answers 403 insufficient_scope to a POST with a read-only token', async () => {
    const readOnly = await reportsToken('mallory', 'reports:read');
    const response = await api('/reports', readOnly, { method: 'POST', body: { title: 't', body: 'b' } });
    expect(response.status).toBe(403);
    expect(response.headers.get('www-authenticate')).toContain('error="insufficient_scope"');
    expect(await listTitles(readOnly)).toEqual([]);
  });

  it('replays a POST with the same Idempotency-Key and body: same id, one report', async () => {
    const key = `receipt-${randomUUID()}`;
    const send = () =>
      api('/reports', alice, {
        method: 'POST',
        body: { title: key, body: 'once' },
        headers: { 'idempotency-key': key },
      });
    const first = await send();
    const second = await send();
    expect([first.status, second.status]).toEqual([201, 201]);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    const [a, b] = (await Promise.all([first.json(), second.json()])) as { report: { id: string } }[];
    expect(b?.report.id).toBe(a?.report.id);
    expect((await listTitles(alice)).filter((t) => t === key)).toHaveLength(1);
  });

  it('answers 422 to the same Idempotency-Key with a different body, creating nothing', async () => {
    const key = `receipt-${randomUUID()}`;
    const post = (body: string) =>
      api('/reports', alice, { method: 'POST', body: { title: key, body }, headers: { 'idempotency-key': key } });
    expect((await post('first')).status).toBe(201);
    const reused = await post('second');
    expect(reused.status).toBe(422);
    expect(await reused.json()).toMatchObject({ error: 'idempotency_key_reused' });
    expect((await listTitles(alice)).filter((t) => t === key)).toHaveLength(1);
  });

  it('scopes an Idempotency-Key to the caller', async () => {
    const key = `receipt-${randomUUID()}`;
    const post = (token: string) =>
      api('/reports', token, { method: 'POST', body: { title: key, body: 'x' }, headers: { 'idempotency-key': key } });
    const [fromAlice, fromBob] = [await post(alice), await post(bob)];
    expect(fromBob.headers.get('idempotent-replayed')).toBeNull();
    const ids = (await Promise.all([fromAlice.json(), fromBob.json()])) as { report: { id: string } }[];
    expect(ids[0]?.report.id).not.toBe(ids[1]?.report.id);
  });

  it('rejects a body with unknown fields, an empty title or a malformed Idempotency-Key with 400', async () => {
    const extra = await api('/reports', alice, { method: 'POST', body: { title: 't', body: 'b', owner: 'bob' } });
    const empty = await api('/reports', alice, { method: 'POST', body: { title: '', body: 'b' } });
    const badKey = await api('/reports', alice, {
      method: 'POST',
      body: { title: 't', body: 'b' },
      headers: { 'idempotency-key': 'has space' },
    });
    expect([extra.status, empty.status, badKey.status]).toEqual([400, 400, 400]);
    expect(await extra.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('answers malformed JSON with 400 and no details', async () => {
    const response = await dev.fetch(`${dev.reports.apiResource}/reports`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
      body: '{"title":',
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ error: 'invalid_request' });
  });
});
