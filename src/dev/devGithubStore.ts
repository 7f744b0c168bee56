import { createHash, randomInt } from 'node:crypto';
import { z } from 'zod';
import { createJsonFileWriter, readJsonFile } from './jsonFileWriter.js';

const TokenRecordSchema = z.strictObject({
  /** SHA-256 of the token: the file never holds a usable token. */
  hash: z.string(),
  login: z.string(),
  clientId: z.string(),
  scopes: z.array(z.string()),
});
export type GithubToken = Omit<z.infer<typeof TokenRecordSchema>, 'hash'>;

const GrantSchema = z.strictObject({ login: z.string(), clientId: z.string(), scopes: z.array(z.string()) });

export const GithubIssueSchema = z.strictObject({
  id: z.number().int(),
  /** `owner/name`. */
  repo: z.string(),
  number: z.number().int(),
  title: z.string(),
  body: z.string().nullable(),
  author: z.string(),
  assignees: z.array(z.string()),
  createdAt: z.string(),
});
export type GithubIssue = z.infer<typeof GithubIssueSchema>;

export const GithubCommentSchema = z.strictObject({
  id: z.number().int(),
  /** `owner/name` and the issue's number. */
  repo: z.string(),
  issueNumber: z.number().int(),
  body: z.string(),
  author: z.string(),
  createdAt: z.string(),
});
export type GithubComment = z.infer<typeof GithubCommentSchema>;

const IdempotencySchema = z.strictObject({
  login: z.string(),
  key: z.string(),
  fingerprint: z.string(),
  issueId: z.number().int(),
});

const StoreFileSchema = z.strictObject({
  version: z.literal(1),
  tokens: z.array(TokenRecordSchema),
  grants: z.array(GrantSchema),
  issues: z.array(GithubIssueSchema),
  idempotency: z.array(IdempotencySchema),
  // Added after the first files were written: a file without it has no comments yet.
  comments: z.array(GithubCommentSchema).default([]),
});
type StoreFile = z.infer<typeof StoreFileSchema>;

export interface NewGithubIssue {
  repo: string;
  author: string;
  title: string;
  body: string | null;
  assignees: string[];
  idempotencyKey?: string;
}

export type CreateIssueOutcome =
  | { kind: 'created'; issue: GithubIssue }
  /** The same user sent the same key with the same request before: nothing was created. */
  | { kind: 'replayed'; issue: GithubIssue }
  /** The same user sent the same key with a different request. */
  | { kind: 'key_reused' };

export interface GithubStore {
  issueToken(token: GithubToken): Promise<string>;
  findToken(token: string): GithubToken | undefined;
  /** Deletes `token` if `clientId` issued it ("Delete an app token"); returns what it was. */
  deleteToken(token: string, clientId: string): Promise<GithubToken | undefined>;
  /** The scopes `login` already granted `clientId`, if any (GitHub skips the consent page for them). */
  grantedScopes(login: string, clientId: string): string[] | undefined;
  saveGrant(login: string, clientId: string, scopes: string[]): Promise<void>;
  listIssues(): readonly GithubIssue[];
  createIssue(input: NewGithubIssue): Promise<CreateIssueOutcome>;
  listComments(): readonly GithubComment[];
  /** Every call adds one: GitHub's comments take no idempotency key, so a duplicate post shows here. */
  createComment(input: Omit<GithubComment, 'id' | 'createdAt'>): Promise<GithubComment>;
}

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/**
 * The GitHub emulator's state: access tokens (by hash), grants, issues and
 * idempotency records, in memory and, with `filePath`, saved after every
 * write (jsonFileWriter.ts) so a restart keeps the broker's stored tokens valid.
 */
export async function openGithubStore(options: { filePath?: string; now?: () => Date } = {}): Promise<GithubStore> {
  const { filePath } = options;
  const now = options.now ?? (() => new Date());
  const saved = filePath === undefined ? undefined : await readJsonFile(filePath);
  const state: StoreFile =
    saved === undefined
      ? { version: 1, tokens: [], grants: [], issues: [], idempotency: [], comments: [] }
      : StoreFileSchema.parse(saved);
  const write = filePath === undefined ? undefined : createJsonFileWriter(filePath);
  const save = async (): Promise<void> => write?.(() => state);

  return {
    async issueToken(token) {
      // GitHub's OAuth App user tokens: `gho_` and 36 base62 characters, opaque to the client.
      const value = `gho_${Array.from({ length: 36 }, () => BASE62[randomInt(BASE62.length)]).join('')}`;
      state.tokens.push({ hash: hashOf(value), ...token });
      await save();
      return value;
    },

    findToken(token) {
      const record = state.tokens.find((t) => t.hash === hashOf(token));
      return record && { login: record.login, clientId: record.clientId, scopes: record.scopes };
    },

    async deleteToken(token, clientId) {
      const record = state.tokens.find((t) => t.hash === hashOf(token) && t.clientId === clientId);
      if (!record) return undefined;
      state.tokens = state.tokens.filter((t) => t !== record);
      await save();
      return { login: record.login, clientId: record.clientId, scopes: record.scopes };
    },

    grantedScopes: (login, clientId) => state.grants.find((g) => g.login === login && g.clientId === clientId)?.scopes,

    async saveGrant(login, clientId, scopes) {
      state.grants = [
        ...state.grants.filter((g) => !(g.login === login && g.clientId === clientId)),
        { login, clientId, scopes },
      ];
      await save();
    },

    listIssues: () => state.issues,

    async createIssue(input) {
      // Check and insert run synchronously, so two concurrent requests with one key cannot both create.
      const fingerprint = hashOf(JSON.stringify([input.repo, input.title, input.body, input.assignees]));
      const { idempotencyKey } = input;
      const previous =
        idempotencyKey === undefined
          ? undefined
          : state.idempotency.find((r) => r.login === input.author && r.key === idempotencyKey);
      if (previous) {
        const issue = state.issues.find((i) => i.id === previous.issueId);
        if (previous.fingerprint !== fingerprint || !issue) return { kind: 'key_reused' };
        return { kind: 'replayed', issue };
      }
      const issue: GithubIssue = {
        id: state.issues.length + 1,
        repo: input.repo,
        number: state.issues.filter((i) => i.repo === input.repo).length + 1,
        title: input.title,
        body: input.body,
        author: input.author,
        assignees: input.assignees,
        createdAt: now().toISOString(),
      };
      state.issues.push(issue);
      if (idempotencyKey !== undefined)
        state.idempotency.push({ login: input.author, key: idempotencyKey, fingerprint, issueId: issue.id });
      await save();
      return { kind: 'created', issue };
    },

    listComments: () => state.comments,

    async createComment(input) {
      const comment: GithubComment = {
        id: 1_000 + state.comments.length + 1,
        ...input,
        createdAt: now().toISOString(),
      };
      state.comments.push(comment);
      await save();
      return comment;
    },
  };
}

function hashOf(value: string): string {
  return createHash('sha256').update(value).digest('base64url');
}
