import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';

export const viewsDir = fileURLToPath(new URL('../../views/', import.meta.url));

export type Render = (view: string, model: Record<string, unknown>) => string;

/**
 * The one render function. Interpolations are HTML-escaped by
 * default; eta refuses any template or include outside `views/`. Raw output
 * (`<%~`) is allowed only for `include(...)` and a layout's `it.body`, which a
 * unit test enforces over every file in `views/`.
 */
export function createRender(options: { cache: boolean }): Render {
  const eta = new Eta({ views: viewsDir, autoEscape: true, cache: options.cache, defaultExtension: '.eta' });
  return (view, model) => eta.render(view, model);
}
