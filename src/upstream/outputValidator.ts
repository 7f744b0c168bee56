import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/client';
import { addFormats, AjvJsonSchemaValidator } from '@modelcontextprotocol/client/validators/ajv';
import { safePattern, type SafePattern } from '../security/safePattern.js';

// An upstream's JSON Schemas (a tool's outputSchema, an elicitation's requestedSchema) are checked
// on the broker's one thread, so the upstream must not choose how long a check takes:
// - every `pattern` and `patternProperties` key runs on RE2 (src/security/safePattern.ts); one RE2
//   cannot run makes the schema fail to compile, so its tool's calls are refused (as the SDK client
//   refuses any schema it cannot compile);
// - the first failing keyword ends a check (allErrors off), and Ajv checks a string's length
//   before its pattern, so a string over its maxLength is never searched;
// - a check that runs past its time budget fails, stopped at its next pattern.

/** The Ajv the SDK bundles, as much of it as the broker uses. */
interface Engine {
  compile(schema: object): ((data: unknown) => boolean) & { errors?: unknown };
  removeSchema(schema: object): unknown;
  errorsText(errors: unknown): string;
}
type EngineClass = new (options: Record<string, unknown>) => Engine;

export interface OutputValidatorOptions {
  /** How long one check may take, in ms. */
  budgetMs?: number;
  now?: () => number;
}

class BudgetSpentError extends Error {}

/**
 * A JSON Schema validator (the SDK's `jsonSchemaValidator`) for schemas an upstream wrote: the
 * SDK's Ajv with RE2 for patterns, stopping at the first error, with a time budget per check.
 */
export function createOutputValidator(options: OutputValidatorOptions = {}): jsonSchemaValidator {
  const budgetMs = options.budgetMs ?? 250;
  const now = options.now ?? (() => performance.now());
  // The end of the running check's budget (checks are synchronous: one runs at a time).
  let deadline = Infinity;
  const guarded = (pattern: SafePattern) => ({
    source: pattern.source,
    toString: () => pattern.toString(),
    test(text: string): boolean {
      if (now() > deadline) throw new BudgetSpentError();
      return pattern.test(text);
    },
  });
  // Ajv's RegExpEngine: called with each pattern when a schema compiles; `code` names it in generated code.
  const regExp = Object.assign((source: string, flags: string) => guarded(safePattern(source, flags.includes('u'))), {
    code: 'safePattern',
  });
  // The SDK bundles Ajv's 2020-12 and 2019-09 classes without exporting them; its default provider
  // picks one by the schema's $schema (and refuses other dialects), and the broker builds its own
  // engine of the class picked, with its own options.
  const defaults = new AjvJsonSchemaValidator() as unknown as { _engineFor(schema: object): object };
  const engines = new Map<EngineClass, Engine>();
  function engineFor(schema: object): Engine {
    const cls = defaults._engineFor(schema).constructor as EngineClass;
    let engine = engines.get(cls);
    if (!engine) {
      engine = new cls({
        strict: false,
        validateFormats: true,
        validateSchema: false,
        allErrors: false,
        code: { regExp },
      });
      addFormats(engine as never);
      engines.set(cls, engine);
    }
    return engine;
  }

  return {
    getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
      const engine = engineFor(schema);
      let validate: ReturnType<Engine['compile']>;
      try {
        validate = engine.compile(schema);
      } finally {
        // Kept by its caller, not by the engine: no upstream's $id names another's schema, and nothing piles up.
        engine.removeSchema(schema);
      }
      return (input) => {
        deadline = now() + budgetMs;
        try {
          return validate(input)
            ? { valid: true, data: input as T, errorMessage: undefined }
            : { valid: false, data: undefined, errorMessage: engine.errorsText(validate.errors) };
        } catch (err) {
          if (!(err instanceof BudgetSpentError)) throw err;
          return {
            valid: false,
            data: undefined,
            errorMessage: `the check took longer than ${budgetMs} ms and was stopped`,
          };
        } finally {
          deadline = Infinity;
        }
      };
    },
  };
}
