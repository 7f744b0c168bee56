import { parseArgs } from 'node:util';
import type { Config } from '../config/config.js';
import { countSealedByKey, sealedKinds, type SealedKind } from '../jobs/resealRepo.js';
import { deploymentKeys } from './deployment.js';
import { withOperator } from './operatorAuth.js';
import { formatTable } from './table.js';
import { CliError } from './cliError.js';

export class KeysCommandError extends CliError {}

const usage = `Usage: broker keys status [--json]

  status   How many values at rest each key id seals, by kind; which key of SECRET_KEYS is active
           (the first: new values are sealed under it, and the sweep re-seals older ones under it);
           and whether each older key can be retired: no stored value uses it. Exit 1 when some
           value is sealed under a key id SECRET_KEYS does not hold (nothing can open it).
           Needs BROKER_OPERATOR_TOKEN, as the ledger commands do.
`;

const KIND_LABELS: Record<SealedKind, string> = {
  tokens: 'connection tokens',
  pendingAuthorizations: 'pending authorizations',
  toolArguments: 'kept tool arguments',
  connectLinks: 'connect links',
  upstreamRegistrations: 'upstream client registrations',
};

// Sealed with the same keys but never stored, so no count can show them (src/mcp/requestState.ts,
// src/mcp/connectionTool.ts, src/auth/signIn.ts).
const NOT_STORED =
  'Not counted, because never stored: MRTR request states (5 minutes; 24 hours for an operation waiting for approval) and sign-in cookies (10 minutes) sealed under a key stop opening once it is gone. Keep an older key that long after it stopped being active.';

export interface KeyStatus {
  keyId: string;
  /** active: the first of SECRET_KEYS; configured: an older one; missing: only stored values name it. */
  state: 'active' | 'configured' | 'missing';
  values: number;
  /** For an older configured key: true once no stored value uses it. */
  retirable: boolean;
}

export interface KeysStatus {
  activeKeyId: string;
  /** Per kind of sealed value, how many each key id seals (every key id listed, 0 included). */
  kinds: { kind: SealedKind; byKey: Record<string, number> }[];
  keys: KeyStatus[];
}

/** The figures of `broker keys status` from the configured key ids and the stored counts. */
export function keysStatus(
  configured: readonly string[],
  counts: readonly { kind: SealedKind; keyId: string; count: number }[],
): KeysStatus {
  const missing = [...new Set(counts.map((c) => c.keyId))].filter((kid) => !configured.includes(kid)).sort();
  const keyIds = [...configured, ...missing];
  const countOf = (kind: SealedKind, keyId: string) =>
    counts.find((c) => c.kind === kind && c.keyId === keyId)?.count ?? 0;
  const values = (keyId: string) => sealedKinds.reduce((n, kind) => n + countOf(kind, keyId), 0);
  return {
    activeKeyId: configured[0]!,
    kinds: sealedKinds.map((kind) => ({
      kind,
      byKey: Object.fromEntries(keyIds.map((keyId) => [keyId, countOf(kind, keyId)])),
    })),
    keys: keyIds.map((keyId, i) => {
      const state = i === 0 ? 'active' : i < configured.length ? 'configured' : 'missing';
      return { keyId, state, values: values(keyId), retirable: state === 'configured' && values(keyId) === 0 };
    }),
  };
}

function retireText(k: KeyStatus): string {
  // eslint-disable-next-line broker/no-connection-state-literals -- a key's state, not a connection's
  if (k.state === 'active') return 'no: new values are sealed under it';
  if (k.state === 'missing')
    return `not configured: ${k.values} value(s) no configured key opens (users connect again, flows start again)`;
  return k.retirable
    ? 'yes: no stored value uses it'
    : `not yet: ${k.values} value(s) wait for the re-seal (each sweep moves them)`;
}

export function formatKeysStatus(status: KeysStatus): string {
  const keyIds = status.keys.map((k) => k.keyId);
  return [
    `Active key: ${status.activeKeyId} (the first of SECRET_KEYS).`,
    '',
    formatTable(
      ['kind', ...keyIds],
      status.kinds.map((k) => [KIND_LABELS[k.kind], ...keyIds.map((id) => String(k.byKey[id] ?? 0))]),
    ),
    '',
    formatTable(
      ['key', 'state', 'values', 'retire'],
      status.keys.map((k) => [k.keyId, k.state, String(k.values), retireText(k)]),
    ),
    '',
    NOT_STORED,
  ].join('\n');
}

/** `broker keys …`: returns the process exit code. */
export async function keysCommand(
  args: string[],
  config: Readonly<Config>,
  out: (line: string) => void,
): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'status') throw new KeysCommandError(usage);
  const { values } = parseArgs({ args: rest, strict: true, options: { json: { type: 'boolean', default: false } } });
  const configured = (await deploymentKeys(config)).map((k) => k.kid);
  return withOperator(
    config,
    'keys status',
    (message, exitCode) => new KeysCommandError(message, exitCode),
    async (pool) => {
      const status = keysStatus(configured, await countSealedByKey(pool));
      out(values.json ? JSON.stringify(status) : formatKeysStatus(status));
      return status.keys.some((k) => k.state === 'missing') ? 1 : 0;
    },
  );
}
