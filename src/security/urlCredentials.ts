// A credential in a URL leaks through logs, browser history and the Referer
// header (RFC 6750 §5.3, RFC 9700 §4.3.2): the classifier refuses a query or
// fragment parameter named for one, and a value shaped like a known token,
// even under another name or inside an encoded URL passed along.

const NAMES =
  'access_?token|refresh_?token|id_?token|auth_?token|token|client_?secret|secret|password|passwd|api_?key|apikey|key|private_?key|code_verifier|assertion|session|sig|signature|jwt|bearer';
const SECRET_NAMES = new RegExp(`^(${NAMES})$`, 'i');

// Token formats their issuers publish, so that scanners can find them: JWTs
// (RFC 7519 compact form, "eyJ" being base64url of '{"'), GitHub's ghp_/gho_/
// ghu_/ghs_/ghr_ and github_pat_, GitLab's glpat-, Slack's xox?-, Stripe's
// secret and restricted keys, AWS access key ids, Google API keys and OAuth
// access tokens, npm tokens, and OpenAI/Anthropic style sk- keys.
const TOKEN_SHAPES: readonly (readonly [name: string, pattern: RegExp])[] = [
  ['a JWT', /eyJ[\w-]{8,}\.eyJ[\w-]{8,}\./],
  ['a GitHub token', /(?<![\w])(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{22,})/],
  ['a GitLab token', /(?<![\w-])glpat-[\w-]{20,}/],
  ['a Slack token', /(?<![\w-])xox[abposr]-[A-Za-z0-9-]{10,}/],
  ['a Stripe key', /(?<![\w])(sk|rk)_(live|test)_[A-Za-z0-9]{16,}/],
  ['an AWS access key', /(?<![A-Z0-9])(AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])/],
  ['a Google API key', /(?<![\w-])AIza[\w-]{35}/],
  ['a Google access token', /(?<![\w.])ya29\.[\w-]{20,}/],
  ['an npm token', /(?<![\w])npm_[A-Za-z0-9]{36}/],
  ['an API secret key', /(?<![\w-])sk-(proj-|ant-)?[\w-]{32,}/],
  // A parameter inside a value or a fragment route: an encoded URL passed along, #/callback?token=…
  ['a credential parameter', new RegExp(`(^|[?&#/;])(${NAMES})=`, 'i')],
];

export interface CredentialFinding {
  /** 'query' or 'fragment'. */
  where: 'query' | 'fragment';
  /** The parameter name, or what the value looks like; never the value itself. */
  what: string;
}

/** The first credential a URL's query or fragment carries, else undefined. */
export function findCredential(url: URL): CredentialFinding | undefined {
  if (url.search) {
    const hit = inParameters(url.searchParams);
    if (hit) return { where: 'query', what: hit };
  }
  if (url.hash.length > 1) {
    const fragment = url.hash.slice(1);
    const hit = (fragment.includes('=') ? inParameters(new URLSearchParams(fragment)) : undefined) ?? shapeOf(fragment);
    if (hit) return { where: 'fragment', what: hit };
  }
  return undefined;
}

function inParameters(params: URLSearchParams): string | undefined {
  for (const [name, value] of params) {
    if (SECRET_NAMES.test(name)) return name;
    const shape = shapeOf(value);
    if (shape) return `${shape} in ${name || 'a value'}`;
  }
  return undefined;
}

function shapeOf(text: string): string | undefined {
  if (text.length < 6) return undefined;
  return TOKEN_SHAPES.find(([, pattern]) => pattern.test(text))?.[0];
}
