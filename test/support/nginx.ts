import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TlsMaterial } from '../../src/tls/localCa.js';
import type { Balancer } from './haproxy.js';
import { repoRoot } from './brokerProcess.js';

// nginx (Debian's `nginx-light`) with a server file that ships in deploy/, on loopback: the
// template's ${...} placeholders filled as its header says (envsubst with the names it lists),
// inside the smallest main configuration that runs it unprivileged, in the foreground.

export const NGINX_BINARY = ['/usr/sbin/nginx', '/usr/bin/nginx', '/usr/local/sbin/nginx'].find((path) =>
  existsSync(path),
);

/** deploy/'s nginx templates: TLS end to end, and TLS ending at nginx. */
export const NGINX_TEMPLATES = {
  reencrypt: join(repoRoot, 'deploy', 'nginx.conf.template'),
  terminated: join(repoRoot, 'deploy', 'nginx-tls-terminated.conf.template'),
} as const;

/** Fills `${NAME}` for the names given, as `envsubst '${NAME} …'` does; a placeholder left unfilled is an error. */
export function fillTemplate(text: string, values: Readonly<Record<string, string>>): string {
  const filled = text.replace(/\$\{([A-Z0-9_]+)\}/g, (whole, name: string) => values[name] ?? whole);
  const left = [...new Set([...filled.matchAll(/\$\{([A-Z0-9_]+)\}/g)].map((m) => m[1]))];
  if (left.length > 0) throw new Error(`the template names ${left.join(', ')}, which were not given`);
  return filled;
}

/** nginx on 127.0.0.1:port in front of `instances` (host:port each, up to three), serving `tls` as its certificate. */
export async function startNginx(options: {
  port: number;
  template: string;
  instances: readonly string[];
  tls: TlsMaterial;
  /** Holds the configuration, the certificate and nginx's temporary files. */
  dir: string;
  /** More placeholders (BROKER_CA_FILE, BROKER_TLS_NAME for TLS end to end). */
  values?: Readonly<Record<string, string>>;
}): Promise<Balancer> {
  if (!NGINX_BINARY) throw new Error('nginx is not installed');
  const { dir } = options;
  const cert = join(dir, 'nginx-cert.pem');
  const key = join(dir, 'nginx-key.pem');
  await writeFile(cert, options.tls.certPem);
  await writeFile(key, options.tls.keyPem, { mode: 0o600 });
  const servers = [0, 1, 2].map((i) => options.instances[i] ?? options.instances[0]!);
  const server = fillTemplate(await readFile(options.template, 'utf8'), {
    BROKER_LISTEN: `127.0.0.1:${options.port}`,
    BROKER_TLS_CERT: cert,
    BROKER_TLS_KEY: key,
    BROKER_1: servers[0]!,
    BROKER_2: servers[1]!,
    BROKER_3: servers[2]!,
    ...options.values,
  });
  await writeFile(join(dir, 'broker.conf'), server);
  // Workers run as nobody when started as root: their temporary files need a folder anyone may write.
  const temp = join(dir, 'nginx-temp');
  await mkdir(temp, { recursive: true });
  await chmod(temp, 0o777);
  const paths = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(
    (kind) => `${kind}_temp_path ${temp}/${kind};`,
  );
  await writeFile(
    join(dir, 'nginx.conf'),
    [
      `pid ${join(dir, 'nginx.pid')};`,
      'error_log stderr warn;',
      'worker_processes 1;',
      'events { worker_connections 256; }',
      `http { access_log off; ${paths.join(' ')} include ${join(dir, 'broker.conf')}; }`,
      '',
    ].join('\n'),
  );
  const args = ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'];
  const check = await run(NGINX_BINARY, ['-t', ...args]);
  if (check.code !== 0) throw new Error(`nginx -t refused ${options.template}:\n${check.text}`);
  const child = spawn(NGINX_BINARY, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    url: `https://127.0.0.1:${options.port}`,
    output: () => text,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      // SIGQUIT would wait for open streams; the test's connections are its own to cut.
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(killer);
    },
  };
}

function run(command: string, args: string[]): Promise<{ code: number; text: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    child.once('exit', (code) => resolve({ code: code ?? 1, text }));
  });
}
