import { defaultServerConditions } from 'vite';
import { configDefaults, defineConfig } from 'vitest/config';

// Workspace packages resolve to their TypeScript sources through the "ae-source" export condition. Not "module":
// the runner hands its conditions to Node, and a package whose "module" export is a bundler build that Node cannot
// load (@opentelemetry/api 1.9: extensionless imports) must load under test as it does under npm start.
export default defineConfig({
  ssr: { resolve: { conditions: ['ae-source', ...defaultServerConditions.filter((c) => c !== 'module')] } },
  test: {
    env: { LOG_LEVEL: 'silent' },
    // Most integration files wait on the ledger's slots, child processes and HTTP rather than on the CPU: four at a
    // time finish far sooner than one per core (vitest's default) even on two cores. Set here for both projects:
    // projects run side by side (`npm test`) only with one maxWorkers.
    maxWorkers: 4,
    projects: [
      // Pure functions only (formulas, domain rules, transaction checks): no server, database, ledger or child
      // process, so no database template. `npm run test:unit` runs this one alone.
      {
        extends: true,
        // Pure modules share nothing between files: one module graph per worker (no isolation) saves loading the
        // contracts and the domain modules again for each file. The market model's five-year walks take seconds
        // on a busy machine, beyond vitest's default 5 s.
        test: {
          name: 'unit',
          include: ['tests/unit/**/*.test.ts'],
          pool: 'threads',
          isolate: false,
          testTimeout: 30_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['tests/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'tests/unit/**'],
          globalSetup: ['tests/support/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
