import { z } from 'zod';

// One TOOLS_FILE entry as written, before its templates, schema and answer
// are checked (requestPlan.ts, inputSchema.ts, responsePlan.ts). The field
// names are the documented contract (docs/declared-tools.md).

export const TOOL_NAME = /^[a-z][a-z0-9_]{0,63}$/;
export const DEFAULT_MAX_BYTES = 256 * 1024;
const MAX_MAX_BYTES = 8 * 1024 * 1024;

const template = z.string().max(2_000);

export const DeclaredEntrySchema = z.strictObject({
  name: z.string().regex(TOOL_NAME, 'must match ^[a-z][a-z0-9_]{0,63}$'),
  title: z.string().trim().min(1).max(100),
  description: z.string().trim().min(1).max(4_000),
  annotations: z
    .strictObject({
      readOnlyHint: z.boolean().optional(),
      destructiveHint: z.boolean().optional(),
      idempotentHint: z.boolean().optional(),
      openWorldHint: z.boolean().optional(),
    })
    .optional(),
  highRisk: z.boolean().default(false),
  provider: z.string().min(1).max(32),
  scopes: z.array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'must be an RFC 6749 scope token')).max(20),
  // Checked by inputSchema.ts, which names each problem's path.
  inputSchema: z.unknown().optional(),
  request: z.strictObject({
    method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']),
    path: template.min(1),
    // A list sends the parameter once per item (Gmail's metadataHeaders=From&metadataHeaders=Subject).
    query: z.record(z.string(), z.union([template, z.array(template).min(1).max(20)])).optional(),
    headers: z.record(z.string(), template).optional(),
    body: z
      .strictObject({
        json: z.json().optional(),
        form: z.record(z.string(), template).optional(),
        // GraphQL over HTTP: the document is literal text (its braces are not templates); variables is a JSON template.
        graphql: z
          .strictObject({
            query: z.string().trim().min(1).max(20_000),
            variables: z.record(z.string(), z.json()).optional(),
          })
          .optional(),
      })
      .refine(
        (body) => ['json', 'form', 'graphql'].filter((kind) => kind in body).length === 1,
        'must be {"json": …}, {"form": {…}} or {"graphql": {"query": …, "variables": {…}}}',
      )
      .optional(),
  }),
  idempotency: z
    .discriminatedUnion('mode', [
      z.strictObject({ mode: z.literal('header'), header: z.string().min(1).max(100) }),
      z.strictObject({ mode: z.literal('none') }),
    ])
    .optional(),
  response: z
    .strictObject({
      fields: z.record(z.string(), z.string().min(1).max(200)).optional(),
      text: z.string().min(1).max(2_000).optional(),
      maxBytes: z.number().int().min(1).max(MAX_MAX_BYTES).default(DEFAULT_MAX_BYTES),
    })
    .optional(),
});

export type DeclaredEntry = z.infer<typeof DeclaredEntrySchema>;
