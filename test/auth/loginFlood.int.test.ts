import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import { createTestBrowser } from '../support/testBrowser.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// An unauthenticated GET /login used to write a session row and a login transaction each; a loop
// from one address wrote rows faster than the sweep deleted them.

describe('a flood of unauthenticated sign-in requests', () => {
  // The broker's clock stands still unless a test moves it, so no bucket refills behind a test's back.
  const startedAt = Date.now();
  let advancedMs = 0;
  const { stack } = useBrokerStack({
    loginRateLimit: loadConfig({}).login.rateLimit,
    clock: { now: () => new Date(startedAt + advancedMs) },
  });

  /** Every row of every table in the test's schema. */
  async function rowCounts(): Promise<Record<string, number>> {
    const { rows } = await stack.db.pool.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
    );
    const counts: Record<string, number> = {};
    for (const { table_name: table } of rows)
      counts[table] = (
        await stack.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table}"`)
      ).rows[0]!.n;
    return counts;
  }

  it('answers 429 with Retry-After past the limit for 500 GET /login from one address, and writes no row', async () => {
    const before = await rowCounts();
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 500; i += 25) {
      const batch = await Promise.all(
        Array.from({ length: 25 }, () =>
          stack.fetch(`${stack.brokerUrl}/login?return_to=/`, {
            redirect: 'manual',
            headers: { accept: 'application/json' },
          }),
        ),
      );
      for (const response of batch) {
        statuses.push(response.status);
        if (response.status === 429) {
          retryAfter = response.headers.get('retry-after');
          expect(await response.json()).toMatchObject({
            error: 'rate_limited',
            message: expect.stringContaining('Wait a moment'),
          });
        } else await response.arrayBuffer();
      }
    }
    const redirected = statuses.filter((s) => s === 303).length;
    // The default bucket (as configured when LOGIN_RATE_* are unset): a burst of 60, then one a second back.
    expect(redirected).toBe(60);
    expect(statuses.filter((s) => s === 429)).toHaveLength(440);
    expect(retryAfter).toBe('1');
    expect(await rowCounts()).toEqual(before);
  });

  it('limits the callback with the same bucket', async () => {
    const response = await stack.fetch(`${stack.brokerUrl}/auth/callback?state=x&code=y`, {
      redirect: 'manual',
      headers: { accept: 'application/json' },
    });
    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
  });

  it('lets the address sign in again once its bucket has refilled', async () => {
    const refused = await stack.fetch(`${stack.brokerUrl}/login`, { redirect: 'manual' });
    expect(refused.status).toBe(429);
    // A sign-in spends two tokens, one at /login and one at the callback: two seconds' worth.
    advancedMs += 2_000;
    const browser = createTestBrowser({ fetch: stack.fetch });
    const form = await browser.get(`${stack.brokerUrl}/login?return_to=/`);
    expect(new URL(form.url).origin).toBe(stack.dev.idp.issuer);
    const home = await browser.submitForm(form, { login: 'alice', password: DEV_PASSWORD });
    expect(home.text).toContain('Signed in as <strong>alice</strong>');
  });
});
