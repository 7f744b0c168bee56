import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertNavigation } from '../../src/broker/navigationRepo.js';
import { ForbiddenError } from '../../src/errors/appError.js';
import { findEntries } from '../../src/ledger/ledgerRepo.js';
import { deleteConfirmationForm } from '../../src/mcp/elicitationForms.js';
import { createFormGuard, type FormAsker } from '../../src/mcp/formGuard.js';
import { createMetrics, type Metrics } from '../../src/metrics/metrics.js';
import { systemClock } from '../../src/shared/clock.js';
import { capturedLogger } from '../support/capturedLogger.js';
import { sampleValue } from '../support/metricsText.js';
import { navigationFixture } from '../support/navigationFixture.js';
import { createTestDb, type TestDb } from '../support/testDb.js';

// The guard over real Postgres and a real registry: what a refusal leaves behind (a count, a ledger
// entry on its flow or a log line without one) and what it never carries (a value from the schema).

const CANARY = 'canary-7d1e-not-for-any-record';
const SECRET_FORM = {
  method: 'elicitation/create' as const,
  params: {
    mode: 'form' as const,
    message: 'Connect your account',
    requestedSchema: {
      type: 'object',
      properties: {
        email: { type: 'string', format: 'email', title: 'Email' },
        api_key: { type: 'string', title: 'API key', default: CANARY },
        answer: { type: 'string', format: 'password', default: CANARY },
      },
    },
  },
};

// What the record keeps of SECRET_FORM's findings: names, rules and concepts.
const RECORDED = [
  { rule: 'format_password', field: 'answer', keyword: 'format' },
  { rule: 'secret_term', field: 'api_key', part: 'name', concept: 'api_key' },
  { rule: 'secret_term', field: 'api_key', part: 'title', concept: 'api_key' },
];

describe('the form guard', () => {
  let db: TestDb;
  const { logger, logs } = capturedLogger();
  let metrics: Metrics;
  const counted = async (labels: Record<string, string>) =>
    sampleValue(
      await metrics.registry.getSingleMetricAsString('broker_form_refusals_total'),
      'broker_form_refusals_total',
      labels,
    );
  let guard: ReturnType<typeof createFormGuard>;
  const asker: FormAsker = {
    tool: 'upstream_tool',
    origin: 'upstream',
    actor: 'mcp:alice',
    requestId: 'req-1',
    logger,
  };

  beforeAll(async () => {
    db = await createTestDb();
    metrics = createMetrics({ pool: db.pool, logger, processMetrics: false });
    guard = createFormGuard({ pool: db.pool, clock: systemClock, refused: metrics.formRefused });
  });
  afterAll(async () => {
    await db.drop();
  });

  it("admits the broker's own form and records nothing", async () => {
    const own = deleteConfirmationForm('file:///work/notes/alice', [
      { id: 'note_aaaaaaaaaaaa', title: 'My passwords', createdAt: new Date() },
    ]);
    await expect(guard.admit(own, { ...asker, origin: 'broker' })).resolves.toBeUndefined();
    expect(await counted({})).toBeUndefined();
    expect(logs).toEqual([]);
  });

  it('refuses a form that collects a secret with a ForbiddenError naming each field, counts it and logs it without values', async () => {
    const refusal = await guard.admit(SECRET_FORM, asker).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refusal).toBeInstanceOf(ForbiddenError);
    const message = (refusal as ForbiddenError).message;
    expect(message).toContain("The form from upstream_tool's upstream server was not shown");
    expect(message).toContain('field “answer” is a password field');
    expect(message).toContain('field “api_key” asks for an API key (its name)');
    expect(message).not.toContain(CANARY);
    expect((refusal as ForbiddenError).expose).toBe(true);

    expect(await counted({ rule: 'format_password', origin: 'upstream' })).toBe(1);
    expect(logs).toHaveLength(1);
    expect(JSON.parse(logs[0]!)).toMatchObject({
      msg: 'form elicitation refused by the audit',
      requestId: 'req-1',
      tool: 'upstream_tool',
      origin: 'upstream',
      findings: RECORDED,
    });
    expect(logs.join('\n')).not.toContain(CANARY);
  });

  it("records a refusal on the form's flow, in the flow's state, instead of logging it", async () => {
    logs.length = 0;
    const flow = navigationFixture('OUT_OF_BAND_PENDING');
    await insertNavigation(db.pool, flow);
    await expect(guard.admit(SECRET_FORM, { ...asker, navigationId: flow.id })).rejects.toThrow(ForbiddenError);

    const entries = await findEntries(db.pool, flow.id);
    expect(entries).toEqual([
      expect.objectContaining({
        event: 'form_refused',
        actor: 'mcp:alice',
        fromStatus: 'OUT_OF_BAND_PENDING',
        toStatus: 'OUT_OF_BAND_PENDING',
        evidence: {
          tool: 'upstream_tool',
          origin: 'upstream',
          findings: RECORDED,
        },
      }),
    ]);
    expect(JSON.stringify(entries)).not.toContain(CANARY);
    expect(logs).toEqual([]);
    expect(await counted({ rule: 'format_password', origin: 'upstream' })).toBe(2);
  });

  it('bounds and cleans the field names it records and shows', async () => {
    const name = `\u202e${'x'.repeat(200)}_token`;
    const form = { params: { requestedSchema: { type: 'object', properties: { [name]: { type: 'string' } } } } };
    const refusal = (await guard.admit(form, asker).catch((err: unknown) => err)) as ForbiddenError;
    expect(refusal.message).not.toContain('\u202e');
    expect(refusal.message).toContain(`“${'x'.repeat(63)}…”`);
    const logged = JSON.parse(logs.at(-1)!) as { findings: { field: string }[] };
    expect(logged.findings[0]!.field).toBe('x'.repeat(64));
  });

  // A relayed form's message is someone else's text shown above the fields: "Type your corporate SSO
  // password" over a field titled "Answer" collects the password as surely as a field named password.
  it.each([
    ['Type your corporate SSO password in the box below.', 'a password'],
    ['Paste your session cookie here to continue.', 'an access token'],
    ['Тype уour раssword', undefined],
  ])('refuses a relayed form whose message asks for a secret above an innocent field: %s', async (message, asks) => {
    logs.length = 0;
    const form = {
      params: {
        mode: 'form' as const,
        message,
        requestedSchema: { type: 'object', properties: { answer: { type: 'string', title: 'Answer' } } },
      },
    };
    const refusal = await guard.admit(form, asker).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refusal).toBeInstanceOf(ForbiddenError);
    expect((refusal as Error).message).toContain(
      asks === undefined
        ? 'the form mixes look-alike alphabets in one word (its message)'
        : `the form asks for ${asks} (its message)`,
    );
    expect(JSON.parse(logs[0]!)).toMatchObject({ findings: [expect.objectContaining({ part: 'message' })] });
  });

  it("admits a relayed form whose message asks for nothing secret, and the broker's own message quoting a user's note", async () => {
    const form = (message: string) => ({
      params: {
        mode: 'form' as const,
        message,
        requestedSchema: { type: 'object', properties: { color: { type: 'string' } } },
      },
    });
    await expect(guard.admit(form('Which colour should the label be?'), asker)).resolves.toBeUndefined();
    const own = deleteConfirmationForm('file:///work/notes/alice', [
      { id: 'note_aaaaaaaaaaaa', title: 'My session cookie and password notes', createdAt: new Date() },
    ]);
    await expect(guard.admit(own, { ...asker, origin: 'broker' })).resolves.toBeUndefined();
  });
});
