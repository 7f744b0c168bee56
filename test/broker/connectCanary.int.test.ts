import nock from 'nock';
import { afterEach, describe, expect, it } from 'vitest';
import type { Fetch } from '../../src/shared/httpClient.js';
import { digestOf, randomToken } from '../../src/shared/tokens.js';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { mintAccessToken, reportsAt, reportsTokenEndpoint, tokenResponse } from '../support/forgedTokens.js';
import { callTool, type WireResponse } from '../support/mcpWire.js';
import { createTestBrowser } from '../support/testBrowser.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// Canary tokens (the `secrets` table is the only place a third-party token rests): tokens with
// recognisable values go through the whole flow and must never show up in a
// response, a log line or the ledger; at rest they exist only as ciphertext.

const ALICE_AT_REPORTS = 'rs-user-alice';

describe('third-party tokens never leave the vault', () => {
  const { stack, tokens } = useBrokerStack({ retryWaitMs: 200 }, { users: ['alice'] });

  afterEach(() => {
    nock.cleanAll();
  });

  it('keeps canary access and refresh tokens out of every response, log line and ledger entry, and stores them only encrypted', async () => {
    // Everything received over HTTP: every hop of the browser (redirects included) and every MCP answer.
    const received: string[] = [];
    const dump = (status: number, headers: Headers, body: string) =>
      `${status}\n${[...headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n\n${body}`;
    const recordingFetch: Fetch = async (input, init) => {
      const response = await stack.fetch(input, init);
      received.push(dump(response.status, response.headers, await response.clone().text()));
      return response;
    };
    const mcp = (response: WireResponse) => {
      received.push(dump(response.status, response.headers, response.text));
      return response;
    };

    const args = { title: 'Canary report', body: 'Nothing to see here.' };
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_create', args);
    const [{ id: navigationId }] = (
      await stack.db.pool.query('SELECT id FROM elicitation_navigations WHERE handle_digest = $1', [
        digestOf(new URL(elicited.url).pathname.split('/').pop()!),
      ])
    ).rows;
    const browser = createTestBrowser({
      fetch: recordingFetch,
      stopAt: (u) => u.pathname === '/oauth/callback/reports',
    });
    const stopped = await consentAndAuthorize(
      stack,
      await openConnectLink(stack, elicited.url, 'alice', browser),
      'alice',
    );
    expect(stopped.location).toMatch(new RegExp(`^${stack.brokerUrl}/oauth/callback/reports\\?`));

    const jti = `CANARY-ACCESS-${randomToken()}`;
    const refreshToken = `CANARY-REFRESH-${randomToken()}`;
    const accessToken = await mintAccessToken(stack, { sub: ALICE_AT_REPORTS, jti });
    const [{ nonce }] = (
      await stack.db.pool.query('SELECT nonce FROM oauth_transactions WHERE navigation_id = $1', [navigationId])
    ).rows;
    const tokenEndpoint = reportsTokenEndpoint(stack).reply(
      200,
      await tokenResponse(stack, { sub: ALICE_AT_REPORTS, nonce, accessToken, refreshToken }),
    );

    const done = await browser.get(stopped.location!);
    expect(tokenEndpoint.isDone()).toBe(true);
    expect(done.text).toContain('Report Service is connected');
    // The canary access token is genuine at the Report Service: the operation goes through with it.
    const created = mcp(
      await retryConnection(stack, tokens.alice, 'reports_create', args, elicited.requestState, 'accept'),
    );
    expect(created.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { status: 'created', report: { title: 'Canary report' } },
    });
    const listed = mcp(await callTool(stack, tokens.alice, 'reports_list', {}, {}, {}));
    expect(listed.json.result).toMatchObject({
      structuredContent: { reports: [expect.objectContaining({ title: 'Canary report' })] },
    });
    expect((await reportsAt(stack, ALICE_AT_REPORTS)).map((r) => r.title)).toEqual(['Canary report']);

    const [header, payload, signature] = accessToken.split('.') as [string, string, string];
    const canaries = {
      jti,
      refreshToken,
      accessToken,
      'access token payload': payload,
      'access token signature': signature,
      'access token header+payload': `${header}.${payload}`,
    };
    const leaks = (where: string, text: string) =>
      Object.entries(canaries)
        .filter(([, value]) => text.includes(value))
        .map(([name]) => `${name} in ${where}`);

    expect(received.length).toBeGreaterThan(8);
    expect(received.flatMap((r, i) => leaks(`response #${i}`, r))).toEqual([]);
    expect(stack.logs.flatMap((line, i) => leaks(`log line #${i}`, line))).toEqual([]);
    const ledger = await stack.db.pool.query('SELECT event, evidence::text AS evidence FROM navigation_events');
    expect(ledger.rows.flatMap((e) => leaks(`ledger ${e.event}`, e.evidence))).toEqual([]);

    // At rest: only ciphertext, in `secrets` and nowhere else in the schema (bytea is dumped as hex).
    const secrets = await stack.db.pool.query(
      'SELECT kind, ciphertext FROM secrets WHERE navigation_id = $1 ORDER BY kind',
      [navigationId],
    );
    expect(secrets.rows.map((s) => s.kind)).toEqual(['access_token', 'refresh_token']);
    for (const { ciphertext } of secrets.rows) {
      for (const value of Object.values(canaries))
        expect((ciphertext as Buffer).includes(Buffer.from(value))).toBe(false);
    }
    const tables = await stack.db.pool.query(
      'SELECT table_name FROM information_schema.tables WHERE table_schema = $1',
      [stack.db.schema],
    );
    expect(tables.rows.length).toBeGreaterThan(5);
    for (const { table_name: table } of tables.rows) {
      const rows = await stack.db.pool.query(`SELECT row_to_json(t)::text AS row FROM "${table}" t`);
      const text = rows.rows.map((r) => r.row).join('\n');
      const hex = Object.fromEntries(
        Object.entries(canaries).map(([name, value]) => [name, Buffer.from(value).toString('hex')]),
      );
      expect([
        ...leaks(`table ${table}`, text),
        ...Object.entries(hex)
          .filter(([, value]) => text.includes(value))
          .map(([name]) => `${name} (hex) in table ${table}`),
      ]).toEqual([]);
    }
  });
});
