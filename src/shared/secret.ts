import { inspect } from 'node:util';

const REDACTED = '[redacted]';

/**
 * A value that must never be printed. Logging, JSON.stringify, string
 * interpolation and util.inspect all show "[redacted]"; only reveal() gives
 * the value, so every use is greppable.
 */
export class Secret {
  readonly #value: string;

  constructor(value: string) {
    this.#value = value;
  }

  reveal(): string {
    return this.#value;
  }

  toJSON(): string {
    return REDACTED;
  }

  toString(): string {
    return REDACTED;
  }

  [inspect.custom](): string {
    return REDACTED;
  }
}
