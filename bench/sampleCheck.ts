import type { Fetch } from '../src/shared/httpClient.js';
import { CASES, messageOf, problemWith, requestFor, type CaseName } from './wire.js';

export interface Target {
  name: string;
  url: string;
}

const SAMPLES = 3;

/**
 * Before any load: a few requests of every case to every server must succeed
 * (over verified TLS); the bench does not measure when any fails. Differences
 * between the servers' tools/list answers are reported as notes.
 */
export async function sampleCheck(
  fetch: Fetch,
  targets: readonly Target[],
  token: string,
  cases: readonly CaseName[] = CASES,
): Promise<{ failures: string[]; notes: string[] }> {
  const problems: string[] = [];
  const notes: string[] = [];
  const toolSets = new Map<string, string>();
  for (const target of targets) {
    for (const caseName of cases) {
      for (let i = 0; i < SAMPLES; i++) {
        const { headers, body } = requestFor(caseName, token);
        const response = await fetch(target.url, { method: 'POST', headers, body });
        const contentType = response.headers.get('content-type') ?? '';
        const text = await response.text();
        const problem = problemWith(caseName, response.status, contentType, text);
        if (problem) problems.push(`${target.name} ${caseName}: ${problem}`);
        if (caseName === 'tools/list' && !problem)
          toolSets.set(target.name, describeTools(messageOf(contentType, text)));
      }
    }
  }
  const distinct = new Set(toolSets.values());
  if (distinct.size > 1)
    notes.push(
      `the servers' tools differ (name, title, description, annotations, inputSchema):\n${[...toolSets].map(([name, tools]) => `  ${name}: ${tools}`).join('\n')}`,
    );
  return { failures: problems, notes };
}

// What a model sees of each tool, in a stable form; the JSON Schema dialect
// marker (`$schema`, which the SDK adds and the broker leaves implicit) is not compared.
function describeTools(message: Record<string, unknown> | undefined): string {
  const tools = ((message?.['result'] as { tools?: Record<string, unknown>[] } | undefined)?.tools ?? [])
    .map((t) => {
      const { $schema: _dialect, ...inputSchema } = (t['inputSchema'] ?? {}) as Record<string, unknown>;
      return {
        name: t['name'],
        title: t['title'],
        description: t['description'],
        annotations: t['annotations'],
        inputSchema,
      };
    })
    .sort((a, b) => String(a.name).localeCompare(String(b.name)));
  return JSON.stringify(tools);
}
