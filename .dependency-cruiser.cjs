// Dependencies point one way: no import cycle anywhere in src/, type-only imports included
// (they tie modules together for the reader and the type checker as much as runtime imports do).
// Run by `npm run lint`; test/lint/dependencyRules.test.ts plants a cycle to show it fails.
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
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.d\\.ts$' },
  },
};
