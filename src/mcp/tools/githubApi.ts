import { z } from 'zod';
import { AppError } from '../../errors/appError.js';
import type { ConnectionFetch } from '../connectionFetch.js';
import { plainText } from '../../security/displayText.js';
import { providerRefusal } from '../../providers/providerRefusal.js';

// The slice of GitHub's REST API (2022-11-28) the built-in GitHub tools use,
// as a client: the only code that knows these paths and shapes. Answers are
// parsed at this edge; the fetch is bound to the user's connection (its API
// base, token and GitHub's API headers; a 401 is thrown there).
// https://docs.github.com/en/rest/issues/issues

/** The provider id the built-in GitHub tools act through. */
export const GITHUB_PROVIDER = 'github';

/** `owner/name`, as GitHub spells repository names (its limits: 39 and 100 characters). */
export const REPOSITORY = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\/[A-Za-z0-9._-]{1,100}$/;

const IssueSchema = z.object({
  number: z.number().int(),
  title: z.string(),
  state: z.string(),
  html_url: z.string(),
  repository_url: z.string(),
});

export interface Issue {
  number: number;
  title: string;
  state: string;
  url: string;
  repository: string;
}

const toIssue = (raw: z.infer<typeof IssueSchema>): Issue => ({
  number: raw.number,
  // Foreign text: plain, bounded.
  title: plainText(raw.title).slice(0, 256),
  state: raw.state,
  url: raw.html_url,
  repository: raw.repository_url.split('/').slice(-2).join('/'),
});

async function answer(response: Response): Promise<{ status: number; json: unknown }> {
  const json = await response.json().catch(() => undefined);
  return { status: response.status, json };
}

// GitHub's error body is `{ message, documentation_url }`: its message, plain and bounded; 429 and 5xx say to retry.
const refusal = (status: number, json: unknown, what: string): AppError =>
  providerRefusal('GitHub', status, json, what);

export async function listMyIssues(
  fetch: ConnectionFetch,
  query: { filter: string; state: string; perPage: number },
): Promise<Issue[]> {
  const search = new URLSearchParams({ filter: query.filter, state: query.state, per_page: String(query.perPage) });
  const { status, json } = await answer(await fetch(`/user/issues?${search.toString()}`));
  if (status !== 200) throw refusal(status, json, 'list your issues');
  const parsed = z.array(IssueSchema).max(100).safeParse(json);
  if (!parsed.success)
    throw new AppError('upstream_auth_failed', 'GitHub answered the issue list with an unexpected body.');
  return parsed.data.map(toIssue);
}

/**
 * Opens an issue. GitHub's REST API has no idempotency key: exactly once
 * comes from the broker's receipt (one acceptance, one call); the key is sent
 * all the same, for servers in front of GitHub that honour one.
 */
export async function createIssue(
  fetch: ConnectionFetch,
  input: { repository: string; title: string; body?: string | undefined },
  idempotencyKey: string,
): Promise<Issue> {
  const [owner = '', name = ''] = input.repository.split('/');
  const path = `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(name)}/issues`;
  const response = await fetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
    body: JSON.stringify({ title: input.title, ...(input.body === undefined ? {} : { body: input.body }) }),
  });
  const { status, json } = await answer(response);
  if (status !== 201) throw refusal(status, json, `open an issue in ${input.repository}`);
  const parsed = IssueSchema.safeParse(json);
  if (!parsed.success)
    throw new AppError('upstream_auth_failed', 'GitHub answered the new issue with an unexpected body.');
  return toIssue(parsed.data);
}
