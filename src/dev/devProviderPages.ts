import type { ErrorOut, KoaContextWithOIDC } from 'oidc-provider';
import type { Render } from '../web/render.js';

/**
 * The pages oidc-provider renders itself (error, logout confirmation, logged
 * out), drawn with our views instead of its defaults, which inline styles and
 * load web fonts that our CSP refuses.
 */
export function createProviderPages(deps: { render: Render; brand: string }) {
  const page = (ctx: KoaContextWithOIDC, view: string, model: Record<string, unknown>) => {
    ctx.type = 'html';
    ctx.body = deps.render(view, { brand: deps.brand, ...model });
  };
  return {
    renderError: async (ctx: KoaContextWithOIDC, out: ErrorOut) => {
      page(ctx, 'dev/providerError', {
        title: 'Something went wrong',
        error: out.error,
        description: out.error_description ?? '',
      });
    },
    // `form` is oidc-provider's hidden logout form; we re-render its action and
    // xsrf token escaped rather than output its HTML raw (render.ts rule).
    logoutSource: async (ctx: KoaContextWithOIDC, form: string) => {
      page(ctx, 'dev/logout', {
        title: 'Sign out',
        host: ctx.host,
        action: attribute(form, /<form[^>]*\saction="([^"]*)"/),
        xsrf: attribute(form, /name="xsrf" value="([^"]*)"/),
      });
    },
    postLogoutSuccessSource: async (ctx: KoaContextWithOIDC) => {
      const client = ctx.oidc.client;
      page(ctx, 'dev/loggedOut', { title: 'Signed out', clientName: client?.clientName ?? client?.clientId });
    },
  };
}

// The slice of koa's context this middleware touches (a koa Middleware).
interface HeadersContext {
  set(field: string, value: string): void;
  response: { get(field: string): string };
}
type HeadersMiddleware = (ctx: HeadersContext, next: () => Promise<unknown>) => Promise<void>;

function attribute(html: string, pattern: RegExp): string {
  const value = pattern.exec(html)?.[1];
  if (value === undefined) throw new Error('oidc-provider logout form has an unexpected shape');
  return value.replaceAll('&quot;', '"').replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&');
}

/**
 * Security headers for every response oidc-provider writes. The CSP matches
 * web/middleware/security.ts, except that `script-src` may gain the hash of the
 * one inline script oidc-provider emits for response_mode=form_post and for
 * the logout auto-submit (lib/helpers/script_src_sha.js appends it to an
 * existing script-src directive). `form-action` lists the clients' origins
 * because browsers apply it to the redirect that follows a form submission.
 */
export function providerHeaders(formActionOrigins: readonly string[]): HeadersMiddleware {
  const csp = [
    "default-src 'none'",
    "base-uri 'none'",
    `form-action 'self' ${formActionOrigins.join(' ')}`.trim(),
    "frame-ancestors 'none'",
    "img-src 'self'",
    "style-src 'self'",
    "script-src 'none'",
  ].join(';');
  return async (ctx, next) => {
    ctx.set('Content-Security-Policy', csp);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'same-origin');
    ctx.set('Strict-Transport-Security', 'max-age=31536000');
    await next();
    const written = ctx.response.get('content-security-policy');
    // 'none' next to a hash is ignored by browsers but logged as a warning.
    if (written.includes("script-src 'none' 'sha256-")) {
      ctx.set('Content-Security-Policy', written.replace("script-src 'none' ", 'script-src '));
    }
  };
}

/**
 * `csp` with the origin of `redirectUri` added to `form-action`: the sign-in
 * and consent forms end in a redirect to the client (browsers apply
 * form-action to it), and a loopback client's port is chosen per request
 * (RFC 8252 §7.3). CSP host-source has no syntax for IPv6 literals (CSP3
 * §2.3.1), so an http://[::1] target is allowed by its scheme.
 */
export function withFormActionTarget(csp: string, redirectUri: string): string {
  const target = new URL(redirectUri);
  const source = target.hostname.startsWith('[') ? `${target.protocol}` : target.origin;
  return csp
    .split(';')
    .map((directive) => (directive.trim().startsWith('form-action ') ? `${directive} ${source}` : directive))
    .join(';');
}
