import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// Makes the in-memory database template once, before the test files start in parallel. It runs in a
// child process: PGlite leaves handles behind that would keep the test runner from exiting promptly.
export default function setup() {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const script =
    "const { openDatabase } = await import('./servers/src/db/index.ts'); await (await openDatabase()).close(); process.exit(0);";
  execFileSync(process.execPath, ['--import', 'tsx', '--conditions=ae-source', '--input-type=module', '-e', script], {
    cwd: root,
    stdio: 'inherit',
  });
}
