import { describe, expect, it } from 'vitest';
import { invalidParams, missingRequiredClientCapability, sessionEnded } from '../../src/mcp/toMcp.js';
import {
  errorMember,
  errorMessage,
  notificationMessage,
  requestMessage,
  resultMessage,
  sseMessage,
} from '../../src/mcp/rpcMessages.js';

describe('JSON-RPC messages', () => {
  it('writes a result around JSON that is already serialised, echoing a string or a number id', () => {
    expect(resultMessage(7, '{"resultType":"complete","tools":[]}')).toBe(
      '{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","tools":[]}}',
    );
    expect(resultMessage('a"b', '{}')).toBe('{"jsonrpc":"2.0","id":"a\\"b","result":{}}');
  });

  it('writes an error without data as code and message only', () => {
    expect(errorMessage('x', invalidParams('params.name must be a string'))).toBe(
      '{"jsonrpc":"2.0","id":"x","error":{"code":-32602,"message":"params.name must be a string"}}',
    );
  });

  it('writes an error with its data, and a null id when the id could not be read', () => {
    expect(errorMessage(null, missingRequiredClientCapability('needs url', { elicitation: { url: {} } }))).toBe(
      '{"jsonrpc":"2.0","id":null,"error":{"code":-32021,"message":"needs url","data":{"requiredCapabilities":{"elicitation":{"url":{}}}}}}',
    );
  });

  it('gives the error member alone for an answer that never goes on the wire', () => {
    expect(errorMember(sessionEnded('session ended'))).toEqual({ code: -32000, message: 'session ended' });
  });

  it('writes a server request and a notification', () => {
    expect(requestMessage('srv-1', 'elicitation/create', { mode: 'form' })).toBe(
      '{"jsonrpc":"2.0","id":"srv-1","method":"elicitation/create","params":{"mode":"form"}}',
    );
    expect(notificationMessage('notifications/elicitation/complete', { elicitationId: 'n-1' })).toBe(
      '{"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":"n-1"}}',
    );
  });
});

describe('sseMessage', () => {
  it('frames one message as an SSE message event, ending with a blank line', () => {
    expect(sseMessage('{"jsonrpc":"2.0","id":1,"result":{}}')).toBe(
      'event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n',
    );
  });

  it('keeps a message with line breaks in its strings on one data line', () => {
    const frame = sseMessage(notificationMessage('m', { text: 'two\nlines\r\n' }));
    expect(frame).toBe(
      'event: message\ndata: {"jsonrpc":"2.0","method":"m","params":{"text":"two\\nlines\\r\\n"}}\n\n',
    );
    expect(frame.split('\n')).toHaveLength(4);
  });
});
