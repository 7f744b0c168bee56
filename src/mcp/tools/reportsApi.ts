import { z } from 'zod';
import { AppError, UnavailableError } from '../../errors/appError.js';
import type { ConnectionFetch } from '../connectionFetch.js';

// The demo Report Service's API as a client: the only code that knows its
// paths and shapes. Responses are parsed at this edge. The fetch is bound to
// the user's connection (its API base and token; a 401 is thrown there).

/** The provider id of the demo Report Service in the provider list. */
export const REPORTS_PROVIDER = 'reports';

const ReportSchema = z.object({ id: z.string(), title: z.string(), body: z.string(), createdAt: z.string() });
export type Report = z.infer<typeof ReportSchema>;

async function send(
  fetch: ConnectionFetch,
  path: string,
  init: { method: string; body?: unknown; idempotencyKey?: string },
): Promise<{ status: number; json: unknown; replayed: boolean }> {
  const response = await fetch(path, {
    method: init.method,
    headers: {
      accept: 'application/json',
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(init.idempotencyKey ? { 'idempotency-key': init.idempotencyKey } : {}),
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  if (response.status >= 500)
    throw new UnavailableError(
      `The Report Service failed (HTTP ${response.status}). Try again; nothing was created twice.`,
      { expose: true },
    );
  const json = await response.json().catch(() => undefined);
  return { status: response.status, json, replayed: response.headers.get('idempotent-replayed') === 'true' };
}

export async function listReports(fetch: ConnectionFetch): Promise<Report[]> {
  const { status, json } = await send(fetch, '/reports', { method: 'GET' });
  const parsed = z.object({ reports: z.array(ReportSchema) }).safeParse(json);
  if (status !== 200 || !parsed.success)
    throw new AppError('upstream_auth_failed', `The Report Service answered HTTP ${status} with an unexpected body.`);
  return parsed.data.reports;
}

export async function createReport(
  fetch: ConnectionFetch,
  input: { title: string; body: string },
  idempotencyKey: string,
): Promise<{ report: Report; replayed: boolean }> {
  const { status, json, replayed } = await send(fetch, '/reports', { method: 'POST', body: input, idempotencyKey });
  const parsed = z.object({ report: ReportSchema }).safeParse(json);
  // A success whose body cannot be read may still have created the report: the user is told so.
  if (status >= 200 && status < 300 && !parsed.success)
    throw new UnavailableError(
      `The Report Service answered HTTP ${status} with a body that could not be read. Whether the report was created is unknown: check your reports before trying again.`,
      { expose: true },
    );
  if (status !== 201 || !parsed.success)
    throw new AppError('upstream_auth_failed', `The Report Service answered HTTP ${status} with an unexpected body.`);
  return { report: parsed.data.report, replayed };
}
