import { beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import { fetchDevToken } from '../../src/cli/devToken.js';
import { DEV_TOKEN_REDIRECT_URI } from '../../src/dev/devTokenClient.js';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { consentAndAuthorize, elicitConnection, openConnectLink, retryConnection } from '../support/connectFlow.js';
import { reportsAt } from '../support/forgedTokens.js';
import { closeLegacy, connectLegacy, expectUrlElicitation, type Created } from '../support/legacySdkClient.js';
import { tokenFor } from '../support/mcpWire.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// A flow belongs to the MCP client (client_id / azp of the principal's token)
// that started it: a second client of the same user cannot finish it.
describe('flows bound to the MCP client that started them', () => {
  const { stack } = useBrokerStack({ legacyUrlElicitation: 'error', legacyWaitMs: 2_000, retryWaitMs: 300 });
  let viaDevToken: string;
  let viaOtherClient: string;

  beforeAll(async () => {
    // A second public client of the same identity provider (RFC 7591 registration on the development server).
    const registered = await stack.fetch(new URL('/reg', stack.dev.idp.issuer), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'second host',
        redirect_uris: [DEV_TOKEN_REDIRECT_URI],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code'],
        response_types: ['code'],
      }),
    });
    expect(registered.status).toBe(201);
    const { client_id: clientId } = (await registered.json()) as { client_id: string };
    [viaDevToken, viaOtherClient] = await Promise.all([
      tokenFor(stack, 'alice'),
      fetchDevToken({
        issuer: stack.dev.idp.issuer,
        resource: stack.mcpResourceUrl,
        login: 'alice',
        password: DEV_PASSWORD,
        fetch: stack.fetch,
        clientId,
      }),
    ]);
    expect(decodeJwt(viaOtherClient).sub).toBe(decodeJwt(viaDevToken).sub);
    expect(decodeJwt(viaOtherClient)['client_id']).toBe(clientId);
  });

  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;

  it('keeps the client on the navigation and refuses its requestState from another client of the same user (MRTR)', async () => {
    const args = { title: 'Bound to its client', body: '' };
    const elicited = await elicitConnection(stack, viaDevToken, 'reports_create', args);
    const [flow] = await query('SELECT id, client_id FROM elicitation_navigations WHERE purpose LIKE $1', [
      `%${args.title}%`,
    ]);
    expect(flow.client_id).toBe(decodeJwt(viaDevToken)['client_id']);
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'alice'), 'alice');

    const stolen = await retryConnection(
      stack,
      viaOtherClient,
      'reports_create',
      args,
      elicited.requestState,
      'accept',
    );
    expect(stolen.json.error).toMatchObject({ code: -32602, message: expect.stringContaining('another caller') });
    expect(
      await query('SELECT count(*)::int AS n FROM operation_receipts WHERE navigation_id = $1', [flow.id]),
    ).toEqual([{ n: 0 }]);
    expect((await query('SELECT status FROM elicitation_navigations WHERE id = $1', [flow.id]))[0].status).toBe(
      'REQUIREMENT_VERIFIED',
    );

    const own = await retryConnection(stack, viaDevToken, 'reports_create', args, elicited.requestState, 'accept');
    expect(own.json.result).toMatchObject({ resultType: 'complete', structuredContent: { status: 'created' } });
  });

  it('does not let another client of the same user join a -32042 operation (2025-11-25)', async () => {
    const args = { title: 'Legacy bound to its client', body: '' };
    await stack.db.pool.query("DELETE FROM secrets WHERE subject_sub = 'alice'");
    const first = await connectLegacy(stack, viaDevToken, {});
    const second = await connectLegacy(stack, viaOtherClient, {});
    try {
      const refused = await expectUrlElicitation(first, 'reports_create', args);
      const { elicitationId, url } = refused.elicitations[0]!;
      // The other client's identical call is its own operation: it does not find the first one's flow.
      const other = await expectUrlElicitation(second, 'reports_create', args);
      expect(other.elicitations[0]!.elicitationId).not.toBe(elicitationId);
      await consentAndAuthorize(stack, await openConnectLink(stack, url, 'alice'), 'alice');

      const done = await first.client.callTool({ name: 'reports_create', arguments: args });
      expect(done.structuredContent).toMatchObject({ status: 'created' });
      const receipts = await query(
        'SELECT n.id, n.client_id FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id WHERE n.purpose LIKE $1',
        [`%${args.title}%`],
      );
      expect(receipts).toEqual([{ id: elicitationId, client_id: decodeJwt(viaDevToken)['client_id'] }]);
      // The first client's retry answers its own recorded outcome, whatever the other does.
      const again = await first.client.callTool({ name: 'reports_create', arguments: args });
      expect((again.structuredContent as Created).report.id).toBe((done.structuredContent as Created).report.id);
      expect((await reportsAt(stack, 'rs-user-alice')).filter((r) => r.title === args.title)).toHaveLength(1);
    } finally {
      await closeLegacy(first);
      await closeLegacy(second);
    }
  });
});
