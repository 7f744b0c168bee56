import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';

// `broker url-check` as an operator or a host developer runs it: a separate
// process, URLs from arguments, a file or standard input, no operator token.

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'broker-url-check-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function urlCheck(args: string[], options: { input?: string; env?: Record<string, string> } = {}) {
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/broker.ts', 'url-check', ...args], {
    input: options.input ?? '',
    encoding: 'utf8',
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: process.env['HOME'] ?? '/tmp',
      NODE_ENV: 'development',
      DATA_DIR: join(dir, 'no-data'),
      ...options.env,
    },
    timeout: 60_000,
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('broker url-check', () => {
  it('prints one line per URL (verdict, rule, registrable domain), leaves credentials out, exits 1 on a block', () => {
    const { code, stdout } = urlCheck([
      'https://bücher.de/katalog',
      'https://paypa1.com/login',
      'https://evil.example/cb?access_token=canary-7f3a',
    ]);
    expect(code).toBe(1);
    const lines = stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^allow +- +bücher\.de +https:\/\/bücher\.de\/katalog$/);
    expect(lines[1]).toMatch(
      /^block +confusable +paypa1\.com +https:\/\/paypa1\.com\/login \(.*looks like paypal\.com\)$/,
    );
    expect(lines[2]).toMatch(/^block +credential +evil\.example +https:\/\/evil\.example\/cb\?… /);
    expect(stdout).not.toContain('canary-7f3a');
  });

  it('reads standard input when no URL is given, skips blank and comment lines, answers JSON, exits 0 when all pass', () => {
    const { code, stdout } = urlCheck(['--json'], {
      input: '# from a host\nhttps://github.com/octo\n\n  https://xn--d1acpjx3f.xn--p1ai/  \n',
    });
    expect(code).toBe(0);
    expect(
      stdout
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as unknown),
    ).toEqual([
      { url: 'https://github.com/octo', verdict: 'allow', rule: null, registrableDomain: 'github.com', reason: null },
      {
        url: 'https://xn--d1acpjx3f.xn--p1ai/',
        verdict: 'allow',
        rule: null,
        registrableDomain: 'яндекс.рф',
        reason: null,
      },
    ]);
  });

  it("reads --file and protects the configured providers' domains and --protect ones, secrets unread", async () => {
    const providersFile = join(dir, 'providers.yaml');
    // A GitHub Enterprise Server whose client secret this shell does not have: only its host is read.
    await writeFile(
      providersFile,
      stringify([
        {
          id: 'ghes',
          catalog: 'github',
          clientId: 'c',
          clientSecret: { env: 'GHES_SECRET' },
          params: { host: 'git.acmecorp.io' },
        },
      ]),
    );
    const list = join(dir, 'urls.txt');
    await writeFile(
      list,
      'https://git.acrnecorp.io/login\nhttps://inventory.exarnple-shop.example/\nhttps://git.acmecorp.io/\n',
    );
    const configured = urlCheck(['--json', '--file', list, '--protect', 'example-shop.example'], {
      env: { PROVIDERS_FILE: providersFile },
    });
    expect(configured.code).toBe(1);
    expect(
      configured.stdout
        .trimEnd()
        .split('\n')
        .map((line) => (JSON.parse(line) as { rule: string | null }).rule),
    ).toEqual(['confusable', 'confusable', null]);
    // The same file without that deployment: neither lookalike is known.
    expect(urlCheck(['--file', list]).code).toBe(0);
  });

  it('exits 2 with its usage when there is nothing to check or the file cannot be read', () => {
    const empty = urlCheck([]);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('No URL to check.');
    expect(empty.stderr).toContain('Usage: broker url-check');
    const missing = urlCheck(['--file', join(dir, 'absent.txt')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('cannot be read');
  });
});
