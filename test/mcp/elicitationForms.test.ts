import { describe, expect, it } from 'vitest';
import { deleteConfirmationContent, deleteConfirmationForm } from '../../src/mcp/elicitationForms.js';
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
];

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
