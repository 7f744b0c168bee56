import { describe, expect, it } from 'vitest';
import {
  accountChoiceContent,
  accountChoiceForm,
  deleteConfirmationContent,
  deleteConfirmationForm,
} from '../../src/mcp/elicitationForms.js';
import type { ElicitFormRequest } from '../../src/mcp/protocol.js';
import { auditFormSchema } from '../../src/security/formAudit.js';

// Every form the broker can emit, built with representative inputs. A new
// form builder in src/mcp/elicitationForms.ts must be added here.
const everyForm: [string, ElicitFormRequest][] = [
  [
    'delete confirmation, one candidate',
    deleteConfirmationForm('file:///work/notes/alice', [
      { id: 'note_aaaaaaaaaaaa', title: 'TPS', createdAt: new Date() },
    ]),
  ],
  [
    'delete confirmation, several candidates',
    deleteConfirmationForm('file:///work/notes/alice', [
      { id: 'note_aaaaaaaaaaaa', title: 'TPS 1', createdAt: new Date() },
      { id: 'note_bbbbbbbbbbbb', title: 'TPS 2', createdAt: new Date() },
    ]),
  ],
  [
    'account choice, two accounts at one provider',
    accountChoiceForm('GitHub', 'create the issue', [
      { label: 'octo-work', connectedAt: new Date() },
      { label: 'octo-home', connectedAt: new Date() },
    ]),
  ],
];

describe('the account choice', () => {
  it('offers exactly the accounts given, by label, and accepts only one of them', () => {
    const form = accountChoiceForm('GitHub', 'create the issue', [
      { label: 'octo-work', connectedAt: new Date('2026-01-02T00:00:00Z') },
      { label: 'octo-home', connectedAt: new Date('2026-03-04T00:00:00Z') },
    ]);
    expect(form.params.requestedSchema.properties['account']).toMatchObject({ enum: ['octo-work', 'octo-home'] });
    expect(form.params.message).toContain('• octo-work (connected 2026-01-02)');
    const content = accountChoiceContent(['octo-work', 'octo-home']);
    expect(content.safeParse({ account: 'octo-home' }).success).toBe(true);
    expect(content.safeParse({ account: 'octo-other' }).success).toBe(false);
    expect(content.safeParse({ account: 'octo-home', extra: 1 }).success).toBe(false);
  });
});

describe('form-mode elicitations', () => {
  it.each(everyForm)('%s passes the form audit the broker applies before sending it', (_name, form) => {
    expect(form.params.mode).toBe('form');
    expect(auditFormSchema(form.params.requestedSchema)).toEqual({ admitted: true });
    // A form field is never a URL meant to be clicked (MCP 2026-07-28, Elicitation, form mode: SHOULD NOT).
    expect(JSON.stringify(form.params.requestedSchema)).not.toMatch(/https?:\/\//);
  });

  it('requires a choice among the offered ids and a confirm boolean, even for one candidate', () => {
    const form = everyForm[0]![1];
    expect(form.params.requestedSchema.required).toEqual(['note_id', 'confirm']);
    expect(form.params.requestedSchema.properties['note_id']).toMatchObject({
      type: 'string',
      enum: ['note_aaaaaaaaaaaa'],
    });
    const content = deleteConfirmationContent(['note_aaaaaaaaaaaa']);
    expect(content.safeParse({ note_id: 'note_aaaaaaaaaaaa', confirm: true }).success).toBe(true);
    expect(content.safeParse({ note_id: 'note_bbbbbbbbbbbb', confirm: true }).success).toBe(false);
    expect(content.safeParse({ note_id: 'note_aaaaaaaaaaaa' }).success).toBe(false);
    expect(content.safeParse({ note_id: 'note_aaaaaaaaaaaa', confirm: 'yes' }).success).toBe(false);
    expect(content.safeParse({ note_id: 'note_aaaaaaaaaaaa', confirm: true, extra: 1 }).success).toBe(false);
  });
});
