// What the URL classifier answers: allow, or block with the rule that fired.
// Every rule is listed here once, in the order the classifier applies them
// (src/security/urlClassifier.ts); docs/security.md says where each comes from.

export const URL_RULES = [
  'too-long',
  'invisible-character',
  'backslash',
  'not-absolute',
  'label-separator',
  'encoded-host',
  'invalid-url',
  'parser-mismatch',
  'userinfo',
  'not-https',
  'loopback',
  'ip-literal',
  'invalid-host',
  'unexpected-host',
  'credential',
  'fragment',
  'whole-script-confusable',
  'confusable',
  'mixed-script',
  'embedded-domain',
] as const;

export type UrlRule = (typeof URL_RULES)[number];

export type UrlVerdict =
  | {
      verdict: 'allow';
      rule: null;
      /** The registrable domain to show the user, in Unicode (bücher.de); the host itself when it has none. */
      registrableDomain: string;
      url: URL;
    }
  | {
      verdict: 'block';
      rule: UrlRule;
      /** Why, in words to follow "<what> ", naming no secret the URL carries. */
      reason: string;
      /** As for allow, when the URL parsed far enough to have a host. */
      registrableDomain: string | null;
    };
