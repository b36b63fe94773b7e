import { defineConfig } from 'vitest/config';

// Workspace packages resolve to their TypeScript sources through the "ae-source" export condition.
export default defineConfig({
  resolve: { conditions: ['ae-source', 'module', 'node', 'import', 'default'] },
  ssr: { resolve: { conditions: ['ae-source', 'module', 'node', 'import', 'default'], externalConditions: ['ae-source'] } },
  test: {
    include: ['tests/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    env: { LOG_LEVEL: 'silent' },
  },
});
