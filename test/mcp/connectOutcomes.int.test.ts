import { UrlElicitationRequiredError, type ElicitResult } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { consentAndAuthorize, elicitConnection, openConnectLink, URL_CAPS } from '../support/connectFlow.js';
import { reportsAt } from '../support/forgedTokens.js';
import { initialize } from '../support/legacyFaultScenarios.js';
import { closeLegacy, connectLegacy, internalErrors } from '../support/legacySdkClient.js';
import { callTool } from '../support/mcpWire.js';
import { connectSdkClient, type Era, type SdkClient } from '../support/sdkClient.js';
import type { BrokerStack } from '../support/brokerStack.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// The host's answer to a connect link has one outcome on every lineage (src/mcp/calls/connectAnswer.ts):
// the same call, answered accept, decline, cancel or with a malformed result, on 2026-07-28 (MRTR)
// and on 2025-11-25 nested in the call, gives the same result and leaves the same rows. On the
// -32042 lineage there is no elicitation result to answer: the user completes the link or does not,
// and the host's retry agrees with accept (done once) and with cancel (the flow and its link stay).

type Answer = 'accept' | 'decline' | 'cancel';

/**
 * What an outcome is made of, across wires: the result's kind and status, the flow (`accepted` once
 * its operation has a receipt: the accepted state's name is the lineage's own), what was done.
 */
interface Outcome {
  isError: boolean;
  status: unknown;
  flow: string | undefined;
  receipt: string | undefined;
  reports: number;
}

async function outcomeOf(
  stack: BrokerStack,
  title: string,
  result: { isError?: boolean; structuredContent?: Record<string, unknown> },
): Promise<Outcome> {
  const flows = await stack.db.pool.query<{ status: string; receipt: string | null }>(
    `SELECT n.status, r.outcome_status AS receipt
       FROM elicitation_navigations n LEFT JOIN operation_receipts r ON r.navigation_id = n.id
      WHERE n.tool = 'reports_create' ORDER BY n.created_at DESC LIMIT 1`,
  );
  const flow = flows.rows[0];
  return {
    isError: result.isError ?? false,
    status: result.structuredContent?.['status'],
    flow: flow?.receipt ? 'accepted' : flow?.status,
    receipt: flow?.receipt ?? undefined,
    reports: (await reportsAt(stack, 'rs-user-alice')).filter((r) => r.title === title).length,
  };
}

/** The URL answer a host gives after walking the user through the link (accept) or not. */
const urlAnswer =
  (stack: BrokerStack, answer: Answer) =>
  async (params: { url: string }): Promise<ElicitResult> => {
    if (answer === 'accept') {
      await consentAndAuthorize(stack, await openConnectLink(stack, params.url, 'alice'), 'alice');
      return { action: 'accept' };
    }
    return { action: answer };
  };

describe('a connect link answered the same way on every lineage', () => {
  const { stack, tokens } = useBrokerStack({ legacyWaitMs: 15_000 }, { users: ['alice'] });
  const clients: SdkClient[] = [];

  afterEach(async () => {
    for (const c of clients.splice(0)) await closeLegacy(c);
    expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
    await stack.db.pool.query('DELETE FROM secrets');
  });

  // The SDK client refuses to send a malformed result: these hosts answer on the raw wires.
  async function malformedModern(title: string): Promise<Outcome> {
    const args = { title, body: 'outcomes' };
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_create', args);
    const response = await callTool(
      stack,
      tokens.alice,
      'reports_create',
      args,
      { requestState: elicited.requestState, inputResponses: { connect: { action: 'maybe' } } },
      URL_CAPS,
    );
    return outcomeOf(stack, title, response.json.result as Parameters<typeof outcomeOf>[2]);
  }
  async function malformedNested(title: string): Promise<Outcome> {
    const session = await initialize(stack, tokens.alice);
    try {
      const call = await session.start('tools/call', {
        name: 'reports_create',
        arguments: { title, body: 'outcomes' },
      });
      const ask = await call.next((m) => m.method === 'elicitation/create');
      await session.send({ jsonrpc: '2.0', id: ask.id, result: { action: 'maybe' } });
      const final = await call.next((m) => m.id === call.requestId);
      return outcomeOf(stack, title, final.result as Parameters<typeof outcomeOf>[2]);
    } finally {
      await session.end();
    }
  }

  async function run(era: Era, answer: Answer): Promise<Outcome> {
    const title = `${era} ${answer}`;
    const client = await connectSdkClient(stack, tokens.alice, {
      era,
      url: urlAnswer(stack, answer),
      form: () => ({ action: 'cancel' }),
    });
    clients.push(client);
    const result = await client.client.callTool({ name: 'reports_create', arguments: { title, body: 'outcomes' } });
    return outcomeOf(stack, title, result as Parameters<typeof outcomeOf>[2]);
  }

  for (const answer of ['accept', 'decline', 'cancel'] as const)
    it(`${answer}: the same result and rows on 2026-07-28 and on 2025-11-25 nested`, async () => {
      const modern = await run('2026-07-28', answer);
      const nested = await run('2025-11-25', answer);
      expect(nested).toEqual(modern);
      expect(modern).toEqual(
        {
          accept: { isError: false, status: 'created', flow: 'accepted', receipt: 'succeeded', reports: 1 },
          decline: { isError: false, status: 'declined', flow: 'DECLINED', receipt: undefined, reports: 0 },
          // The flow stays open: the link is still valid and a retry continues it.
          cancel: { isError: false, status: 'cancelled', flow: 'USER_REVIEW', receipt: undefined, reports: 0 },
        }[answer],
      );
    });

  it('malformed: refused alike on both, nothing changed', async () => {
    const modern = await malformedModern('2026-07-28 malformed');
    const nested = await malformedNested('2025-11-25 malformed');
    expect(nested).toEqual(modern);
    expect(modern).toEqual({
      isError: true,
      status: undefined,
      flow: 'USER_REVIEW',
      receipt: undefined,
      reports: 0,
    });
  });
});

describe('the -32042 lineage agrees', () => {
  const { stack, tokens } = useBrokerStack({ legacyUrlElicitation: 'error' }, { users: ['alice'] });

  afterEach(() => {
    expect(internalErrors(stack), 'the broker logged no internal error').toEqual([]);
  });

  const elicited = async (legacy: SdkClient, args: Record<string, unknown>) => {
    const failure = await legacy.client.callTool({ name: 'reports_create', arguments: args }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(UrlElicitationRequiredError);
    return (failure as UrlElicitationRequiredError).elicitations[0]!;
  };

  it('accept (the user completes the link): the retry does it once, as on the other lineages', async () => {
    const legacy = await connectLegacy(stack, tokens.alice, {});
    try {
      const args = { title: '-32042 accept', body: 'outcomes' };
      const { url } = await elicited(legacy, args);
      await consentAndAuthorize(stack, await openConnectLink(stack, url, 'alice'), 'alice');
      const retried = await legacy.client.callTool({ name: 'reports_create', arguments: args });
      expect(await outcomeOf(stack, args.title, retried as Parameters<typeof outcomeOf>[2])).toEqual({
        isError: false,
        status: 'created',
        flow: 'accepted',
        receipt: 'succeeded',
        reports: 1,
      });
    } finally {
      await closeLegacy(legacy);
    }
  });

  it('not finished (the user denies at the provider): the flow stays open and the retry names the same link, as after cancel', async () => {
    await stack.db.pool.query('DELETE FROM secrets');
    const legacy = await connectLegacy(stack, tokens.alice, {});
    try {
      const args = { title: '-32042 denied', body: 'outcomes' };
      const first = await elicited(legacy, args);
      await consentAndAuthorize(stack, await openConnectLink(stack, first.url, 'alice'), 'alice', 'Deny');
      const again = await elicited(legacy, args);
      expect(again.elicitationId).toBe(first.elicitationId);
      expect(await outcomeOf(stack, args.title, {})).toMatchObject({ receipt: undefined, reports: 0 });
    } finally {
      await closeLegacy(legacy);
    }
  });
});
