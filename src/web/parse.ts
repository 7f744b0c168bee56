import type { z } from 'zod';
import { InvalidInputError } from '../errors/appError.js';

/** Parses input from outside with its schema, or throws a 400 naming each bad field. */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown, what: string): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const fields = result.error.issues.map((i) => `${i.path.join('.') || what}: ${i.message}`);
  throw new InvalidInputError(`Invalid ${what}. ${fields.join('; ')}`, { details: { fields } });
}
