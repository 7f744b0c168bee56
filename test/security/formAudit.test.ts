import { describe, expect, it } from 'vitest';
import { auditFormSchema, describeFinding, formAuditRules, type FormAudit } from '../../src/security/formAudit.js';

const form = (properties: Record<string, unknown>) => ({ type: 'object', properties });
const findings = (audit: FormAudit) => (audit.admitted ? [] : audit.findings);

describe('auditFormSchema', () => {
  it('admits an ordinary form', () => {
    expect(
      auditFormSchema(
        form({
          name: { type: 'string', title: 'Full name' },
          email: { type: 'string', format: 'email', title: 'Email' },
          username: { type: 'string', title: 'GitHub username' },
          guests: { type: 'integer', minimum: 1 },
        }),
      ),
    ).toEqual({ admitted: true });
  });

  it('looks for secret terms in the name, the title and the description of a field', () => {
    const parts = (property: Record<string, unknown>, key = 'value') =>
      findings(auditFormSchema(form({ [key]: { type: 'string', ...property } }))).map((f) => [f.part, f.concept]);
    expect(parts({}, 'api_key')).toEqual([['name', 'api_key']]);
    expect(parts({ title: 'Passwort' })).toEqual([['title', 'password']]);
    expect(parts({ description: 'Paste the personal access token from your settings' })).toEqual([
      ['description', 'token'],
    ]);
  });

  it('applies the word rules to text, numbers and choices, not to a boolean (one bit cannot carry a secret)', () => {
    for (const property of [
      { type: 'string' },
      { type: 'integer' },
      { type: 'number' },
      { type: 'string', enum: ['0000', '1234'] },
      { type: 'string', oneOf: [{ const: '1', title: '1' }] },
      { type: 'array', items: { type: 'string', enum: ['1', '2'] } },
    ])
      expect(findings(auditFormSchema(form({ pin: property }))).map((f) => f.rule)).toEqual(['secret_term']);
    expect(auditFormSchema(form({ pin: { type: 'boolean', title: 'Pin this note to the top' } }))).toEqual({
      admitted: true,
    });
  });

  it('refuses a look-alike spelling even when no term matches it', () => {
    expect(findings(auditFormSchema(form({ v: { type: 'string', title: 't\u03bfken' } })))).toEqual([
      { rule: 'mixed_script', field: 'v', part: 'title' },
    ]);
  });

  it('lists shape and word findings together, the nested object under a secret name included', () => {
    const audit = auditFormSchema(
      form({
        credentials: { type: 'object', properties: { password: { type: 'string' } } },
        pw: { type: 'string', format: 'password' },
      }),
    );
    expect(findings(audit).map((f) => [f.rule, f.field])).toEqual([
      ['nested_object', 'credentials'],
      ['format_password', 'pw'],
      ['secret_term', 'credentials'],
      ['secret_term', 'pw'],
    ]);
  });

  it('never carries a value from the schema into its findings', () => {
    const canary = 'canary-9f3b1c-default-value';
    const audit = auditFormSchema(
      form({
        password: { type: 'string', default: canary, enum: [canary] },
        deep: { type: 'object', properties: { x: { type: 'string', default: canary } }, default: canary },
      }),
    );
    expect(audit.admitted).toBe(false);
    expect(JSON.stringify(audit)).not.toContain(canary);
  });

  it('describes each finding in words, quoting names through the caller', () => {
    const quote = (name: string) => `“${name}”`;
    const all = findings(
      auditFormSchema(
        form({
          api_key: { type: 'string' },
          masked: { type: 'string', format: 'password' },
          deep: { type: 'object' },
          x: { type: 'string', pattern: '.' },
        }),
      ),
    );
    expect(all.map((f) => describeFinding(f, quote))).toEqual([
      'field “masked” is a password field (format "password")',
      'field “deep” is a nested object',
      'field “x” uses a keyword outside the elicitation subset (“pattern”)',
      'field “api_key” asks for an API key (its name)',
    ]);
    expect(describeFinding({ rule: 'not_object' }, quote)).toBe(
      'the requestedSchema is not an object schema with properties',
    );
  });

  it('names every rule it can report in formAuditRules (the metrics labels)', () => {
    const reported = new Set(
      [
        auditFormSchema(null),
        auditFormSchema(form({ a: { type: 'object' } })),
        auditFormSchema(form({ a: { type: 'array' } })),
        auditFormSchema(form({ a: { type: 'null' } })),
        auditFormSchema(form({ a: { type: 'string', pattern: '.' } })),
        auditFormSchema(form({ a: { type: 'string', format: 'uuid' } })),
        auditFormSchema(form({ a: { type: 'string', title: 1 } })),
        auditFormSchema(form({ a: { type: 'string', format: 'password' } })),
        auditFormSchema(form({ token: { type: 'string' } })),
        auditFormSchema(form({ a: { type: 'string', title: '\u0440in' } })),
      ].flatMap((a) => findings(a).map((f) => f.rule)),
    );
    expect([...reported].sort()).toEqual([...formAuditRules].sort());
  });
});
