import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { requestFrom } from '../support/fromAddress.js';
import { meta, VERSION } from '../support/mcpWire.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// A client that talks to the broker directly (its TCP peer is not a proxy TRUST_PROXY names) and
// writes X-Forwarded-For itself: each request claims another address, and none of it counts. The
// sign-in budget is its peer's, and the log lines name its peer.

const PEER = '127.0.0.5';
const SIGN_IN_BURST = loadConfig({}).login.rateLimit.burst;

describe.each([
  { trustProxy: undefined, what: 'TRUST_PROXY unset' },
  { trustProxy: '10.0.0.1', what: 'TRUST_PROXY naming another address' },
])('a forged X-Forwarded-For from an untrusted peer ($what)', ({ trustProxy }) => {
  // The broker's clock stands still, so no bucket refills while the test runs.
  const startedAt = new Date();
  const { stack, tokens } = useBrokerStack(
    {
      loginRateLimit: loadConfig({}).login.rateLimit,
      clock: { now: () => startedAt },
      ...(trustProxy === undefined ? {} : { trustProxy }),
    },
    { users: ['alice'] },
  );
  const logged = (message: string) =>
    stack.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line['msg'] === message);

  it('spends the peer’s sign-in budget, and the refusal names the peer', async () => {
    const statuses: number[] = [];
    for (let i = 1; i <= SIGN_IN_BURST + 1; i++) {
      const response = await requestFrom(PEER, `${stack.brokerUrl}/login`, {
        ca: stack.tls.caPem,
        headers: { 'x-forwarded-for': `198.51.100.${i}`, accept: 'application/json' },
      });
      statuses.push(response.status);
    }
    expect(statuses.slice(0, SIGN_IN_BURST).every((s) => s === 303)).toBe(true);
    expect(statuses[SIGN_IN_BURST]).toBe(429);
    expect(logged('sign-in rate limit reached').map((line) => line['clientAddress'])).toEqual([PEER]);
    // Another address on this machine still has its own budget.
    expect((await requestFrom('127.0.0.6', `${stack.brokerUrl}/login`, { ca: stack.tls.caPem })).status).toBe(303);
  });

  it('names the peer in /mcp’s log line, not the forged address', async () => {
    const response = await requestFrom(PEER, `${stack.brokerUrl}/mcp`, {
      ca: stack.tls.caPem,
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': VERSION,
        'mcp-method': 'no/such/method',
        authorization: `Bearer ${tokens.alice}`,
        'x-forwarded-for': '203.0.113.66',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'no/such/method', params: { _meta: meta() } }),
    });
    expect(response.text).toContain('"error"');
    const refused = logged('MCP request refused');
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.map((line) => line['clientAddress'])).toEqual(refused.map(() => PEER));
  });
});
