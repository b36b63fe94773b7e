import { defaultServerConditions } from 'vite';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { configDefaults, defineConfig } from 'vitest/config';

// With TEST_DATABASE_URL the suite runs again on PostgreSQL (CI runs it after the PGlite run). Files whose subject
// is not the database engine ran in the PGlite run and would only repeat it: the ledger, the AI provider, the SDK
// and its packaging, the CLI, the OpenAPI documents, and `npm start`, which a test runs on PGlite in its own data
// directory whatever the suite's engine. (The unit project, pure functions, takes seconds and runs in both.)
const onPostgres = !!process.env.TEST_DATABASE_URL;
const engineIndependent = [
  'tests/ai.test.ts',
  'tests/cli.test.ts',
  'tests/integrity-ledger.test.ts',
  'tests/ledger.test.ts',
  'tests/openapi.test.ts',
  'tests/sdk.test.ts',
  'tests/sdk-install.test.ts',
  'tests/start.test.ts',
];

// Files that start processes take minutes where most take seconds. Vitest runs the files it has timed longest first,
// but a fresh clone has no timings, and a long file picked last runs alone at the end: these start first.
const longest = ['tests/paid-path-chaos.test.ts', 'tests/start.test.ts', 'tests/cli.test.ts', 'tests/gateway.test.ts'];
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => {
      const index = longest.findIndex((name) => file.moduleId.endsWith(name));
      return index < 0 ? longest.length : index;
    };
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

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
    sequence: { sequencer: LongestFirst },
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
          // Threads, not child processes: V8 shares compiled WebAssembly between the threads of a process, so PGlite's
          // 9 MB module is compiled (and optimised) once a run instead of once a file. Each file still gets a fresh
          // module graph. Ten service files took 72 s and 139 s of CPU this way, 91 s and 173 s as processes.
          pool: 'threads',
          exclude: [...configDefaults.exclude, 'tests/unit/**', ...(onPostgres ? engineIndependent : [])],
          globalSetup: ['tests/support/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
