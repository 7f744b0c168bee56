import type { Queryable } from '../db/pool.js';
import type { UpstreamTool } from './upstreamMcpClient.js';

// The SQL of `upstream_tool_snapshots` (migrations/0021_upstream_tool_snapshots.sql).

export interface ToolSnapshot {
  provider: string;
  tools: UpstreamTool[];
  pinnedBy: string;
  pinnedAt: Date;
}

interface Row {
  provider: string;
  tools: UpstreamTool[];
  pinned_by: string;
  pinned_at: Date;
}

const fromRow = (r: Row): ToolSnapshot => ({
  provider: r.provider,
  tools: r.tools,
  pinnedBy: r.pinned_by,
  pinnedAt: r.pinned_at,
});

/** Pins `tools` for `provider`, in place of any snapshot it had. */
export async function pinSnapshot(db: Queryable, snapshot: ToolSnapshot): Promise<void> {
  await db.query(
    `INSERT INTO upstream_tool_snapshots (provider, tools, pinned_by, pinned_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (provider) DO UPDATE SET tools = EXCLUDED.tools, pinned_by = EXCLUDED.pinned_by, pinned_at = EXCLUDED.pinned_at`,
    [snapshot.provider, JSON.stringify(snapshot.tools), snapshot.pinnedBy, snapshot.pinnedAt],
  );
}

/** Removes `provider`'s snapshot; whether it had one. */
export async function clearSnapshot(db: Queryable, provider: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM upstream_tool_snapshots WHERE provider = $1', [provider]);
  return (rowCount ?? 0) > 0;
}

/** `provider`'s snapshot, if one is pinned. */
export async function findSnapshot(db: Queryable, provider: string): Promise<ToolSnapshot | undefined> {
  const { rows } = await db.query<Row>(
    'SELECT provider, tools, pinned_by, pinned_at FROM upstream_tool_snapshots WHERE provider = $1',
    [provider],
  );
  return rows[0] ? fromRow(rows[0]) : undefined;
}

/** Every pinned snapshot, by provider. */
export async function listSnapshots(db: Queryable): Promise<ToolSnapshot[]> {
  const { rows } = await db.query<Row>(
    'SELECT provider, tools, pinned_by, pinned_at FROM upstream_tool_snapshots ORDER BY provider',
  );
  return rows.map(fromRow);
}
