import { Writable } from 'node:stream';
import { SpanKind, trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import {
  ServiceHealth,
  base58Encode,
  education as educationContract,
  routeMeta,
  usdToAtomic,
  type PaymentRequired,
} from '@agent-economy/contracts';
import { BudgetExceededError, createClient, walletFromSecretKey, type ClientMetric } from '@agent-economy/sdk';
import axios from 'axios';
import { createSolanaRpc } from '@solana/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../servers/src/runtime/logger';
import { createEducationApp } from '../servers/src/services/education';
import { createMarketplaceApp } from '../servers/src/services/marketplace';
import { createWagersApp } from '../servers/src/services/wagers';
import { createWalletHistoryApp } from '../servers/src/services/wallet-history';
import { deployments, serviceApps, type DeploymentId } from '../servers/src/services';
import { generateWallet } from '../servers/src/solana/keys';
import { startEconomy, type Economy } from './support/economy';
import { buildPaymentTransaction, paymentHeader } from './support/payments';
import { startService, type RunningService } from './support/servers';

// Metrics, traces, logs and health of real services in this process: spans go to an in-memory exporter
// registered as the global tracer provider, log lines to an array.

const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));

const lines: string[] = [];
const sink = new Writable({
  write(chunk, _encoding, done) {
    lines.push(String(chunk));
    done();
  },
});
const logs = () => lines.join('');
const logLines = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);

const LESSON = { courseId: 'tool-use', lessonId: 'function-calling' };
const lessonPrice = usdToAtomic((routeMeta(educationContract.router.lesson).payment as { usd: string }).usd).toString();

/** The value of one Prometheus sample: the series named `name` whose labels include `labels`. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-z_:][a-z0-9_:]*)(?:\{(.*)\})? (\S+)$/i.exec(line);
    if (!match || match[1] !== name) continue;
    const have = Object.fromEntries([...(match[2] ?? '').matchAll(/([a-z_]+)="([^"]*)"/gi)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(match[3]);
  }
  return undefined;
}
const metricsOf = async (url: string) => (await fetch(`${url}/metrics`)).text();
const parentOf = (span: ReadableSpan) =>
  (span as unknown as { parentSpanContext?: { spanId: string } }).parentSpanContext?.spanId;
const scopeOf = (span: ReadableSpan) =>
  (span as unknown as { instrumentationScope: { name: string } }).instrumentationScope.name;

let economy: Economy;
beforeAll(async () => {
  economy = await startEconomy({ logger: createLogger('debug', sink) });
});
afterAll(async () => {
  await economy?.close();
});

describe('a paid lesson', () => {
  const sentSignatures: string[] = [];
  const events: ClientMetric[] = [];
  let traceId: string;
  let receiptAmount: string;

  beforeAll(async () => {
    const wallet = await walletFromSecretKey(economy.buyer.secretKey);
    const http = axios.create();
    http.interceptors.request.use((config) => {
      const header = config.headers?.['payment-signature'];
      if (typeof header === 'string') sentSignatures.push(header);
      return config;
    });
    // No prepaying: the call takes a 402 first, so quotes and payments are counted apart.
    const client = createClient({
      baseUrls: { education: economy.education.url },
      wallet,
      axios: http,
      maxRetries: 0,
      payments: { rpcUrl: economy.rpcUrl, prepay: false },
      onMetric: (m) => events.push(m),
    });
    exporter.reset();
    const response = await client.education.lesson.withResponse({ body: LESSON });
    receiptAmount = response.payment!.amount;
    const sdkSpan = exporter
      .getFinishedSpans()
      .find((s) => scopeOf(s) === '@agent-economy/sdk' && s.name === 'POST /api/lesson')!;
    traceId = sdkSpan.spanContext().traceId;
  });

  it('the facilitator counts one settlement and the lesson price as revenue of the seller, in atomic units', async () => {
    expect(receiptAmount).toBe(lessonPrice);
    const text = await metricsOf(economy.facilitator.url);
    expect(
      sample(text, 'facilitator_settlements_total', {
        kind: 'x402',
        outcome: 'settled',
        reason: 'none',
        service: 'facilitator',
      }),
    ).toBe(1);
    expect(
      sample(text, 'facilitator_revenue_atomic_total', {
        kind: 'x402',
        pay_to: economy.education.context.wallet.address,
      }),
    ).toBe(Number(lessonPrice));
    expect(sample(text, 'facilitator_settlement_duration_seconds_count', { kind: 'x402', outcome: 'settled' })).toBe(1);
    expect(sample(text, 'facilitator_fee_payer_balance_lamports')).toBe(
      Number(economy.ledger.lamports(economy.feePayer.address)),
    );
    expect(sample(text, 'facilitator_payment_sessions_open')).toBe(0);
    expect(text).toContain('# HELP facilitator_revenue_atomic_total ');
  });

  it('the service counts the quote, the settlement and its revenue apart', async () => {
    const text = await metricsOf(economy.education.url);
    // One 402 before the payment; the paid request is not a quote.
    expect(sample(text, 'payment_quotes_total', { route: '/api/lesson' })).toBe(1);
    expect(sample(text, 'payment_settlements_total', { route: '/api/lesson' })).toBe(1);
    expect(
      sample(text, 'payment_revenue_atomic_total', {
        route: '/api/lesson',
        pay_to: economy.education.context.wallet.address,
      }),
    ).toBe(Number(lessonPrice));
    expect(sample(text, 'payment_settlement_duration_seconds_count', { outcome: 'settled' })).toBe(1);
  });

  it('the SDK reports the payment to onMetric', () => {
    expect(events).toEqual([
      expect.objectContaining({
        name: 'payment',
        service: 'education',
        route: 'POST /api/lesson',
        amountAtomic: lessonPrice,
        payTo: economy.education.context.wallet.address,
      }),
    ]);
  });

  it('is one trace: SDK → service → facilitator → ledger', () => {
    const spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    const find = (scope: string, kind: SpanKind, name: string | RegExp) =>
      spans.filter(
        (s) =>
          scopeOf(s) === scope && s.kind === kind && (typeof name === 'string' ? s.name === name : name.test(s.name)),
      );
    const sdk = find('@agent-economy/sdk', SpanKind.CLIENT, 'POST /api/lesson');
    expect(sdk).toHaveLength(1);
    // The 402 and the paid request: both server spans of the education service under the SDK's span.
    const served = find('@agent-economy/servers', SpanKind.SERVER, 'POST /api/lesson');
    expect(served).toHaveLength(2);
    for (const s of served) expect(parentOf(s)).toBe(sdk[0]!.spanContext().spanId);
    const settleCall = find('@agent-economy/servers', SpanKind.CLIENT, 'x402 facilitator /settle');
    expect(settleCall).toHaveLength(1);
    expect(served.map((s) => s.spanContext().spanId)).toContain(parentOf(settleCall[0]!));
    const settleServed = find('@agent-economy/servers', SpanKind.SERVER, 'POST /settle');
    expect(settleServed).toHaveLength(1);
    expect(parentOf(settleServed[0]!)).toBe(settleCall[0]!.spanContext().spanId);
    // The facilitator's chain calls, and the ledger's JSON-RPC serving them, under its /settle span.
    const ledger = find('@agent-economy/servers', SpanKind.SERVER, /^ledger jsonrpc /);
    expect(ledger.map((s) => s.name)).toContain('ledger jsonrpc sendTransaction');
    const underSettle = (span: ReadableSpan): boolean => {
      for (let at: ReadableSpan | undefined = span; at; at = byId.get(parentOf(at) ?? ''))
        if (at === settleServed[0]) return true;
      return false;
    };
    const sent = ledger.find((s) => s.name === 'ledger jsonrpc sendTransaction')!;
    expect(underSettle(sent)).toBe(true);
    expect(byId.get(parentOf(sent)!)!.name).toBe('solana rpc sendTransaction');
  });

  it("every log line of the call names its trace, the facilitator's included", () => {
    const parsed = logLines();
    const settleLine = parsed.find((l) => l.msg === 'request' && l.service === 'facilitator' && l.path === '/settle');
    expect(settleLine?.traceId).toBe(traceId);
    const settled = parsed.find((l) => l.msg === 'payment settled');
    expect(settled?.traceId).toBe(traceId);
    const served = parsed.filter((l) => l.msg === 'request' && l.service === 'education' && l.path === '/api/lesson');
    expect(served.map((l) => l.traceId)).toEqual([traceId, traceId]);
  });

  it('never logs the payment header or a secret key', () => {
    expect(sentSignatures).toHaveLength(1);
    const text = logs();
    expect(text).not.toContain(sentSignatures[0]!);
    expect(text).not.toContain(sentSignatures[0]!.slice(0, 40));
    for (const key of [
      economy.buyer.secretKey,
      economy.feePayer.secretKey,
      economy.education.context.wallet.secretKey,
    ]) {
      expect(text).not.toContain(base58Encode(key));
      expect(text).not.toContain(Buffer.from(key).toString('base64'));
      expect(text).not.toContain(Buffer.from(key).toString('hex'));
    }
  });
});

describe('traces between services and to the chain', () => {
  const ZERO = { protocols: { kind: 'fixed', usd: '0' } } as const;
  const started: RunningService[] = [];
  afterAll(async () => {
    for (const service of started) await service.stopServer();
  });

  /** The spans of the trace an SDK call started (its client span named `name`), made by `fn`. */
  async function traceOf(name: string, fn: () => Promise<unknown>) {
    exporter.reset();
    await fn();
    const spans = exporter.getFinishedSpans();
    const sdk = spans.filter((s) => scopeOf(s) === '@agent-economy/sdk' && s.name === name);
    expect(sdk).toHaveLength(1);
    const traceId = sdk[0]!.spanContext().traceId;
    const inTrace = spans.filter((s) => s.spanContext().traceId === traceId);
    const byId = new Map(inTrace.map((s) => [s.spanContext().spanId, s]));
    return {
      spans: inTrace,
      /** Every span of the trace whose name matches, with its parent. */
      named: (kind: SpanKind, match: RegExp) =>
        inTrace
          .filter((s) => s.kind === kind && match.test(s.name))
          .map((span) => ({ span, parent: byId.get(parentOf(span) ?? '') })),
      /** Whether `span` descends from `ancestor`. */
      under: (span: ReadableSpan, ancestor: ReadableSpan) => {
        for (let at: ReadableSpan | undefined = span; at; at = byId.get(parentOf(at) ?? ''))
          if (at === ancestor) return true;
        return false;
      },
      unknownParents: inTrace.filter((s) => s !== sdk[0] && !byId.has(parentOf(s) ?? '')).map((s) => s.name),
    };
  }

  it('a service reading another over HTTP (the marketplace reading the education service) is one trace', async () => {
    const market = await startService(
      (context) =>
        createMarketplaceApp(context, {
          serviceUrls: () => ({ education: economy.education.url }),
          facilitatorUrl: () => economy.facilitator.url,
        }),
      { id: 'marketplace' },
    );
    started.push(market);
    const trace = await traceOf('GET /api/facilitator/marketplace/resources', () =>
      market.client.marketplace.resources(),
    );
    expect(trace.unknownParents).toEqual([]);
    const [served] = trace.named(SpanKind.SERVER, /^GET \/api\/facilitator\/marketplace\/resources$/);
    expect(served).toBeDefined();
    // Both documents the catalog reads: a client span of the marketplace's request, served by the education service
    // as a server span under it.
    for (const path of ['/openapi.json', '/.well-known/agent-card.json']) {
      const calls = trace.named(SpanKind.CLIENT, new RegExp(`^GET ${path.replace(/\./g, '\\.')}$`));
      expect(calls, path).toHaveLength(1);
      expect(trace.under(calls[0]!.span, served!.span)).toBe(true);
      // Routes outside the contract are server spans named by their method, with their path as an attribute.
      const answered = trace.spans.filter((sp) => sp.kind === SpanKind.SERVER && sp.attributes['url.path'] === path);
      expect(answered, path).toHaveLength(1);
      expect(parentOf(answered[0]!)).toBe(calls[0]!.span.spanContext().spanId);
    }
  });

  it("a vault's chain read (the wagers service's health reads the vault's balance) is one trace down to the ledger", async () => {
    const wagers = await economy.startPaidService(
      (context) => createWagersApp(context, { entropyUrl: () => 'http://127.0.0.1:9', sweepEveryMs: 0 }),
      { id: 'wagers', sol: true },
    );
    const trace = await traceOf('GET /api/v1/health', () => wagers.client.wagers.health());
    expect(trace.unknownParents).toEqual([]);
    const [served] = trace.named(SpanKind.SERVER, /^GET \/api\/v1\/health$/);
    const reads = trace.named(SpanKind.CLIENT, /^solana rpc getAccountInfo$/);
    expect(reads.length).toBeGreaterThan(0);
    for (const read of reads) expect(trace.under(read.span, served!.span)).toBe(true);
    const ledger = trace.named(SpanKind.SERVER, /^ledger jsonrpc getAccountInfo$/);
    expect(ledger.map((l) => l.parent)).toEqual(reads.map((r) => r.span));
  });

  it("wallet-history's batched chain reads carry the trace of the request", async () => {
    const history = await startService((c) => createWalletHistoryApp({ ...c, prices: ZERO }), {
      id: 'wallet-history',
      rpcUrl: economy.rpcUrl,
    });
    started.push(history);
    const wallet = generateWallet().address;
    await economy.ledger.airdrop(wallet, 1_000_000n);
    const trace = await traceOf('POST /api/protocols', () =>
      history.client.walletHistory.protocols({ body: { wallet } }),
    );
    expect(trace.unknownParents).toEqual([]);
    const [served] = trace.named(SpanKind.SERVER, /^POST \/api\/protocols$/);
    for (const method of ['getSignaturesForAddress', 'getTransaction']) {
      const calls = trace.named(SpanKind.CLIENT, new RegExp(`^solana rpc ${method}$`));
      expect(calls.length, method).toBeGreaterThan(0);
      for (const call of calls) expect(trace.under(call.span, served!.span)).toBe(true);
      const answered = trace.named(SpanKind.SERVER, new RegExp(`^ledger jsonrpc ${method}$`));
      expect(answered.map((a) => a.parent)).toEqual(calls.map((c) => c.span));
    }
  });
});

describe('a refused payment', () => {
  it('is counted with its code and x402 reason, and logged at warn with them, without the payment', async () => {
    const quoted = await fetch(`${economy.education.url}/api/lesson`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(LESSON),
    });
    const quote = ((await quoted.json()) as { error: { details: PaymentRequired } }).error.details;
    // A payer with no stablecoin: the facilitator refuses the payment at verification.
    const payer = generateWallet();
    const { value } = await createSolanaRpc(economy.rpcUrl).getLatestBlockhash().send();
    const requirements = quote.accepts[0]!;
    const header = paymentHeader(
      requirements,
      await buildPaymentTransaction({ payer, requirements, blockhash: value }),
      quote.resource.url,
    );
    const refused = await fetch(`${economy.education.url}/api/lesson`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'payment-signature': header },
      body: JSON.stringify(LESSON),
    });
    expect(refused.status).toBe(402);
    const body = (await refused.json()) as { error: { code: string; details: { reason: string } } };
    expect(body.error.code).toBe('payment_invalid');
    const reason = body.error.details.reason;
    expect(reason).toMatch(/^[a-z_]+$/);

    const text = await metricsOf(economy.education.url);
    expect(sample(text, 'payment_refusals_total', { route: '/api/lesson', code: 'payment_invalid', reason })).toBe(1);
    const warn = logLines().find((l) => l.msg === 'payment refused' && l.level === 40);
    expect(warn).toMatchObject({ code: 'payment_invalid', reason, service: 'education' });
    expect(logs()).not.toContain(header.slice(0, 40));
    expect(logs()).not.toContain(base58Encode(payer.secretKey));
  });

  it('the SDK reports a call its budget refuses to onMetric', async () => {
    const events: ClientMetric[] = [];
    const wallet = await walletFromSecretKey(economy.buyer.secretKey);
    const client = createClient({
      baseUrls: { education: economy.education.url },
      wallet,
      maxRetries: 0,
      payments: { rpcUrl: economy.rpcUrl, maxPerCallUsd: '0.01' },
      onMetric: (m) => events.push(m),
    });
    await expect(client.education.lesson({ body: LESSON })).rejects.toBeInstanceOf(BudgetExceededError);
    expect(events).toEqual([
      {
        name: 'budget_refused',
        service: 'education',
        route: 'POST /api/lesson',
        limit: 'perCall',
        priceUsd: '0.05',
        limitUsd: '0.01',
      },
    ]);
  });
});

describe('every answered request', () => {
  it('is logged and counted once, a request refused before any route (a malformed path) too', async () => {
    const requests = (text: string, route: string, status: string) =>
      sample(text, 'http_requests_total', { route, method: 'GET', status }) ?? 0;
    const before = await metricsOf(economy.education.url);
    const id = 'req-refused-path-1';
    const refused = await fetch(`${economy.education.url}/api/course/%ZZ`, { headers: { 'x-request-id': id } });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('invalid_path');
    const free = await fetch(`${economy.education.url}/api/catalog`, { headers: { 'x-request-id': 'req-catalog-1' } });
    expect(free.status).toBe(200);
    await free.arrayBuffer();

    const after = await metricsOf(economy.education.url);
    expect(requests(after, 'unmatched', '400') - requests(before, 'unmatched', '400')).toBe(1);
    expect(requests(after, '/api/catalog', '200') - requests(before, '/api/catalog', '200')).toBe(1);
    const logged = (requestId: string) => logLines().filter((l) => l.requestId === requestId);
    expect(logged(id)).toEqual([
      expect.objectContaining({ msg: 'request', service: 'education', status: 400, path: '/api/course/%ZZ' }),
    ]);
    expect(logged('req-catalog-1')).toEqual([
      expect.objectContaining({ msg: 'request', service: 'education', status: 200, path: '/api/catalog' }),
    ]);
    expect(logged(id)[0]!.ms).toBeGreaterThanOrEqual(0);
  });
});

describe("the process's metrics", () => {
  it('count every garbage collection, and every service shows the same ones', async () => {
    const minor = async (url: string) =>
      sample(await metricsOf(url), 'nodejs_gc_duration_seconds_count', { kind: 'minor' }) ?? 0;
    const before = await minor(economy.education.url);
    // About 200 MB of short-lived garbage in one synchronous stretch: a dozen young-generation collections or more
    // (16 MB young generation at most), which the process hears of together once the stretch is over. prom-client's
    // own histogram counted the first of them.
    let young: { i: number }[] = [];
    for (let i = 0; i < 5_000_000; i++) {
      young.push({ i });
      if (young.length > 1000) young = [];
    }
    let after = before;
    for (let tries = 0; tries < 100 && after === before; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      after = await minor(economy.education.url);
    }
    expect(after - before).toBeGreaterThanOrEqual(10);
    // One process, one GC: the facilitator's registry shows the same histogram under its own name.
    const text = await metricsOf(economy.facilitator.url);
    expect(
      sample(text, 'nodejs_gc_duration_seconds_count', { kind: 'minor', service: 'facilitator' }),
    ).toBeGreaterThanOrEqual(after);
  });

  // One event-loop delay monitor for the process (one per service ran twenty timers in npm start), read over windows of
  // at least ten seconds: every service shows the same figures in a window, and none sees only the time since another's
  // scrape. Of two back-to-back pairs of scrapes, at most one can straddle a window's end.
  it('shows one event-loop delay, the same in every service within a window', async () => {
    const delays = async (url: string) => {
      const text = await metricsOf(url);
      return ['min', 'max', 'mean', 'p50', 'p99'].map((q) => sample(text, `nodejs_eventloop_lag_${q}_seconds`));
    };
    const first = await delays(economy.education.url);
    const second = await delays(economy.facilitator.url);
    const third = await delays(economy.education.url);
    for (const figures of [first, second, third]) {
      for (const value of figures) expect(value).toBeGreaterThanOrEqual(0);
    }
    expect(second[1]).toBeGreaterThan(0);
    expect([first, third]).toContainEqual(second);
  });
});

describe('/health', () => {
  const running = new Map<string, RunningService>();
  beforeAll(async () => {
    // Every service `npm start` mounts, as the fuzz test starts them: one database, paid through the facilitator.
    const database = economy.facilitator.database;
    for (const [id, factory] of Object.entries(serviceApps)) {
      if (id === 'facilitator') running.set(id, economy.facilitator);
      else if (id === 'education') running.set(id, economy.education);
      else
        running.set(
          id,
          await startService(factory!, {
            id,
            database,
            rpcUrl: economy.rpcUrl,
            paywall: { feePayer: economy.feePayer.address, facilitatorUrl: economy.facilitator.url },
          }),
        );
    }
  }, 180_000);
  afterAll(async () => {
    await Promise.all(
      [...running].filter(([id]) => id !== 'facilitator' && id !== 'education').map(([, s]) => s.stopServer()),
    );
  });

  it('every service answers the one health body, and is ready', async () => {
    const ids = deployments.filter((d) => serviceApps[d.id as DeploymentId]).map((d) => d.id);
    expect(ids.length).toBeGreaterThanOrEqual(24);
    for (const id of ids) {
      const service = running.get(id)!;
      for (const path of ['/health', '/health/ready']) {
        const response = await fetch(`${service.url}${path}`);
        const body = await response.json();
        const parsed = ServiceHealth.safeParse(body);
        expect(parsed.success, `${id} ${path}: ${JSON.stringify(parsed.error?.issues)}`).toBe(true);
        expect([response.status, (body as ServiceHealth).status], `${id} ${path}`).not.toContain('down');
        expect(response.status, `${id} ${path}`).toBe(200);
        const health = body as ServiceHealth;
        expect(health.dependencies.database.status).toBe('ok');
        expect(health.dependencies.database.latencyMs).toBeGreaterThanOrEqual(0);
        // The facilitator's dependency is its chain; every other service's is the facilitator.
        if (id === 'facilitator') expect(health.dependencies.chain?.status).toBe('ok');
        else expect(health.dependencies.facilitator?.status).toBe('ok');
        expect(Array.isArray(health.dependencies.upstreams)).toBe(true);
      }
    }
    // Services reading the chain list it among their upstreams.
    const entropy = (await (await fetch(`${running.get('entropy')!.url}/health`)).json()) as ServiceHealth;
    expect(entropy.dependencies.upstreams.map((u) => u.name)).toEqual(['local-ledger']);
  });

  it("a data service's own health route answers the same body as /health", async () => {
    const service = running.get('wallet-history')!;
    const [own, runtime] = await Promise.all([
      fetch(`${service.url}/api/health`).then((r) => r.json()),
      fetch(`${service.url}/health`).then((r) => r.json()),
    ]);
    const strip = (h: ServiceHealth) => ({
      ...h,
      uptimeSeconds: 0,
      dependencies: {
        ...h.dependencies,
        database: { status: h.dependencies.database.status },
        facilitator: { status: h.dependencies.facilitator?.status },
      },
    });
    expect(strip(own as ServiceHealth)).toEqual(strip(runtime as ServiceHealth));
  });

  it('/health/ready is 503 while the facilitator does not answer', async () => {
    const orphan = await startService(createEducationApp, { paywall: { facilitatorUrl: 'http://127.0.0.1:9' } });
    try {
      const response = await fetch(`${orphan.url}/health/ready`);
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('5');
      const body = (await response.json()) as ServiceHealth;
      expect(ServiceHealth.safeParse(body).success).toBe(true);
      expect(body).toMatchObject({
        status: 'down',
        dependencies: { database: { status: 'ok' }, facilitator: { status: 'down' } },
        error: { code: 'dependency_unavailable' },
      });
    } finally {
      await orphan.close();
    }
  });
});
