import { describe, expect, it } from 'vitest';
import { mcpPost, tokenFor } from '../support/mcpWire.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// Errors raised by the HTTP stack itself (router, send, raw-body) describe the
// request: they keep their 4xx status through toHttp, with a fixed message,
// no stack trace, nothing quoted from the request and no error log line.

describe('errors of the HTTP stack keep their client status', () => {
  const { stack } = useBrokerStack();

  const errorLines = () => stack.logs.filter((line) => (JSON.parse(line) as { level: number }).level >= 50);

  async function expectClean(response: Response, status: number, error: string, message: string): Promise<string> {
    const text = await response.text();
    expect(response.status).toBe(status);
    expect(text).not.toMatch(/ at \w|node_modules|\/work\/|\.ts:\d|Error:|%ZZ|ENOENT/);
    if (response.headers.get('content-type')?.startsWith('application/json')) {
      expect(JSON.parse(text)).toEqual({ error, message, requestId: response.headers.get('x-request-id') });
    } else {
      expect(text).toContain(message);
      expect(text).toContain(`Status ${status}`);
    }
    return text;
  }

  it('answers 400 for a bad percent-encoding in a connect link, as JSON and as a page, without an error log line', async () => {
    const before = errorLines().length;
    await expectClean(
      await stack.fetch(`${stack.brokerUrl}/connect/%ZZ`),
      400,
      'invalid_input',
      'The request is malformed.',
    );
    await expectClean(
      await stack.fetch(`${stack.brokerUrl}/connect/%ZZ`, { headers: { accept: 'text/html' } }),
      400,
      'invalid_input',
      'The request is malformed.',
    );
    expect(errorLines().slice(before)).toEqual([]);
  });

  it('answers 404 for a missing static file without naming the file system path', async () => {
    const before = errorLines().length;
    await expectClean(
      await stack.fetch(`${stack.brokerUrl}/static/no-such-file.css`),
      404,
      'not_found',
      'There is no page here.',
    );
    expect(errorLines().slice(before)).toEqual([]);
  });

  it('answers 413 for a form over its limit', async () => {
    const before = errorLines().length;
    const form = {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `_csrf=${'x'.repeat(5000)}`,
    };
    await expectClean(
      await stack.fetch(`${stack.brokerUrl}/logout`, form),
      413,
      'payload_too_large',
      'The request body is too large.',
    );
    await expectClean(
      await stack.fetch(`${stack.brokerUrl}/connect/${'A'.repeat(43)}`, form),
      413,
      'payload_too_large',
      'The request body is too large.',
    );
    expect(errorLines().slice(before)).toEqual([]);
  });

  it('answers 400 for malformed JSON on the MCP endpoint, without an error log line', async () => {
    const before = errorLines().length;
    const response = await mcpPost(stack, '{"jsonrpc":"2.0",', { raw: true, token: await tokenFor(stack, 'alice') });
    expect(response.status).toBe(400);
    expect(response.json.error).toEqual({ code: -32700, message: 'Parse error: the body is not valid JSON' });
    expect(errorLines().slice(before)).toEqual([]);
  });
});
