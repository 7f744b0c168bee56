import { prototypeOf } from './confusables.js';
import { INVISIBLE } from './displayText.js';

// Checks on the URL as written, before the WHATWG parser rewrites it: the
// parser drops tabs and newlines, decodes a percent-encoded host and maps
// ideographic and fullwidth dots to '.', so github。com would reach every
// later check already reading github.com.

const CONTROL = /[\p{Cc}\s]/u;
// UTS #46 maps these to '.' (IDNA2008's label separators, RFC 3490 §3.1).
const OTHER_DOTS = /[\u3002\uff0e\uff61]/u;
const DELIMITERS = new Set(['.', '/', '\\', '?', '#', '@', ':']);

export interface WrittenAuthority {
  /** userinfo@host:port as written. */
  authority: string;
  /** The host alone (userinfo and port removed). */
  host: string;
}

/** The authority of an absolute URL as written, or undefined if the text is not one (scheme://…). */
export function writtenAuthorityOf(raw: string): WrittenAuthority | undefined {
  const authority = /^[a-z][a-z0-9+.-]*:\/\/([^/?#\\]*)/i.exec(raw)?.[1];
  if (authority === undefined) return undefined;
  const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
  if (hostPort.startsWith('[')) return { authority, host: hostPort.slice(0, hostPort.indexOf(']') + 1) || hostPort };
  const colon = hostPort.lastIndexOf(':');
  return { authority, host: colon === -1 ? hostPort : hostPort.slice(0, colon) };
}

/** Whether the text, or any percent-encoded run in it, has a bidi, zero-width, control or space character. */
export function hasInvisible(raw: string): boolean {
  if (INVISIBLE.test(raw) || CONTROL.test(raw)) return true;
  if (!raw.includes('%')) return false;
  const decoded = raw.replace(/(?:%[0-9a-f]{2})+/gi, (run) => {
    try {
      return decodeURIComponent(run);
    } catch {
      return '';
    }
  });
  return INVISIBLE.test(decoded);
}

/** A character of a written host that reads as a dot or a URL delimiter without being one, else undefined. */
export function lookalikeSeparatorIn(writtenHost: string): string | undefined {
  for (const ch of writtenHost) {
    if (ch.charCodeAt(0) < 0x80) continue;
    if (OTHER_DOTS.test(ch)) return ch;
    const folded = ch.normalize('NFKC');
    if ([...folded].some((c) => DELIMITERS.has(c)) || DELIMITERS.has(prototypeOf(ch))) return ch;
  }
  return undefined;
}
