import { randomBytes } from 'node:crypto';
import type { DevStack } from '../../src/dev/devStack.js';
import { DEV_PASSWORD } from '../../src/dev/devUsers.js';
import type { Fetch } from '../../src/shared/httpClient.js';
import { GITHUB_FORMS } from './connectFlow.js';
import { createTestBrowser } from './testBrowser.js';

// What the GitHub-like development provider holds, read through its own OAuth
// and REST API rather than through the broker, so a test (or the flow bench)
// counts the issues that really exist. The token is the user's own, for the
// broker's OAuth App with `read:user` only: the broker's grant of `repo` is
// neither needed nor changed, so its consent page still shows when a flow asks.

export type DevGithub = NonNullable<DevStack['github']>;

export interface DevGithubIssue {
  number: number;
  title: string;
  body: string | null;
  user: { login: string };
  html_url: string;
}

/** A token of `login` at the emulator: sign in, Authorize if asked, take the code from the redirect to the callback (never followed), redeem it. */
export async function devGithubToken(github: DevGithub, fetch: Fetch, login: string): Promise<string> {
  const browser = createTestBrowser({ fetch, stopAt: (url) => url.href.startsWith(github.callbackUrl) });
  const state = randomBytes(16).toString('base64url');
  const query = new URLSearchParams({
    client_id: github.brokerClientId,
    redirect_uri: github.callbackUrl,
    scope: 'read:user',
    state,
  });
  let page = await browser.get(`${github.origin}/login/oauth/authorize?${query.toString()}`);
  if (page.location === undefined && page.text.includes('name="password"'))
    page = await browser.submitForm(page, { login, password: DEV_PASSWORD });
  if (page.location === undefined) page = await browser.submitForm(page, {}, { form: GITHUB_FORMS.allow });
  const callback = new URL(page.location ?? page.url);
  const code = callback.searchParams.get('code');
  if (!code || callback.searchParams.get('state') !== state)
    throw new Error(`no code for ${login} from the GitHub emulator: ended at ${callback.href}`);
  const response = await fetch(`${github.origin}/login/oauth/access_token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({
      client_id: github.brokerClientId,
      client_secret: github.clientSecret,
      code,
      redirect_uri: github.callbackUrl,
    }).toString(),
  });
  const answer = (await response.json()) as { access_token?: string; error?: string };
  if (!answer.access_token) throw new Error(`the GitHub emulator refused the code: ${answer.error ?? response.status}`);
  return answer.access_token;
}

/** Every issue of `repository` (owner/name) at the emulator, page by page. */
export async function devGithubIssues(
  github: DevGithub,
  fetch: Fetch,
  token: string,
  repository: string,
): Promise<DevGithubIssue[]> {
  const issues: DevGithubIssue[] = [];
  for (let page = 1; ; page++) {
    const response = await fetch(`${github.apiUrl}/repos/${repository}/issues?per_page=100&page=${page}`, {
      headers: { authorization: `Bearer ${token}`, accept: 'application/vnd.github+json' },
    });
    if (response.status !== 200)
      throw new Error(
        `GET /repos/${repository}/issues answered ${response.status}: ${(await response.text()).slice(0, 200)}`,
      );
    const batch = (await response.json()) as DevGithubIssue[];
    issues.push(...batch);
    if (!response.headers.get('link')?.includes('rel="next"')) return issues;
  }
}
