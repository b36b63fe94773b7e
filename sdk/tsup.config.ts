import { defineConfig, type Options } from 'tsup';
import base from '../tsup.base';

// The library, and the agent-economy command (dist/cli.js) that bin/agent-economy.js runs once installed.
// No code splitting, so the package holds a fixed set of files (no hashed chunks).
export default defineConfig({
  ...(base as Options),
  entry: { index: 'src/index.ts', cli: 'src/cli/main.ts' },
  splitting: false,
});
