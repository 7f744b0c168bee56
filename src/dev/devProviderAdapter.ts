import type { Adapter, AdapterFactory, AdapterPayload } from 'oidc-provider';
import { z } from 'zod';
import { createJsonFileWriter, readJsonFile } from './jsonFileWriter.js';

const EntrySchema = z.strictObject({
  model: z.string(),
  id: z.string(),
  payload: z.record(z.string(), z.unknown()),
  /** Epoch milliseconds; absent for artifacts without expiry. */
  expiresAt: z.number().optional(),
});
type Entry = z.infer<typeof EntrySchema>;
const FileSchema = z.strictObject({ version: z.literal(1), entries: z.array(EntrySchema) });

// Artifacts that a grant revocation removes (as in oidc-provider's memory adapter).
const GRANTABLE = new Set([
  'AccessToken',
  'AuthorizationCode',
  'RefreshToken',
  'DeviceCode',
  'BackchannelAuthenticationRequest',
]);
// Kept a little past expiry so oidc-provider, not the store, reports "expired" (clock tolerance).
const GRACE_MS = 60_000;

/**
 * An oidc-provider adapter that keeps sessions, grants, codes and refresh
 * tokens in memory and saves them to `filePath` after every change, so a
 * restarted development server still honours the refresh tokens it issued.
 * Development only: one process, whole-file writes, linear scans.
 */
export async function openFileAdapter(filePath: string, now: () => number = Date.now): Promise<AdapterFactory> {
  const saved = await readJsonFile(filePath);
  const entries = new Map<string, Entry>();
  for (const entry of saved === undefined ? [] : FileSchema.parse(saved).entries) {
    entries.set(keyOf(entry.model, entry.id), entry);
  }
  const write = createJsonFileWriter(filePath);
  return storeAdapter(entries, now, (live) =>
    write(() => {
      for (const [key, entry] of entries) if (!live(entry)) entries.delete(key);
      return { version: 1, entries: [...entries.values()] };
    }),
  );
}

/**
 * The same store kept in memory only, for servers that need not outlive their process (tests, the
 * rehearsal's servers). Chosen explicitly: oidc-provider's own default in-memory adapter warns at
 * every start that it is for development only, which these servers are.
 */
export function memoryAdapter(now: () => number = Date.now): AdapterFactory {
  return storeAdapter(new Map(), now, async () => undefined);
}

function storeAdapter(
  entries: Map<string, Entry>,
  now: () => number,
  persist: (live: (entry: Entry | undefined) => entry is Entry) => Promise<void>,
): AdapterFactory {
  const save = () => persist(live);
  const live = (entry: Entry | undefined): entry is Entry =>
    entry !== undefined && (entry.expiresAt === undefined || entry.expiresAt + GRACE_MS > now());
  const findWhere = (model: string, match: (payload: AdapterPayload) => boolean) => {
    const entry = [...entries.values()].find((e) => e.model === model && live(e) && match(e.payload));
    return entry ? structuredClone(entry.payload) : undefined;
  };

  return (model: string): Adapter => ({
    async upsert(id, payload, expiresIn) {
      const expiresAt = typeof expiresIn === 'number' ? now() + expiresIn * 1000 : undefined;
      const entry: Entry = { model, id, payload: structuredClone(payload) };
      entries.set(keyOf(model, id), expiresAt === undefined ? entry : { ...entry, expiresAt });
      await save();
    },
    async find(id) {
      const entry = entries.get(keyOf(model, id));
      return live(entry) ? structuredClone(entry.payload) : undefined;
    },
    findByUid: async (uid) => findWhere(model, (payload) => payload['uid'] === uid),
    findByUserCode: async (userCode) => findWhere(model, (payload) => payload['userCode'] === userCode),
    async consume(id) {
      const entry = entries.get(keyOf(model, id));
      if (!entry) return;
      entry.payload['consumed'] = Math.floor(now() / 1000);
      await save();
    },
    async destroy(id) {
      entries.delete(keyOf(model, id));
      await save();
    },
    async revokeByGrantId(grantId) {
      for (const [key, entry] of entries) {
        if (GRANTABLE.has(entry.model) && entry.payload['grantId'] === grantId) entries.delete(key);
      }
      await save();
    },
  });
}

function keyOf(model: string, id: string): string {
  return `${model}:${id}`;
}
