import { defineConfig } from 'vitest/config';

// Two tiers, told apart by file name (`*.test.ts`, `*.int.test.ts`): unit tests do no I/O;
// integration tests use real Postgres (embedded, or DATABASE_URL), real HTTPS
// servers on port 0 and real OAuth servers. Network is off in both except
// loopback (test/support/setupNetwork.ts).
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: [
            'test/**/*.int.test.ts',
            'test/**/*.browser.test.ts',
            'test/**/*.faults.test.ts',
            'test/**/*.gates.test.ts',
            'test/**/*.production.test.ts',
            'test/**/*.deploy.test.ts',
          ],
          setupFiles: ['test/support/setupNetwork.ts', 'test/support/quietOidcProvider.ts'],
        },
      },
      {
        test: {
          name: 'int',
          include: ['test/**/*.int.test.ts'],
          setupFiles: ['test/support/setupNetwork.ts', 'test/support/quietOidcProvider.ts'],
          globalSetup: ['test/support/globalDb.ts'],
          // A worker keeps its modules from file to file: each file builds its own stack (schema,
          // servers, broker) and closes it, so only the import is shared, and importing the broker's
          // graph per file was a third of the suite's time (614 s isolated, 469 s not, on two cores).
          isolate: false,
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        // Real broker processes killed with SIGKILL mid-flow and restarted on the same database
        // (test/faults/); run with `npm run test:faults`, not part of `npm test`. Its scenarios run
        // concurrently within a file: most of a run is waiting out a dead process's leases.
        test: {
          name: 'faults',
          include: ['test/faults/**/*.faults.test.ts'],
          setupFiles: ['test/support/setupNetwork.ts', 'test/support/quietOidcProvider.ts'],
          globalSetup: ['test/support/globalDb.ts', 'test/support/faultTotals.ts'],
          testTimeout: 150_000,
          hookTimeout: 60_000,
          // The files at once too: a run's CPU is its broker starts; the rest is idle waiting.
          maxWorkers: 2,
        },
      },
      {
        // Real Chromium (Debian's /usr/bin/chromium, installed by .ci/run);
        // run with `npm run test:browser`, not part of `npm test`.
        test: {
          name: 'browser',
          include: ['test/**/*.browser.test.ts'],
          setupFiles: ['test/support/setupNetwork.ts', 'test/support/quietOidcProvider.ts'],
          globalSetup: ['test/support/globalDb.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        // The production rehearsal (`npm run test:production`, test/production/): the broker built as
        // the image builds it, run with NODE_ENV=production among processes of its own. No network
        // setup file: the rehearsal's names are not loopback by name, and nothing here is mocked.
        test: {
          name: 'production',
          include: ['test/production/**/*.production.test.ts'],
          setupFiles: ['test/support/quietOidcProvider.ts'],
          testTimeout: 180_000,
          hookTimeout: 180_000,
        },
      },
      {
        // The broker behind the proxy configurations of deploy/ (real HAProxy and nginx, installed by
        // .ci/run), in-process on the run's Postgres; run by `npm run test:production` beside the rehearsal.
        test: {
          name: 'deploy',
          include: ['test/**/*.deploy.test.ts'],
          setupFiles: ['test/support/setupNetwork.ts', 'test/support/quietOidcProvider.ts'],
          globalSetup: ['test/support/globalDb.ts'],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        // The release gates (`npm run gates`): the service in its own process, driven end to end;
        // it brings its own Postgres (embedded, or a schema on DATABASE_URL), so no globalSetup.
        test: {
          name: 'gates',
          include: ['test/gates/**/*.gates.test.ts'],
          setupFiles: ['test/support/setupNetwork.ts', 'test/support/quietOidcProvider.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
