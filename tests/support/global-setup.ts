import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import chromium from '@sparticuz/chromium';

// Makes the in-memory database template once, before the test files start in parallel. It runs in a
// child process: PGlite leaves handles behind that would keep the test runner from exiting promptly.
export default async function setup() {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const script =
    "const { openDatabase } = await import('./servers/src/db/index.ts'); await (await openDatabase()).close(); process.exit(0);";
  execFileSync(process.execPath, ['--import', 'tsx', '--conditions=ae-source', '--input-type=module', '-e', script], {
    cwd: root,
    stdio: 'inherit',
  });
  // Chromium for the page tests is unpacked once, here: two test files unpacking it at once could start the binary
  // while the other is still writing it (spawn ETXTBSY).
  await chromium.executablePath();
}
