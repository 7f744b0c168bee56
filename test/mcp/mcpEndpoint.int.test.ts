import { describe, expect, it } from 'vitest';
import { callTool, mcpPost, meta, VERSION } from '../support/mcpWire.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

describe('POST /mcp on the wire', () => {
  const { stack, tokens } = useBrokerStack({}, { users: ['alice'] });

  const request = (method: string, params: Record<string, unknown> = {}, id: unknown = 1) => ({
    jsonrpc: '2.0',
    id,
    method,
    params: { _meta: meta(), ...params },
  });

  describe('authorization', () => {
    it('answers 401 with a resource_metadata challenge when no token is sent', async () => {
      const response = await mcpPost(stack, request('tools/list'));
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe(
        `Bearer resource_metadata="${stack.brokerUrl}/.well-known/oauth-protected-resource/mcp", scope="mcp"`,
      );
    });

    it('answers 401 to a token that is not a JWT from the issuer', async () => {
      const response = await mcpPost(stack, request('tools/list'), {
        token: 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.',
      });
      expect(response.status).toBe(401);
      expect(response.json['error']).toBe('invalid_token');
    });

    it('answers 401 to a genuine IdP token for another audience', async () => {
      const { fetchDevToken } = await import('../../src/cli/devToken.js');
      const { DEV_PASSWORD } = await import('../../src/dev/devUsers.js');
      // The IdP's own ID token is signed by the same keys but is not for this resource.
      const response = await stack.fetch(`${stack.dev.idp.issuer}/.well-known/openid-configuration`);
      expect(response.status).toBe(200);
      const token = await fetchDevToken({
        issuer: stack.dev.idp.issuer,
        resource: stack.mcpResourceUrl,
        login: 'bob',
        password: DEV_PASSWORD,
        fetch: stack.fetch,
      });
      const [h, p, s] = token.split('.');
      const payload = JSON.parse(Buffer.from(p!, 'base64url').toString());
      const forged = `${h}.${Buffer.from(JSON.stringify({ ...payload, aud: 'https://elsewhere.example/mcp' })).toString('base64url')}.${s}`;
      expect((await mcpPost(stack, request('tools/list'), { token: forged })).status).toBe(401);
    });

    it('serves the protected resource metadata at the root and the path-inserted URL', async () => {
      for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
        const response = await stack.fetch(`${stack.brokerUrl}${path}`);
        expect(response.status).toBe(200);
        expect(await response.json()).toEqual({
          resource: stack.mcpResourceUrl,
          authorization_servers: [stack.dev.idp.issuer],
          scopes_supported: ['mcp'],
          bearer_methods_supported: ['header'],
          resource_name: 'Connect Broker',
        });
      }
    });
  });

  describe('transport', () => {
    it('refuses a foreign Host or Origin with 403 (DNS rebinding)', async () => {
      expect(
        (
          await mcpPost(stack, request('tools/list'), {
            token: tokens.alice,
            headers: { origin: 'https://evil.example' },
          })
        ).status,
      ).toBe(403);
      expect(
        (await mcpPost(stack, request('tools/list'), { token: tokens.alice, headers: { origin: stack.brokerUrl } }))
          .status,
      ).toBe(200);
      const { request: httpsRequest } = await import('node:https');
      const status = await new Promise<number>((resolve, reject) => {
        const req = httpsRequest(
          `${stack.brokerUrl}/mcp`,
          {
            method: 'POST',
            ca: stack.tls.caPem,
            servername: 'localhost',
            headers: {
              host: 'evil.example.com',
              authorization: `Bearer ${tokens.alice}`,
              'content-type': 'application/json',
            },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify(request('tools/list')));
      });
      expect(status).toBe(403);
    });

    it('answers GET and DELETE without a legacy session with 400, and other methods with 405', async () => {
      for (const method of ['GET', 'DELETE']) {
        const response = await stack.fetch(`${stack.brokerUrl}/mcp`, {
          method,
          headers: { authorization: `Bearer ${tokens.alice}` },
        });
        expect(response.status).toBe(400);
        expect(((await response.json()) as { error: { message: string } }).error.message).toContain(
          'Mcp-Session-Id header is required',
        );
      }
      const put = await stack.fetch(`${stack.brokerUrl}/mcp`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${tokens.alice}` },
      });
      expect(put.status).toBe(405);
      expect(put.headers.get('allow')).toBe('POST, GET, DELETE');
    });

    it('answers a notification with 202 and no body', async () => {
      const response = await mcpPost(
        stack,
        { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
        { token: tokens.alice },
      );
      expect(response.status).toBe(202);
      expect(response.text).toBe('');
    });

    it('answers malformed JSON with -32700/400', async () => {
      const response = await mcpPost(stack, '{"jsonrpc":', { token: tokens.alice, raw: true });
      expect(response.status).toBe(400);
      expect(response.json).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32700, message: expect.any(String) } });
    });

    it('answers a batch with -32600/400', async () => {
      const response = await mcpPost(stack, [request('tools/list')], { token: tokens.alice });
      expect(response.status).toBe(400);
      expect(response.json.error?.code).toBe(-32600);
    });

    it('refuses a body that is not JSON with 415, and one over 1 MiB with 413', async () => {
      expect(
        (await mcpPost(stack, 'x', { token: tokens.alice, raw: true, headers: { 'content-type': 'text/plain' } }))
          .status,
      ).toBe(415);
      expect(
        (await mcpPost(stack, request('tools/list', { pad: 'x'.repeat(1_100_000) }), { token: tokens.alice })).status,
      ).toBe(413);
    });

    it('answers over SSE when the client accepts only an event stream', async () => {
      const response = await mcpPost(stack, request('tools/list'), {
        token: tokens.alice,
        headers: { accept: 'text/event-stream' },
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/event-stream');
      const data = /^event: message\ndata: (.*)\n\n$/.exec(response.text)?.[1];
      expect(JSON.parse(data!)).toMatchObject({ jsonrpc: '2.0', id: 1, result: { resultType: 'complete' } });
    });
  });

  describe('the ladder, on the wire', () => {
    it('answers an unsupported version with -32022/400 and exactly {supported, requested}', async () => {
      const body = {
        jsonrpc: '2.0',
        id: 'v',
        method: 'tools/list',
        params: { _meta: { ...meta(), 'io.modelcontextprotocol/protocolVersion': '1900-01-01' } },
      };
      const response = await mcpPost(stack, body, {
        token: tokens.alice,
        headers: { 'mcp-protocol-version': '1900-01-01' },
      });
      expect(response.status).toBe(400);
      expect(response.json).toEqual({
        jsonrpc: '2.0',
        id: 'v',
        error: {
          code: -32022,
          message: 'Unsupported protocol version',
          data: { supported: [VERSION, '2025-11-25'], requested: '1900-01-01' },
        },
      });
    });

    it('answers missing _meta with -32602/400 echoing the id', async () => {
      const response = await mcpPost(
        stack,
        { jsonrpc: '2.0', id: 42, method: 'tools/list', params: {} },
        { token: tokens.alice },
      );
      expect(response.status).toBe(400);
      expect(response.json).toMatchObject({ id: 42, error: { code: -32602 } });
    });

    it('answers a header mismatch with -32020/400', async () => {
      const response = await mcpPost(stack, request('tools/list'), {
        token: tokens.alice,
        headers: { 'mcp-method': 'tools/call' },
      });
      expect(response.status).toBe(400);
      expect(response.json).toMatchObject({ id: 1, error: { code: -32020 } });
    });

    it('answers unknown methods, initialize included, with -32601/404', async () => {
      for (const method of [
        'initialize',
        'ping',
        'logging/setLevel',
        'resources/subscribe',
        'prompts/list',
        'unknown/method',
      ]) {
        const response = await mcpPost(stack, request(method, {}, method), { token: tokens.alice });
        expect(response.status, method).toBe(404);
        expect(response.json).toMatchObject({ id: method, error: { code: -32601 } });
      }
    });

    it('answers notes_delete without form elicitation with -32021/400 naming {"elicitation":{"form":{}}}', async () => {
      for (const capabilities of [{}, { elicitation: { url: {} } }]) {
        const response = await callTool(
          stack,
          tokens.alice,
          'notes_delete',
          { workspaceUri: 'file:///work/notes/alice', title: 'TPS' },
          {},
          capabilities,
        );
        expect(response.status).toBe(400);
        expect(response.json.error).toEqual({
          code: -32021,
          message: expect.any(String),
          data: { requiredCapabilities: { elicitation: { form: {} } } },
        });
      }
    });

    it('accepts both the empty and the explicit form declaration', async () => {
      for (const capabilities of [
        { elicitation: {} },
        { elicitation: { form: {} } },
        { elicitation: { form: {}, url: {} } },
      ]) {
        const response = await callTool(
          stack,
          tokens.alice,
          'notes_delete',
          { workspaceUri: 'file:///work/notes/alice', title: 'TPS' },
          {},
          capabilities,
        );
        expect(response.json.result?.['resultType']).toBe('input_required');
      }
    });

    it('answers an unknown tool with -32602 in-band', async () => {
      const response = await callTool(stack, tokens.alice, 'rm_rf', {});
      expect(response.status).toBe(200);
      expect(response.json.error).toMatchObject({
        code: -32602,
        message: expect.stringContaining('Known tools: github_create_issue, github_list_issues, notes_create'),
      });
    });
  });

  describe('discovery', () => {
    it('server/discover lists the version, tools (never roots), cache hints and the server identity', async () => {
      const response = await mcpPost(stack, request('server/discover'), { token: tokens.alice });
      expect(response.json.result).toEqual({
        resultType: 'complete',
        supportedVersions: [VERSION, '2025-11-25'],
        capabilities: { tools: {} },
        instructions: expect.any(String),
        ttlMs: expect.any(Number),
        cacheScope: 'public',
        _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'connect-broker', version: 'test' } },
      });
    });

    it('tools/list returns every tool in a deterministic order with object input schemas and cache hints', async () => {
      const first = await mcpPost(stack, request('tools/list'), { token: tokens.alice });
      const second = await mcpPost(stack, request('tools/list'), { token: tokens.alice });
      expect(first.text).toBe(second.text);
      const result = first.json.result as {
        tools: { name: string; description: string; inputSchema: { type: string } }[];
        ttlMs: number;
        cacheScope: string;
        resultType: string;
      };
      expect(result.resultType).toBe('complete');
      expect(result.cacheScope).toBe('public');
      expect(result.ttlMs).toBeGreaterThanOrEqual(0);
      expect(result.tools.map((t) => t.name)).toEqual([
        'github_create_issue',
        'github_list_issues',
        'notes_create',
        'notes_delete',
        'notes_list',
        'notes_workspaces',
        'reports_create',
        'reports_list',
      ]);
      for (const tool of result.tools) {
        expect(tool.name).toMatch(/^[A-Za-z0-9_./-]{1,64}$/);
        expect(tool.description.length).toBeGreaterThan(0);
        expect(tool.inputSchema.type).toBe('object');
      }
      expect(JSON.stringify(result.tools)).not.toMatch(/roots/);
    });
  });
});
