import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { readMigrations } from '../../src/db/migrate.js';
import { runTs } from '../support/brokerProcess.js';
import { PRODUCTION_ENV } from '../support/productionSettings.js';

// `broker migrate` as a deploy step runs it: its own process, a database nobody migrated yet,
// configured through DATABASE_URL alone.

const server = inject('databaseUrl');
const name = `migrate_${randomBytes(5).toString('hex')}`;
let databaseUrl: string;

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: server });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

// A production environment, as the migration Job gets it: loadConfig checks all of it, though
// only the database is used (no file is read, no other server is asked).
const production = PRODUCTION_ENV;

async function broker(args: string[]): Promise<{ code: number | null; output: string }> {
  const run = runTs('src/cli/broker.ts', ['migrate', ...args], { ...production, DATABASE_URL: databaseUrl });
  return { code: (await run.exited).code, output: run.output() };
}

async function appliedCount(): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>('SELECT count(*) AS n FROM schema_migrations');
    return Number(rows[0]?.n);
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  databaseUrl = url.href;
});
afterAll(async () => {
  await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
});

describe('broker migrate', () => {
  it('lists what is pending with --check (exit 1), applies it, then finds nothing to do', async () => {
    const expected = (await readMigrations()).length;

    const before = await broker(['--check']);
    expect(before.code, before.output).toBe(1);
    expect(before.output).toContain('Pending: 0001_');

    const first = await broker([]);
    expect(first.code, first.output).toBe(0);
    expect(first.output).toContain(`Applied ${expected}:`);
    expect(await appliedCount()).toBe(expected);

    const again = await broker([]);
    expect(again.code, again.output).toBe(0);
    expect(again.output).toContain('nothing to do');
    expect(await appliedCount()).toBe(expected);

    const after = await broker(['--check']);
    expect(after.code, after.output).toBe(0);
    expect(after.output).toContain(`Up to date: ${expected} migrations applied.`);
  });

  it('refuses an unknown argument with exit 2 and the usage', async () => {
    const run = await broker(['now']);
    expect(run.code).toBe(2);
    expect(run.output).toContain('Unknown argument: now');
  });
});
