import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { runTs } from '../support/brokerProcess.js';

// `broker tools import` as an operator runs it, on two public descriptions
// (test/mcp/declared/fixtures/README.md): its output, written to a file, must
// pass `broker tools check` (another process, configured as start-up is).

const FIXTURES = new URL('../mcp/declared/fixtures/', import.meta.url);
const GITHUB = new URL('github-issues.openapi.json', FIXTURES).pathname;
const PETSTORE = new URL('petstore.openapi.json', FIXTURES).pathname;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'broker-tools-import-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

async function broker(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const run = runTs('src/cli/broker.ts', args, { NODE_ENV: 'development', DATA_DIR: join(dir, 'no-data'), ...env });
  let stdout = '';
  let stderr = '';
  run.child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  run.child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  return { code: (await run.exited).code, stdout, stderr };
}

async function imported(
  name: string,
  args: string[],
): Promise<{ file: string; yaml: string; entries: Record<string, unknown>[] }> {
  const run = await broker(['tools', 'import', ...args]);
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  const file = join(dir, name);
  await writeFile(file, run.stdout);
  return { file, yaml: run.stdout, entries: parse(run.stdout) as Record<string, unknown>[] };
}

/** The comment block written above the entry named `name`. */
function commentAbove(yaml: string, name: string): string {
  const lines = yaml.split('\n');
  const at = lines.indexOf(`- name: ${name}`);
  let start = at;
  while (start > 0 && lines[start - 1]!.startsWith('#')) start--;
  return lines.slice(start, at).join('\n');
}

describe('broker tools import', () => {
  it('lists the operations and exits 2 asking for a choice, printing no YAML', async () => {
    const run = await broker(['tools', 'import', GITHUB, '--provider', 'github']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^operation +method +path +tags +summary\n/);
    expect(run.stderr).toMatch(
      /issues\/create-comment +POST +\/repos\/\{owner\}\/\{repo\}\/issues\/\{issue_number\}\/comments +issues +Create an issue comment/,
    );
    expect(run.stderr).toContain(
      'describes 6 operation(s): choose the ones to import with --operation <operationId> or --tag <tag>',
    );
  });

  it('writes GitHub operations (OpenAPI 3.0) as entries that broker tools check accepts', async () => {
    const { file, yaml, entries } = await imported('github.yaml', [
      GITHUB,
      '--provider',
      'github',
      '--operation',
      'issues/get',
      '--operation',
      'issues/create',
      '--operation',
      'POST /repos/{owner}/{repo}/issues/{issue_number}/comments',
    ]);
    expect(entries.map((e) => e['name'])).toEqual([
      'github_issues_create',
      'github_issues_get',
      'github_issues_create_comment',
    ]);
    expect(entries[1]).toMatchObject({
      provider: 'github',
      scopes: [],
      inputSchema: {
        required: ['owner', 'repo', 'issue_number'],
        properties: { owner: { type: 'string', maxLength: 1000 }, issue_number: { type: 'integer' } },
      },
      request: { method: 'GET', path: '/repos/{owner}/{repo}/issues/{issue_number}' },
      response: {
        fields: { id: 'id', number: 'number', title: 'title', state: 'state', html_url: 'html_url', url: 'url' },
      },
    });
    expect(entries[2]).toMatchObject({
      request: { method: 'POST', body: { json: { body: '{body}' } } },
      idempotency: { mode: 'none' },
    });
    // GitHub's description names no security requirement: the scopes are the operator's to write.
    expect(yaml).toContain(
      'scopes: [] # TODO(operator): the description names no security requirement; list the scopes of the provider this operation needs',
    );
    expect(commentAbove(yaml, 'github_issues_create')).toContain(
      '#   body.issue_field_values: an array of a nested object',
    );
    expect(commentAbove(yaml, 'github_issues_get')).toContain(
      '#   maxLength 1000 added where the description gives none: owner (path), repo (path)',
    );

    const check = await broker(['tools', 'check'], { TOOLS_FILE: file });
    expect(check.stderr).toBe('');
    expect(check.code).toBe(0);
    expect(check.stdout).toBe(
      `ok: ${file} declares 3 tool(s): github_issues_create, github_issues_get, github_issues_create_comment\n`,
    );
  });

  it('writes Petstore operations (OpenAPI 3.1) by tag with their OAuth scopes, and reports the parameter it cannot carry', async () => {
    const { file, yaml, entries } = await imported('petstore.yaml', [
      PETSTORE,
      '--provider',
      'petstore',
      '--tag',
      'pet',
    ]);
    const byStatus = entries.find((e) => e['name'] === 'petstore_find_pets_by_status');
    expect(byStatus).toMatchObject({
      scopes: ['write:pets', 'read:pets'],
      inputSchema: { properties: {} },
      request: { method: 'GET', path: '/pet/findByStatus' },
    });
    expect(byStatus?.['request']).not.toHaveProperty('query');
    // Not dropped silently: the exploded array (status=a&status=b) is named, with the reason, above the entry.
    expect(commentAbove(yaml, 'petstore_find_pets_by_status')).toContain(
      '#   status (query, required): an array sent as a repeated parameter (status=a&status=b, explode), which a template cannot write (it sends a,b)',
    );
    expect(commentAbove(yaml, 'petstore_delete_pet')).toContain(
      '#   api_key (header): a header parameter is not imported (add it under request.headers by hand)',
    );
    expect(entries.find((e) => e['name'] === 'petstore_update_pet_with_form')?.['request']).toEqual({
      method: 'POST',
      path: '/pet/{petId}',
      body: { form: { name: '{name}', status: '{status}' } },
    });

    const providers = join(dir, 'providers.yaml');
    await writeFile(
      providers,
      stringify([
        {
          id: 'petstore',
          kind: 'oauth2',
          displayName: 'Petstore',
          docs: 'https://petstore.example.com/docs',
          authorizationEndpoint: 'https://petstore.example.com/oauth/authorize',
          tokenEndpoint: 'https://petstore.example.com/oauth/token',
          identity: { from: 'call', method: 'GET', url: 'https://petstore.example.com/v2/user/me', subjectPath: 'id' },
          clientAuth: 'client_secret_post',
          pkce: true,
          apiBase: 'https://petstore.example.com/v2',
          clientId: 'petstore-client',
          clientSecret: 'petstore-secret',
          scopes: ['read:pets', 'write:pets'],
        },
      ]),
    );
    const check = await broker(['tools', 'check'], { TOOLS_FILE: file, PROVIDERS_FILE: providers });
    expect(check.stderr).toBe('');
    expect(check.code).toBe(0);
    expect(check.stdout).toContain(
      `ok: ${file} declares 7 tool(s): petstore_update_pet, petstore_add_pet, petstore_find_pets_by_status, petstore_get_pet_by_id`,
    );
  });

  it('exits 2 naming an operation or tag that matches nothing', async () => {
    const run = await broker([
      'tools',
      'import',
      PETSTORE,
      '--provider',
      'petstore',
      '--operation',
      'addPets',
      '--tag',
      'store',
    ]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(
      'broker: --operation addPets: no operation has this operationId (or METHOD /path)\n--tag store: no operation has this tag\n',
    );
  });

  it('exits 1 for a file that is not a valid OpenAPI description', async () => {
    const bad = join(dir, 'bad.yaml');
    await writeFile(bad, stringify({ openapi: '3.1.0', info: { title: 'No version' }, paths: {} }));
    const run = await broker(['tools', 'import', bad, '--provider', 'petstore', '--tag', 'pet']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(`broker: ${bad} is not a valid OpenAPI 3.1.0 description:`);
  });
});
