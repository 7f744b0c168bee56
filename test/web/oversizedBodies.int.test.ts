import { connect } from 'node:tls';
import { beforeAll, describe, expect, it } from 'vitest';
import type { BrokerStack } from '../support/brokerStack.js';
import { tokenFor } from '../support/mcpWire.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// An oversized body is refused at once, and the connection is closed after
// the 413 instead of being read off: a client that declares a huge body and
// trickles it must not hold a connection (and a request slot) until the
// server's requestTimeout. Raw TLS sockets, because fetch cannot trickle.

interface Exchange {
  /** Everything the server sent before it closed the connection. */
  response: string;
  /** True when the server closed the socket; false when the test gave up waiting. */
  closedByServer: boolean;
  /** Body bytes the client had sent when the server closed. */
  bodyBytesSent: number;
  elapsedMs: number;
}

const GIVE_UP_MS = 15_000;

/** Sends `head`, then body bytes in small pieces every 20 ms (chunk-encoded if asked) until the server closes. */
function trickle(
  stack: BrokerStack,
  head: string,
  options: { chunked?: boolean; first?: Buffer } = {},
): Promise<Exchange> {
  const url = new URL(stack.brokerUrl);
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect({ host: url.hostname, port: Number(url.port), ca: stack.tls.caPem });
    const received: Buffer[] = [];
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    const piece = (bytes: Buffer) => {
      sent += bytes.length;
      socket.write(
        options.chunked
          ? Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n')])
          : bytes,
      );
    };
    const finish = (closedByServer: boolean) => {
      clearInterval(timer);
      clearTimeout(giveUp);
      resolve({
        response: Buffer.concat(received).toString('latin1'),
        closedByServer,
        bodyBytesSent: sent,
        elapsedMs: Date.now() - started,
      });
    };
    const giveUp = setTimeout(() => {
      socket.removeAllListeners('close');
      socket.destroy();
      finish(false);
    }, GIVE_UP_MS);
    socket.on('secureConnect', () => {
      socket.write(head);
      if (options.first) piece(options.first);
      timer = setInterval(() => {
        if (!socket.destroyed && socket.writable) piece(Buffer.alloc(64, 'a'));
      }, 20);
    });
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    // The server may reset the connection after its response: that is a close too.
    socket.on('error', () => {});
    socket.on('close', () => finish(true));
    socket.on('timeout', () => reject(new Error('socket timeout')));
  });
}

function headOf(method: string, path: string, host: string, headers: Record<string, string>): string {
  return `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
}

function expectRefusedAndClosed(exchange: Exchange, status: number, declared?: number): void {
  expect(exchange.closedByServer).toBe(true);
  expect(exchange.response).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
  expect(exchange.response).toMatch(/\r\nconnection: close\r\n/i);
  // The server did not wait for the body: it closed long before the declared length arrived.
  if (declared !== undefined) expect(exchange.bodyBytesSent).toBeLessThan(declared);
  expect(exchange.response).not.toMatch(/at \w+ \(|node_modules/);
}

describe('oversized request bodies are refused at once and the connection is closed', () => {
  const { stack } = useBrokerStack();
  let host: string;
  const handle = 'A'.repeat(43);
  const form = { 'Content-Type': 'application/x-www-form-urlencoded' };

  beforeAll(async () => {
    host = new URL(stack.brokerUrl).host;
  });

  it('answers 413 and closes at once when the consent form declares a Content-Length over its limit', async () => {
    const exchange = await trickle(
      stack,
      headOf('POST', `/connect/${handle}`, host, { ...form, 'Content-Length': '1000000000' }),
    );
    expectRefusedAndClosed(exchange, 413, 1_000_000_000);
    expect(exchange.response).toContain('"error":"payload_too_large"');
    console.info(
      `consent form, Content-Length 1e9: 413 and closed after ${exchange.elapsedMs} ms, ${exchange.bodyBytesSent} body bytes sent`,
    );
  });

  it('cuts off a chunked consent form at its limit with 413 and closes', async () => {
    const exchange = await trickle(
      stack,
      headOf('POST', `/connect/${handle}`, host, { ...form, 'Transfer-Encoding': 'chunked' }),
      { chunked: true, first: Buffer.alloc(2000, 'a') },
    );
    expectRefusedAndClosed(exchange, 413);
    // 2 kB is the form's limit: the server stopped within a few pieces of it.
    expect(exchange.bodyBytesSent).toBeLessThan(2048 + 64 * 50);
    console.info(
      `consent form, chunked: 413 and closed after ${exchange.elapsedMs} ms, ${exchange.bodyBytesSent} body bytes sent`,
    );
  });

  it('answers 413 and closes at once for sign-out with a Content-Length over its limit', async () => {
    expectRefusedAndClosed(
      await trickle(stack, headOf('POST', '/logout', host, { ...form, 'Content-Length': '50000000' })),
      413,
      50_000_000,
    );
  });

  it('closes the connection after any refusal that left a large declared body unread (a POST to no route)', async () => {
    expectRefusedAndClosed(
      await trickle(stack, headOf('POST', '/nowhere', host, { ...form, 'Content-Length': '50000000' })),
      404,
      50_000_000,
    );
  });

  it('answers 413 and closes at once for an MCP request with a Content-Length over 1 MiB', async () => {
    const token = await tokenFor(stack, 'alice');
    const headers = {
      Authorization: `Bearer ${token}`,
      'Content-Type': 'application/json',
      Accept: 'application/json',
      'Content-Length': '1000000000',
    };
    const exchange = await trickle(stack, headOf('POST', '/mcp', host, headers));
    expectRefusedAndClosed(exchange, 413, 1_000_000_000);
    console.info(`MCP, Content-Length 1e9: 413 and closed after ${exchange.elapsedMs} ms`);
  });

  it('cuts off a chunked MCP request at 1 MiB with 413 and closes', async () => {
    const token = await tokenFor(stack, 'alice');
    const headers = {
      Authorization: `Bearer ${token}`,
      'Content-Type': 'application/json',
      Accept: 'application/json',
      'Transfer-Encoding': 'chunked',
    };
    const exchange = await trickle(stack, headOf('POST', '/mcp', host, headers), {
      chunked: true,
      first: Buffer.alloc(1024 * 1024 - 100, ' '),
    });
    expectRefusedAndClosed(exchange, 413);
    expect(exchange.bodyBytesSent).toBeLessThan(1024 * 1024 + 64 * 50);
  });

  it('closes the connection after a 401 to an MCP request whose huge body was never read', async () => {
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json', 'Content-Length': '1000000000' };
    expectRefusedAndClosed(await trickle(stack, headOf('POST', '/mcp', host, headers)), 401, 1_000_000_000);
  });

  it('still serves a small form on a kept-alive connection', async () => {
    const response = await stack.fetch(`${stack.brokerUrl}/logout`, { method: 'POST', headers: form, body: '_csrf=x' });
    expect([303, 403]).toContain(response.status);
    expect(response.headers.get('connection')).not.toBe('close');
  });
});
