import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import getRawBody from 'raw-body';
import { InvalidInputError } from '../errors/appError.js';

/**
 * The request body as UTF-8 text, at most `limit` bytes. raw-body refuses a
 * Content-Length over the limit before reading a byte, and stops a chunked
 * body as soon as it passes the limit, with an http-errors 413 either way. It
 * never drains the rest: the response closes the connection instead (see
 * hasUnreadBody). body-parser is not used because it reads off the whole
 * request before it reports the 413.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return getRawBody(req, { length: req.headers['content-length'] ?? null, limit, encoding: 'utf-8' });
}

/**
 * True when the request declared a body that has not been read to its end.
 * A response to it must carry `Connection: close`: on a kept-alive connection
 * Node would first read off the rest of the body, for as long as the client
 * trickles it (up to the server's requestTimeout).
 */
export function hasUnreadBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  const declared = req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
  return declared && !req.readableEnded;
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
