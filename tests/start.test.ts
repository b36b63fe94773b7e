import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { SOLANA_DEVNET, USDC_DEVNET, envPrefix, routeMeta, services } from '@agent-economy/contracts';
import { createClient, walletFromFile } from '@agent-economy/sdk';
import { address, createSolanaRpc } from '@solana/kit';
import { builtinReasoner } from '../servers/src/ai';
import { openDatabase } from '../servers/src/db';
import { curriculum } from '../servers/src/services/education/curriculum';
import { locateLesson, quizTask, toStoredQuestions } from '../servers/src/services/education/domain';
import { educationStore, migrations } from '../servers/src/services/education/store';
import { migrate } from '../servers/src/db';
import { deployments, serviceApps, type DeploymentId } from '../servers/src/services';
import { freePort } from './support/servers';

// `npm start` as an operator runs it: a real process, a data directory, Ctrl-C to stop.
const root = fileURLToPath(new URL('..', import.meta.url));
const dataDir = mkdtempSync(join(tmpdir(), 'ae-start-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

function start(env: Record<string, string>): {
  child: ChildProcess;
  output: () => string;
  exit: Promise<number | null>;
} {
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
  // Waits for the table the process prints once every service listens: bounded at 3 minutes, for a machine
  // busy with the rest of the suite (alone it takes about 8 s), and not a timing assertion.
  for (let i = 0; i < 1800 && !run.output().includes('Ctrl-C stops'); i++) {
    if (run.child.exitCode !== null) throw new Error(`npm start exited: ${run.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  if (!run.output().includes('Ctrl-C stops')) throw new Error(`npm start did not come up: ${run.output()}`);
}

/**
 * A service's /health status once it answers 200, or the last one after a minute. Just after start, on a machine busy
 * with the rest of the suite, a dependency's first check can outlast its 3 s limit (503 until the next check): bounded,
 * not a timing assertion.
 */
async function healthy(url: string): Promise<number> {
  let status = 0;
  for (let i = 0; i < 120 && status !== 200; i++) {
    if (i) await new Promise((r) => setTimeout(r, 500));
    status = (await fetch(`${url}/health`)).status;
  }
  return status;
}

/**
 * `npm start` on free ports (a running `npm start` on the default ports does not get in the way), up and ready. A port
 * chosen free can be taken by another test file before npm start binds it: then it starts again on others.
 */
async function launch(extra: Record<string, string>) {
  const mounted = deployments.map((s) => s.id).filter((id) => serviceApps[id as DeploymentId]);
  for (let attempt = 1; ; attempt++) {
    const ports = Object.fromEntries(await Promise.all(mounted.map(async (id) => [id, await freePort()] as const)));
    const ledgerPort = await freePort();
    const env = {
      ...Object.fromEntries(mounted.map((id) => [`${envPrefix(id)}_PORT`, String(ports[id])])),
      LEDGER_PORT: String(ledgerPort),
      CONSOLE_PORT: String(await freePort()),
      ...extra,
    };
    const run = start(env);
    try {
      await ready(run);
      return { run, env, mounted, ports, ledgerPort };
    } catch (error) {
      if (attempt < 3 && /is taken/.test(run.output())) continue;
      throw error;
    }
  }
}

describe('npm start', () => {
  const quizId = 'quiz_5a5a5a5a5a5a5a5a5a5a5a5a';

  it('serves, writes the service table, stops on SIGINT and keeps its state across a restart', async () => {
    // No warm-up traffic: the balances below must be the demo wallet's purchase alone.
    const { run: first, env, mounted, ports, ledgerPort } = await launch({ SIMULATE_WARMUP_STEPS: '0' });
    const port = ports.education!;
    const table = JSON.parse(readFileSync(join(dataDir, 'services.json'), 'utf8'));
    expect(table.services).toEqual(
      mounted.map((id) =>
        expect.objectContaining({
          id,
          url: `http://127.0.0.1:${ports[id]}`,
          docs: `http://127.0.0.1:${ports[id]}/docs`,
        }),
      ),
    );
    for (const { url } of table.services) expect(await healthy(url)).toBe(200);
    const seller = table.services.find((s: { id: string }) => s.id === 'education').wallet;
    expect(table.chain).toMatchObject({
      rpcUrl: `http://127.0.0.1:${ledgerPort}`,
      network: SOLANA_DEVNET,
      stablecoin: USDC_DEVNET,
      local: true,
    });
    expect(table.demoWallet).toMatchObject({ usd: '100', keyFile: join(dataDir, 'keys', 'demo-agent.json') });
    expect(first.output()).toMatch(new RegExp(`education +http://127.0.0.1:${port}`));
    expect(first.output()).toContain(`local Solana ledger posing as devnet`);
    const client = createClient({ baseUrls: { education: `http://127.0.0.1:${port}` }, maxRetries: 0 });
    expect((await client.education.catalog()).totalCourses).toBe(6);
    expect(existsSync(join(dataDir, 'keys', 'education.json'))).toBe(true);

    // The demo wallet buys a lesson on the local ledger; the balances must survive the restarts below.
    const buyer = createClient({
      baseUrls: { education: `http://127.0.0.1:${port}` },
      maxRetries: 0,
      wallet: await walletFromFile(table.demoWallet.keyFile),
      payments: { rpcUrl: table.chain.rpcUrl },
    });
    const lesson = await buyer.education.lesson.withResponse({
      body: { courseId: 'tool-use', lessonId: 'function-calling' },
    });
    expect(lesson.payment).toMatchObject({ amountUsd: '0.05', payer: table.demoWallet.address, payTo: seller });
    const balances = async () => {
      const rpc = createSolanaRpc(table.chain.rpcUrl);
      const of = async (owner: string) => {
        const { value } = await rpc
          .getTokenAccountsByOwner(address(owner), { mint: address(USDC_DEVNET) }, { encoding: 'jsonParsed' })
          .send();
        return value[0]!.account.data.parsed.info.tokenAmount.amount;
      };
      return { demo: await of(table.demoWallet.address), education: await of(seller) };
    };
    expect(await balances()).toEqual({ demo: '99950000', education: '50000' });
    first.child.kill('SIGINT');
    expect(await first.exit).toBe(0);

    // While stopped, a quiz is put in the service's database, as the paid route would have stored it.
    const database = await openDatabase({ dataDir: join(dataDir, 'db') });
    await migrate(database.db, 'education', migrations);
    const { output, generator } = await builtinReasoner().run(
      quizTask(locateLesson(curriculum, 'memory', 'context-windows'), 3, quizId),
    );
    const questions = toStoredQuestions(output);
    await educationStore(database.db).saveQuiz({
      id: quizId,
      courseId: 'memory',
      lessonId: 'context-windows',
      questions,
      generator,
      createdAt: new Date(),
    });
    await database.close();

    const answers = questions.map((q) => ({ questionId: q.id, choice: q.answer }));
    const run = start(env);
    await ready(run);
    for (const attempt of [1, 2]) {
      const result = await client.education.quiz({ body: { action: 'grade', quizId, answers } });
      expect(result).toMatchObject({ quizId, attempt, score: 3, passed: true });
    }
    const again = JSON.parse(readFileSync(join(dataDir, 'services.json'), 'utf8'));
    expect(again.services.find((s: { id: string }) => s.id === 'education').wallet).toBe(seller);
    // The ledger kept its accounts: the payment is still there and the demo wallet was not topped up again.
    expect(await balances()).toEqual({ demo: '99950000', education: '50000' });
    run.child.kill('SIGINT');
    expect(await run.exit).toBe(0);
  }, 600_000);

  it('a fresh start warms the ledger up, so every contract example of the chain data services answers, with its source', async () => {
    const fresh = mkdtempSync(join(tmpdir(), 'ae-warm-'));
    const { run } = await launch({ DATA_DIR: fresh });
    try {
      // Bounded like ready(): the warm-up's 60 steps take seconds alone, longer beside the rest of the suite.
      for (let i = 0; i < 3000 && !run.output().includes('Warm-up done'); i++)
        await new Promise((r) => setTimeout(r, 100));
      expect(run.output()).toMatch(/Warm-up done: [1-9]\d* paid calls/);
      const table = JSON.parse(readFileSync(join(fresh, 'services.json'), 'utf8'));
      const client = createClient({
        baseUrls: Object.fromEntries(table.services.map((s: { id: string; url: string }) => [s.id, s.url])),
        maxRetries: 0,
        wallet: await walletFromFile(table.demoWallet.keyFile),
        network: table.chain.network,
        payments: { rpcUrl: table.chain.rpcUrl, maxPerCallUsd: '1', maxTotalUsd: '20' },
      }) as unknown as Record<string, Record<string, (args: unknown) => Promise<{ source?: { mode: string } }>>>;
      const camel = (id: string) => id.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
      const answered: string[] = [];
      for (const service of services.filter((s) =>
        ['pricing', 'intel', 'conviction', 'tokens', 'exchange-flows'].includes(s.id),
      )) {
        for (const [key, route] of Object.entries(service.router)) {
          const example = routeMeta(route as { metadata?: unknown }).example ?? {};
          const result = await client[camel(service.id)]![key]!(example).catch((error: unknown) => {
            throw new Error(
              `${service.id}.${key} example failed: ${String((error as { body?: unknown }).body ? JSON.stringify((error as { body: unknown }).body) : error)}`,
            );
          });
          // Every data answer says where its numbers come from.
          if (result && typeof result === 'object' && 'source' in result)
            expect(['chain', 'live', 'simulated'], `${service.id}.${key}`).toContain(result.source!.mode);
          answered.push(`${service.id}.${key}`);
        }
      }
      expect(answered).toHaveLength(7 + 6 + 5 + 6 + 4);
    } finally {
      run.child.kill('SIGINT');
      await run.exit;
      rmSync(fresh, { recursive: true, force: true });
    }
  }, 600_000);

  it('refuses bad configuration with a message naming each variable', async () => {
    const run = start({
      EDUCATION_PORT: 'eighty',
      SOLANA_NETWORK: 'devnet',
      LLM_BASE_URL: 'http://127.0.0.1:1/v1',
      EDUCATION_PRICES: '{"lesso":"0.04","tutor":"ten cents"}',
      FACILITATOR_SETTLE_CAP: '0',
      IDENTITY_TRUST_ANCHORS: 'did:agent:6Qz8KjwA1Ef2Tr8LhM3vNx,did:web:example.com',
    });
    expect(await run.exit).toBe(2);
    expect(run.output()).toContain('EDUCATION_PRICES: "lesso" is not a route of education');
    expect(run.output()).toContain('EDUCATION_PRICES: "tutor": usd must be a USD decimal string');
    expect(run.output()).toContain('EDUCATION_PORT: must be a port number 0-65535');
    expect(run.output()).toContain('SOLANA_NETWORK: must be a CAIP-2 chain id');
    expect(run.output()).toContain('LLM_MODEL: required when LLM_BASE_URL is set');
    expect(run.output()).toContain('FACILITATOR_SETTLE_CAP:');
    expect(run.output()).toContain('IDENTITY_TRUST_ANCHORS: "did:web:example.com" must be a did:agent DID');
  }, 60_000);
});
