import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

// Workspace packages resolve to their TypeScript sources through the "ae-source" export condition.
export default defineConfig({
  ssr: { resolve: { conditions: ['ae-source', ...defaultServerConditions] } },
  test: {
    include: ['tests/**/*.test.ts'],
    globalSetup: ['tests/support/global-setup.ts'],
    // Most test files wait on the ledger's slots, child processes and HTTP rather than on the CPU: four at a time
    // finish far sooner than one per core (vitest's default) even on two cores.
    maxWorkers: 4,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    env: { LOG_LEVEL: 'silent' },
  },
});
