// `npm run bench [-- name…]`: latency and throughput figures to compare between changes, on loopback.
// Figures depend on the machine; nothing here asserts them.
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { SOLANA_DEVNET, USDC_DEVNET, type X402FacilitatorRequest } from '@agent-economy/contracts';
import {
  createClient,
  createPayments,
  PaymentRequiredError,
  walletFromSecretKey,
  type SpendRecord,
} from '@agent-economy/sdk';
import { createKeyPairSignerFromBytes, createSolanaRpc } from '@solana/kit';
import { wrapFetchWithPayment, x402Client, x402HTTPClient } from '@x402/fetch';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import { startStack } from './support/stack';
import { buildPaymentTransaction } from '../servers/src/solana/payment-builder';
import { facilitatorClient } from '../servers/src/runtime/facilitator-client';
import { builtinReasoner } from '../servers/src/ai';
import { openDatabase } from '../servers/src/db';
import { createLogger } from '../servers/src/runtime/logger';
import { generateWallet, walletFromSecretKey as serverWallet } from '../servers/src/solana/keys';
import { createEducationApp } from '../servers/src/services/education';
import { curriculum } from '../servers/src/services/education/curriculum';
import { TutorIndex } from '../servers/src/services/education/domain';

interface Row {
  benchmark: string;
  runs: number;
  medianMs: string;
  p95Ms: string;
  perSecond: string;
}

async function measure(benchmark: string, runs: number, fn: () => Promise<unknown> | unknown): Promise<Row> {
  for (let i = 0; i < Math.min(20, runs); i++) await fn(); // warm-up
  const times: number[] = [];
  const started = process.hrtime.bigint();
  for (let i = 0; i < runs; i++) {
    const t = process.hrtime.bigint();
    await fn();
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  const total = Number(process.hrtime.bigint() - started) / 1e9;
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!;
  return {
    benchmark,
    runs,
    medianMs: at(0.5).toFixed(3),
    p95Ms: at(0.95).toFixed(3),
    perSecond: (runs / total).toFixed(0),
  };
}

async function education(): Promise<Row[]> {
  const database = await openDatabase();
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const wallet = generateWallet();
  const app = await createEducationApp({
    db: database.db,
    logger: createLogger('silent'),
    reasoner: builtinReasoner(),
    publicUrl: url,
    wallet,
    rpcUrl: 'http://127.0.0.1:9',
    localChain: true,
    serviceUrl: () => 'http://127.0.0.1:9',
    paywall: { payTo: wallet.address, network: SOLANA_DEVNET, asset: USDC_DEVNET, maxTimeoutSeconds: 60 },
  });
  server.on('request', app);
  const client = createClient({ baseUrls: { education: url }, maxRetries: 0 });
  const quoted = async () => {
    const error = await client.education
      .tutor({ body: { question: 'How should chunk overlap be chosen?' } })
      .catch((e) => e);
    if (!(error instanceof PaymentRequiredError)) throw error;
  };
  const tutor = new TutorIndex(curriculum);
  const rows = [
    await measure('education: free call (GET /api/catalog)', 500, () => client.education.catalog()),
    await measure('education: free call (GET /api/course/:courseId)', 500, () =>
      client.education.course({ params: { courseId: 'rag' } }),
    ),
    await measure('education: 402 quote (POST /api/tutor, with retrieval preflight)', 500, quoted),
    await measure('tutor retrieval in process (BM25 over all sections)', 2000, () =>
      tutor.retrieve('How should chunk overlap be chosen?'),
    ),
  ];
  server.close();
  server.closeAllConnections();
  await database.close();
  return rows;
}

/** The payment path end to end on loopback: ledger, facilitator and a paid service, our SDK and the official client. */
async function payments(): Promise<Row[]> {
  // `npm start` in a child process (bench/support/stack.ts); its demo wallet (100 USD) pays.
  const stack = await startStack({ services: ['facilitator', 'education'] });
  const buyer = serverWallet(Uint8Array.from(JSON.parse(readFileSync(stack.demoKeyFile, 'utf8')) as number[]));
  const wallet = await walletFromSecretKey(buyer.secretKey);
  const rpcUrl = stack.rpcUrl;
  const baseUrls = { education: stack.services.education!.url };
  const lesson = { body: { courseId: 'tool-use', lessonId: 'function-calling' } };
  const free = createClient({ baseUrls, maxRetries: 0 });
  const roundTrip = createClient({
    baseUrls,
    wallet,
    maxRetries: 0,
    payments: { prepay: false, maxPerCallUsd: '0.10', rpcUrl: rpcUrl, sessions: false },
  });
  const upFront = createClient({
    baseUrls,
    wallet,
    maxRetries: 0,
    payments: { prepay: true, maxPerCallUsd: '0.10', rpcUrl: rpcUrl, sessions: false },
  });

  const signer = await createKeyPairSignerFromBytes(buyer.secretKey);
  const official = wrapFetchWithPayment(
    fetch,
    new x402HTTPClient(new x402Client().register(SOLANA_DEVNET, new ExactSvmScheme(signer, { rpcUrl: rpcUrl }))),
  );
  const officialCall = async () => {
    const response = await official(`${baseUrls.education}/api/lesson`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(lesson.body),
    });
    if (response.status !== 200) throw new Error(`official client got ${response.status}`);
    await response.arrayBuffer();
  };

  // Settlements alone: payments built beforehand, settled one after another through the facilitator.
  const rpc = createSolanaRpc(rpcUrl);
  const facilitator = facilitatorClient(stack.services.facilitator!.url);
  const feePayer = (await facilitator.supported()).kinds.find((k) => k.scheme === 'exact')!.extra.feePayer as string;
  const requirements = {
    scheme: 'exact',
    network: SOLANA_DEVNET,
    amount: '10000',
    asset: USDC_DEVNET,
    payTo: stack.services.education!.wallet,
    maxTimeoutSeconds: 60,
    extra: { feePayer },
  };
  const settleRuns = 200;
  const bodies: X402FacilitatorRequest[] = [];
  for (let i = 0; i < settleRuns + 20; i++) {
    const { value } = await rpc.getLatestBlockhash().send();
    const transaction = await buildPaymentTransaction({ payer: buyer, requirements, blockhash: value });
    bodies.push({
      x402Version: 2 as const,
      paymentPayload: { x402Version: 2 as const, accepted: requirements, payload: { transaction } },
      paymentRequirements: requirements,
    });
  }
  const settle = async () => {
    const result = await facilitator.settle(bodies.pop()!);
    if (!result.success) throw new Error(`settlement failed: ${result.errorReason}`);
  };

  const rows = [
    await measure('payments: free call (GET /api/catalog)', 300, () => free.education.catalog()),
    await measure('payments: paid call, 402 round trip (POST /api/lesson, 0.05 USD)', 100, () =>
      roundTrip.education.lesson(lesson),
    ),
    await measure('payments: paid call, paid up front (POST /api/lesson)', 100, () => upFront.education.lesson(lesson)),
    await measure('payments: official @x402/fetch client, paid call (POST /api/lesson)', 100, officialCall),
    await measure('facilitator: /settle of a prepared payment (verify, co-sign, send, confirm)', settleRuns, settle),
  ];
  await stack.close();
  return rows;
}

/**
 * The SDK's budget check with a long spend log: hourly, daily and total caps over 1,000 to 100,000 receipts of the
 * last three days (loaded from a store, as an agent restarted with its log). The check should not grow with the log.
 */
async function budgets(): Promise<Row[]> {
  const rows: Row[] = [];
  for (const count of [1_000, 10_000, 100_000]) {
    const now = Date.now();
    const records: SpendRecord[] = [];
    for (let i = 0; i < count; i++) {
      const at = new Date(now - Math.floor((i * 3 * 86_400_000) / count) - 1_000).toISOString();
      const id = `r${i}`;
      const receipt = {
        service: 'education',
        route: 'POST /api/lesson',
        amount: '50000',
        amountUsd: '0.05',
        asset: USDC_DEVNET,
        network: SOLANA_DEVNET,
        payTo: 'seller',
        payer: 'payer',
        transaction: `tx${i}`,
        at,
      };
      records.push({ type: 'reserve', id, at, service: 'education', origin: '', payTo: 'seller', amount: '50000' });
      records.push({ type: 'receipt', id, at, receipt });
    }
    const payments = createPayments({
      maxPerHourUsd: '1000000',
      maxPerDayUsd: '1000000',
      maxTotalUsd: '1000000',
      store: { load: async () => records, append: async () => undefined },
    });
    await payments.ready();
    rows.push(
      await measure(`SDK budget check (remainingUsd, 3 caps) with ${count} receipts`, 2_000, () =>
        payments.remainingUsd(),
      ),
    );
  }
  return rows;
}

const benchmarks: Record<string, () => Promise<Row[]>> = { education, payments, budgets };

// `throughput` prints its own table (rows with their concurrency, then the ratios of this run).
if (process.argv.slice(2).includes('throughput')) {
  const { throughput } = await import('./throughput');
  const { rows, ratios, machine } = await throughput();
  console.log(machine);
  console.table(rows);
  console.table(ratios);
  process.exit(0);
}

// `wallet-history` prints its own tables (where a cold call's time goes, then cold, restarted and warm calls).
if (process.argv.slice(2).includes('wallet-history')) {
  const { walletHistoryBench } = await import('./wallet-history');
  const { machine, phases, rows } = await walletHistoryBench();
  console.log(machine);
  console.table(phases);
  console.table(rows);
  process.exit(0);
}

const asked = process.argv.slice(2);
const names = asked.length ? asked : Object.keys(benchmarks);
const unknown = names.filter((n) => !benchmarks[n]);
if (unknown.length) {
  console.error(`unknown benchmark(s): ${unknown.join(', ')}; available: ${Object.keys(benchmarks).join(', ')}`);
  process.exit(2);
}
const rows: Row[] = [];
for (const name of names) rows.push(...(await benchmarks[name]!()));
console.log(`node ${process.version}, ${process.platform}/${process.arch}`);
console.table(rows);
process.exit(0);
