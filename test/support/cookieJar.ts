/** A cookie as the test browser stores it (RFC 6265 §5.3). */
export interface StoredCookie {
  name: string;
  value: string;
  /** The host the cookie is sent to (no port: browsers share cookies across ports, RFC 6265 §8.5). */
  domain: string;
  /** False when the cookie had a Domain attribute, so it also goes to subdomains. */
  hostOnly: boolean;
  path: string;
  secure: boolean;
  httpOnly: boolean;
  sameSite: 'Strict' | 'Lax' | 'None' | undefined;
  /** Epoch milliseconds; undefined for a session cookie. */
  expiresAt: number | undefined;
}

/**
 * A small RFC 6265 cookie store: Domain, Path, Secure, Max-Age / Expires and
 * the `__Host-` / `__Secure-` prefixes are honoured. SameSite and HttpOnly are
 * recorded (so tests can assert them) but not enforced: the browser runs no
 * script and tracks no initiator site.
 */
export class CookieJar {
  #cookies: StoredCookie[] = [];
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Stores every `Set-Cookie` of a response received from `url`. */
  store(url: URL, setCookieHeaders: readonly string[]): void {
    for (const header of setCookieHeaders) {
      const cookie = parseSetCookie(header, url, this.#now());
      if (!cookie) continue;
      this.#cookies = this.#cookies.filter(
        (c) => !(c.name === cookie.name && c.domain === cookie.domain && c.path === cookie.path),
      );
      if (cookie.expiresAt === undefined || cookie.expiresAt > this.#now()) this.#cookies.push(cookie);
    }
  }

  /** The cookies a request to `url` carries, longest path first. */
  cookiesFor(url: URL): StoredCookie[] {
    const now = this.#now();
    this.#cookies = this.#cookies.filter((c) => c.expiresAt === undefined || c.expiresAt > now);
    return this.#cookies
      .filter((c) => domainMatches(url.hostname, c) && pathMatches(url.pathname, c.path))
      .filter((c) => !c.secure || url.protocol === 'https:')
      .sort((a, b) => b.path.length - a.path.length);
  }

  cookieHeader(url: URL): string | undefined {
    const cookies = this.cookiesFor(url);
    return cookies.length ? cookies.map((c) => `${c.name}=${c.value}`).join('; ') : undefined;
  }

  all(): StoredCookie[] {
    return [...this.#cookies];
  }
}

function parseSetCookie(header: string, url: URL, now: number): StoredCookie | undefined {
  const [pair = '', ...attributes] = header.split(';');
  const eq = pair.indexOf('=');
  if (eq < 1) return undefined;
  const cookie: StoredCookie = {
    name: pair.slice(0, eq).trim(),
    value: pair.slice(eq + 1).trim(),
    domain: url.hostname,
    hostOnly: true,
    path: defaultPath(url.pathname),
    secure: false,
    httpOnly: false,
    sameSite: undefined,
    expiresAt: undefined,
  };
  let maxAgeSeen = false;
  for (const attribute of attributes) {
    const [rawName = '', ...rest] = attribute.split('=');
    const name = rawName.trim().toLowerCase();
    const value = rest.join('=').trim();
    if (name === 'secure') cookie.secure = true;
    else if (name === 'httponly') cookie.httpOnly = true;
    else if (name === 'path' && value.startsWith('/')) cookie.path = value;
    else if (name === 'samesite') cookie.sameSite = sameSiteOf(value);
    else if (name === 'max-age' && /^-?\d+$/.test(value)) {
      maxAgeSeen = true;
      cookie.expiresAt = now + Number(value) * 1000;
    } else if (name === 'expires' && !maxAgeSeen) {
      const at = Date.parse(value);
      if (!Number.isNaN(at)) cookie.expiresAt = at;
    } else if (name === 'domain' && value) {
      const domain = value.replace(/^\./, '').toLowerCase();
      if (url.hostname !== domain && !url.hostname.endsWith(`.${domain}`)) return undefined;
      cookie.domain = domain;
      cookie.hostOnly = false;
    }
  }
  if (cookie.secure && url.protocol !== 'https:') return undefined;
  if (cookie.name.startsWith('__Secure-') && !cookie.secure) return undefined;
  if (cookie.name.startsWith('__Host-') && (!cookie.secure || !cookie.hostOnly || cookie.path !== '/'))
    return undefined;
  return cookie;
}

function sameSiteOf(value: string): StoredCookie['sameSite'] {
  const v = value.toLowerCase();
  if (v === 'strict') return 'Strict';
  if (v === 'lax') return 'Lax';
  if (v === 'none') return 'None';
  return undefined;
}

function defaultPath(pathname: string): string {
  const slash = pathname.lastIndexOf('/');
  return slash <= 0 ? '/' : pathname.slice(0, slash);
}

function domainMatches(hostname: string, cookie: StoredCookie): boolean {
  if (cookie.hostOnly) return hostname === cookie.domain;
  return hostname === cookie.domain || hostname.endsWith(`.${cookie.domain}`);
}

function pathMatches(requestPath: string, cookiePath: string): boolean {
  if (requestPath === cookiePath) return true;
  if (!requestPath.startsWith(cookiePath)) return false;
  return cookiePath.endsWith('/') || requestPath[cookiePath.length] === '/';
}
