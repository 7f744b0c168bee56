import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/shared/logger.js';

/** The broker's logger at debug level, each line kept as written (JSON text), for tests to read. */
export function capturedLogger(): { logger: Logger; logs: string[] } {
  const logs: string[] = [];
  const logger = createLogger(
    { level: 'debug' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        logs.push(chunk.toString('utf8'));
        done();
      },
    }),
  );
  return { logger, logs };
}
