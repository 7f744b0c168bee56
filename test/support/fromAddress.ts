import { request } from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';

// A request sent from a chosen loopback address (127.0.0.2, 127.0.0.3…: every 127/8 address is this
// machine's), so one test plays several clients whose TCP peers differ, as users behind a proxy do.

export interface FromAddressResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/** One HTTPS request from `localAddress` on a connection of its own; redirects are not followed. */
export function requestFrom(
  localAddress: string,
  url: string,
  options: { ca: string; method?: string; headers?: Record<string, string>; body?: string },
): Promise<FromAddressResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: options.method ?? 'GET', headers: options.headers, ca: options.ca, localAddress, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}
