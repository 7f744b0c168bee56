import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFetch } from '../../../src/shared/httpClient.js';
import { freePorts, runTs } from '../../support/brokerProcess.js';

// Start-up (src/main.ts in its own process, as npm start runs it) with a
// TOOLS_FILE: a file with problems stops it before anything starts, listing
// every one; without TOOLS_FILE, development serves the embedded default.

describe('start-up with a TOOLS_FILE', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'broker-tools-file-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const start = async (env: Record<string, string>) => {
    const ports = await freePorts(4);
    return {
      ports,
      broker: runTs('src/main.ts', [], {
        DATA_DIR: join(dir, 'data'),
        PORT: String(ports[0]),
        DEV_IDP_PORT: String(ports[1]),
        DEV_REPORTS_PORT: String(ports[2]),
        DEV_GITHUB_PORT: String(ports[3]),
        ...env,
      }),
    };
  };

  it('refuses to start and lists every problem: unknown provider, a variable not in the schema, a host in the path, a schema feature, a duplicate name, a reserved header', async () => {
    const entry = (name: string, extra: Record<string, unknown> = {}) => ({
      name,
      title: 'A tool',
      description: 'Does one thing.',
      provider: 'github',
      scopes: ['repo'],
      inputSchema: {
        type: 'object',
        additionalProperties: false,
        required: ['owner'],
        properties: { owner: { type: 'string', maxLength: 39 } },
      },
      request: { method: 'GET', path: '/users/{owner}' },
      ...extra,
    });
    const file = join(dir, 'tools.json');
    await writeFile(
      file,
      JSON.stringify([
        entry('on_gitlab', { provider: 'gitlab' }),
        entry('unknown_var', { request: { method: 'GET', path: '/users/{login}' } }),
        entry('other_host', { request: { method: 'GET', path: 'https://evil.example/users/{owner}' } }),
        entry('nested', {
          inputSchema: {
            type: 'object',
            additionalProperties: false,
            properties: { filter: { $ref: '#/$defs/filter' } },
          },
        }),
        entry('twice'),
        entry('twice'),
        entry('with_cookie', {
          request: { method: 'GET', path: '/users/{owner}', headers: { Cookie: 'session={owner}' } },
        }),
        entry('github_create_issue'),
      ]),
    );
    const { broker } = await start({ TOOLS_FILE: file });
    expect((await broker.exited).code).toBe(78);
    const output = broker.output();
    expect(output).toContain(`broker: TOOLS_FILE ${file} declares tools that cannot be served:`);
    for (const problem of [
      '[0] (on_gitlab) provider: "gitlab" is not a configured provider (configured: reports, github)',
      '[1] (unknown_var) request: {login} (in the path) is not a property of inputSchema',
      '[2] (other_host) request.path: must start with a single "/": it is below the provider\'s API base (no scheme or host)',
      '[3] (nested) inputSchema.properties.filter.type: is required (one of: string, integer, number, boolean, array)',
      '[5] (twice) name: twice is declared twice',
      '[6] (with_cookie) request.headers.Cookie: is set by the broker, not by a tool',
      '[7] (github_create_issue) name: github_create_issue is already a built-in tool',
    ]) {
      expect(output).toContain(`  - ${problem}\n`);
    }
    // Nothing was started: no database, no TLS material.
    expect(existsSync(join(dir, 'data', 'postgres'))).toBe(false);
    expect(existsSync(join(dir, 'data', 'tls'))).toBe(false);
  });

  it('refuses to start naming a starter tool that does not exist and one whose catalog entry no configured provider uses', async () => {
    const file = join(dir, 'starters.yaml');
    await writeFile(
      file,
      '- starter: github_list_repos\n- starter: github_list_repositories\n- starter: notion_create_page\n',
    );
    const { broker } = await start({ TOOLS_FILE: file });
    expect((await broker.exited).code).toBe(78);
    const output = broker.output();
    expect(output).toContain(
      `broker: TOOLS_FILE ${file} declares tools that cannot be served:\n  - [1] (github_list_repositories) starter: "github_list_repositories" is not a starter tool (starters: `,
    );
    expect(output).toContain(
      '  - [2] (notion_create_page) starter: notion_create_page is written for the notion catalog entry, and no configured provider is built from it (add a PROVIDERS_FILE entry with catalog: notion)\n',
    );
    expect(output).not.toContain('[0]');
    expect(existsSync(join(dir, 'data', 'postgres'))).toBe(false);
  });

  it('names the line of a YAML file that does not parse', async () => {
    const file = join(dir, 'tools.yaml');
    await writeFile(file, '- name: a\n  title: A\n  title: B\n');
    const { broker } = await start({ TOOLS_FILE: file });
    expect((await broker.exited).code).toBe(78);
    expect(broker.output()).toContain(
      `broker: TOOLS_FILE ${file} is not valid YAML: line 3, column 3: Map keys must be unique`,
    );
  });

  it('serves the development tools file when TOOLS_FILE is unset (npm start)', async () => {
    const { ports, broker } = await start({ MCP_ALLOW_ANONYMOUS: 'true', LOG_LEVEL: 'warn' });
    try {
      await broker.waitFor('Connect Broker is running.');
      const fetch = createFetch({ extraCaPems: [await readFile(join(dir, 'data', 'tls', 'ca.pem'), 'utf8')] });
      const meta = {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': {},
      };
      const response = await fetch(`https://127.0.0.1:${ports[0]}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'tools/list',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta } }),
      });
      const listed = (await response.json()) as { result: { tools: { name: string }[] } };
      expect(listed.result.tools.map((t) => t.name)).toEqual(
        expect.arrayContaining([
          'github_create_issue',
          'github_list_issues',
          'github_get_issue',
          'github_comment_issue',
        ]),
      );
    } finally {
      broker.child.kill('SIGTERM');
      await broker.exited;
    }
  });
});
