import { memberAt } from '../../providers/conformers/responseFields.js';
import { plainText } from '../../security/displayText.js';
import type { DeclaredEntry } from './declaredEntry.js';
import { DEFAULT_MAX_BYTES } from './declaredEntry.js';
import { PROPERTY_NAME } from './inputSchema.js';
import { expandTemplate, parseTemplate, type Template } from './template.js';

// What a declared tool keeps of the provider's JSON answer: named fields
// picked by a small path syntax (`a.b.c`; a numeric segment indexes an array;
// `*` maps over one: `*.title`, `labels.*.name`), and a text rendered from
// them. A field is a scalar, or with `*` a list of scalars; anything else the
// path reaches is left out. Picked strings are foreign text: made plain
// (displayText.ts) and bounded.

export type Picked = string | number | boolean | null | (string | number | boolean | null)[];

export interface ResponsePlan {
  fields: readonly [string, readonly string[]][];
  text: Template | undefined;
  maxBytes: number;
}

const MAX_STRING = 2_000;
const MAX_LIST = 100;
const SHOWN_ITEMS = 10;
const MAX_TEXT = 8_000;

/** The plan, or the problems, each naming its field under `response`. */
export function planResponse(
  response: DeclaredEntry['response'],
): { plan: ResponsePlan; problems: [] } | { plan: undefined; problems: string[] } {
  const problems: string[] = [];
  const fields: [string, string[]][] = [];
  for (const [name, path] of Object.entries(response?.fields ?? {})) {
    if (!PROPERTY_NAME.test(name))
      problems.push(`response.fields.${name}: a field name must match ^[A-Za-z_][A-Za-z0-9_]{0,63}$`);
    const segments = path.split('.');
    if (segments.some((s) => s === ''))
      problems.push(`response.fields.${name}: ${JSON.stringify(path)} has an empty segment (write a.b.c)`);
    if (segments.filter((s) => s === '*').length > 1)
      problems.push(`response.fields.${name}: ${JSON.stringify(path)} maps over more than one array (one "*" at most)`);
    fields.push([name, segments]);
  }
  let text: Template | undefined;
  if (response?.text !== undefined) {
    const parsed = parseTemplate(response.text);
    if ('problem' in parsed) problems.push(`response.text: ${parsed.problem}`);
    else {
      for (const name of parsed.template.variables)
        if (!fields.some(([field]) => field === name))
          problems.push(`response.text: {${name}} is not one of response.fields`);
      text = parsed.template;
    }
  }
  if (problems.length > 0) return { plan: undefined, problems };
  return { plan: { fields, text, maxBytes: response?.maxBytes ?? DEFAULT_MAX_BYTES }, problems: [] };
}

/** The named fields of `answer` (undefined ones left out). */
export function pickFields(plan: Pick<ResponsePlan, 'fields'>, answer: unknown): Record<string, Picked> {
  const picked: Record<string, Picked> = {};
  for (const [name, segments] of plan.fields) {
    const value = pick(answer, segments);
    if (value !== undefined) picked[name] = value;
  }
  return picked;
}

function pick(value: unknown, segments: readonly string[]): Picked | undefined {
  const star = segments.indexOf('*');
  if (star === -1) return scalar(walk(value, segments));
  const list = walk(value, segments.slice(0, star));
  if (!Array.isArray(list)) return undefined;
  return list
    .slice(0, MAX_LIST)
    .map((item) => scalar(walk(item, segments.slice(star + 1))))
    .filter((item): item is string | number | boolean | null => item !== undefined);
}

// Own members only, as a token answer is read (providers/conformers/responseFields.ts).
const walk = (value: unknown, segments: readonly string[]): unknown =>
  segments.length === 0 ? value : memberAt(value, segments.join('.'));

function scalar(value: unknown): string | number | boolean | null | undefined {
  if (typeof value === 'string') return plainText(value).slice(0, MAX_STRING);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return value;
  return undefined;
}

/**
 * The text a result shows: the template with each field's value; a list
 * shows its first ten items joined by ", " and how many more there are, a
 * missing field "(none)". Without a template: one "name: value" line per field.
 */
export function renderText(
  plan: Pick<ResponsePlan, 'fields' | 'text'>,
  title: string,
  picked: Readonly<Record<string, Picked>>,
): string {
  const shown = (name: string): string => {
    const value = picked[name];
    if (value === undefined || value === null || (Array.isArray(value) && value.length === 0)) return '(none)';
    if (!Array.isArray(value)) return String(value);
    const more = value.length > SHOWN_ITEMS ? ` (and ${value.length - SHOWN_ITEMS} more)` : '';
    return `${value.slice(0, SHOWN_ITEMS).map(String).join(', ')}${more}`;
  };
  const text = plan.text
    ? expandTemplate(plan.text, shown)
    : [`${title}: done.`, ...plan.fields.map(([name]) => `${name}: ${shown(name)}`)].join('\n');
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT - 1)}…` : text;
}
