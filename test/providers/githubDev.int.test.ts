import nock from 'nock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBrokerStack, type BrokerStack } from '../support/brokerStack.js';
import {
  consentAndAuthorize,
  elicitConnection,
  GITHUB_FORMS,
  openConnectLink,
  retryConnection,
  URL_CAPS,
} from '../support/connectFlow.js';
import { callTool, tokenFor } from '../support/mcpWire.js';

// The default development stack's second provider: the GitHub-like server,
// configured as npm start configures it (the `github` catalog entry whose
// `host` is the emulator), with the two built-in GitHub tools on it. Plain
// OAuth 2.0 end to end: no discovery, no ID token, an opaque token, the account
// from GET /user.

describe('the GitHub-like development provider through the catalog', () => {
  let stack: BrokerStack;
  let alice: string;

  beforeAll(async () => {
    stack = await startBrokerStack();
    alice = await tokenFor(stack, 'alice');
  });
  afterAll(async () => {
    await stack?.close();
  });

  const query = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;

  it('connects alice, opens exactly one issue in alice/demo, lists it, and records her GitHub account', async () => {
    const github = stack.dev.github!;
    const args = { repository: 'alice/demo', title: 'Broker test issue', body: 'Opened through the broker.' };
    const elicited = await elicitConnection(stack, alice, 'github_create_issue', args);
    expect(elicited.message).toContain('GitHub (development)');
    expect(elicited.message).toContain('open the issue \u201cBroker test issue\u201d in alice/demo');

    const run = await openConnectLink(stack, elicited.url, 'alice');
    expect(run.review.text).toContain(`Continue to ${github.origin}`);
    const done = await consentAndAuthorize(stack, run, 'alice', 'Allow', GITHUB_FORMS);
    expect(done.url).toMatch(new RegExp(`^${stack.brokerUrl}/connect/done\\?n=`));
    expect(done.text).toContain('GitHub (development) is connected');

    // The callback came back to the provider's own path, and the account is GitHub's numeric id with its login.
    expect(await query("SELECT redirect_uri FROM oauth_transactions WHERE provider = 'github'")).toEqual([]);
    expect(
      await query("SELECT upstream_subject, upstream_name, granted_scopes FROM connections WHERE provider = 'github'"),
    ).toEqual([{ upstream_subject: '9000001', upstream_name: 'alice', granted_scopes: ['repo', 'read:user'] }]);

    const accepted = await retryConnection(stack, alice, 'github_create_issue', args, elicited.requestState, 'accept');
    expect(accepted.json.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { status: 'created', issue: { repository: 'alice/demo', title: 'Broker test issue' } },
    });
    const number = (accepted.json.result?.['structuredContent'] as { issue: { number: number } }).issue.number;
    const again = await retryConnection(stack, alice, 'github_create_issue', args, elicited.requestState, 'accept');
    expect((again.json.result?.['structuredContent'] as { issue: { number: number } }).issue.number).toBe(number);

    const listed = await callTool(stack, alice, 'github_list_issues', { filter: 'created' }, {}, {});
    const issues = (listed.json.result?.['structuredContent'] as { issues: { title: string; repository: string }[] })
      .issues;
    expect(issues.filter((i) => i.title === 'Broker test issue')).toEqual([
      expect.objectContaining({ repository: 'alice/demo' }),
    ]);
    // No token in what the host or the logs saw.
    const stored = await query("SELECT count(*)::int AS n FROM secrets WHERE provider = 'github'");
    expect(stored).toEqual([{ n: 1 }]);
    expect(JSON.stringify([accepted.json, listed.json]) + stack.logs.join('')).not.toMatch(/gho_[A-Za-z0-9]{20,}/);
  });

  it('refuses a repository argument that is not owner/name before any connection is asked for', async () => {
    const response = await callTool(
      stack,
      alice,
      'github_create_issue',
      { repository: '../../orgs/evil', title: 'x' },
      {},
      {},
    );
    expect(response.json.error ?? response.json.result).toMatchObject(
      response.json.error ? { code: -32602 } : { isError: true },
    );
    expect(
      await query(
        "SELECT count(*)::int AS n FROM elicitation_navigations WHERE provider = 'github' AND status = 'CREATED'",
      ),
    ).toEqual([{ n: 0 }]);
  });

  it("records a refusal (404: no such repository) as the operation's failed outcome: a retry answers it without asking GitHub again", async () => {
    const mallory = await tokenFor(stack, 'mallory');
    const args = { repository: 'mallory/nowhere', title: 'Refused' };
    const elicited = await elicitConnection(stack, mallory, 'github_create_issue', args);
    await consentAndAuthorize(
      stack,
      await openConnectLink(stack, elicited.url, 'mallory'),
      'mallory',
      'Allow',
      GITHUB_FORMS,
    );
    const refused = await retryConnection(stack, mallory, 'github_create_issue', args, elicited.requestState, 'accept');
    expect(refused.json.result).toMatchObject({
      isError: true,
      content: [
        { text: expect.stringContaining('GitHub refused to open an issue in mallory/nowhere (HTTP 404: Not Found)') },
      ],
    });
    expect(
      await query(
        "SELECT outcome_status, outcome->>'error' AS error FROM operation_receipts r JOIN elicitation_navigations n ON n.id = r.navigation_id WHERE n.subject_sub = 'mallory'",
      ),
    ).toEqual([{ outcome_status: 'failed', error: 'provider_refused' }]);
    // The same answer again, from the receipt: nothing reaches GitHub.
    const watch = nock(stack.dev.github!.origin, { allowUnmocked: true })
      .post('/api/v3/repos/mallory/nowhere/issues')
      .reply(500);
    const again = await retryConnection(stack, mallory, 'github_create_issue', args, elicited.requestState, 'accept');
    expect(again.json.result).toMatchObject({
      isError: true,
      content: [{ text: expect.stringContaining('HTTP 404') }],
    });
    expect(watch.isDone()).toBe(false);
    nock.cleanAll();
  });

  it("forgets alice's connection when GitHub answers 401 (the app was revoked), records it, and asks her to connect again", async () => {
    const before = await query(
      "SELECT count(*)::int AS n FROM secrets WHERE provider = 'github' AND subject_sub = 'alice'",
    );
    expect(before).toEqual([{ n: 1 }]);
    const revoked = nock(stack.dev.github!.origin, { allowUnmocked: true })
      .get('/api/v3/user/issues')
      .query(true)
      .reply(401, { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest', status: '401' });
    const answer = await callTool(stack, alice, 'github_list_issues', {}, {}, URL_CAPS);
    expect(revoked.isDone()).toBe(true);
    nock.cleanAll();
    expect(answer.json.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { connect: { params: { mode: 'url' } } },
    });
    expect(
      await query("SELECT count(*)::int AS n FROM secrets WHERE provider = 'github' AND subject_sub = 'alice'"),
    ).toEqual([{ n: 0 }]);
    expect(
      await query(
        "SELECT e.evidence->>'reason' AS reason FROM navigation_events e JOIN elicitation_navigations n ON n.id = e.navigation_id WHERE e.event = 'connection_forgotten' AND n.provider = 'github' AND n.subject_sub = 'alice'",
      ),
    ).toEqual([{ reason: 'upstream_401' }]);
  });
});
