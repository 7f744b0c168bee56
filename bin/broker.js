#!/usr/bin/env node
// The `broker` command. Runs the compiled CLI when `npm run build` has made
// one (the production image has it), else the TypeScript source through tsx,
// a devDependency that a checkout's full `npm ci` installs.
import { existsSync } from 'node:fs';

const compiled = new URL('../dist/cli/broker.js', import.meta.url);
if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(new URL('../src/cli/broker.ts', import.meta.url).href);
}
