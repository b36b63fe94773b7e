import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { SOLANA_DEVNET, USDC_DEVNET, education, facilitator, listRoutes } from '@agent-economy/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEconomy, type Economy } from './support/economy';

// `agent-economy mcp` as an MCP client (Claude Desktop, Cursor) runs it: the package's bin as a child
// process speaking MCP over stdio, against a real ledger, facilitator and education service.

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = join(root, 'sdk', 'bin', 'agent-economy.js');
let economy: Economy;
let dir: string;
let seller: string;
let client: Client;
let deployment: string;

type ToolResult = { isError?: boolean; content: { type: string; text: string }[] };

async function call(name: string, args: Record<string, unknown> = {}): Promise<ToolResult> {
  return (await client.callTool({ name, arguments: args })) as ToolResult;
}
const json = (result: ToolResult) => JSON.parse(result.content[0]!.text) as Record<string, unknown>;

beforeAll(async () => {
  economy = await startEconomy();
  dir = mkdtempSync(join(tmpdir(), 'ae-mcp-'));
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
  client = await connect();
});

const env = () => ({
  ...(process.env as Record<string, string>),
  HOME: dir,
  AGENT_ECONOMY_WALLET: '',
  AGENT_ECONOMY_SPEND_LOG: join(dir, 'spend.jsonl'),
});

/** A new MCP session: the bin started by the client over stdio, as an assistant does. */
async function connect(): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [bin, 'mcp', '--deployment', deployment, '--max-usd-per-call', '0.05', '--max-usd-total', '0.08'],
    cwd: dir,
    env: env(),
    stderr: 'pipe',
  });
  const session = new Client({ name: 'mcp-test', version: '1.0.0' });
  await session.connect(transport);
  return session;
}

afterAll(async () => {
  await client?.close();
  await economy?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('agent-economy mcp', { timeout: 180_000 }, () => {
  it('lists one tool per route of every service in the deployment, with the contract as input schema, plus balance and spend', async () => {
    const { tools } = await client.listTools();
    const routes = [facilitator, education].flatMap((s) =>
      listRoutes(s.router).map((r) => `${s.id}_${r.key.replace(/\./g, '_')}`),
    );
    expect(tools.length).toBe(routes.length + 2);
    expect(tools.map((t) => t.name).sort()).toEqual([...routes, 'balance', 'spend'].sort());
    for (const tool of tools) expect(tool.name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    const lesson = tools.find((t) => t.name === 'education_lesson')!;
    expect(lesson.description).toContain('Full AI-generated lesson');
    expect(lesson.description).toContain('Price: 0.05 USD');
    expect(lesson.inputSchema).toMatchObject({
      type: 'object',
      required: ['body'],
      properties: {
        body: {
          type: 'object',
          required: ['courseId', 'lessonId'],
          properties: { courseId: { type: 'string' }, lessonId: { type: 'string' } },
        },
      },
    });
    const course = tools.find((t) => t.name === 'education_course')!;
    expect(course.inputSchema).toMatchObject({
      required: ['params'],
      properties: { params: { properties: { courseId: { type: 'string' } } } },
    });
    expect(tools.find((t) => t.name === 'education_catalog')!.description).toContain('Free.');
  });

  it('calls a free tool without paying', async () => {
    const before = economy.ledger.tokenBalance(economy.buyer.address);
    const result = await call('education_course', { params: { courseId: 'rag' } });
    expect(result.isError).toBeFalsy();
    const body = json(result);
    expect(body.result).toMatchObject({ id: 'rag', title: 'Retrieval-Augmented Generation' });
    expect(body.payment).toBeUndefined();
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(before);
  });

  it('pays a priced tool within the budgets and reports the receipt', async () => {
    const before = {
      buyer: economy.ledger.tokenBalance(economy.buyer.address),
      seller: economy.ledger.tokenBalance(seller),
    };
    const result = await call('education_lesson', { body: { courseId: 'rag', lessonId: 'chunking' } });
    expect(result.isError).toBeFalsy();
    const body = json(result) as {
      result: { title: string };
      payment: { amount: string; payTo: string; payer: string; transaction: string };
    };
    expect(body.result.title).toBe('Chunking Documents');
    expect(body.payment).toMatchObject({ amount: '50000', payTo: seller, payer: economy.buyer.address });
    expect(economy.ledger.tokenBalance(seller)).toBe(before.seller + 50_000n);
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(before.buyer - 50_000n);

    const spend = json(await call('spend')) as {
      receipts: { transaction: string; amount: string }[];
      spentUsd: string;
      budgets: { remainingTotalUsd: string };
    };
    expect(spend.receipts).toEqual([
      expect.objectContaining({ transaction: body.payment.transaction, amount: '50000' }),
    ]);
    expect(spend.spentUsd).toBe('0.05');
    expect(spend.budgets.remainingTotalUsd).toBe('0.03');
    const balance = json(await call('balance')) as { address: string; usdAtomic: string };
    expect(balance.address).toBe(economy.buyer.address);
    expect(BigInt(balance.usdAtomic)).toBe(economy.ledger.tokenBalance(economy.buyer.address));
  });

  it('refuses a price over a budget with a tool error naming it, and pays nothing', async () => {
    const before = {
      buyer: economy.ledger.tokenBalance(economy.buyer.address),
      seller: economy.ledger.tokenBalance(seller),
    };
    // 0.05 is within the per-call budget, but only 0.03 of the 0.08 total is left.
    const result = await call('education_exercise', { body: { courseId: 'rag', lessonId: 'chunking' } });
    expect(result.isError).toBe(true);
    expect(result.content[0]!.text).toContain('Refused before paying');
    expect(result.content[0]!.text).toContain('the total budget of 0.08 USD allows 0.03 USD more');
    expect(economy.ledger.tokenBalance(seller)).toBe(before.seller);
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(before.buyer);
  });

  it('checks arguments against the contract before any request', async () => {
    const before = economy.ledger.tokenBalance(economy.buyer.address);
    const result = await call('education_tutor', { body: { question: 'ok' } });
    expect(result.isError).toBe(true);
    expect(result.content[0]!.text).toContain('body.question');
    const unknown = await call('education_lesson', { courseId: 'rag', lessonId: 'chunking' });
    expect(unknown.isError).toBe(true);
    expect(unknown.content[0]!.text).toContain('a route tool takes params, query and body');
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(before);
  });

  it('keeps the spend log to itself while it runs, and its budgets count earlier sessions', async () => {
    const before = economy.ledger.tokenBalance(economy.buyer.address);
    // The command line cannot pay against the log the server holds.
    const run = await new Promise<{ code: number; stderr: string }>((resolve) =>
      execFile(
        process.execPath,
        [
          bin,
          'call',
          'education.tutor',
          '--body',
          '{"question":"How should chunk overlap be chosen?"}',
          '--deployment',
          deployment,
        ],
        { cwd: dir, env: env() },
        (error, _out, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stderr }),
      ),
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/spend log .* is in use by process \d+/);
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(before);

    // A new session on the same log: the 0.05 paid before counts against the 0.08 total.
    await client.close();
    client = await connect();
    const spend = json(await call('spend')) as { receipts: { amount: string }[]; spentUsd: string };
    expect(spend.receipts.map((r) => r.amount)).toEqual(['50000']);
    expect(spend.spentUsd).toBe('0.05');
    const refused = await call('education_lesson', { body: { courseId: 'rag', lessonId: 'chunking' } });
    expect(refused.isError).toBe(true);
    expect(refused.content[0]!.text).toContain('the total budget of 0.08 USD allows 0.03 USD more');
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(before);
  });
});
