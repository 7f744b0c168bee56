import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import getRawBody from 'raw-body';
import { InvalidInputError } from '../errors/appError.js';

// A body left unread that is at most this large is read off by Node to keep
// the connection, which is cheaper than a new TLS handshake; anything larger,
// or of unknown length (chunked), is not worth waiting for.
const READ_OFF_AT_MOST = 64 * 1024;
// Requests whose body reading stopped part-way (over the limit): the rest stays on the wire.
const cutOff = new WeakSet<IncomingMessage>();

/**
 * The request body as UTF-8 text, at most `limit` bytes. raw-body refuses a
 * Content-Length over the limit before reading a byte, and stops a chunked
 * body as soon as it passes the limit, with an http-errors 413 either way. It
 * never drains the rest: the response closes the connection instead (see
 * mustCloseConnection). body-parser is not used because it reads off the
 * whole request before it reports the 413.
 */
export async function readBody(req: IncomingMessage, limit: number): Promise<string> {
  try {
    return await getRawBody(req, { length: req.headers['content-length'] ?? null, limit, encoding: 'utf-8' });
  } catch (err) {
    cutOff.add(req);
    throw err;
  }
}

/**
 * True when a response to this request must carry `Connection: close`: its
 * body was cut off, or it declared a body that is unread and large or of
 * unknown length. On a kept-alive connection Node would first read off the
 * rest, for as long as the client trickles it (up to the server's
 * requestTimeout); a body cut off part-way would stall the connection.
 */
export function mustCloseConnection(req: IncomingMessage): boolean {
  if (cutOff.has(req)) return true;
  if (req.readableEnded) return false;
  if (req.headers['transfer-encoding'] !== undefined) return true;
  return Number(req.headers['content-length'] ?? 0) > READ_OFF_AT_MOST;
}

/**
 * An urlencoded form body of at most `limit` bytes and `maxFields` fields, as
 * `req.body` (a repeated field becomes an array, as with body-parser). A body
 * of another type is read within the same limit and left unparsed.
 */
export function formBody(options: { limit: number; maxFields?: number }): RequestHandler {
  const maxFields = options.maxFields ?? 20;
  return (req, _res, next) => {
    if (req.is('application/x-www-form-urlencoded') === null) return next();
    readBody(req, options.limit).then((text) => {
      if (!req.is('application/x-www-form-urlencoded')) return next();
      const fields: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
      let count = 0;
      for (const [name, value] of new URLSearchParams(text)) {
        if (++count > maxFields) return next(new InvalidInputError(`The form has more than ${maxFields} fields.`));
        const seen = fields[name];
        fields[name] = seen === undefined ? value : [...(Array.isArray(seen) ? seen : [seen]), value];
      }
      req.body = fields;
      next();
    }, next);
  };
}
