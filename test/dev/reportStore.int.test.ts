import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openReportStore } from '../../src/dev/reportStore.js';

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'report-store-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('report store', () => {
  it('keeps reports and idempotency keys across a restart when given a file', async () => {
    const filePath = join(dir, 'nested', 'report-service.json');
    const now = () => new Date('2026-01-02T03:04:05.000Z');
    const first = await openReportStore({ filePath, now });
    const created = await first.create({ subject: 's1', title: 'T', body: 'B', idempotencyKey: 'k1' });

    const reopened = await openReportStore({ filePath });
    expect(reopened.listBySubject('s1')).toEqual([created.kind === 'created' ? created.report : undefined]);
    expect(reopened.listBySubject('s1')[0]?.createdAt).toBe('2026-01-02T03:04:05.000Z');
    const replay = await reopened.create({ subject: 's1', title: 'T', body: 'B', idempotencyKey: 'k1' });
    expect(replay.kind).toBe('replayed');
  });

  it('leaves no temporary files behind after concurrent writes', async () => {
    const filePath = join(dir, 'report-service.json');
    const store = await openReportStore({ filePath });
    await Promise.all(Array.from({ length: 10 }, (_, i) => store.create({ subject: 's', title: `t${i}`, body: '' })));
    expect(await readdir(dir)).toEqual(['report-service.json']);
    const saved = JSON.parse(await readFile(filePath, 'utf8')) as { reports: unknown[] };
    expect(saved.reports).toHaveLength(10);
  });

  it('creates one report for two concurrent requests with the same key', async () => {
    const store = await openReportStore();
    const request = { subject: 's', title: 't', body: 'b', idempotencyKey: 'same' };
    const outcomes = await Promise.all([store.create(request), store.create(request)]);
    expect(outcomes.map((o) => o.kind).sort()).toEqual(['created', 'replayed']);
    expect(store.listBySubject('s')).toHaveLength(1);
  });

  it('refuses to start from a damaged file', async () => {
    const filePath = join(dir, 'report-service.json');
    await writeFile(filePath, '{"version":1,"reports":"nope","idempotency":[]}');
    await expect(openReportStore({ filePath })).rejects.toThrow();
  });
});
