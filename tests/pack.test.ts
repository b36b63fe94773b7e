import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEducationApp } from '../servers/src/services/education';
import { startService, type RunningService } from './support/servers';

// The SDK as a user gets it: built, packed, installed from the tarballs into a fresh project.
const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
let project: string;
let service: RunningService;

beforeAll(async () => {
  project = mkdtempSync(join(tmpdir(), 'ae-sdk-consumer-'));
  await run(npm, ['run', 'build'], { cwd: root });
  for (const pkg of ['contracts', 'sdk']) await run(npm, ['pack', '--pack-destination', project], { cwd: join(root, pkg) });
  const tarballs = readdirSync(project).filter((f) => f.endsWith('.tgz'));
  expect(tarballs.sort()).toEqual(['agent-economy-contracts-0.1.0.tgz', 'agent-economy-sdk-0.1.0.tgz']);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  await run(npm, ['install', '--no-audit', '--no-fund', '--prefer-offline', ...tarballs.map((t) => `./${t}`)], { cwd: project });
  service = await startService(createEducationApp);
}, 300_000);

afterAll(async () => {
  await service?.close();
  if (project) rmSync(project, { recursive: true, force: true });
});

describe('the packed SDK', () => {
  it('ships only built files with types for both module systems', async () => {
    const { stdout } = await run(npm, ['pack', '--dry-run', '--json'], { cwd: join(root, 'sdk') });
    const files = (JSON.parse(stdout)[0].files as { path: string }[]).map((f) => f.path).sort();
    expect(files).toEqual(['dist/index.cjs', 'dist/index.cjs.map', 'dist/index.d.cts', 'dist/index.d.ts', 'dist/index.js', 'dist/index.js.map', 'package.json']);
  });

  it('type-checks a consumer under NodeNext resolution, and catches a misuse', async () => {
    writeFileSync(
      join(project, 'index.ts'),
      `import { createClient, PaymentRequiredError, NotFoundError } from '@agent-economy/sdk';
const client = createClient({ baseUrls: { education: process.argv[2] } });
const catalog = await client.education.catalog();
const ids: string[] = catalog.courses.map((c) => c.id);
const course = await client.education.course({ params: { courseId: ids[0]! } });
const titles: string[] = course.lessons.map((l) => l.title + l.objectives.length);
try {
  await client.education.lesson({ body: { courseId: 'rag', lessonId: 'chunking' } });
} catch (error) {
  if (error instanceof PaymentRequiredError) console.log(JSON.stringify({ amount: error.quote?.accepts[0]?.amount, titles: titles.length }));
  else if (error instanceof NotFoundError) throw error;
  else throw error;
}
`,
    );
    writeFileSync(join(project, 'bad.ts'), `import { createClient } from '@agent-economy/sdk';\nawait createClient().education.course({ params: { course: 'rag' } });\n`);
    const tsc = join(root, 'node_modules/typescript/bin/tsc');
    const flags = ['--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--skipLibCheck', '--types', 'node', '--typeRoots', join(root, 'node_modules/@types')];
    await run(process.execPath, [tsc, ...flags, 'index.ts'], { cwd: project });
    const bad = await run(process.execPath, [tsc, ...flags, 'bad.ts'], { cwd: project }).catch((e) => e);
    expect(bad.stdout).toMatch(/bad\.ts.*error TS2/);
  });

  it('runs from ESM and CommonJS against a real service', async () => {
    writeFileSync(
      join(project, 'esm.mjs'),
      `import { createClient } from '@agent-economy/sdk';
const client = createClient({ baseUrls: { education: process.argv[2] } });
const catalog = await client.education.catalog();
const error = await client.education.tutor({ body: { question: 'How should chunk overlap be chosen?' } }).catch((e) => e);
console.log(JSON.stringify({ courses: catalog.totalCourses, status: error.status, amount: error.quote.accepts[0].amount }));
`,
    );
    writeFileSync(
      join(project, 'cjs.cjs'),
      `const { createClient, NotFoundError } = require('@agent-economy/sdk');
createClient({ baseUrls: { education: process.argv[2] } }).education.course({ params: { courseId: 'nope' } })
  .catch((e) => console.log(JSON.stringify({ notFound: e instanceof NotFoundError, code: e.code })));
`,
    );
    const esm = await run(process.execPath, ['esm.mjs', service.url], { cwd: project });
    expect(JSON.parse(esm.stdout)).toEqual({ courses: 6, status: 402, amount: '30000' });
    const cjs = await run(process.execPath, ['cjs.cjs', service.url], { cwd: project });
    expect(JSON.parse(cjs.stdout)).toEqual({ notFound: true, code: 'course_not_found' });
  });
});
