import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createClient } from '@agent-economy/sdk';
import { builtinReasoner } from '../servers/src/ai';
import { openDatabase } from '../servers/src/db';
import { curriculum } from '../servers/src/services/education/curriculum';
import { locateLesson, quizTask, toStoredQuestions } from '../servers/src/services/education/domain';
import { educationStore, migrations } from '../servers/src/services/education/store';
import { migrate } from '../servers/src/db';

// `npm start` as an operator runs it: a real process, a data directory, Ctrl-C to stop.
const root = fileURLToPath(new URL('..', import.meta.url));
const dataDir = mkdtempSync(join(tmpdir(), 'ae-start-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function start(env: Record<string, string>): { child: ChildProcess; output: () => string; exit: Promise<number | null> } {
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=ae-source', 'servers/src/main.ts'], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: 'warn', DATA_DIR: dataDir, DATABASE_URL: '', ...env },
  });
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exit };
}

async function ready(run: ReturnType<typeof start>): Promise<void> {
  // Waits for the table the process prints once every service listens (bounded, not a timing assertion).
  for (let i = 0; i < 600 && !run.output().includes('Ctrl-C stops'); i++) {
    if (run.child.exitCode !== null) throw new Error(`npm start exited: ${run.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  if (!run.output().includes('Ctrl-C stops')) throw new Error(`npm start did not come up: ${run.output()}`);
}

describe('npm start', () => {
  const quizId = 'quiz_5a5a5a5a5a5a5a5a5a5a5a5a';

  it('serves, writes the service table, stops on SIGINT and keeps its state across restarts', async () => {
    const port = await freePort();
    const env = { EDUCATION_PORT: String(port) };

    const first = start(env);
    await ready(first);
    const table = JSON.parse(readFileSync(join(dataDir, 'services.json'), 'utf8'));
    expect(table.services).toEqual([
      expect.objectContaining({ id: 'education', url: `http://127.0.0.1:${port}`, docs: `http://127.0.0.1:${port}/docs` }),
    ]);
    expect(first.output()).toContain(`education  http://127.0.0.1:${port}`);
    const client = createClient({ baseUrls: { education: `http://127.0.0.1:${port}` }, maxRetries: 0 });
    expect((await client.education.catalog()).totalCourses).toBe(6);
    expect(existsSync(join(dataDir, 'keys', 'education-payto.json'))).toBe(true);
    first.child.kill('SIGINT');
    expect(await first.exit).toBe(0);

    // While stopped, a quiz is put in the service's database, as the paid route would have stored it.
    const database = await openDatabase({ dataDir: join(dataDir, 'db') });
    await migrate(database.db, 'education', migrations);
    const { output, generator } = await builtinReasoner().run(quizTask(locateLesson(curriculum, 'memory', 'context-windows'), 3, quizId));
    const questions = toStoredQuestions(output);
    await educationStore(database.db).saveQuiz({ id: quizId, courseId: 'memory', lessonId: 'context-windows', questions, generator, createdAt: new Date() });
    await database.close();

    const answers = questions.map((q) => ({ questionId: q.id, choice: q.answer }));
    for (const attempt of [1, 2]) {
      const run = start(env);
      await ready(run);
      const result = await client.education.quiz({ body: { action: 'grade', quizId, answers } });
      expect(result).toMatchObject({ quizId, attempt, score: 3, passed: true });
      const again = JSON.parse(readFileSync(join(dataDir, 'services.json'), 'utf8'));
      expect(again.services[0].payTo).toBe(table.services[0].payTo);
      run.child.kill('SIGINT');
      expect(await run.exit).toBe(0);
    }
  }, 240_000);

  it('refuses bad configuration with a message naming each variable', async () => {
    const run = start({
      EDUCATION_PORT: 'eighty',
      SOLANA_NETWORK: 'devnet',
      LLM_BASE_URL: 'http://127.0.0.1:1/v1',
      EDUCATION_PRICES: '{"lesso":"0.04","tutor":"ten cents"}',
    });
    expect(await run.exit).toBe(2);
    expect(run.output()).toContain('EDUCATION_PRICES: "lesso" is not a route of education');
    expect(run.output()).toContain('EDUCATION_PRICES: "tutor": usd must be a USD decimal string');
    expect(run.output()).toContain('EDUCATION_PORT: must be a port number 0-65535');
    expect(run.output()).toContain('SOLANA_NETWORK: must be a CAIP-2 chain id');
    expect(run.output()).toContain('LLM_MODEL: required when LLM_BASE_URL is set');
  }, 60_000);
});
