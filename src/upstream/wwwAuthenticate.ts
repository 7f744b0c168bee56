// The WWW-Authenticate header (RFC 9110 §11.6.1): a list of challenges, each a scheme followed by
// a token68 or by auth-params `name=token` / `name="quoted string"`. Only Bearer's params
// (RFC 6750 §3, RFC 9728 §5.1) are read; a header that does not parse is as if absent.

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+/;
const TOKEN68 = /^[A-Za-z0-9._~+/-]+=*/;

interface Challenge {
  scheme: string;
  params: Map<string, string>;
}

/** The params of the header's Bearer challenge, names in lower case; undefined when there is none or the header is malformed. */
export function bearerParams(header: string | null): ReadonlyMap<string, string> | undefined {
  if (header === null) return undefined;
  return parseChallenges(header)?.find((c) => c.scheme.toLowerCase() === 'bearer')?.params;
}

function parseChallenges(input: string): Challenge[] | undefined {
  const challenges: Challenge[] = [];
  let current: Challenge | undefined;
  let i = 0;
  const skipSpace = () => {
    while (input[i] === ' ' || input[i] === '\t') i++;
  };
  while (i < input.length) {
    skipSpace();
    if (input[i] === ',') {
      i++;
      continue;
    }
    if (i >= input.length) break;
    const name = TOKEN.exec(input.slice(i))?.[0];
    if (name === undefined) return undefined;
    const afterName = i + name.length;
    i = afterName;
    skipSpace();
    if (current && input[i] === '=' && input[i + 1] !== '=') {
      i++;
      skipSpace();
      const value = readValue();
      if (value === undefined) return undefined;
      // RFC 9110 §11.2: each parameter name occurs once; a repeated one (two resource_metadata) is ambiguous.
      const key = name.toLowerCase();
      if (current.params.has(key)) return undefined;
      current.params.set(key, value);
      skipSpace();
      if (i < input.length && input[i] !== ',') return undefined;
      continue;
    }
    current = { scheme: name, params: new Map() };
    challenges.push(current);
    // A scheme may be followed by one token68 instead of params (`Negotiate YIIB…==`).
    const rest = input.slice(i);
    const token68 = TOKEN68.exec(rest)?.[0];
    if (i > afterName && token68 !== undefined && /^[ \t]*(,|$)/.test(rest.slice(token68.length))) i += token68.length;
  }
  return challenges;

  function readValue(): string | undefined {
    if (input[i] !== '"') {
      const token = TOKEN.exec(input.slice(i))?.[0];
      if (token === undefined) return undefined;
      i += token.length;
      return token;
    }
    let value = '';
    for (i++; i < input.length; i++) {
      const ch = input[i]!;
      if (ch === '"') {
        i++;
        return value;
      }
      if (ch === '\\') {
        i++;
        if (i >= input.length) return undefined;
      }
      value += input[i];
    }
    return undefined;
  }
}
