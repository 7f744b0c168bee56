import { describe, expect, it } from 'vitest';
import { createOutputValidator } from '../../src/upstream/outputValidator.js';

const word = (extra: Record<string, unknown>) => ({
  type: 'object',
  properties: { word: { type: 'string', ...extra } },
  required: ['word'],
});

describe('the validator for an upstream’s JSON Schemas', () => {
  it('checks a string’s maxLength before its pattern, and stops at the first error', () => {
    const check = createOutputValidator().getValidator(word({ maxLength: 3, pattern: '^b+$' }));
    const verdict = check({ word: 'aaaa' });
    expect(verdict.valid).toBe(false);
    expect(verdict.errorMessage).toContain('more than 3 characters');
    expect(verdict.errorMessage).not.toContain('pattern');
  });

  it('runs patterns as JSON Schema means them: a search, in unicode mode, patternProperties too', () => {
    const validator = createOutputValidator();
    expect(validator.getValidator(word({ pattern: 'b+' }))({ word: 'abba' }).valid).toBe(true);
    expect(validator.getValidator(word({ pattern: '^\\p{L}+$' }))({ word: 'été' }).valid).toBe(true);
    expect(validator.getValidator(word({ pattern: '^\\p{L}+$' }))({ word: 'été1' }).valid).toBe(false);
    const keyed = validator.getValidator({
      type: 'object',
      patternProperties: { '^x-': { type: 'number' } },
    });
    expect(keyed({ 'x-a': 1 }).valid).toBe(true);
    expect(keyed({ 'x-a': 'one' }).valid).toBe(false);
  });

  it('refuses to compile a schema with a pattern RE2 cannot run', () => {
    const validator = createOutputValidator();
    expect(() => validator.getValidator(word({ pattern: '(?=a)a' }))).toThrow(/RE2 cannot run it/);
    expect(() =>
      validator.getValidator({ type: 'object', patternProperties: { '(a)\\1': { type: 'string' } } }),
    ).toThrow(/RE2 cannot run it/);
  });

  it('stops a check that runs past its time budget, and fails it', () => {
    let clock = 0;
    const validator = createOutputValidator({ budgetMs: 100, now: () => (clock += 60) });
    const check = validator.getValidator({ type: 'array', items: { type: 'string', pattern: '^a+$' } });
    const verdict = check(['a', 'a', 'a', 'a']);
    expect(verdict).toMatchObject({ valid: false, errorMessage: 'the check took longer than 100 ms and was stopped' });
    // The budget is per check: the next one starts afresh.
    clock = 0;
    expect(check(['a']).valid).toBe(true);
  });

  it('keeps each upstream’s schema its own, whatever $id it claims', () => {
    const validator = createOutputValidator();
    const first = validator.getValidator({ $id: 'https://example.com/s', ...word({ maxLength: 1 }) });
    const second = validator.getValidator({ $id: 'https://example.com/s', ...word({ maxLength: 10 }) });
    expect(first({ word: 'abc' }).valid).toBe(false);
    expect(second({ word: 'abc' }).valid).toBe(true);
  });
});
