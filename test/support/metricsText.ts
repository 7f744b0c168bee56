/** One sample of a Prometheus text exposition: `name{labels} value`. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** The value of the one sample named `name` whose labels include `labels`; undefined when there is none. */
export function sampleValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = parseExposition(text).filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${found.length} samples`);
  return found[0]?.value;
}

/** The exposition lines of the named metric families, sorted: for comparing two instances. */
export function familyLines(text: string, ...names: string[]): string[] {
  return text
    .split('\n')
    .filter(
      (line) =>
        !line.startsWith('#') &&
        names.some((n) => line.startsWith(`${n}{`) || line.startsWith(`${n} `) || line.startsWith(`${n}_`)),
    )
    .sort();
}
