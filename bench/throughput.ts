import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus } from 'node:os';
import { resolve } from 'node:path';
import {
  SOLANA_DEVNET,
  USDC_DEVNET,
  type PaymentRequirements,
  type X402FacilitatorRequest,
} from '@agent-economy/contracts';
import { createClient, walletFromFile } from '@agent-economy/sdk';
import { createKeyPairSignerFromBytes, createSolanaRpc } from '@solana/kit';
import { toFacilitatorSvmSigner } from '@x402/svm';
import { ExactSvmScheme } from '@x402/svm/exact/facilitator';
import { facilitatorClient } from '../servers/src/runtime/facilitator-client';
import { buildPaymentTransaction } from '../servers/src/solana/payment-builder';
import { walletFromSecretKey } from '../servers/src/solana/keys';
import { interleave, load, runCount, summary, type LoadResult, type Segment } from './support/load';
import { sessionBuyers } from './sessions';
import { clientCpuMs, cpuMsOf, fund, loopCpuMsOf, rssOf, startStack, type Stack } from './support/stack';

// `npm run bench -- throughput`: one `npm start` in a child process, driven under concurrency from this
// process. Each row says its concurrency; ratios compare rows of this same run on this same machine.

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
// Rows compared by a ratio run interleaved, in this many rounds of SECONDS / ROUNDS each (bench/support/load.ts): six
// puts each of three sides in each place twice.
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error(`BENCH_ROUNDS: a whole number from 1, not ${ROUNDS}`);
const SDK_CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const HTTP_CONCURRENCY = Number(process.env.BENCH_HTTP_CONCURRENCY ?? 50);
const PAID_CALLS = Number(process.env.BENCH_PAID_CALLS ?? 10_000);
const SETTLEMENTS = Number(process.env.BENCH_SETTLEMENTS ?? 600);
const MEMORY2_CALLS = Number(process.env.BENCH_MEMORY2_CALLS ?? 300);
// BENCH_ROWS=paid,settle runs some parts only (free, paid, session, http, settle, memory, memory2), e.g. under
// --cpu-prof. memory2 has a stack of its own: BENCH_ROWS=memory2 starts no full npm start.
const ROWS = process.env.BENCH_ROWS?.split(',');
const want = (part: string) => !ROWS || ROWS.includes(part);
const FULL_STACK_ROWS = ['free', 'paid', 'session', 'http', 'settle', 'memory'];
const mb = (b: number) => `${(b / 2 ** 20).toFixed(0)} MB`;
const NONE: LoadResult = { calls: 0, seconds: 0, perSecond: NaN, p50Ms: NaN, p95Ms: NaN };

export interface ThroughputRow {
  benchmark: string;
  concurrency: number | string;
  perSecond: string;
  p50Ms: string;
  p95Ms: string;
  note: string;
}

const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
const row = (benchmark: string, concurrency: number | string, r: LoadResult | undefined, note = ''): ThroughputRow => ({
  benchmark,
  concurrency,
  perSecond: r ? fmt(r.perSecond, 0) : 'n/a',
  p50Ms: r ? fmt(r.p50Ms, 2) : 'n/a',
  p95Ms: r ? fmt(r.p95Ms, 2) : 'n/a',
  note,
});

/** A bare Express 4 app in its own process answering one path with the given JSON: the baseline. */
async function bareExpress(json: string): Promise<{ url: string; pid: number; close(): void }> {
  const script = `
    const express = require('express');
    const body = process.env.BODY;
    const app = express();
    app.get('/api/catalog', (req, res) => res.type('application/json').send(body));
    app.get('/health', (req, res) => res.json({ status: 'ok' }));
    const server = app.listen(0, '127.0.0.1', () => console.log(server.address().port));
    server.keepAliveTimeout = 65000;`;
  const child = spawn(process.execPath, ['-e', script], {
    cwd: resolve(import.meta.dirname, '..'),
    env: { ...process.env, BODY: json },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<string>((r) => child.stdout!.once('data', (d: Buffer) => r(d.toString().trim())));
  return { url: `http://127.0.0.1:${port}`, pid: child.pid!, close: () => child.kill() };
}

/** Plain keep-alive GETs, as autocannon sends them: the body is read and dropped. */
function getter(url: string, concurrency: number): () => Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const target = new URL(url);
  return () =>
    new Promise<void>((done, fail) => {
      const req = request({ host: target.hostname, port: target.port, path: target.pathname, agent }, (res) => {
        if (res.statusCode !== 200) fail(new Error(`${url} answered ${res.statusCode}`));
        res.resume();
        res.once('end', done);
      });
      req.once('error', fail);
      req.end();
    });
}

/** Honest x402 exact payments from the demo wallet to education, built ahead and never presented to the service. */
export async function preparePayments(
  stack: Stack,
  feePayer: string,
  count: number,
): Promise<X402FacilitatorRequest[]> {
  const payer = walletFromSecretKey(Uint8Array.from(JSON.parse(readFileSync(stack.demoKeyFile, 'utf8')) as number[]));
  const requirements: PaymentRequirements = {
    scheme: 'exact',
    network: SOLANA_DEVNET,
    amount: '1000',
    asset: USDC_DEVNET,
    payTo: stack.services.education!.wallet,
    maxTimeoutSeconds: 60,
    extra: { feePayer },
  };
  const rpc = createSolanaRpc(stack.rpcUrl);
  const { value: blockhash } = await rpc.getLatestBlockhash().send();
  const bodies: X402FacilitatorRequest[] = [];
  for (let i = 0; i < count; i++) {
    // Each carries a random memo, so every one is a distinct transaction under one blockhash.
    const transaction = await buildPaymentTransaction({ payer, requirements, blockhash });
    bodies.push({
      x402Version: 2,
      paymentPayload: { x402Version: 2, accepted: requirements, payload: { transaction } },
      paymentRequirements: requirements,
    });
  }
  return bodies;
}

let lastFailure = '';

/** GC pauses of a served process so far, as its /metrics reads them (prom-client's nodejs_gc_duration_seconds). */
interface GcPauses {
  /** Milliseconds its event loop stood still for collections, every kind. */
  ms: number;
  /** Young-generation collections (scavenges): about one for each young generation's worth allocated. */
  minor: number;
  /** Full collections (mark-compact), whose marking ran alongside in incremental steps (counted in ms). */
  major: number;
}

async function gcPauses(metricsUrl: string): Promise<GcPauses> {
  const text = await (await fetch(metricsUrl)).text();
  const pauses: GcPauses = { ms: 0, minor: 0, major: 0 };
  // A service's /metrics holds its own series only; every service of the process shows the same collections.
  for (const [, part, labels, value] of text.matchAll(/^nodejs_gc_duration_seconds_(sum|count)\{(.*)\} (\S+)$/gm)) {
    const kind = /kind="(\w+)"/.exec(labels!)?.[1];
    if (part === 'sum') pauses.ms += Number(value) * 1000;
    else if (kind === 'minor' || kind === 'major') pauses[kind] += Number(value);
  }
  return pauses;
}

/**
 * One kind of call measured in segments (interleave): its calls and the CPU `pid` and this process spent on them;
 * with `metricsUrl` (the stack's education service), also the served process's GC pauses, read outside the CPU window.
 */
function measured(pid: number, run: (seconds: number, warmup: boolean) => Promise<Segment>, metricsUrl?: string) {
  const segments: Segment[] = [];
  const cpu = { server: 0, loop: 0, client: 0, calls: 0 };
  const gc: GcPauses = { ms: 0, minor: 0, major: 0 };
  return {
    async measure(seconds: number, warmup: boolean): Promise<void> {
      const gcBefore = metricsUrl ? await gcPauses(metricsUrl) : undefined;
      const [server, loop, client] = [cpuMsOf(pid), loopCpuMsOf(pid), clientCpuMs()];
      const segment = await run(seconds, warmup);
      cpu.server += cpuMsOf(pid) - server;
      cpu.loop += loopCpuMsOf(pid) - loop;
      cpu.client += clientCpuMs() - client;
      // The warm-up calls ran inside the CPU window: they count as calls for the CPU a call.
      cpu.calls += segment.calls + segment.warmupCalls;
      segments.push(segment);
      if (metricsUrl && gcBefore) {
        const gcAfter = await gcPauses(metricsUrl);
        for (const k of ['ms', 'minor', 'major'] as const) gc[k] += gcAfter[k] - gcBefore[k];
      }
    },
    /** The rate and latencies over every segment, and the CPU a call (a figure that holds on a loaded machine). */
    result(): LoadResult & { cpu: string } {
      const calls = Math.max(1, cpu.calls);
      const pauses = metricsUrl
        ? { ms: gc.ms / calls, minorPer1000: (1000 * gc.minor) / calls, majorPer1000: (1000 * gc.major) / calls }
        : undefined;
      return {
        ...summary(segments),
        cpu: cpuNote(cpu.server / calls, cpu.loop / calls, cpu.client / calls, pauses),
      };
    },
  };
}

/** Milliseconds of CPU as the rows print them: ms from 1 ms on, else µs. */
function cpuText(ms: number): string {
  return ms >= 1 ? `${ms.toFixed(2)} ms` : `${(ms * 1000).toFixed(0)} µs`;
}

/**
 * The served process's CPU a call, its event loop's share (the thread every request waits for), and the calling
 * client's: on two cores the client shares the machine, so a row is bound by both. With `gc`, how much of the event
 * loop's time went to GC pauses, and how many collections a thousand calls cost: counts that hold however busy the
 * machine is, where times do not.
 */
export function cpuNote(
  ms: number,
  loopMs: number,
  clientMs: number,
  gc?: { ms: number; minorPer1000: number; majorPer1000: number },
): string {
  const pauses = gc
    ? `, GC pauses ${cpuText(gc.ms)} of it: ${fmt(gc.minorPer1000)} young and ${fmt(gc.majorPer1000)} full collections a 1000 calls`
    : '';
  return `server CPU ${cpuText(ms)} a call (${cpuText(loopMs)} on its event loop${pauses}); client ${cpuText(clientMs)}`;
}

async function settleRate(
  label: string,
  bodies: X402FacilitatorRequest[],
  concurrency: number,
  settle: (body: X402FacilitatorRequest) => Promise<boolean>,
): Promise<ThroughputRow> {
  let failed = 0;
  const times: number[] = [];
  const seconds = await runCount(bodies.length, concurrency, async (i) => {
    const t = performance.now();
    if (!(await settle(bodies[i]!))) failed++;
    times.push(performance.now() - t);
  });
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!;
  return row(
    label,
    concurrency,
    { calls: bodies.length, seconds, perSecond: (bodies.length - failed) / seconds, p50Ms: at(0.5), p95Ms: at(0.95) },
    `${bodies.length - failed}/${bodies.length} settled${failed ? ` (last failure ${lastFailure.slice(0, 120)})` : ''}`,
  );
}

/**
 * RSS of a two-service process (`SERVICES=facilitator,education npm start` on PGlite, the ledger and the console
 * included) at start and after `calls` paid lessons: the smallest process a scaled-out deployment runs.
 */
async function memoryTwoServices(calls: number): Promise<ThroughputRow> {
  const stack = await startStack({
    services: ['facilitator', 'education'],
    nodeFlags: process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? [],
  });
  try {
    const wallet = await walletFromFile(stack.demoKeyFile);
    // 100 USD in the demo wallet pays 2,000 lessons: the faucet tops it up beyond.
    await fund(stack, wallet.address, Math.max(0, calls * 0.06 - 100));
    const paying = createClient({
      deployment: stack.servicesJson,
      wallet,
      maxRetries: 0,
      payments: { maxPerCallUsd: '0.10', sessions: false },
    });
    // services.json is written before the console starts: its start is given time to finish before the first read.
    await new Promise((r) => setTimeout(r, 2000));
    const rssStart = stack.rss();
    const lesson = { body: { courseId: 'tool-use', lessonId: 'function-calling' } };
    const seconds = await runCount(calls, SDK_CONCURRENCY, () => paying.education.lesson(lesson));
    const rssAfter = stack.rss();
    return {
      benchmark: `memory: RSS of SERVICES=facilitator,education npm start after ${calls} paid calls`,
      concurrency: SDK_CONCURRENCY,
      perSecond: calls ? fmt(calls / seconds, 0) : 'n/a',
      p50Ms: '',
      p95Ms: '',
      note: `${mb(rssAfter)} (at start ${mb(rssStart)})`,
    };
  } finally {
    await stack.close();
  }
}

export async function throughput(): Promise<{
  rows: ThroughputRow[];
  ratios: Record<string, string>;
  machine: string;
}> {
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, node ${process.version}`;
  if (ROWS && !ROWS.some((r) => FULL_STACK_ROWS.includes(r)))
    return { rows: want('memory2') ? [await memoryTwoServices(MEMORY2_CALLS)] : [], ratios: {}, machine };
  // Payment sessions on (the session row), as a deployment that accepts them runs.
  const stack = await startStack({
    nodeFlags: process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? [],
    env: { PAYWALL_SESSIONS: 'on' },
  });
  const rows: ThroughputRow[] = [];
  const ratios: Record<string, string> = {};
  try {
    const education = stack.services.education!.url;
    const wallet = await walletFromFile(stack.demoKeyFile);
    // The demo wallet starts with 100 USD: 2,000 lessons. The local faucet tops it up for the memory run.
    await fund(stack, wallet.address, (PAID_CALLS + 3 * SETTLEMENTS) * 0.06);
    const paying = createClient({
      deployment: stack.servicesJson,
      wallet,
      maxRetries: 0,
      // One transaction per call (exact): sessions are the session row's.
      payments: { maxPerCallUsd: '0.10', sessions: false },
    });
    const lesson = { body: { courseId: 'tool-use', lessonId: 'function-calling' } };
    const rssStart = stack.rss();

    // Free, paid and session calls take turns (interleave), so that their ratios compare like with like.
    const free = createClient({ deployment: stack.servicesJson, maxRetries: 0 });
    const metricsUrl = `${education}/metrics`;
    const freeSide = measured(
      stack.pid,
      (seconds, warmup) => load(() => free.education.catalog(), { concurrency: SDK_CONCURRENCY, seconds, warmup }),
      metricsUrl,
    );
    const paidSide = measured(
      stack.pid,
      (seconds, warmup) =>
        load(() => paying.education.lesson(lesson), { concurrency: SDK_CONCURRENCY, seconds, warmup }),
      metricsUrl,
    );
    // Paid by vouchers in payment sessions: one buyer per worker, against the same stack (bench/sessions.ts).
    const buyers = want('session')
      ? await sessionBuyers(stack, { concurrency: SDK_CONCURRENCY, seconds: SECONDS })
      : undefined;
    const sessionSide = buyers && measured(stack.pid, buyers.run, metricsUrl);
    try {
      await interleave(
        {
          ...(want('free') ? { free: freeSide.measure } : {}),
          ...(want('paid') ? { paid: paidSide.measure } : {}),
          ...(sessionSide ? { session: sessionSide.measure } : {}),
        },
        { seconds: SECONDS, rounds: ROUNDS },
      );
    } finally {
      // The sellers' closes settle what was vouched on chain.
      await buyers?.close();
    }
    const freeSdk = want('free') ? freeSide.result() : { ...NONE, cpu: '' };
    const paidSdk = want('paid') ? paidSide.result() : { ...NONE, cpu: '' };
    rows.push(row('free via SDK (education GET /api/catalog)', SDK_CONCURRENCY, freeSdk, freeSdk.cpu));
    rows.push(
      row(
        'paid x402 exact via SDK (education POST /api/lesson)',
        SDK_CONCURRENCY,
        paidSdk,
        `${paidSdk.calls} paid calls; ${paidSdk.cpu}`,
      ),
    );
    ratios['paid exact / free (SDK)'] = fmt(paidSdk.perSecond / freeSdk.perSecond, 3);
    const sessionRow = 'session via SDK (education POST /api/lesson, vouchers)';
    if (buyers && sessionSide) {
      const r = sessionSide.result();
      const notByVoucher = buyers.notByVoucher();
      const note = `${r.calls} calls, a buyer per worker${notByVoucher ? `; ${notByVoucher} not by voucher` : ''}; ${r.cpu}`;
      rows.push(row(sessionRow, SDK_CONCURRENCY, r, note));
      ratios['session / free (SDK)'] = fmt(r.perSecond / freeSdk.perSecond, 3);
    } else rows.push(row(sessionRow, SDK_CONCURRENCY, undefined));

    // Free routes against bare Express 4 serving the very same JSON, raw keep-alive GETs at the same concurrency.
    if (want('http')) {
      const catalogJson = await (await fetch(`${education}/api/catalog`)).text();
      const bare = await bareExpress(catalogJson);
      try {
        const http = (pid: number, url: string) => {
          const get = getter(url, HTTP_CONCURRENCY);
          return measured(
            pid,
            (seconds, warmup) => load(get, { concurrency: HTTP_CONCURRENCY, seconds, warmup }),
            pid === stack.pid ? metricsUrl : undefined,
          );
        };
        const sides = {
          ours: http(stack.pid, `${education}/api/catalog`),
          theirs: http(bare.pid, `${bare.url}/api/catalog`),
          health: http(stack.pid, `${education}/health`),
          bareHealth: http(bare.pid, `${bare.url}/health`),
        };
        await interleave(Object.fromEntries(Object.entries(sides).map(([name, side]) => [name, side.measure])), {
          seconds: SECONDS,
          rounds: ROUNDS,
        });
        const ours = sides.ours.result();
        const theirs = sides.theirs.result();
        const health = sides.health.result();
        const bareHealth = sides.bareHealth.result();
        rows.push(row('free GET /api/catalog, raw HTTP', HTTP_CONCURRENCY, ours, ours.cpu));
        rows.push(row('bare Express 4, same JSON', HTTP_CONCURRENCY, theirs, theirs.cpu));
        rows.push(row('GET /health (education)', HTTP_CONCURRENCY, health, health.cpu));
        rows.push(row('bare Express 4, GET /health', HTTP_CONCURRENCY, bareHealth, bareHealth.cpu));
        ratios['free route / bare Express'] = fmt(ours.perSecond / theirs.perSecond, 2);
        ratios['/health / bare Express'] = fmt(health.perSecond / bareHealth.perSecond, 2);
      } finally {
        bare.close();
      }
    }

    // Settlements alone: prepared payments settled with concurrency by our facilitator (HTTP /settle) and by
    // the official @x402/svm `exact` facilitator scheme (in this process) on the same ledger and fee payer.
    if (want('settle')) {
      const facilitator = facilitatorClient(stack.services.facilitator!.url);
      const feePayer = (await facilitator.supported()).kinds.find((k) => k.scheme === 'exact')!.extra
        .feePayer as string;
      const ourBodies = await preparePayments(stack, feePayer, SETTLEMENTS);
      const before = cpuMsOf(stack.pid);
      const ours = await settleRate('facilitator /settle, ours (HTTP)', ourBodies, SDK_CONCURRENCY, async (b) => {
        const result = await facilitator.settle(b);
        if (!result.success) lastFailure = `${result.errorReason}: ${result.errorMessage}`;
        return result.success;
      });
      const perSettlement = (cpuMsOf(stack.pid) - before) / ourBodies.length;
      ours.note += `; server CPU ${perSettlement.toFixed(2)} ms a settlement (${(1000 / perSettlement).toFixed(0)}/s a core)`;
      rows.push(ours);
      const feePayerKey = Uint8Array.from(
        JSON.parse(readFileSync(resolve(stack.dataDir, 'keys', 'facilitator.json'), 'utf8')) as number[],
      );
      const official = new ExactSvmScheme(
        toFacilitatorSvmSigner(await createKeyPairSignerFromBytes(feePayerKey), { defaultRpcUrl: stack.rpcUrl }),
      );
      const officialBodies = await preparePayments(stack, feePayer, SETTLEMENTS);
      rows.push(
        await settleRate(
          'facilitator settle, official @x402/svm exact (in process)',
          officialBodies,
          SDK_CONCURRENCY,
          async (b) => (await official.settle(b.paymentPayload as never, b.paymentRequirements as never)).success,
        ),
      );
      ratios['settle ours / official'] = fmt(Number(rows.at(-2)!.perSecond) / Number(rows.at(-1)!.perSecond), 2);
    }

    // Memory: paid calls until PAID_CALLS in all (those above count), then the serving process's RSS.
    if (want('memory')) {
      const rssBefore = stack.rss();
      const remaining = Math.max(0, PAID_CALLS - paidSdk.calls - SDK_CONCURRENCY * 2);
      const secondsMore = await runCount(remaining, SDK_CONCURRENCY, () => paying.education.lesson(lesson));
      const rssAfter = stack.rss();
      rows.push({
        benchmark: `memory: RSS of npm start after ${PAID_CALLS} paid calls`,
        concurrency: SDK_CONCURRENCY,
        perSecond: remaining ? fmt(remaining / secondsMore, 0) : 'n/a',
        p50Ms: '',
        p95Ms: '',
        note: `${mb(rssAfter)} (at start ${mb(rssStart)}; ${mb(rssBefore)} before the last ${remaining} calls)`,
      });
      ratios['RSS growth per paid call (last calls)'] = remaining
        ? `${((rssAfter - rssBefore) / remaining / 1024).toFixed(2)} KB`
        : 'n/a';
    }
  } finally {
    await stack.close();
  }
  if (want('memory2')) rows.push(await memoryTwoServices(MEMORY2_CALLS));
  return { rows, ratios, machine };
}

export { rssOf };
