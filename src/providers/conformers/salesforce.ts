import type { Conformer } from './conformer.js';
import { stringAt } from './responseFields.js';
import { conformWith } from './standard.js';

// Salesforce's /services/oauth2/token ("OAuth 2.0 Web Server Flow for Web App
// Integration", help.salesforce.com) returns `instance_url`, the org's API
// host, which becomes the connection's API base; `id`, the identity URL
// (…/id/<orgId>/<userId>); and `issued_at` in milliseconds. It sends no
// `expires_in`: the session timeout is the org's setting, so the token is kept
// until the API refuses it.

function instanceUrlProblem(value: string | undefined): string | undefined {
  if (value === undefined) return 'Salesforce answered without an instance_url.';
  try {
    const url = new URL(value);
    return url.protocol === 'https:' && url.username === '' && url.password === ''
      ? undefined
      : 'Salesforce answered with an instance_url that is not a plain https URL.';
  } catch {
    return 'Salesforce answered with an instance_url that is not a URL.';
  }
}

export const salesforce: Conformer = (raw, keep) =>
  conformWith(
    raw,
    {
      check: (body) => instanceUrlProblem(stringAt(body, 'instance_url')),
      extras: ['instance_url', 'id', 'issued_at'],
    },
    keep,
  );
