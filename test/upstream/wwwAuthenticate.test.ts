import { describe, expect, it } from 'vitest';
import { bearerParams } from '../../src/upstream/wwwAuthenticate.js';

const params = (header: string | null) => {
  const found = bearerParams(header);
  return found && Object.fromEntries(found);
};

describe('bearerParams', () => {
  it('reads quoted and token values, names case-insensitively', () => {
    expect(
      params(
        'Bearer Resource_Metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="a b", error=invalid_token',
      ),
    ).toEqual({
      resource_metadata: 'https://mcp.example.com/.well-known/oauth-protected-resource',
      scope: 'a b',
      error: 'invalid_token',
    });
  });

  it('finds the Bearer challenge among others, after a token68 one', () => {
    expect(params('Negotiate YIIBhg==, Basic realm="x", bearer scope="s"')).toEqual({ scope: 's' });
    expect(params('Basic realm="x"')).toBeUndefined();
    expect(params(null)).toBeUndefined();
  });

  it('unescapes quoted pairs', () => {
    expect(params('Bearer realm="a \\"quoted\\" \\\\ value"')).toEqual({ realm: 'a "quoted" \\ value' });
  });

  it('treats a malformed header as naming nothing', () => {
    // A repeated parameter (RFC 9110 §11.2), an unterminated string, an unquoted URL, junk after a value.
    expect(params('Bearer resource_metadata="https://a", resource_metadata="https://b"')).toBeUndefined();
    expect(params('Bearer scope="unterminated')).toBeUndefined();
    expect(params('Bearer resource_metadata=https://mcp.example.com/prm')).toBeUndefined();
    expect(params('Bearer scope="a" junk')).toBeUndefined();
  });

  it('reads a bare Bearer challenge as one without params', () => {
    expect(params('Bearer')).toEqual({});
  });
});
