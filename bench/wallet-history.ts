// `npm run bench -- wallet-history`: how long wallet-history's `POST /api/protocols` takes for a wallet with
// 500 transactions on the local ledger, cold (nothing of the wallet read before, anywhere), after a restart
// (the database's kept analyses, an empty memory) and warm (the same process again), and where the cold time
// goes. The ledger, its JSON-RPC and the service run in this process, as under `npm start`.
// BENCH_WH_TRANSACTIONS (500) and BENCH_WH_RUNS (7) change it; TEST_DATABASE_URL runs it on PostgreSQL.
import { createServer, type Server } from 'node:http';
import { loadavg, cpus } from 'node:os';
import { randomBytes } from 'node:crypto';
import { SOLANA_DEVNET, USDC_DEVNET } from '@agent-economy/contracts';
import { createClient } from '@agent-economy/sdk';
import { getSetComputeUnitLimitInstruction, getSetComputeUnitPriceInstruction } from '@solana-program/compute-budget';
import { getTransferSolInstruction } from '@solana-program/system';
import { getTransferCheckedInstruction } from '@solana-program/token';
import {
  address,
  appendTransactionMessageInstructions,
  compileTransaction,
  createNoopSigner,
  createTransactionMessage,
  getTransactionEncoder,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Blockhash,
  type Instruction,
} from '@solana/kit';
import type { Kysely } from 'kysely';
import { builtinReasoner } from '../servers/src/ai';
import { migrate, openDatabase, type Database } from '../servers/src/db';
import { LocalLedger, handleRpcBody, startLedgerRpc } from '../servers/src/ledger';
import { createLogger } from '../servers/src/runtime/logger';
import { MEMO_PROGRAM, associatedTokenAddress } from '../servers/src/solana/programs';
import { generateWallet, signEd25519, type Wallet } from '../servers/src/solana/keys';
import { parseTransaction } from '../servers/src/solana/wire';
import { createWalletHistoryApp } from '../servers/src/services/wallet-history';
import { analyse } from '../servers/src/services/wallet-history/domain';
import { historyReader, toWalletTransaction } from '../servers/src/services/wallet-history/history';
import { migrations, walletHistoryStore } from '../servers/src/services/wallet-history/store';
import { solanaSource } from '../servers/src/upstream/solana';

const TRANSACTIONS = Number(process.env.BENCH_WH_TRANSACTIONS ?? 500);
const RUNS = Number(process.env.BENCH_WH_RUNS ?? 7);

/** Signs and lands a legacy transaction the wallet pays for. */
function land(ledger: LocalLedger, feePayer: Wallet, instructions: Instruction[]): string {
  const { blockhash, lastValidBlockHeight } = ledger.latestBlockhash('confirmed');
  const message = pipe(
    createTransactionMessage({ version: 'legacy' }),
    (m) => setTransactionMessageFeePayer(address(feePayer.address), m),
    (m) => setTransactionMessageLifetimeUsingBlockhash({ blockhash: blockhash as Blockhash, lastValidBlockHeight }, m),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  const compiled = compileTransaction(message);
  const signature = signEd25519(feePayer, new Uint8Array(compiled.messageBytes));
  const wire = new Uint8Array(
    getTransactionEncoder().encode({ ...compiled, signatures: { [feePayer.address]: signature } as never }),
  );
  const prepared = ledger.prepare(parseTransaction(wire));
  if ('error' in prepared) throw new Error(`not a valid transaction: ${JSON.stringify(prepared.error)}`);
  const outcome = ledger.submit(prepared);
  if (!outcome.landed) throw new Error(`did not land: ${JSON.stringify(outcome.err)}`);
  return outcome.record.signature;
}

/**
 * A wallet with `count` transactions of the kinds a busy wallet has: SOL received, stablecoin transfers with a
 * priority fee, SOL sent with a memo, bare memos.
 */
async function busyWallet(ledger: LocalLedger, count: number): Promise<string> {
  const wallet = generateWallet();
  const friend = generateWallet();
  const signer = createNoopSigner(address(wallet.address));
  await ledger.airdrop(wallet.address, 10_000_000_000n);
  await ledger.mintTo(wallet.address, 1_000_000_000n); // touches the token account, not the wallet
  await ledger.openTokenAccount(friend.address);
  const memo = (text: string): Instruction => ({
    programAddress: address(MEMO_PROGRAM),
    data: new TextEncoder().encode(text),
  });
  for (let i = 1; i < count; i++) {
    switch (i % 4) {
      case 0:
        await ledger.airdrop(wallet.address, 1_000_000n + BigInt(i));
        break;
      case 1:
        land(ledger, wallet, [
          getSetComputeUnitLimitInstruction({ units: 50_000 }),
          getSetComputeUnitPriceInstruction({ microLamports: 1000n }),
          getTransferCheckedInstruction({
            source: address(associatedTokenAddress(wallet.address, USDC_DEVNET)),
            mint: address(USDC_DEVNET),
            destination: address(associatedTokenAddress(friend.address, USDC_DEVNET)),
            authority: signer,
            amount: 10_000n + BigInt(i),
            decimals: 6,
          }),
        ]);
        break;
      case 2:
        land(ledger, wallet, [
          getTransferSolInstruction({
            source: signer,
            destination: address(friend.address),
            amount: 1000n + BigInt(i),
          }),
          memo(`lunch ${i}`),
        ]);
        break;
      default:
        land(ledger, wallet, [memo(`tick ${i}`)]);
    }
  }
  return wallet.address;
}

const ms = (from: bigint) => Number(process.hrtime.bigint() - from) / 1e6;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function listen(): Promise<{ server: Server; url: string }> {
  const server = createServer();
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
}

/** A wallet-history service on a free port reading `rpcUrl`, free of charge (the paywall is not measured here). */
async function startWalletHistory(database: Database, rpcUrl: string) {
  const { server, url } = await listen();
  const wallet = generateWallet();
  const app = await createWalletHistoryApp({
    db: database.db,
    logger: createLogger('silent'),
    reasoner: builtinReasoner(),
    publicUrl: url,
    wallet,
    rpcUrl,
    localChain: true,
    serviceUrl: () => 'http://127.0.0.1:9',
    paywall: { payTo: wallet.address, network: SOLANA_DEVNET, asset: USDC_DEVNET, maxTimeoutSeconds: 60 },
    prices: { protocols: { kind: 'fixed', usd: '0' } },
  });
  server.on('request', app);
  const client = createClient({ baseUrls: { 'wallet-history': url }, maxRetries: 0 });
  return {
    protocols: (wallet: string) => client.walletHistory.protocols({ body: { wallet } }),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function keptRows(database: Database, wallet: string): Promise<number> {
  const row = await (database.db as unknown as Kysely<{ wallet_history_transactions: { wallet: string } }>)
    .selectFrom('wallet_history_transactions')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('wallet', '=', wallet)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function walletHistoryBench() {
  const load = () =>
    loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
  const loadBefore = load();
  const ledger = await LocalLedger.open({ mintAuthority: generateWallet() });
  const rpc = await startLedgerRpc(ledger, { port: 0 });
  const url = process.env.TEST_DATABASE_URL;
  const database = url
    ? await openDatabase({ url, schema: `bench_${randomBytes(6).toString('hex')}`, dropSchemaOnClose: true })
    : await openDatabase();

  const built = process.hrtime.bigint();
  const wallets: string[] = [];
  // One wallet a cold run: nothing of it is kept anywhere before its first call.
  for (let i = 0; i < RUNS; i++) wallets.push(await busyWallet(ledger, TRANSACTIONS));
  const probes = [await busyWallet(ledger, TRANSACTIONS), await busyWallet(ledger, TRANSACTIONS)];
  const buildSeconds = ms(built) / 1000;
  // Older than the finality depth, as a wallet's history mostly is: its analyses may be kept.
  ledger.warp(64);

  // Where a cold call's time goes, phase by phase (read outside the service): once on a wallet of its own to warm
  // up (compiled code, first queries), then on another, reported.
  const chain = solanaSource({ rpcUrl: rpc.url, localChain: true });
  const reader = historyReader(chain);
  const store = walletHistoryStore(database.db);
  await migrate(database.db, 'wallet-history', migrations);
  let phases: { phase: string; ms: string }[] = [];
  for (const probe of probes) phases = await phasesOf(probe);
  async function phasesOf(probe: string) {
    const phases: { phase: string; ms: string }[] = [];
    const timed = async <T>(phase: string, fn: () => Promise<T> | T): Promise<T> => {
      const t = process.hrtime.bigint();
      const value = await fn();
      phases.push({ phase, ms: ms(t).toFixed(1) });
      return value;
    };
    const { entries } = await timed('getSignaturesForAddress (1 page, HTTP)', () =>
      reader.signatures(probe, undefined),
    );
    const params = (signature: string) => [
      signature,
      { encoding: 'json', maxSupportedTransactionVersion: 0, commitment: 'confirmed' },
    ];
    const bodies: string[] = [];
    for (let start = 0; start < entries.length; start += 100)
      bodies.push(
        JSON.stringify(
          entries
            .slice(start, start + 100)
            .map((e, i) => ({ jsonrpc: '2.0', id: start + i, method: 'getTransaction', params: params(e.signature) })),
        ),
      );
    const texts = await timed(`ledger answers ${bodies.length} getTransaction batches (in process, no HTTP)`, () =>
      bodies.map((body) => handleRpcBody(ledger, body)!),
    );
    await timed('JSON.parse of those answers', () => texts.map((t) => JSON.parse(t) as unknown));
    const answers = await timed(`chain.batch of ${entries.length} getTransaction (HTTP, as the service reads)`, () =>
      chain.batch<Parameters<typeof toWalletTransaction>[3]>(
        'getTransaction',
        entries.map((e) => params(e.signature)),
      ),
    );
    const reduced = await timed('reduce each transaction to the wallet’s part', () =>
      answers.map((tx, i) => toWalletTransaction(probe, entries[i]!.signature, Number(tx!.blockTime), tx!)),
    );
    await timed('analyse (protocols, categories, volumes)', () => analyse(reduced));
    const none = await timed(`database: look up ${entries.length} kept analyses (none kept yet)`, () =>
      store.keptAnalyses(
        probe,
        entries.map((e) => e.signature),
      ),
    );
    await timed(`database: keep ${entries.length} analyses`, () =>
      store.keepAnalyses(
        probe,
        reduced.map((analysis) => ({ signature: analysis.signature, analysis })),
      ),
    );
    const back = await timed(`database: read ${entries.length} kept analyses`, () =>
      store.keptAnalyses(
        probe,
        entries.map((e) => e.signature),
      ),
    );
    if (none.size !== 0 || back.size !== entries.length) throw new Error('the kept analyses are not what was kept');
    return phases;
  }

  // Cold: a service that never saw the wallet; after a restart: a new service on the same database; warm: again.
  // Wall time, and the CPU time of this process meanwhile (ledger, service and client: steadier under load).
  type Times = { wall: number[]; cpu: number[] };
  const cold: Times = { wall: [], cpu: [] };
  const restarted: Times = { wall: [], cpu: [] };
  const warm: Times = { wall: [], cpu: [] };
  const time = async <T>(into: Times, fn: () => Promise<T>): Promise<T> => {
    const [t, cpu] = [process.hrtime.bigint(), process.cpuUsage()];
    const value = await fn();
    const used = process.cpuUsage(cpu);
    into.wall.push(ms(t));
    into.cpu.push((used.user + used.system) / 1000);
    return value;
  };
  let transactionCount = 0;
  for (const wallet of wallets) {
    const first = await startWalletHistory(database, rpc.url);
    transactionCount = (await time(cold, () => first.protocols(wallet))).transactionCount;
    await time(warm, () => first.protocols(wallet));
    await first.close();
    // The cold call keeps the analyses after answering: a restart finds them once written.
    for (const until = Date.now() + 30_000; (await keptRows(database, wallet)) < transactionCount;) {
      if (Date.now() > until) throw new Error('the cold call’s analyses were not kept within 30 s');
      await new Promise((r) => setTimeout(r, 20));
    }
    const second = await startWalletHistory(database, rpc.url);
    await time(restarted, () => second.protocols(wallet));
    await second.close();
  }
  const loadAfter = load();
  await rpc.close();
  await ledger.close();
  await database.close();

  const row = (what: string, times: Times) => ({
    call: what,
    runs: times.wall.length,
    medianMs: median(times.wall).toFixed(0),
    minMs: Math.min(...times.wall).toFixed(0),
    maxMs: Math.max(...times.wall).toFixed(0),
    cpuMedianMs: median(times.cpu).toFixed(0),
  });
  return {
    machine:
      `node ${process.version}, ${cpus().length} cores, ${database.engine}; ${RUNS} wallets of ${transactionCount} ` +
      `transactions built in ${buildSeconds.toFixed(1)} s; load average ${loadBefore} before, ${loadAfter} after`,
    phases,
    rows: [
      row('POST /api/protocols, cold (first call for the wallet anywhere)', cold),
      row('POST /api/protocols, after a restart (kept in the database)', restarted),
      row('POST /api/protocols, warm (same process again)', warm),
    ],
  };
}
