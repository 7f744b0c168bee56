import type { Queryable } from '../db/pool.js';

// The SQL of `authorization_server_pins` (migrations/0028_authorization_server_pins.sql).

/** The endpoints of a pinned authorization server that grants, secrets and registrations are sent to. */
export interface PinnedEndpoints {
  authorizationEndpoint: string;
  tokenEndpoint: string;
  registrationEndpoint?: string | undefined;
  revocationEndpoint?: string | undefined;
}

export interface IssuerPin {
  provider: string;
  issuer: string;
  endpoints: PinnedEndpoints;
  /** `first_use`, `config` (the PROVIDERS_FILE entry's `issuer`), or the operator who re-pinned it. */
  pinnedBy: string;
  pinnedAt: Date;
  /** What discovery named instead, since when: nothing is sent until an operator re-pins. */
  changedTo: string | undefined;
  changedAt: Date | undefined;
}

interface Row {
  provider: string;
  issuer: string;
  endpoints: PinnedEndpoints;
  pinned_by: string;
  pinned_at: Date;
  changed_to: string | null;
  changed_at: Date | null;
}

const fromRow = (r: Row): IssuerPin => ({
  provider: r.provider,
  issuer: r.issuer,
  endpoints: r.endpoints,
  pinnedBy: r.pinned_by,
  pinnedAt: r.pinned_at,
  changedTo: r.changed_to ?? undefined,
  changedAt: r.changed_at ?? undefined,
});

export async function findPin(db: Queryable, provider: string): Promise<IssuerPin | undefined> {
  const { rows } = await db.query<Row>('SELECT * FROM authorization_server_pins WHERE provider = $1', [provider]);
  return rows[0] && fromRow(rows[0]);
}

export async function listPins(db: Queryable): Promise<IssuerPin[]> {
  const { rows } = await db.query<Row>('SELECT * FROM authorization_server_pins ORDER BY provider');
  return rows.map(fromRow);
}

/** Pins `pin` unless another instance pinned first; returns the pin that holds. */
export async function pinIfNone(db: Queryable, pin: Omit<IssuerPin, 'changedTo' | 'changedAt'>): Promise<IssuerPin> {
  await db.query(
    `INSERT INTO authorization_server_pins (provider, issuer, endpoints, pinned_by, pinned_at)
     VALUES ($1, $2, $3::jsonb, $4, $5) ON CONFLICT (provider) DO NOTHING`,
    [pin.provider, pin.issuer, JSON.stringify(pin.endpoints), pin.pinnedBy, pin.pinnedAt],
  );
  return (await findPin(db, pin.provider))!;
}

/** Re-pins (an operator's decision): the new server, the change cleared. */
export async function repin(db: Queryable, pin: Omit<IssuerPin, 'changedTo' | 'changedAt'>): Promise<void> {
  await db.query(
    `INSERT INTO authorization_server_pins (provider, issuer, endpoints, pinned_by, pinned_at)
     VALUES ($1, $2, $3::jsonb, $4, $5)
     ON CONFLICT (provider) DO UPDATE SET issuer = EXCLUDED.issuer, endpoints = EXCLUDED.endpoints,
       pinned_by = EXCLUDED.pinned_by, pinned_at = EXCLUDED.pinned_at, changed_to = NULL, changed_at = NULL`,
    [pin.provider, pin.issuer, JSON.stringify(pin.endpoints), pin.pinnedBy, pin.pinnedAt],
  );
}

/**
 * Records that discovery named `changedTo` instead of the pin (a pin row is made for a declared
 * issuer that had none yet); whether this is news (not the change already recorded).
 */
export async function markChanged(
  db: Queryable,
  pin: Omit<IssuerPin, 'changedTo' | 'changedAt'>,
  changedTo: string,
  at: Date,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO authorization_server_pins (provider, issuer, endpoints, pinned_by, pinned_at, changed_to, changed_at)
     VALUES ($1, $2, $3::jsonb, $4, $5, $6, $7)
     ON CONFLICT (provider) DO UPDATE SET changed_to = EXCLUDED.changed_to, changed_at = EXCLUDED.changed_at
       WHERE authorization_server_pins.changed_to IS DISTINCT FROM EXCLUDED.changed_to`,
    [pin.provider, pin.issuer, JSON.stringify(pin.endpoints), pin.pinnedBy, pin.pinnedAt, changedTo, at],
  );
  return (rowCount ?? 0) > 0;
}
