// Dependencies point one way: no import cycle anywhere in src/, type-only imports included
// (they tie modules together for the reader and the type checker as much as runtime imports do),
// and folders that once imported each other now import in one direction only.
// Production code (everything in src/ but src/dev/, reachable from dist/main.js and bin/broker.js)
// runs on a production install (`npm ci --omit=dev`, the Dockerfile's production target): it imports
// no devDependency and reaches the development stack only by dynamic import, in development mode.
// Run by `npm run lint`; test/lint/dependencyRules.test.ts plants violations to show each rule fails.
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
    // Folders point one way (the pairs that once went both ways). Paths match anywhere in the
    // path, so the rules' own test can plant a `src/` tree elsewhere.
    ...[
      ['auth', 'web', 'sign-in logic under the routes that serve it'],
      ['errors', 'mcp', 'errors/ holds AppError and the HTTP table; each wire maps errors itself'],
      ['flow', 'broker', 'the flow aggregate under the use cases that move it'],
      ['ledger', 'broker', 'the ledger records flows; the broker writes to it'],
      ['secrets', 'broker', 'the vault under the flows that fill it'],
      ['providers', 'oauth', 'provider facts (catalog, conformers) under the OAuth client that uses them'],
      ['providers', 'mcp', 'providers know nothing of the MCP wire'],
      ['notes', 'mcp', 'a domain does not import a transport'],
      ['flow', 'mcp', 'a domain does not import a transport'],
      ['dev', 'cli', 'the CLI uses the development servers, not the other way'],
      ['runtime', 'dev', 'the runtime is told about development servers, it does not load them'],
    ].map(([from, to, why]) => ({
      name: `${from}-not-${to}`,
      severity: 'error',
      comment: `${from}/ may not import ${to}/: ${why}.`,
      from: { path: `(^|/)src/${from}/` },
      to: { path: `(^|/)src/${to}/` },
    })),
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.d\\.ts$' },
  },
};
