// Dependencies point one way: no import cycle anywhere in src/, type-only imports included
// (they tie modules together for the reader and the type checker as much as runtime imports do),
// and the folders stand in one order, each importing only those below it.
// Production code (everything in src/ but src/dev/, reachable from dist/main.js and bin/broker.js)
// runs on a production install (`npm ci --omit=dev`, the Dockerfile's production target): it imports
// no devDependency and reaches the development stack only by dynamic import, in development mode.
// Run by `npm run lint`; test/lint/dependencyRules.test.ts plants violations to show each rule fails.
/** The files directly in src/ (main.ts, server.ts, app.ts, buildBrokerDeps.ts). */
const ROOT = '.';
const pathOf = (folder) => (folder === ROOT ? '(^|/)src/[^/]+$' : `(^|/)src/${folder}/`);

/** One rule per folder: it may not import any folder above it in `order` (lowest first). */
function layerRules(order) {
  return order.slice(0, -1).map((folder, i) => {
    const above = order.slice(i + 1);
    const name = folder === ROOT ? 'root' : folder;
    return {
      name: `layer-${name}`,
      severity: 'error',
      comment: `${folder === ROOT ? 'src/*' : `${folder}/`} imports only what stands below it; these stand above: ${above
        .map((f) => (f === ROOT ? 'src/*' : f))
        .join(', ')}. Move what both need below both, or pass it in from the composition root.`,
      from: { path: pathOf(folder) },
      // A package's own src/ (node_modules/x/build/src/index.js) is no folder of ours.
      to: { path: `(${above.map(pathOf).join('|')})`, pathNot: 'node_modules' },
    };
  });
}

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import cycle: move what both sides need into a module both can import.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'production-not-dev-dependency',
      severity: 'error',
      comment:
        'Production code imports a devDependency, which a production install lacks: move the package to dependencies, or the code to src/dev/.',
      from: { path: '(^|/)src/', pathNot: '(^|/)src/dev/' },
      // A type-only import is erased by the compiler: it needs no package at run time.
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'no-undeclared-dependency',
      severity: 'error',
      comment:
        'A package that package.json does not name is there only as some other package’s dependency: declare it.',
      from: { path: '(^|/)src/' },
      to: { dependencyTypes: ['npm-no-pkg', 'npm-unknown'] },
    },
    {
      name: 'production-not-dev',
      severity: 'error',
      comment:
        'Production code imports the development stack statically: load it with `await import()` in development mode only (src/main.ts), or move what production needs out of src/dev/.',
      from: { path: '(^|/)src/', pathNot: '(^|/)src/dev/' },
      to: { path: '(^|/)src/dev/', dependencyTypesNot: ['dynamic-import'] },
    },
    // Folders stand in one order, the lowest first, and a folder imports only folders below it, so
    // every pair of folders has one direction and an arrow that runs back up fails here (the files
    // directly in src/, the composition root, sit above every folder but cli/). Paths match anywhere
    // in the path, so the rules' own test can plant a `src/` tree elsewhere. To add a folder, place it.
    ...layerRules([
      'runtime',
      'security',
      'tls',
      'shared',
      'crypto',
      'telemetry',
      'config',
      'db',
      'errors',
      'events',
      'health',
      'providers',
      'oauth',
      'auth',
      'flow',
      'notes',
      'ledger',
      'metrics',
      'secrets',
      'broker',
      'web',
      'connect',
      'mcp',
      'dev',
      'upstream',
      'jobs',
      'ops',
      ROOT,
      'cli',
    ]),
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.d\\.ts$' },
  },
};
