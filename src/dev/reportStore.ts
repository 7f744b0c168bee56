import { createHash, randomUUID } from 'node:crypto';
import { z } from 'zod';
import { createJsonFileWriter, readJsonFile } from './jsonFileWriter.js';

export const ReportSchema = z.strictObject({
  id: z.string(),
  subject: z.string(),
  title: z.string(),
  body: z.string(),
  createdAt: z.string(),
});
export type Report = z.infer<typeof ReportSchema>;

const IdempotencyRecordSchema = z.strictObject({
  subject: z.string(),
  key: z.string(),
  fingerprint: z.string(),
  reportId: z.string(),
});
type IdempotencyRecord = z.infer<typeof IdempotencyRecordSchema>;

const StoreFileSchema = z.strictObject({
  version: z.literal(1),
  reports: z.array(ReportSchema),
  idempotency: z.array(IdempotencyRecordSchema),
});

export interface NewReport {
  subject: string;
  title: string;
  body: string;
  idempotencyKey?: string;
}

export type CreateOutcome =
  | { kind: 'created'; report: Report }
  /** The same subject sent the same key with the same request before: nothing was created. */
  | { kind: 'replayed'; report: Report }
  /** The same subject sent the same key with a different request. */
  | { kind: 'key_reused' };

export interface ReportStore {
  listBySubject(subject: string): Report[];
  create(input: NewReport): Promise<CreateOutcome>;
}

export interface ReportStoreOptions {
  /** JSON file the store is loaded from and saved to; in memory only when absent. */
  filePath?: string;
  now?: () => Date;
}

/**
 * The Report Service's reports, in memory, optionally saved to a JSON file
 * after every write (atomically, see jsonFileWriter.ts). Idempotency keys are
 * scoped to a subject.
 */
export async function openReportStore(options: ReportStoreOptions = {}): Promise<ReportStore> {
  const { filePath } = options;
  const now = options.now ?? (() => new Date());
  const saved = filePath === undefined ? undefined : await readJsonFile(filePath);
  const state =
    saved === undefined ? { version: 1 as const, reports: [], idempotency: [] } : StoreFileSchema.parse(saved);
  const byKey = new Map<string, IdempotencyRecord>(state.idempotency.map((r) => [keyOf(r.subject, r.key), r]));
  const write = filePath === undefined ? undefined : createJsonFileWriter(filePath);
  const save = async (): Promise<void> => write?.(() => state);

  return {
    listBySubject: (subject) => state.reports.filter((r) => r.subject === subject),

    async create(input) {
      // Check and insert run synchronously, so two concurrent requests with one key cannot both create.
      const fingerprint = fingerprintOf(input.title, input.body);
      const { idempotencyKey } = input;
      const previous = idempotencyKey === undefined ? undefined : byKey.get(keyOf(input.subject, idempotencyKey));
      if (previous) {
        const report = state.reports.find((r) => r.id === previous.reportId);
        if (previous.fingerprint !== fingerprint || !report) return { kind: 'key_reused' };
        return { kind: 'replayed', report };
      }
      const report: Report = {
        id: randomUUID(),
        subject: input.subject,
        title: input.title,
        body: input.body,
        createdAt: now().toISOString(),
      };
      state.reports.push(report);
      if (input.idempotencyKey !== undefined) {
        const record = { subject: input.subject, key: input.idempotencyKey, fingerprint, reportId: report.id };
        state.idempotency.push(record);
        byKey.set(keyOf(record.subject, record.key), record);
      }
      await save();
      return { kind: 'created', report };
    },
  };
}

function keyOf(subject: string, idempotencyKey: string): string {
  return JSON.stringify([subject, idempotencyKey]);
}

function fingerprintOf(title: string, body: string): string {
  return createHash('sha256')
    .update(JSON.stringify([title, body]))
    .digest('base64url');
}
