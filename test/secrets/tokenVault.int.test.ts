import { beforeAll, describe, expect, it } from 'vitest';
import { createKeyring } from '../../src/crypto/keyring.js';
import { createSecretBox } from '../../src/crypto/secretBox.js';
import { Secret } from '../../src/shared/secret.js';
import {
  consentAndAuthorize,
  elicitConnection,
  openConnectLink,
  retryConnection,
  URL_CAPS,
} from '../support/connectFlow.js';
import { callTool, tokenFor } from '../support/mcpWire.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

describe('stored Report Service tokens', () => {
  const { stack, tokens } = useBrokerStack({}, { users: ['alice'] });

  beforeAll(async () => {
    const args = { title: 'Setup', body: 'connect once' };
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_create', args);
    await consentAndAuthorize(stack, await openConnectLink(stack, elicited.url, 'alice'), 'alice');
    await retryConnection(stack, tokens.alice, 'reports_create', args, elicited.requestState, 'accept');
  });

  const versions = async () =>
    Object.fromEntries(
      (
        await stack.db.pool.query<{ kind: string; row_version: number }>(
          "SELECT kind, row_version FROM secrets WHERE subject_sub = 'alice'",
        )
      ).rows.map((r) => [r.kind, r.row_version]),
    );

  it('uses the stored connection directly once connected: no link, no requestState', async () => {
    const listed = await callTool(stack, tokens.alice, 'reports_list', {}, {}, {});
    expect(listed.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { reports: [expect.objectContaining({ title: 'Setup' })] },
    });
  });

  it('refreshes an expired access token once, even for two calls at the same time', async () => {
    const before = await versions();
    await stack.db.pool.query(
      "UPDATE secrets SET expires_at = now() - interval '1 minute' WHERE subject_sub = 'alice' AND kind = 'access_token'",
    );
    const [a, b] = await Promise.all([
      callTool(stack, tokens.alice, 'reports_list', {}, {}, {}),
      callTool(stack, tokens.alice, 'reports_list', {}, {}, {}, { baseUrl: stack.secondUrl }),
    ]);
    for (const answer of [a, b]) expect(answer.json.result).toMatchObject({ resultType: 'complete' });
    const after = await versions();
    expect(after['access_token']).toBe(before['access_token']! + 1);
    const expiry = await stack.db.pool.query(
      "SELECT expires_at > now() AS fresh FROM secrets WHERE subject_sub = 'alice' AND kind = 'access_token'",
    );
    expect(expiry.rows[0].fresh).toBe(true);
  });

  it('forgets a connection whose refresh is refused (revoked grant), and asks to connect again', async () => {
    const { rows } = await stack.db.pool.query<{
      ciphertext: Buffer;
      key_id: string;
      subject_iss: string;
      connection_id: string;
    }>(
      "SELECT ciphertext, key_id, subject_iss, connection_id FROM secrets WHERE subject_sub = 'alice' AND kind = 'refresh_token'",
    );
    const box = createSecretBox(
      createKeyring(
        stack.secrets.secretKeys.map((k) => ({ kid: k.kid, key: new Secret(k.key) })),
        'secrets',
      ),
    );
    const refreshToken = box.open(
      { ciphertext: rows[0]!.ciphertext, keyId: rows[0]!.key_id },
      `${rows[0]!.subject_iss}\nalice\nreports\nrefresh_token\n${rows[0]!.connection_id}`,
    );
    const basic = Buffer.from(
      `${stack.dev.reports.brokerClientId}:${stack.secrets.brokerReportsClientSecret}`,
    ).toString('base64');
    const revoked = await stack.fetch(`${stack.dev.reports.issuer}/token/revocation`, {
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: refreshToken, token_type_hint: 'refresh_token' }),
    });
    expect(revoked.status).toBe(200);
    await stack.db.pool.query(
      "UPDATE secrets SET expires_at = now() - interval '1 minute' WHERE subject_sub = 'alice' AND kind = 'access_token'",
    );

    const answer = await callTool(stack, tokens.alice, 'reports_list', {}, {}, URL_CAPS);
    expect(answer.json.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { connect: { params: { mode: 'url' } } },
    });
    expect(
      (await stack.db.pool.query("SELECT count(*)::int AS n FROM secrets WHERE subject_sub = 'alice'")).rows[0].n,
    ).toBe(0);
  });

  it('asks to connect again when the access token expired and no refresh token exists', async () => {
    const bob = await tokenFor(stack, 'bob');
    const answer = await callTool(stack, bob, 'reports_list', {}, {}, URL_CAPS);
    expect(answer.json.result?.['resultType']).toBe('input_required');
  });
});
