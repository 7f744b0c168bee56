import express, { type ErrorRequestHandler, type Request, type Response, Router } from 'express';
import { z } from 'zod';
import type { Logger } from '../shared/logger.js';
import { githubAccountOf, repositoryExists } from './devGithubAccounts.js';
import type { GithubComment, GithubIssue, GithubStore, GithubToken } from './devGithubStore.js';

export interface GithubApiDeps {
  /** The emulator's origin, for html_url. */
  origin: string;
  /** Where the API is reached, e.g. https://127.0.0.1:8446/api/v3 (GitHub Enterprise Server's layout), for url fields. */
  apiUrl: string;
  store: GithubStore;
  logger: Logger;
}

const REST_DOCS = 'https://docs.github.com/rest';
const WRITE_SCOPES = ['repo', 'public_repo'];

const ListQuerySchema = z.object({
  filter: z.enum(['assigned', 'created', 'mentioned', 'subscribed', 'repos', 'all']).default('assigned'),
  state: z.enum(['open', 'closed', 'all']).default('open'),
  per_page: z.coerce.number().int().min(1).max(100).default(30),
  page: z.coerce.number().int().min(1).default(1),
});
const RepoListQuerySchema = ListQuerySchema.omit({ filter: true });
const RepoParamsSchema = z.strictObject({ owner: z.string().max(100), repo: z.string().max(100) });
const NewIssueSchema = z.object({
  title: z.union([z.string().min(1).max(256), z.number().transform(String)]),
  body: z.string().max(65_536).nullable().optional(),
  assignees: z.array(z.string().max(100)).max(10).optional(),
});
const IssueParamsSchema = RepoParamsSchema.extend({
  number: z
    .string()
    .regex(/^[1-9][0-9]{0,9}$/)
    .transform(Number),
});
const NewCommentSchema = z.object({ body: z.string().min(1).max(65_536) });
const IdempotencyKeySchema = z.string().regex(/^[\x21-\x7E]{1,200}$/);

/**
 * The slice of GitHub's REST API the broker's tools use: GET /user, issue
 * lists (GET /user/issues, GET /issues, GET /repos/{owner}/{repo}/issues),
 * POST /repos/{owner}/{repo}/issues, one issue (GET
 * /repos/{owner}/{repo}/issues/{issue_number}) and its comments (POST …/comments,
 * https://docs.github.com/en/rest/issues/comments), with GitHub's error bodies
 * (`{ message, documentation_url }`) and its X-OAuth-Scopes headers.
 */
export function createGithubApi(deps: GithubApiDeps): Router {
  const router = Router();

  const authorize = (req: Request, res: Response): GithubToken | undefined => {
    // GitHub takes both `token` and `Bearer` in Authorization.
    const match = /^(?:token|bearer) +(\S+)$/i.exec(req.get('authorization') ?? '');
    const token = match?.[1] === undefined ? undefined : deps.store.findToken(match[1]);
    if (!token) {
      const message = match ? 'Bad credentials' : 'Requires authentication';
      res.status(401).json({ message, documentation_url: REST_DOCS, status: '401' });
      return undefined;
    }
    res.set('X-OAuth-Scopes', token.scopes.join(', '));
    return token;
  };

  router.get('/user', (req, res) => {
    const token = authorize(req, res);
    if (!token) return;
    const account = githubAccountOf(token.login);
    if (!account) return notFound(res);
    res.json({
      ...userOf(deps, token.login),
      name: account.name,
      email: token.scopes.includes('user:email') ? account.email : null,
    });
  });

  const listMine = (req: Request, res: Response) => {
    const token = authorize(req, res);
    if (!token) return;
    const query = validated(res, ListQuerySchema, req.query);
    if (!query) return;
    const mine = deps.store.listIssues().filter((i) => involves(i, token.login, query.filter));
    sendPage(deps, req, res, mine, query);
  };
  router.get('/user/issues', listMine);
  router.get('/issues', listMine);

  router.get('/repos/:owner/:repo/issues', (req, res) => {
    const token = authorize(req, res);
    if (!token) return;
    const { owner, repo } = repositoryOf(req);
    if (!repositoryExists(owner, repo)) return notFound(res);
    const query = validated(res, RepoListQuerySchema, req.query);
    if (!query) return;
    sendPage(
      deps,
      req,
      res,
      deps.store.listIssues().filter((i) => i.repo === `${owner}/${repo}`),
      query,
    );
  });

  router.post('/repos/:owner/:repo/issues', express.json({ limit: '100kb' }), async (req, res) => {
    const token = authorize(req, res);
    if (!token) return;
    const { owner, repo } = repositoryOf(req);
    res.set('X-Accepted-OAuth-Scopes', WRITE_SCOPES.join(', '));
    // GitHub answers a token without the needed scope as if the repository did not exist.
    if (!repositoryExists(owner, repo) || !token.scopes.some((s) => WRITE_SCOPES.includes(s))) return notFound(res);
    const input = validated(res, NewIssueSchema, req.body ?? {});
    if (!input) return;
    const unknownAssignee = (input.assignees ?? []).some((login) => !githubAccountOf(login));
    if (unknownAssignee) return validationFailed(res, 'assignees', 'invalid');
    // GitHub itself has no Idempotency-Key: the emulator honours one so that a duplicate create
    // from the broker is visible in tests. The broker's exactly-once guarantee must not depend on it.
    const keyHeader = req.get('idempotency-key');
    const idempotencyKey = keyHeader === undefined ? undefined : IdempotencyKeySchema.safeParse(keyHeader).data;
    if (keyHeader !== undefined && idempotencyKey === undefined)
      return validationFailed(res, 'Idempotency-Key', 'invalid');
    const outcome = await deps.store.createIssue({
      repo: `${owner}/${repo}`,
      author: token.login,
      title: input.title,
      body: input.body ?? null,
      assignees: [...new Set(input.assignees ?? [])],
      ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
    });
    if (outcome.kind === 'key_reused') {
      res.status(422).json({
        message: 'This Idempotency-Key was already used with a different request.',
        documentation_url: REST_DOCS,
        status: '422',
      });
      return;
    }
    if (outcome.kind === 'replayed') res.set('Idempotent-Replayed', 'true');
    res
      .status(201)
      .location(`${deps.apiUrl}/repos/${outcome.issue.repo}/issues/${outcome.issue.number}`)
      .json(issueOf(deps, outcome.issue));
  });

  router.get('/repos/:owner/:repo/issues/:number', (req, res) => {
    const token = authorize(req, res);
    if (!token) return;
    const issue = issueAt(deps, req);
    if (!issue) return notFound(res);
    res.json(issueOf(deps, issue));
  });

  router.post('/repos/:owner/:repo/issues/:number/comments', express.json({ limit: '100kb' }), async (req, res) => {
    const token = authorize(req, res);
    if (!token) return;
    res.set('X-Accepted-OAuth-Scopes', WRITE_SCOPES.join(', '));
    const issue = issueAt(deps, req);
    if (!issue || !token.scopes.some((s) => WRITE_SCOPES.includes(s))) return notFound(res);
    const input = validated(res, NewCommentSchema, req.body ?? {}, 'IssueComment');
    if (!input) return;
    const comment = await deps.store.createComment({
      repo: issue.repo,
      issueNumber: issue.number,
      body: input.body,
      author: token.login,
    });
    res
      .status(201)
      .location(`${deps.apiUrl}/repos/${issue.repo}/issues/comments/${comment.id}`)
      .json(commentOf(deps, comment));
  });

  router.use((_req, res) => notFound(res));
  router.use(apiErrors(deps.logger));
  return router;
}

// An over-long name is simply a repository that does not exist.
function repositoryOf(req: Request): { owner: string; repo: string } {
  return RepoParamsSchema.safeParse(req.params).data ?? { owner: '', repo: '' };
}

function issueAt(deps: GithubApiDeps, req: Request): GithubIssue | undefined {
  const params = IssueParamsSchema.safeParse(req.params).data;
  return (
    params &&
    deps.store.listIssues().find((i) => i.repo === `${params.owner}/${params.repo}` && i.number === params.number)
  );
}

function involves(issue: GithubIssue, login: string, filter: z.infer<typeof ListQuerySchema>['filter']): boolean {
  const assigned = issue.assignees.includes(login);
  const created = issue.author === login;
  const owned = issue.repo.startsWith(`${login}/`);
  if (filter === 'assigned') return assigned;
  if (filter === 'created') return created;
  if (filter === 'repos') return owned;
  // Nobody is mentioned or subscribed here beyond authors and assignees.
  return assigned || created || (filter === 'all' && owned);
}

function sendPage(
  deps: GithubApiDeps,
  req: Request,
  res: Response,
  issues: readonly GithubIssue[],
  query: { state: string; per_page: number; page: number },
) {
  // Issues here are never closed.
  const matching = (query.state === 'closed' ? [] : [...issues]).sort((a, b) => b.id - a.id);
  const start = (query.page - 1) * query.per_page;
  if (start + query.per_page < matching.length) {
    // RFC 8288 Link header, as GitHub paginates.
    const next = new URL(`${deps.apiUrl}${req.path}`);
    for (const [name, value] of Object.entries(req.query))
      if (typeof value === 'string') next.searchParams.set(name, value);
    next.searchParams.set('page', String(query.page + 1));
    res.set('Link', `<${next.href}>; rel="next"`);
  }
  res.json(matching.slice(start, start + query.per_page).map((i) => issueOf(deps, i)));
}

function userOf(deps: GithubApiDeps, login: string) {
  const id = githubAccountOf(login)?.id ?? 0;
  return {
    login,
    id,
    node_id: Buffer.from(`04:User${id}`).toString('base64'),
    type: 'User',
    url: `${deps.apiUrl}/users/${login}`,
    html_url: `${deps.origin}/${login}`,
  };
}

function issueOf(deps: GithubApiDeps, issue: GithubIssue) {
  return {
    id: issue.id,
    node_id: Buffer.from(`06:Issue${issue.id}`).toString('base64'),
    number: issue.number,
    title: issue.title,
    body: issue.body,
    state: 'open',
    user: userOf(deps, issue.author),
    assignees: issue.assignees.map((login) => userOf(deps, login)),
    labels: [],
    url: `${deps.apiUrl}/repos/${issue.repo}/issues/${issue.number}`,
    repository_url: `${deps.apiUrl}/repos/${issue.repo}`,
    html_url: `${deps.origin}/${issue.repo}/issues/${issue.number}`,
    comments: deps.store.listComments().filter((c) => c.repo === issue.repo && c.issueNumber === issue.number).length,
    created_at: issue.createdAt,
    updated_at: issue.createdAt,
  };
}

function commentOf(deps: GithubApiDeps, comment: GithubComment) {
  return {
    id: comment.id,
    node_id: Buffer.from(`012:IssueComment${comment.id}`).toString('base64'),
    url: `${deps.apiUrl}/repos/${comment.repo}/issues/comments/${comment.id}`,
    html_url: `${deps.origin}/${comment.repo}/issues/${comment.issueNumber}#issuecomment-${comment.id}`,
    issue_url: `${deps.apiUrl}/repos/${comment.repo}/issues/${comment.issueNumber}`,
    body: comment.body,
    user: userOf(deps, comment.author),
    author_association: comment.repo.startsWith(`${comment.author}/`) ? 'OWNER' : 'NONE',
    created_at: comment.createdAt,
    updated_at: comment.createdAt,
  };
}

function notFound(res: Response): void {
  res.status(404).json({ message: 'Not Found', documentation_url: REST_DOCS, status: '404' });
}

function validationFailed(res: Response, field: string, code: string, resource = 'Issue'): void {
  res.status(422).json({
    message: 'Validation Failed',
    errors: [{ resource, field, code }],
    documentation_url: REST_DOCS,
    status: '422',
  });
}

function validated<T>(res: Response, schema: z.ZodType<T>, input: unknown, resource = 'Issue'): T | undefined {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const path = result.error.issues[0]?.path ?? [];
  const given = path.reduce<unknown>(
    (value, key) =>
      typeof value === 'object' && value !== null ? (value as Record<PropertyKey, unknown>)[key] : undefined,
    input,
  );
  validationFailed(res, path.join('.') || '(request)', given === undefined ? 'missing_field' : 'invalid', resource);
  return undefined;
}

// body-parser errors carry a 4xx `status`: GitHub says "Problems parsing JSON" for a body it cannot read.
function apiErrors(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    const status = typeof err === 'object' && err !== null && 'status' in err ? Number(err.status) : 500;
    if (status >= 400 && status < 500) {
      res.status(400).json({ message: 'Problems parsing JSON', documentation_url: REST_DOCS, status: '400' });
      return;
    }
    logger.error({ err, path: req.path }, 'github emulator api failed');
    res.status(500).json({ message: 'Server Error', documentation_url: REST_DOCS, status: '500' });
  };
}
