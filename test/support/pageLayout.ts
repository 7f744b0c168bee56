import type { Page } from 'playwright-core';

/** Where a page's layout went wrong: two boxes that overlap, a text wider than its box, a page wider than the window. */
export interface LayoutProblem {
  kind: 'overlap' | 'overflow' | 'page_wider_than_window';
  where: string;
}

// The boxes a reader sees: headings, paragraphs, the facts' terms and values, the bordered URLs,
// controls, list items and table cells. Inline ones count by the fragments they draw (a padded,
// bordered span overlaps the row under it though its line box does not).
const BOXES = 'h1,h2,h3,p,dt,dd,.destination,button,input,label,li,th,td,code,time,figure,svg,pre,header,footer';

// Run in the page (plain JavaScript: the project's types hold no DOM). Two boxes overlap when neither
// holds the other and they share more than a pixel each way; a block whose content is wider than it,
// with nothing to scroll it, overflows.
const MEASURE = `(selector) => {
  const problems = [];
  const name = (e) =>
    e.tagName.toLowerCase() + (e.classList.length > 0 ? '.' + [...e.classList].join('.') : '') +
    ' "' + (e.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 40) + '"';
  const visible = (e) => {
    const style = getComputedStyle(e);
    return style.visibility !== 'hidden' && style.display !== 'none' && e.getBoundingClientRect().width > 0;
  };
  const boxes = [...document.querySelectorAll(selector)].filter(visible);
  const drawn = boxes.map((e) => {
    const style = getComputedStyle(e);
    const paints = style.borderTopWidth !== '0px' || style.backgroundColor !== 'rgba(0, 0, 0, 0)';
    const rects = style.display === 'inline' ? (paints ? [...e.getClientRects()] : []) : [e.getBoundingClientRect()];
    return { e, rects };
  });
  const meet = (r, s) =>
    Math.min(r.right, s.right) - Math.max(r.left, s.left) > 1 && Math.min(r.bottom, s.bottom) - Math.max(r.top, s.top) > 1;
  for (let i = 0; i < drawn.length; i++)
    for (let j = i + 1; j < drawn.length; j++) {
      const a = drawn[i];
      const b = drawn[j];
      if (a.e.contains(b.e) || b.e.contains(a.e)) continue;
      if (a.rects.some((r) => b.rects.some((s) => meet(r, s))))
        problems.push({ kind: 'overlap', where: name(a.e) + ' and ' + name(b.e) });
    }
  for (const e of boxes) {
    const style = getComputedStyle(e);
    if (style.display === 'inline' || style.overflowX !== 'visible') continue;
    if (e.scrollWidth > e.clientWidth + 1) problems.push({ kind: 'overflow', where: name(e) });
  }
  if (document.documentElement.scrollWidth > window.innerWidth + 1)
    problems.push({
      kind: 'page_wider_than_window',
      where: document.documentElement.scrollWidth + ' px in a window of ' + window.innerWidth,
    });
  return problems;
}`;

/**
 * The layout problems of what `page` shows now, measured in it (through the DevTools protocol, so the
 * page's own CSP, which allows no script, does not apply).
 */
export function layoutProblems(page: Page): Promise<LayoutProblem[]> {
  return page.evaluate(`(${MEASURE})(${JSON.stringify(BOXES)})`) as Promise<LayoutProblem[]>;
}
