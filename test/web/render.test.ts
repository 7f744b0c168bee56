import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRender, viewsDir } from '../../src/web/render.js';

async function viewFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((e) => (e.isDirectory() ? viewFiles(join(dir, e.name)) : [join(dir, e.name)])),
  );
  return nested.flat().filter((f) => f.endsWith('.eta'));
}

describe('render', () => {
  it('escapes interpolated values by default', () => {
    const html = createRender({ cache: false })('error', {
      title: '<script>alert(1)</script>',
      message: '"><img src=x onerror=alert(1)>',
      status: 400,
      requestId: 'r',
    });
    expect(html).not.toContain('<script>alert(1)</script>');
    expect(html).not.toContain('<img src=x');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
  });

  it('uses raw output only for a layout body or an include, in every view', async () => {
    const offenders: string[] = [];
    for (const file of await viewFiles(viewsDir)) {
      const text = await readFile(file, 'utf8');
      for (const match of text.matchAll(/<%~\s*([^%]*)%>/g)) {
        const expression = match[1]!.trim();
        if (expression !== 'it.body' && !/^include\(/.test(expression))
          offenders.push(`${relative(viewsDir, file)}: ${expression}`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it('refuses a template outside the views folder', () => {
    expect(() => createRender({ cache: false })('../package.json', {})).toThrow(/not in the views directory/);
  });
});
