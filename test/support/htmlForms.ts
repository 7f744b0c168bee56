/** One successful control of a form, as a browser would submit it. */
export interface FormField {
  name: string;
  value: string;
  /** The input type (`text`, `password`, `hidden`, …), or `textarea` / `select`. */
  type: string;
}

export interface FormButton {
  name: string | undefined;
  value: string;
  text: string;
  /** A `formaction` that overrides the form's action, absolute. */
  formAction: string | undefined;
}

export interface ParsedForm {
  id: string | undefined;
  /** Absolute URL. */
  action: string;
  method: 'GET' | 'POST';
  fields: FormField[];
  buttons: FormButton[];
}

const FORM = /<form\b([^>]*)>([\s\S]*?)<\/form>/gi;
// Controls in document order; only button, textarea and select have content.
const CONTROL = /<(input|button|textarea|select)\b([^>]*)>(?:([\s\S]*?)<\/\1>)?/gi;
const ATTRIBUTE = /([^\s"'=<>/]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g;
const OPTION = /<option\b([^>]*)>([\s\S]*?)(?=<option\b|<\/select>|<\/option>|$)/gi;

/**
 * Reads the forms of a page with regular expressions: enough for the plain
 * server-rendered pages of this project (no nested forms, no scripts). Values
 * are HTML-decoded; relative actions are resolved against `pageUrl`.
 */
export function parseForms(html: string, pageUrl: string): ParsedForm[] {
  return [...html.matchAll(FORM)].map(([, attributeText = '', content = '']) => {
    const attributes = parseAttributes(attributeText);
    const method = attributes.get('method')?.toUpperCase() === 'POST' ? 'POST' : 'GET';
    const form: ParsedForm = {
      id: attributes.get('id'),
      action: new URL(attributes.get('action') || pageUrl, pageUrl).href,
      method,
      fields: [],
      buttons: [],
    };
    for (const [, tag = '', controlAttributes = '', inner = ''] of content.matchAll(CONTROL)) {
      addControl(form, tag.toLowerCase(), parseAttributes(controlAttributes), inner, pageUrl);
    }
    return form;
  });
}

function addControl(form: ParsedForm, tag: string, attributes: Map<string, string>, inner: string, pageUrl: string) {
  if (attributes.has('disabled')) return;
  const name = attributes.get('name');
  const type = (attributes.get('type') ?? (tag === 'input' ? 'text' : tag === 'button' ? 'submit' : tag)).toLowerCase();
  if ((tag === 'button' || tag === 'input') && (type === 'submit' || type === 'image')) {
    const formAction = attributes.get('formaction');
    form.buttons.push({
      name,
      value: attributes.get('value') ?? '',
      text: decode(inner.replace(/<[^>]*>/g, '')).trim(),
      formAction: formAction ? new URL(formAction, pageUrl).href : undefined,
    });
    return;
  }
  if (!name || ['button', 'reset', 'file'].includes(type)) return;
  if ((type === 'checkbox' || type === 'radio') && !attributes.has('checked')) return;
  if (tag === 'textarea') {
    form.fields.push({ name, value: decode(inner.replace(/^\r?\n/, '')), type: 'textarea' });
  } else if (tag === 'select') {
    const options = [...inner.matchAll(OPTION)].map(([, optionAttributes = '', text = '']) => {
      const parsed = parseAttributes(optionAttributes);
      return { value: parsed.get('value') ?? decode(text).trim(), selected: parsed.has('selected') };
    });
    const chosen = options.find((o) => o.selected) ?? options[0];
    if (chosen) form.fields.push({ name, value: chosen.value, type: 'select' });
  } else {
    form.fields.push({ name, value: attributes.get('value') ?? (type === 'checkbox' ? 'on' : ''), type });
  }
}

function parseAttributes(text: string): Map<string, string> {
  const attributes = new Map<string, string>();
  for (const [, name = '', double, single, bare] of text.matchAll(ATTRIBUTE)) {
    const key = name.toLowerCase();
    if (!attributes.has(key)) attributes.set(key, decode(double ?? single ?? bare ?? ''));
  }
  return attributes;
}

const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

/** Decodes the character references an escaping template engine emits. */
export function decode(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, ref: string) => {
    if (ref[0] === '#') {
      const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      return Number.isNaN(code) ? whole : String.fromCodePoint(code);
    }
    return NAMED[ref.toLowerCase()] ?? whole;
  });
}
