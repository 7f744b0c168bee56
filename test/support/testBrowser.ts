import type { Fetch } from '../../src/shared/httpClient.js';
import { CookieJar, type StoredCookie } from './cookieJar.js';
import { type ParsedForm, parseForms } from './htmlForms.js';

export type { StoredCookie } from './cookieJar.js';
export type { ParsedForm } from './htmlForms.js';

/** The page a navigation ended on. */
export interface BrowserResponse {
  /** The URL of the last response received. */
  url: string;
  status: number;
  headers: Headers;
  text: string;
  /** Every URL that answered with a redirect on the way, in order (the first is the one requested). */
  redirects: string[];
  /** The absolute Location of the last response when it is a redirect that was not followed. */
  location: string | undefined;
}

export interface NavigateOptions {
  /** Extra request headers, sent with the first request only (not on redirects). */
  headers?: Record<string, string>;
  /** Do not fetch a redirect target for which this returns true (e.g. a client's redirect URI). */
  stopAt?: (url: URL) => boolean;
  /** Default true. */
  followRedirects?: boolean;
}

export interface SubmitOptions extends NavigateOptions {
  /** Which form: its id, a part of its action URL, or the text of one of its buttons. Default: the first. */
  form?: string;
  /** Which submit button: its text, value or name. Default: the form's first. */
  button?: string;
}

export interface TestBrowser {
  get(url: string, options?: NavigateOptions): Promise<BrowserResponse>;
  /** A form-encoded POST, as a form on a page at `options.origin` would send it. */
  post(
    url: string,
    form: Record<string, string>,
    options?: NavigateOptions & { origin?: string },
  ): Promise<BrowserResponse>;
  /** Fills `values` into a form of `page` (every name must be a field of it) and submits it. */
  submitForm(page: BrowserResponse, values?: Record<string, string>, options?: SubmitOptions): Promise<BrowserResponse>;
  forms(page: BrowserResponse): ParsedForm[];
  /** The cookies a request to `url` would carry, with their attributes. */
  cookiesFor(url: string): StoredCookie[];
  /** Every cookie stored. */
  cookies(): StoredCookie[];
}

export interface TestBrowserOptions {
  /** Usually createFetch({ extraCaPems: [caPem] }). */
  fetch: Fetch;
  /** Applies to every navigation unless the call passes its own. */
  stopAt?: (url: URL) => boolean;
  maxRedirects?: number;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * A tiny browser for tests: one cookie jar (shared across ports of a host,
 * as in real browsers), redirects followed by hand, HTML forms submitted as a
 * person would. No script, no CSP, no SameSite enforcement.
 *
 *   const b = createTestBrowser({ fetch: createFetch({ extraCaPems: [caPem] }) });
 *   const page = await b.get(authorizeUrl);                    // follows redirects
 *   const done = await b.submitForm(page, { login: 'alice', password: DEV_PASSWORD },
 *     { stopAt: (u) => u.href.startsWith(redirectUri) });
 *   new URL(done.location!).searchParams.get('code');
 */
export function createTestBrowser(options: TestBrowserOptions): TestBrowser {
  const jar = new CookieJar();
  const maxRedirects = options.maxRedirects ?? 20;

  async function navigate(
    start: { url: string; method: 'GET' | 'POST'; body?: URLSearchParams; origin?: string },
    navigateOptions: NavigateOptions = {},
  ): Promise<BrowserResponse> {
    const stopAt = navigateOptions.stopAt ?? options.stopAt ?? (() => false);
    const redirects: string[] = [];
    let { url, method, body, origin } = start;
    for (;;) {
      const target = new URL(url);
      const headers: Record<string, string> = { accept: 'text/html,application/json;q=0.9,*/*;q=0.8' };
      const cookie = jar.cookieHeader(target);
      if (cookie) headers['cookie'] = cookie;
      if (origin && method === 'POST') headers['origin'] = origin;
      if (body) headers['content-type'] = 'application/x-www-form-urlencoded';
      const response = await options.fetch(url, {
        method,
        headers: redirects.length === 0 ? { ...headers, ...navigateOptions.headers } : headers,
        redirect: 'manual',
        ...(body ? { body: body.toString() } : {}),
      });
      jar.store(target, response.headers.getSetCookie());
      const text = await response.text();
      const locationHeader = response.headers.get('location');
      const location = REDIRECTS.has(response.status) && locationHeader ? new URL(locationHeader, url).href : undefined;
      const done = { url, status: response.status, headers: response.headers, text, redirects, location };
      if (!location || navigateOptions.followRedirects === false || stopAt(new URL(location))) return done;
      if (redirects.length >= maxRedirects) throw new Error(`more than ${maxRedirects} redirects from ${start.url}`);
      redirects.push(url);
      if (response.status === 303 || (response.status <= 302 && method === 'POST')) {
        method = 'GET';
        body = undefined;
        origin = undefined;
      }
      url = location;
    }
  }

  return {
    get: (url, navigateOptions) => navigate({ url, method: 'GET' }, navigateOptions),

    post: (url, form, navigateOptions = {}) => {
      const { origin, ...rest } = navigateOptions;
      return navigate({ url, method: 'POST', body: new URLSearchParams(form), ...(origin ? { origin } : {}) }, rest);
    },

    submitForm: (page, values = {}, submitOptions = {}) => {
      const { form: formHint, button: buttonHint, ...navigateOptions } = submitOptions;
      const form = pickForm(parseForms(page.text, page.url), formHint, page.url);
      const button = pickButton(form, buttonHint);
      const names = new Set(form.fields.map((f) => f.name));
      const unknown = Object.keys(values).filter((name) => !names.has(name));
      if (unknown.length) throw new Error(`the form at ${form.action} has no field named ${unknown.join(', ')}`);
      const body = new URLSearchParams();
      for (const field of form.fields) body.append(field.name, values[field.name] ?? field.value);
      if (button?.name) body.append(button.name, button.value);
      const action = button?.formAction ?? form.action;
      if (form.method === 'GET') {
        const url = new URL(action);
        url.search = body.toString();
        return navigate({ url: url.href, method: 'GET' }, navigateOptions);
      }
      return navigate({ url: action, method: 'POST', body, origin: new URL(page.url).origin }, navigateOptions);
    },

    forms: (page) => parseForms(page.text, page.url),
    cookiesFor: (url) => jar.cookiesFor(new URL(url)),
    cookies: () => jar.all(),
  };
}

function pickForm(forms: ParsedForm[], hint: string | undefined, pageUrl: string): ParsedForm {
  const hinted = (f: ParsedForm) =>
    f.id === hint || f.action.includes(hint ?? '') || f.buttons.some((b) => matches(b.text, hint) || b.value === hint);
  const form = hint === undefined ? forms[0] : forms.find(hinted);
  if (!form) throw new Error(`no form${hint ? ` matching "${hint}"` : ''} on ${pageUrl}`);
  return form;
}

function pickButton(form: ParsedForm, hint: string | undefined) {
  if (hint === undefined) return form.buttons[0];
  const button = form.buttons.find((b) => matches(b.text, hint) || b.value === hint || b.name === hint);
  if (!button) throw new Error(`no button "${hint}" in the form at ${form.action}`);
  return button;
}

function matches(text: string, hint: string | undefined): boolean {
  return hint !== undefined && text.toLowerCase() === hint.toLowerCase();
}
