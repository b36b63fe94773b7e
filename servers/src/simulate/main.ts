import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { atomicToUsd } from '@agent-economy/contracts';
import { simulate, type Deployment, type SimulationProgress } from './economy';

// `npm run simulate -- --seconds 60`: a seeded population of agents trading through the economy `npm start` runs,
// found through <DATA_DIR>/services.json. Prints a live progress line and a summary; Ctrl-C stops it early.

const USAGE = `Usage: npm run simulate -- [--seconds 60] [--steps N] [--agents 6] [--seed agent-economy] [--budget-usd 5]
  --seconds     how long to run (default 60; 0 with --steps runs until the steps are done)
  --steps       stop after this many actions
  --agents      how many agent wallets trade (default 6, 2 to 50)
  --seed        the population: the same seed finds the same agent wallets again
  --budget-usd  what each agent may spend in all, USD (default 5)
Reads the deployment from $DATA_DIR/services.json (default .data/), written by npm start.`;

interface ServicesFile {
  chain: { rpcUrl: string; network: string; faucet?: string; local?: boolean };
  services: { id: string; url: string; wallet?: string }[];
}

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}

function positive(name: string, text: string | undefined, fallback: number, max: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0 || value > max)
    fail(`--${name} must be a whole number from 0 to ${max}, not "${text}"\n\n${USAGE}`);
  return value;
}

async function main() {
  let args;
  try {
    args = parseArgs({
      options: {
        seconds: { type: 'string' },
        steps: { type: 'string' },
        agents: { type: 'string' },
        seed: { type: 'string' },
        'budget-usd': { type: 'string' },
        help: { type: 'boolean' },
      },
    }).values;
  } catch (error) {
    fail(`${(error as Error).message}\n\n${USAGE}`);
  }
  if (args.help) {
    console.log(USAGE);
    return;
  }
  const seconds = positive('seconds', args.seconds, 60, 86_400);
  const steps = args.steps === undefined ? undefined : positive('steps', args.steps, 0, 10_000_000);
  const agents = positive('agents', args.agents, 6, 50);
  if (agents < 2) fail('--agents must be at least 2: agents trade with each other');
  const budget = args['budget-usd'] ?? '5';
  if (!/^\d+(\.\d{1,6})?$/.test(budget)) fail(`--budget-usd must be a USD amount such as 5 or 0.5, not "${budget}"`);

  const dataDir = process.env.DATA_DIR ?? resolve(fileURLToPath(new URL('.', import.meta.url)), '../../../.data');
  let file: ServicesFile;
  try {
    file = JSON.parse(readFileSync(join(dataDir, 'services.json'), 'utf8')) as ServicesFile;
  } catch {
    fail(`No ${join(dataDir, 'services.json')}: start the economy first with npm start (or set DATA_DIR).`);
  }
  if (!file.chain.faucet)
    console.warn('The chain has no faucet (a real cluster): agents trade only with what their wallets already hold.');
  const deployment: Deployment = {
    rpcUrl: file.chain.rpcUrl,
    network: file.chain.network,
    ...(file.chain.faucet ? { faucetUrl: file.chain.faucet } : {}),
    services: Object.fromEntries(file.services.map((s) => [s.id, s.url])),
    wallets: Object.fromEntries(file.services.filter((s) => s.wallet).map((s) => [s.id, s.wallet!])),
  };

  const controller = new AbortController();
  process.on('SIGINT', () => controller.abort());
  const tty = process.stdout.isTTY;
  const line = (p: SimulationProgress) =>
    `[${p.elapsedSeconds.toFixed(1)}s] ${p.steps} actions · ${p.calls} calls (${p.paidCalls} paid, ${p.sessionCalls} of them by session voucher, ${atomicToUsd(p.volumeAtomic)} USD) · ` +
    `${p.mints} mints, ${p.tokenTransfers} token transfers · ${p.errors} errors`;
  let lastPrinted = 0;
  console.log(
    `Simulating ${agents} agents (seed "${args.seed ?? 'agent-economy'}") against ${Object.keys(deployment.services).length} services on ${deployment.rpcUrl}…`,
  );
  const summary = await simulate({
    deployment,
    agents,
    ...(args.seed ? { seed: args.seed } : {}),
    ...(seconds > 0 || steps === undefined ? { seconds } : {}),
    ...(steps !== undefined ? { steps } : {}),
    budgetUsd: budget,
    signal: controller.signal,
    onProgress(p) {
      if (tty) process.stdout.write(`\r${line(p)}\x1b[K`);
      else if (Date.now() - lastPrinted >= 5_000) {
        lastPrinted = Date.now();
        console.log(line(p));
      }
    },
  });
  if (tty) process.stdout.write('\n');
  console.log(`\nDone: ${line(summary)}`);
  console.log('\nBy action (ok / failed / skipped: nothing to do yet, or held back by a limit):');
  for (const [kind, { ok, failed, skipped }] of Object.entries(summary.byAction)) {
    if (ok || failed || skipped) console.log(`  ${kind.padEnd(9)} ${String(ok).padStart(5)} / ${failed} / ${skipped}`);
  }
  if (summary.launchedMints.length) {
    console.log('\nTokens launched (inspect them with the tokens service, e.g. GET /api/holders/<mint>):');
    for (const m of summary.launchedMints)
      console.log(`  ${m.mint}  ${m.holders} holders${m.renounced ? ', mint authority renounced' : ''}`);
  }
  if (summary.heldBack.length) {
    console.log('\nHeld back by a limit, nothing charged (an agent told 429 rests for its Retry-After):');
    for (const h of summary.heldBack) console.log(`  ${String(h.count).padStart(4)} × ${h.reason}`);
  }
  if (summary.errorsByMessage.length) {
    console.log('\nErrors:');
    for (const e of summary.errorsByMessage.slice(0, 10))
      console.log(`  ${String(e.count).padStart(4)} × ${e.message}`);
  }
  console.log(`\nAgent wallets: ${summary.agents.join(', ')}`);
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
