import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SETTING_NAMES, settingDefaults } from '../../src/config/config.js';

// docs/configuration.md against the one schema that reads the environment (src/config/config.ts): a
// variable added, renamed or removed in code, or a default changed, fails here until the page says so.
const page = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
const rows = new Map<string, string>();
for (const line of page.split('\n')) {
  if (!line.startsWith('| `')) continue;
  const [, names = '', defaults = ''] = line.split('|');
  for (const [, name] of names.matchAll(/`([A-Z][A-Z0-9_]+)`/g)) rows.set(name!, defaults);
}

describe('docs/configuration.md', () => {
  it('names every variable the schema reads, and none it does not', () => {
    expect([...rows.keys()].sort()).toEqual([...SETTING_NAMES].sort());
  });

  it("gives each variable's default as the schema has it", () => {
    const wrong = Object.entries(settingDefaults())
      .filter(([, value]) => typeof value !== 'object')
      .filter(([name, value]) => !rows.get(name)!.includes(String(value)))
      .map(([name, value]) => `${name}: the schema's default is ${String(value)}`);
    expect(wrong).toEqual([]);
  });
});
