import { z } from 'zod';
import type { UpstreamTool } from './upstreamMcpClient.js';

// MCP 2026-07-28, Tool: the members the broker serves, as an upstream's tools/list gives them.
const ToolSchema = z.looseObject({
  name: z
    .string()
    .min(1)
    .max(128)
    .regex(/^[A-Za-z0-9_.-]+$/, 'must be 1 to 128 of A-Z a-z 0-9 _ . -'),
  title: z.string().max(200).optional(),
  description: z.string().max(10_000).optional(),
  inputSchema: z.looseObject({ type: z.literal('object') }),
  outputSchema: z.looseObject({ type: z.literal('object') }).optional(),
  annotations: z.record(z.string(), z.unknown()).optional(),
});

const MAX_TOOLS = 500;

/** A tools/list result (`{"tools": [...]}`) or its array of tools, checked whole; every problem named. */
export function parseToolSnapshot(value: unknown): { tools: UpstreamTool[] } | { problems: string[] } {
  const list = Array.isArray(value) ? value : (value as { tools?: unknown } | null)?.tools;
  const parsed = z.array(ToolSchema).min(1).max(MAX_TOOLS).safeParse(list);
  if (!parsed.success)
    return {
      problems: parsed.error.issues.map((i) => `tools${i.path.map((p) => `[${String(p)}]`).join('')}: ${i.message}`),
    };
  const names = parsed.data.map((t) => t.name);
  const repeated = names.filter((n, i) => names.indexOf(n) !== i);
  if (repeated.length > 0) return { problems: [`tools: ${[...new Set(repeated)].join(', ')} listed more than once`] };
  return {
    tools: parsed.data.map((t) => ({
      name: t.name,
      ...(t.title !== undefined && { title: t.title }),
      ...(t.description !== undefined && { description: t.description }),
      inputSchema: t.inputSchema,
      ...(t.outputSchema !== undefined && { outputSchema: t.outputSchema }),
      ...(t.annotations !== undefined && { annotations: t.annotations }),
    })),
  };
}
