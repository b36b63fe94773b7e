import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SOLANA_DEVNET, USDC_DEVNET, listRoutes, education } from '@agent-economy/contracts';
import { walletFromFile } from '@agent-economy/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEconomy, type Economy } from './support/economy';

// The agent-economy command as a user runs it: the package's bin (sdk/bin/agent-economy.js, which runs the
// TypeScript source through tsx with the ae-source condition in the monorepo) as a child process, against a
// real ledger, facilitator and education service, found through a services.json in a temporary directory.

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = join(root, 'sdk', 'bin', 'agent-economy.js');
let economy: Economy;
let dir: string;
let deployment: string;
let seller: string;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the bin with node; `linked` runs npm's link in node_modules/.bin instead, as `npx agent-economy` does. */
function cli(args: string[], env: Record<string, string> = {}, linked = false): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      linked ? join(root, 'node_modules', '.bin', 'agent-economy') : process.execPath,
      linked ? args : [bin, ...args],
      {
        cwd: dir,
        // HOME in the temporary directory: nothing the command writes by default lands in the real one.
        env: {
          ...process.env,
          HOME: dir,
          AGENT_ECONOMY_WALLET: '',
          AGENT_ECONOMY_SPEND_LOG: join(dir, 'spend.jsonl'),
          AGENT_ECONOMY_DEPLOYMENT: deployment,
          NO_COLOR: '1',
          ...env,
        },
      },
      (error, stdout, stderr) =>
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

beforeAll(async () => {
  economy = await startEconomy();
  dir = mkdtempSync(join(tmpdir(), 'ae-cli-'));
  seller = economy.education.context.wallet.address;
  const keyFile = join(dir, 'demo-agent.json');
  writeFileSync(keyFile, JSON.stringify([...economy.buyer.secretKey]));
  deployment = join(dir, 'services.json');
  writeFileSync(
    deployment,
    JSON.stringify({
      chain: {
        network: SOLANA_DEVNET,
        rpcUrl: economy.rpcUrl,
        stablecoin: USDC_DEVNET,
        local: true,
        faucet: `${economy.rpcUrl}/faucet`,
      },
      demoWallet: { address: economy.buyer.address, keyFile },
      services: [
        { id: 'facilitator', url: economy.facilitator.url, wallet: economy.feePayer.address },
        { id: 'education', url: economy.education.url, wallet: seller },
      ],
    }),
  );
});

afterAll(async () => {
  await economy?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// Each test runs the command several times, each a Node process loading tsx and the contracts: on a busy
// machine that is seconds apiece, so the tests get more than the default minute.
describe('agent-economy', { timeout: 240_000 }, () => {
  it('--help (through the npx link) lists the commands and the exit codes; no command is a usage error', async () => {
    // Independent runs of the command, started together: each is a Node process that loads tsx.
    const [help, call, none, unknown] = await Promise.all([
      cli(['--help'], {}, true),
      cli(['call', '--help']),
      cli([]),
      cli(['sevrices']),
    ]);
    expect(help.code).toBe(0);
    for (const command of [
      'services',
      'routes <service>',
      'call <service>.<route>',
      'wallet new|balance|fund',
      'spend',
      'mcp',
    ])
      expect(help.stdout).toContain(command);
    expect(help.stdout).toContain('3  payment');
    expect(call.code).toBe(0);
    expect(call.stdout).toContain('--max-usd <usd>');
    expect(call.stdout).toContain('2  validation');
    expect(none.code).toBe(1);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('unknown command "sevrices"');
  });

  it('services lists the deployment with wallets and health, as a table and as JSON', async () => {
    const [table, json] = await Promise.all([cli(['services']), cli(['services', '--json'])]);
    expect(table.code).toBe(0);
    const line = table.stdout.split('\n').find((l) => l.startsWith('education'))!;
    expect(line.split(/\s+/)).toEqual(['education', economy.education.url, seller, 'ok']);
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout) as {
      services: { id: string; url: string; wallet: string; health: string }[];
    };
    expect(parsed.services.map((s) => [s.id, s.url, s.wallet, s.health])).toEqual([
      ['facilitator', economy.facilitator.url, economy.feePayer.address, 'ok'],
      ['education', economy.education.url, seller, 'ok'],
    ]);
  });

  it('routes lists every route of a service with method, path and price from the contract', async () => {
    const [table, listed, unknown] = await Promise.all([
      cli(['routes', 'education']),
      cli(['routes', 'education', '--json']),
      cli(['routes', 'nope']),
    ]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^lesson\s+POST\s+\/api\/lesson\s+0\.05\s+Full AI-generated lesson$/m);
    expect(table.stdout).toMatch(/^catalog\s+GET\s+\/api\/catalog\s+free\s/m);
    expect(table.stdout).toMatch(/^quiz\s+POST\s+\/api\/quiz\s+0–0\.03 \(tiered: generate 0\.03, grade 0\)/m);
    const json = JSON.parse(listed.stdout) as {
      routes: { route: string; method: string; path: string; payment: unknown }[];
    };
    expect(json.routes.map((r) => r.route)).toEqual(listRoutes(education.router).map((r) => r.key));
    expect(json.routes.find((r) => r.route === 'lesson')).toMatchObject({
      method: 'POST',
      path: '/api/lesson',
      payment: { kind: 'fixed', usd: '0.05' },
    });
    expect(unknown.code).toBe(1);
  });

  it('call pays a lesson within --max-usd: prints the lesson and the receipt, and the seller is paid on chain', async () => {
    const before = {
      buyer: economy.ledger.tokenBalance(economy.buyer.address),
      seller: economy.ledger.tokenBalance(seller),
    };
    const run = await cli([
      'call',
      'education.lesson',
      '--body',
      '{"courseId":"rag","lessonId":"chunking"}',
      '--max-usd',
      '0.1',
    ]);
    expect(run.stderr).toContain(`Paid 0.05 USD (50000 atomic units) to ${seller}`);
    expect(run.code).toBe(0);
    const lesson = JSON.parse(run.stdout) as { courseId: string; lessonId: string; title: string };
    expect(lesson).toMatchObject({ courseId: 'rag', lessonId: 'chunking', title: 'Chunking Documents' });
    const transaction = /transaction (\w+)/.exec(run.stderr)![1]!;
    expect(economy.ledger.tokenBalance(seller)).toBe(before.seller + 50_000n);
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(before.buyer - 50_000n);

    // The receipt is in the spend log.
    const spend = JSON.parse((await cli(['spend', '--json'])).stdout) as {
      receipts: { service: string; route: string; amount: string; payTo: string; transaction: string }[];
      totalUsd: string;
    };
    expect(spend.receipts).toContainEqual(
      expect.objectContaining({
        service: 'education',
        route: 'POST /api/lesson',
        amount: '50000',
        payTo: seller,
        transaction,
      }),
    );
    const table = await cli(['spend']);
    expect(table.stdout).toContain(transaction);
  });

  it('call --json prints {result, receipt} as one JSON document', async () => {
    const before = economy.ledger.tokenBalance(seller);
    const run = await cli([
      'call',
      'education.exercise',
      '--body',
      '{"courseId":"rag","lessonId":"chunking"}',
      '--max-usd',
      '0.05',
      '--json',
    ]);
    expect(run.code).toBe(0);
    const { result, receipt } = JSON.parse(run.stdout) as {
      result: { lessonId: string; starterCode: string };
      receipt: { amount: string; amountUsd: string; payTo: string; payer: string; transaction: string };
    };
    expect(result.lessonId).toBe('chunking');
    expect(receipt).toMatchObject({ amount: '50000', amountUsd: '0.05', payTo: seller, payer: economy.buyer.address });
    expect(receipt.transaction).toMatch(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/);
    expect(economy.ledger.tokenBalance(seller)).toBe(before + 50_000n);
  });

  it('call refuses before paying when the quote is over --max-usd: budget exit code, nothing moves', async () => {
    const before = {
      buyer: economy.ledger.tokenBalance(economy.buyer.address),
      seller: economy.ledger.tokenBalance(seller),
    };
    const run = await cli([
      'call',
      'education.lesson',
      '--body',
      '{"courseId":"rag","lessonId":"chunking"}',
      '--max-usd',
      '0.01',
    ]);
    expect(run.code).toBe(3);
    expect(run.stderr).toContain('costs 0.05 USD; the per-call budget of 0.01 USD');
    expect(run.stdout).toBe('');
    const json = await cli([
      'call',
      'education.lesson',
      '--body',
      '{"courseId":"rag","lessonId":"chunking"}',
      '--max-usd',
      '0.049999',
      '--json',
    ]);
    expect(json.code).toBe(3);
    expect(JSON.parse(json.stdout).error).toMatchObject({
      code: 'budget_exceeded',
      exitCode: 3,
      details: { limit: 'perCall', limitUsd: '0.049999', priceUsd: '0.05' },
    });
    expect(economy.ledger.tokenBalance(seller)).toBe(before.seller);
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(before.buyer);
  });

  it('call checks the input against the contract before any request: exit 2 naming the field', async () => {
    const before = economy.ledger.tokenBalance(economy.buyer.address);
    const [missing, bad, params, notJson] = await Promise.all([
      cli(['call', 'education.lesson', '--body', '{"courseId":"rag"}', '--max-usd', '0.1']),
      cli(['call', 'education.lesson', '--body', '{"courseId":"RAG!","lessonId":"chunking","extra":1}', '--json']),
      cli(['call', 'education.course']),
      cli(['call', 'education.lesson', '--body', '{courseId:rag}']),
    ]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('body.lessonId: Required');
    expect(bad.code).toBe(2);
    const fields = (JSON.parse(bad.stdout).error.details.fields as { field: string; message: string }[]).map(
      (f) => f.field,
    );
    expect(fields).toEqual(expect.arrayContaining(['body.courseId', 'body']));
    expect(params.code).toBe(2);
    expect(params.stderr).toContain('params.courseId: Required');
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toContain('body: not JSON');
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(before);
  });

  it('call of a free route needs no payment; a service error and an unreachable service have their own exit codes', async () => {
    const down = join(dir, 'down.json');
    writeFileSync(
      down,
      JSON.stringify({
        ...JSON.parse(readFileSync(deployment, 'utf8')),
        services: [{ id: 'education', url: 'http://127.0.0.1:9' }],
      }),
    );
    const [course, missing, refused, noDeployment] = await Promise.all([
      cli(['call', 'education.course', '--params', 'courseId=rag']),
      cli(['call', 'education.course', '--params', '{"courseId":"no-such-course"}', '--json']),
      cli(['call', 'education.catalog', '--deployment', down]),
      cli(['services', '--deployment', join(dir, 'nowhere.json')]),
    ]);
    expect(course.code).toBe(0);
    expect(JSON.parse(course.stdout)).toMatchObject({ id: 'rag', title: 'Retrieval-Augmented Generation' });
    expect(course.stderr).toContain('No payment (free).');
    expect(missing.code).toBe(4);
    expect(JSON.parse(missing.stdout).error).toMatchObject({ code: 'course_not_found', exitCode: 4 });
    expect(refused.code).toBe(5);
    expect(noDeployment.code).toBe(1);
    expect(noDeployment.stderr).toContain('nowhere.json');
  });

  it('wallet new writes a key file, fund tops it up from the faucet and balance reads it from the chain', async () => {
    const keyFile = join(dir, 'keys', 'agent.json');
    const made = await cli(['wallet', 'new', '--out', keyFile, '--json']);
    expect(made.code).toBe(0);
    const { address } = JSON.parse(made.stdout) as { address: string; keyFile: string };
    expect(existsSync(keyFile)).toBe(true);
    expect(JSON.parse(readFileSync(keyFile, 'utf8'))).toHaveLength(64);
    expect((await walletFromFile(keyFile)).address).toBe(address);
    const again = await cli(['wallet', 'new', '--out', keyFile]);
    expect(again.code).toBe(1);
    expect(readFileSync(keyFile, 'utf8')).toContain('['); // the key is still there

    // Unfunded, it cannot pay: refused before signing, with the payment exit code.
    const broke = await cli([
      'call',
      'education.tutor',
      '--body',
      '{"question":"How should chunk overlap be chosen?"}',
      '--wallet',
      keyFile,
      '--json',
    ]);
    expect(broke.code).toBe(3);
    expect(JSON.parse(broke.stdout).error).toMatchObject({
      code: 'insufficient_funds',
      details: { address, needed: '30000', held: '0' },
    });

    const funded = await cli(['wallet', 'fund', '--wallet', keyFile, '--usd', '2.5', '--sol', '0.5', '--json']);
    expect(funded.code).toBe(0);
    expect(JSON.parse(funded.stdout)).toMatchObject({ address, usd: '2.5', sol: '0.5' });
    expect(economy.ledger.tokenBalance(address)).toBe(2_500_000n);

    const balance = await cli(['wallet', 'balance', '--wallet', keyFile, '--json']);
    expect(balance.code).toBe(0);
    expect(JSON.parse(balance.stdout)).toMatchObject({
      address,
      usd: '2.5',
      usdAtomic: '2500000',
      sol: '0.5',
      lamports: '500000000',
    });
    const table = await cli(['wallet', 'balance', address]);
    expect(table.stdout).toMatch(new RegExp(`^${address}\\s+0\\.5\\s+2\\.5$`, 'm'));

    // The new wallet pays through AGENT_ECONOMY_WALLET.
    const paid = await cli(
      [
        'call',
        'education.tutor',
        '--body',
        '{"question":"How should chunk overlap be chosen?"}',
        '--max-usd',
        '0.03',
        '--json',
      ],
      { AGENT_ECONOMY_WALLET: keyFile },
    );
    expect(paid.code).toBe(0);
    expect(JSON.parse(paid.stdout).receipt).toMatchObject({ payer: address, amount: '30000' });
    expect(economy.ledger.tokenBalance(address)).toBe(2_470_000n);
  });
});
