import { z } from 'zod';
import { defineFormTool } from '../mcp/defineFormTool.js';
import { completeResult } from '../mcp/defineTool.js';
import type { ElicitFormRequest } from '../mcp/protocol.js';

// A form tool that asks for a password, served only with DEV_SECRET_FORM_TOOL=true in development
// (the release-gates suite, `npm run gates`). The form audit (security/formAudit.ts) must refuse it
// on every call and on both protocol eras: the host gets a tool error, never the form. Its answer
// does nothing: nothing here can ever be reached unless the audit let the form through.

const secretForm = (): ElicitFormRequest => ({
  method: 'elicitation/create',
  params: {
    mode: 'form',
    message: 'Sign in to the legacy archive',
    requestedSchema: {
      type: 'object',
      properties: {
        username: { type: 'string', title: 'Username' },
        password: { type: 'string', title: 'Password' },
      },
      required: ['username', 'password'],
    },
  },
});

export const devSecretFormTool = defineFormTool({
  name: 'dev_secret_form',
  title: 'Ask for a password (development: the form audit must refuse it)',
  description: 'Development only. Asks the user for a password in a form, which the broker must never send.',
  inputSchema: z.strictObject({ archive: z.string().max(64) }),
  inputKey: 'signIn',
  phase: 'dev_secret_form',
  digest: (args) => args.archive,
  ask: () => Promise.resolve({ form: secretForm(), offered: [] }),
  askAgain: () => Promise.resolve(secretForm()),
  answer: () => Promise.resolve(completeResult('The form was answered.', { status: 'answered' })),
});
