// `npm run bench [-- name…]`: latency and throughput figures to compare between changes, on loopback.
// Figures depend on the machine; nothing here asserts them.
import { createServer } from 'node:http';
import { SOLANA_DEVNET, USDC_DEVNET } from '@agent-economy/contracts';
import { createClient, PaymentRequiredError } from '@agent-economy/sdk';
import { builtinReasoner } from '../servers/src/ai';
import { openDatabase } from '../servers/src/db';
import { createLogger } from '../servers/src/runtime/logger';
import { generateWallet } from '../servers/src/runtime/wallet';
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
  return { benchmark, runs, medianMs: at(0.5).toFixed(3), p95Ms: at(0.95).toFixed(3), perSecond: (runs / total).toFixed(0) };
}

async function education(): Promise<Row[]> {
  const database = await openDatabase();
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const app = await createEducationApp({
    db: database.db,
    logger: createLogger('silent'),
    reasoner: builtinReasoner(),
    publicUrl: url,
    paywall: { payTo: generateWallet().address, network: SOLANA_DEVNET, asset: USDC_DEVNET, maxTimeoutSeconds: 60 },
  });
  server.on('request', app);
  const client = createClient({ baseUrls: { education: url }, maxRetries: 0 });
  const quoted = async () => {
    const error = await client.education.tutor({ body: { question: 'How should chunk overlap be chosen?' } }).catch((e) => e);
    if (!(error instanceof PaymentRequiredError)) throw error;
  };
  const tutor = new TutorIndex(curriculum);
  const rows = [
    await measure('education: free call (GET /api/catalog)', 500, () => client.education.catalog()),
    await measure('education: free call (GET /api/course/:courseId)', 500, () => client.education.course({ params: { courseId: 'rag' } })),
    await measure('education: 402 quote (POST /api/tutor, with retrieval preflight)', 500, quoted),
    await measure('tutor retrieval in process (BM25 over all sections)', 2000, () => tutor.retrieve('How should chunk overlap be chosen?')),
  ];
  server.close();
  server.closeAllConnections();
  await database.close();
  return rows;
}

const benchmarks: Record<string, () => Promise<Row[]>> = { education };

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
