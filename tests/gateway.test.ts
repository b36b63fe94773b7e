import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import axios from 'axios';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  TRADE_GATEWAY_FEE_USD,
  atomicToUsd,
  decodeX402Header,
  usdToAtomic,
  type TradePlan,
  type X402PaymentPayload,
} from '@agent-economy/contracts';
import {
  ApiError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  NotFoundError,
  PaymentRequiredError,
  PermissionDeniedError,
  UnprocessableEntityError,
  createClient,
  walletFromSecretKey,
  type Signer,
} from '@agent-economy/sdk';
import { openDatabase } from '../servers/src/db';
import { paymentKey } from '../servers/src/runtime/paywall';
import { createGatewayApp } from '../servers/src/services/gateway';
import type { Prober } from '../servers/src/services/gateway/prober';
import { createKnowledgeMarketApp } from '../servers/src/services/knowledge-market';
import { createNegotiationApp } from '../servers/src/services/negotiation';
import { createReputationApp } from '../servers/src/services/reputation';
import { createVerificationApp } from '../servers/src/services/verification';
import { generateWallet, type Wallet } from '../servers/src/solana/keys';
import { startEconomy, type Economy } from './support/economy';
import { freePort, raceOutcome, servedRecorded, type RunningService } from './support/servers';

// The gateway against the real knowledge market, negotiation, reputation and verification services, all paid
// through the economy's facilitator on the local ledger. Amounts below are worked out by hand from the contract
// prices: onboard 0.01, trade/start 0.03, assist 0.01, execute = module price + 0.02, negotiation open 0.002 and
// reputation report 0.001 (paid by the gateway), reputation lookups 0.002 (paid by the gateway).

const DAY = 86_400_000;
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const fail = <T>(p: Promise<T>) =>
  p.then(
    () => expect.unreachable('expected an error') as never,
    (e: ApiError) => e,
  );

let economy: Economy;
let gatewaySvc: RunningService,
  market: RunningService,
  negotiations: RunningService,
  reputation: RunningService,
  verification: RunningService;
let prober: Prober;
let gatewayClock = new Date();
let verificationClock = new Date();
const urls = { market: '', negotiation: '', reputation: '', verification: '' };
let buyer: Signer, seller: Signer, stranger: Signer;
let sellerWallet: Wallet, strangerWallet: Wallet;

const balance = (address: string) => economy.ledger.tokenBalance(address);
const usd = (address: string) => atomicToUsd(balance(address));
const clientOf = (wallet?: Signer) =>
  createClient({
    baseUrls: {
      gateway: gatewaySvc.url,
      'knowledge-market': market.url,
      negotiation: negotiations.url,
      reputation: reputation.url,
      verification: verification.url,
    },
    ...(wallet ? { wallet } : {}),
    payments: { rpcUrl: economy.rpcUrl, maxPerCallUsd: '5' },
    maxRetries: 0,
  });

const doc = (title: string, topic: string) =>
  `# ${title}\n\n` +
  `This guide explains ${topic} for agents that trade on Solana. It walks through the reasoning step by step, with a worked example you can run.\n\n` +
  `## Why it matters\n\nAgents that ignore ${topic} pay more than they need and land fewer transactions. Reading recent data first keeps costs predictable.\n\n` +
  `## How to do it\n\nCollect the last hundred observations, sort them, and take the seventy-fifth percentile as your working value. Recompute it every few minutes.\n\n` +
  '```ts\nconst sorted = [...samples].sort((a, b) => a - b);\nconst p75 = sorted[Math.floor(sorted.length * 0.75)];\n```\n\n' +
  `## Pitfalls\n\nA single busy block can skew the numbers. Clip outliers before you compute the percentile, and log the value you chose.\n`;

const modules = {
  fees: {
    title: 'Solana priority fees in practice',
    content: doc('Priority fees', 'priority fees'),
    caps: ['fee-estimation', 'transaction-landing'],
    tags: ['solana', 'fees'],
    price: '0.50',
    mode: 'auto' as const,
  },
  mev: {
    title: 'MEV protection for swaps',
    content: doc('MEV protection', 'sandwich protection'),
    caps: ['mev-protection'],
    tags: ['solana', 'mev'],
    price: '0.30',
    mode: 'manual' as const,
  },
  rpc: {
    title: 'Choosing RPC providers',
    content: doc('RPC providers', 'provider selection'),
    caps: ['fee-estimation'],
    tags: ['infrastructure'],
    price: '0.20',
    mode: 'off' as const,
  },
  uncertified: {
    title: 'Fee estimation without a certificate',
    content: doc('Uncertified fees', 'fee guesses'),
    caps: ['fee-estimation'],
    tags: ['solana'],
    price: '0.25',
    mode: 'off' as const,
  },
};
const ids: Record<keyof typeof modules, string> = { fees: '', mev: '', rpc: '', uncertified: '' };

beforeAll(async () => {
  economy = await startEconomy();
  // The gateway first: the negotiation service registers its wallet as a broker, reputation as a trusted reporter.
  gatewaySvc = await economy.startPaidService(
    (c) =>
      createGatewayApp(c, {
        urls: {
          'knowledge-market': () => urls.market,
          negotiation: () => urls.negotiation,
          reputation: () => urls.reputation,
          verification: () => urls.verification,
        },
        now: () => gatewayClock,
        probe: false,
        onProber: (p) => (prober = p),
      }),
    { id: 'gateway', sol: true },
  );
  const gatewayWallet = gatewaySvc.context.wallet.address;
  // The market before the negotiation service, which trusts its wallet to read agreements.
  market = await economy.startPaidService(
    (c) => createKnowledgeMarketApp(c, { negotiationUrl: () => urls.negotiation }),
    { id: 'knowledge-market' },
  );
  urls.market = market.url;
  negotiations = await economy.startPaidService(
    (c) =>
      createNegotiationApp(c, {
        marketUrl: () => urls.market,
        brokers: [gatewayWallet],
        trustedReaders: [market.context.wallet.address],
      }),
    { id: 'negotiation' },
  );
  urls.negotiation = negotiations.url;
  reputation = await economy.startPaidService((c) => createReputationApp(c, { trustedReporters: [gatewayWallet] }), {
    id: 'reputation',
  });
  urls.reputation = reputation.url;
  verification = await economy.startPaidService(
    (c) => createVerificationApp(c, { marketUrl: () => urls.market, now: () => verificationClock }),
    { id: 'verification' },
  );
  urls.verification = verification.url;

  // The gateway's float: it bears the loss when delivered content does not match (the buyer is refunded).
  await economy.ledger.mintTo(gatewayWallet, usdToAtomic('2'));
  sellerWallet = generateWallet();
  strangerWallet = generateWallet();
  await economy.ledger.mintTo(sellerWallet.address, usdToAtomic('1'));
  await economy.ledger.mintTo(strangerWallet.address, usdToAtomic('1'));
  buyer = await walletFromSecretKey(economy.buyer.secretKey);
  seller = await walletFromSecretKey(sellerWallet.secretKey);
  stranger = await walletFromSecretKey(strangerWallet.secretKey);

  const sellerClient = clientOf(seller);
  for (const key of Object.keys(modules) as (keyof typeof modules)[]) {
    const m = modules[key];
    const published = await sellerClient.knowledgeMarket.publish({
      body: {
        title: m.title,
        description: `${m.title}: a practical guide for trading agents.`,
        tags: m.tags,
        capabilities: m.caps,
        priceUsd: m.price,
        format: 'markdown',
        content: m.content,
        sellerName: 'fee-scholar',
        negotiation: { mode: m.mode },
      },
    });
    ids[key] = published.id;
    if (key !== 'uncertified') {
      const scan = await sellerClient.verification.scan({
        body: {
          content: { title: m.title, format: 'markdown', body: m.content },
          moduleId: published.id,
          holder: seller.address,
        },
      });
      expect(scan.certification.issued, `${key}: ${scan.certification.reason}`).toBe(true);
    }
  }
}, 120_000);

afterAll(async () => {
  prober?.stop();
  await economy?.close();
});

describe('directory', () => {
  it('lists every endpoint of the five services from their OpenAPI documents, in listing order', async () => {
    const dir = await clientOf().gateway.directory();
    expect(dir.services.map((s) => s.id)).toEqual([
      'gateway',
      'knowledge-market',
      'negotiation',
      'reputation',
      'verification',
    ]);
    expect(dir.services.map((s) => s.endpoints)).toEqual([8, 7, 9, 4, 5]);
    expect(dir.total).toBe(33);
    expect(dir.services[1]).toMatchObject({
      url: market.url,
      openApiUrl: `${market.url}/openapi.json`,
      agentCardUrl: `${market.url}/.well-known/agent-card.json`,
    });
    const purchase = dir.endpoints.find((e) => e.service === 'knowledge-market' && e.key === 'purchase')!;
    expect(purchase).toMatchObject({
      method: 'POST',
      path: '/api/modules/:moduleId/purchase',
      url: `${market.url}/api/modules/:moduleId/purchase`,
      auth: 'none',
      pricing: { kind: 'adaptive', minUsd: '0.001', maxUsd: '100' },
    });
    expect(purchase.usage.sdk).toContain(
      'client.knowledgeMarket.purchase({"params":{"moduleId":"mod_7Qk2Xb9LmP4tRw8Z"}',
    );
    expect(purchase.usage.curl).toContain(`curl -X POST '${market.url}/api/modules/mod_7Qk2Xb9LmP4tRw8Z/purchase'`);
    const execute = dir.endpoints.find((e) => e.key === 'executeTrade')!;
    expect(execute).toMatchObject({
      service: 'gateway',
      auth: 'siwx',
      pricing: { kind: 'adaptive', minUsd: '0.021', maxUsd: '100.02' },
    });
  });

  it('filters by service, paid and words; refuses bad filters', async () => {
    const paid = await clientOf().gateway.directory({ query: { service: 'reputation', paid: 'true' } });
    expect(paid.endpoints.map((e) => e.key)).toEqual(['report', 'get', 'top']);
    const free = await clientOf().gateway.directory({ query: { paid: 'false', q: 'certificate' } });
    expect(
      free.endpoints.every(
        (e) =>
          e.pricing.maxUsd === '0' && `${e.path} ${e.summary} ${e.description}`.toLowerCase().includes('certificate'),
      ),
    ).toBe(true);
    expect(free.endpoints.some((e) => e.key === 'getCertificate')).toBe(true);
    const bad = await fail(clientOf().gateway.directory({ query: { service: 'escrow' as never } }));
    expect(bad).toBeInstanceOf(BadRequestError);
    expect((bad as BadRequestError).fields[0]!.field).toBe('query.service');
  });
});

describe('health', () => {
  it('probes each service once per 30-second slot, keeps 24 hours and reports a service that stops answering', async () => {
    gatewayClock = new Date(Date.parse('2030-01-01T00:00:00.000Z'));
    const first = await clientOf().gateway.health();
    expect(first).toMatchObject({
      status: 'ok',
      windowSeconds: 86_400,
      probeIntervalSeconds: 30,
      checkedAt: '2030-01-01T00:00:00.000Z',
    });
    expect(first.services.map((s) => [s.id, s.status, s.checks, s.availabilityPercent])).toEqual([
      ['knowledge-market', 'up', 1, 100],
      ['negotiation', 'up', 1, 100],
      ['reputation', 'up', 1, 100],
      ['verification', 'up', 1, 100],
    ]);
    // Same slot: no new probe.
    await prober.tick();
    expect((await clientOf().gateway.health()).services[0]!.checks).toBe(1);
    // The next slot, with verification unreachable.
    urls.verification = 'http://127.0.0.1:9';
    gatewayClock = new Date(gatewayClock.getTime() + 30_000);
    await prober.tick();
    const degraded = await clientOf().gateway.health();
    urls.verification = verification.url;
    const v = degraded.services.find((s) => s.id === 'verification')!;
    expect(degraded.status).toBe('degraded');
    expect(v).toMatchObject({
      status: 'down',
      checks: 2,
      availabilityPercent: 50,
      uptimeSeconds: null,
      lastCheckedAt: '2030-01-01T00:00:30.000Z',
    });
    expect(v.lastError).toMatch(/fetch failed|ECONNREFUSED/);
    expect(degraded.services.find((s) => s.id === 'reputation')).toMatchObject({
      status: 'up',
      checks: 2,
      availabilityPercent: 100,
    });
    // A day later the window holds only the new probe.
    gatewayClock = new Date(gatewayClock.getTime() + DAY);
    const later = await clientOf().gateway.health();
    expect(later.services.map((s) => s.checks)).toEqual([1, 1, 1, 1]);
    expect(later.status).toBe('ok');
    gatewayClock = new Date();
  });
});

describe('ecosystem', () => {
  it('reports each connected service with its health, the services’ statistics and the directory', async () => {
    const eco = await clientOf().gateway.ecosystem();
    expect(eco.lifecycle).toEqual(['discover', 'negotiate', 'verify', 'purchase', 'rate']);
    expect(eco.services.map((s) => [s.id, s.status, s.endpoints, s.paidEndpoints])).toEqual([
      ['knowledge-market', 'up', 7, 2],
      ['negotiation', 'up', 9, 2],
      ['reputation', 'up', 4, 3],
      ['verification', 'up', 5, 1],
    ]);
    expect(eco.stats).toMatchObject({
      registeredAgents: 0,
      modules: 4,
      sellers: 1,
      purchases: 0,
      marketVolumeUsd: '0',
      negotiationsOpen: 0,
      scans: 3,
      certificatesValid: 3,
      tradesExecuted: 0,
      tradeVolumeUsd: '0',
    });
    expect(eco.directory).toHaveLength(33);
  });
});

describe('onboard', () => {
  const body = () => ({
    wallet: buyer.address,
    name: 'fee-tuner',
    capabilities: ['fee-estimation', 'transaction-landing'],
    interests: ['solana', 'mev'],
    role: 'buyer' as const,
  });

  it('registers the agent, recommends modules by overlap and rating, and writes the guide; charged 0.01', async () => {
    const [before, gatewayBefore] = [balance(buyer.address), balance(gatewaySvc.context.wallet.address)];
    const onboarding = await clientOf(buyer).gateway.onboard({ body: body() });
    expect(balance(buyer.address)).toBe(before - 10_000n);
    // The fee in, the buyer's reputation profile (0.002) out.
    expect(balance(gatewaySvc.context.wallet.address)).toBe(gatewayBefore + 10_000n - 2_000n);
    expect(onboarding.agent).toMatchObject({
      wallet: buyer.address,
      name: 'fee-tuner',
      role: 'buyer',
      newlyRegistered: true,
      description: null,
    });
    expect(onboarding.registrations.map((r) => [r.service, r.status])).toEqual([
      ['gateway', 'registered'],
      ['knowledge-market', 'ready'],
      ['negotiation', 'ready'],
      ['reputation', 'ready'],
      ['verification', 'ready'],
    ]);
    expect(onboarding.registrations[3]).toMatchObject({
      reference: `/api/reputation/agent/${buyer.address}`,
      detail: 'Score 50 (unrated) from 0 trade reports',
    });
    // fees: 0.6 × 2/2 + 0.2 × 1/2 + 0.2 × 0.5 = 0.8; uncertified: 0.6 × 1/2 + 0.2 × 1/2 + 0.1 = 0.5; rpc: 0.3 + 0 +
    // 0.1; mev: 0 + 0.2 × 2/2 + 0.1.
    expect(onboarding.recommendedModules.map((r) => [r.moduleId, r.score, r.certified])).toEqual([
      [ids.fees, 0.8, true],
      [ids.uncertified, 0.5, false],
      [ids.rpc, 0.4, true],
      [ids.mev, 0.3, true],
    ]);
    expect(onboarding.recommendedModules[0]).toMatchObject({
      matchedCapabilities: ['fee-estimation', 'transaction-landing'],
      matchedInterests: ['solana'],
      priceUsd: '0.5',
    });
    expect(
      onboarding.guide.steps.map((s) => [
        s.order,
        s.endpoint.service,
        s.endpoint.method,
        s.endpoint.path,
        s.pricing.maxUsd,
      ]),
    ).toEqual([
      [1, 'gateway', 'GET', '/api/search', '0'],
      [2, 'gateway', 'POST', '/api/trade/start', '0.03'],
      [3, 'negotiation', 'POST', '/api/negotiations/:negotiationId/counter', '0.001'],
      [4, 'gateway', 'POST', '/api/trade/execute', '100.02'],
      [5, 'knowledge-market', 'POST', '/api/modules/:moduleId/rate', '0'],
      [6, 'reputation', 'GET', `/api/reputation/agent/${buyer.address}`, '0.002'],
    ]);
    expect(onboarding.guide.summary).toContain('Welcome, fee-tuner');
    expect(onboarding.generator).toEqual({ engine: 'builtin', model: 'builtin-rules-v1' });
  });

  it('updates a profile onboarded before', async () => {
    const again = await clientOf(buyer).gateway.onboard({
      body: { ...body(), description: 'Lands transactions cheaply.' },
    });
    expect(again.agent).toMatchObject({ newlyRegistered: false, description: 'Lands transactions cheaply.' });
    expect(again.registrations[0]).toMatchObject({ service: 'gateway', status: 'already-registered' });
  });

  it('refuses another wallet, a missing proof and bad input, charging nothing', async () => {
    const before = balance(stranger.address);
    const mismatch = await fail(clientOf(stranger).gateway.onboard({ body: body() }));
    expect(mismatch).toBeInstanceOf(PermissionDeniedError);
    expect(mismatch.code).toBe('wallet_mismatch');
    expect(await fail(clientOf().gateway.onboard({ body: body() }))).toBeInstanceOf(AuthenticationError);
    const bad = (await fail(
      clientOf(stranger).gateway.onboard({ body: { ...body(), wallet: stranger.address, capabilities: [] } }),
    )) as BadRequestError;
    expect(bad.fields[0]!.field).toBe('body.capabilities');
    const nul = (await fail(
      clientOf(stranger).gateway.onboard({ body: { ...body(), wallet: stranger.address, name: 'nul\u0000name' } }),
    )) as BadRequestError;
    expect(nul.fields[0]!.field).toBe('body.name');
    expect(balance(stranger.address)).toBe(before);
  });
});

describe('search', () => {
  it('ranks modules, agents and certificates together, each hit with its service', async () => {
    const result = await clientOf().gateway.search({ query: { q: 'priority fees' } });
    expect(result.unavailable).toEqual([]);
    const top = result.items.slice(0, 2).map((h) => [h.type, h.id, h.score, h.service]);
    expect(top).toContainEqual(['module', ids.fees, 1, 'knowledge-market']);
    const cert = result.items.find((h) => h.type === 'certificate')!;
    expect(cert).toMatchObject({
      title: modules.fees.title,
      score: 1,
      service: 'verification',
      certificate: {
        moduleId: ids.fees,
        contentHash: sha256(modules.fees.content),
        status: 'valid',
        holder: seller.address,
      },
    });
    // "fee-tuner" matches "fee" (one of the two terms): half of the type's best, which it is.
    expect(result.items.find((h) => h.type === 'agent')).toMatchObject({
      id: buyer.address,
      title: 'fee-tuner',
      score: 0.5,
      service: 'gateway',
      agent: { reputationScore: 50, tradeCount: 0 },
    });
    expect(result.counts.agent).toBe(1);
    expect(result.items.every((h, i) => i === 0 || result.items[i - 1]!.score >= h.score)).toBe(true);
  });

  it('pages with a cursor bound to its query and filters by type', async () => {
    const first = await clientOf().gateway.search({ query: { q: 'priority fees', limit: 1 } });
    expect(first.items).toHaveLength(1);
    const second = await clientOf().gateway.search({
      query: { q: 'priority fees', limit: 1, cursor: first.nextCursor! },
    });
    expect(second.items[0]!.id).not.toBe(first.items[0]!.id);
    const foreign = (await fail(
      clientOf().gateway.search({ query: { q: 'mev', cursor: first.nextCursor! } }),
    )) as BadRequestError;
    expect(foreign.fields[0]!.field).toBe('query.cursor');
    const agents = await clientOf().gateway.search({ query: { q: 'fee tuner', types: 'agent' } });
    expect(agents.types).toEqual(['agent']);
    expect(agents.items.map((h) => h.type)).toEqual(['agent']);
    const bad = (await fail(clientOf().gateway.search({ query: { q: 'x', types: 'modules' } }))) as BadRequestError;
    expect(bad.fields[0]!.field).toBe('query.types');
  });
});

let plan: TradePlan;

describe('trade/start', () => {
  const start = {
    need: 'priority fees for landing transactions',
    capabilities: ['fee-estimation'],
    maxPriceUsd: '0.45',
  };

  it('ranks certified sellers, opens the negotiation as broker and returns the plan; charged 0.03', async () => {
    const before = balance(buyer.address);
    plan = await clientOf(buyer).gateway.startTrade({ body: start });
    expect(balance(buyer.address)).toBe(before - 30_000n);
    expect(plan.candidates.map((c) => c.moduleId)).toEqual([ids.fees, ids.rpc]);
    expect(plan.candidates[0]).toMatchObject({
      lowestPriceUsd: '0.4',
      negotiationMode: 'auto',
      sellerScore: 50,
      matchedCapabilities: ['fee-estimation'],
    });
    expect(plan.selectedModuleId).toBe(ids.fees);
    // Opening offer min(0.45, 0.8 × 0.50) = 0.40; the responder counters max(0.40, (0.40 + 0.50) / 2) = 0.45.
    expect(plan.negotiation).toMatchObject({
      state: 'countered',
      turn: 'buyer',
      lastBuyerOfferUsd: '0.4',
      standingOffer: { by: 'seller', priceUsd: '0.45' },
      floorUsd: '0.4',
    });
    expect(plan.estimate).toEqual({
      modulePriceUsd: '0.45',
      priceBasis: 'standing-offer',
      gatewayFeeUsd: TRADE_GATEWAY_FEE_USD,
      totalUsd: '0.47',
      withinBudget: true,
    });
    expect(plan.steps.map((s) => [s.name, s.status])).toEqual([
      ['discover', 'done'],
      ['negotiate', 'ready'],
      ['verify', 'ready'],
      ['purchase', 'ready'],
      ['rate', 'ready'],
    ]);
    expect(plan.steps[3]!.endpoints[0]).toMatchObject({
      service: 'knowledge-market',
      method: 'POST',
      path: `/api/modules/${ids.fees}/purchase`,
      paidBy: 'gateway',
    });
    expect(Date.parse(plan.expiresAt) - Date.parse(plan.createdAt)).toBe(60 * 60_000);
    // The negotiation service records the buyer, and the gateway as its broker.
    const negotiation = await clientOf(buyer).negotiation.get({ params: { negotiationId: plan.negotiation!.id } });
    expect(negotiation).toMatchObject({
      buyer: buyer.address,
      broker: gatewaySvc.context.wallet.address,
      moduleId: ids.fees,
    });
  });

  it('refuses what cannot be traded before charging', async () => {
    const before = balance(buyer.address);
    const none = await fail(clientOf(buyer).gateway.startTrade({ body: { ...start, maxPriceUsd: '0.1' } }));
    expect(none).toBeInstanceOf(UnprocessableEntityError);
    expect(none).toMatchObject({ code: 'no_matching_sellers', details: { removed: { price: 3 } } });
    const low = await fail(clientOf(buyer).gateway.startTrade({ body: { ...start, minSellerScore: 60 } }));
    expect(low).toMatchObject({ code: 'no_matching_sellers', details: { removed: { sellerScore: 2 } } });
    const missing = await fail(
      clientOf(buyer).gateway.startTrade({ body: { ...start, moduleId: 'mod_1111111111111111111111' } }),
    );
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(missing.code).toBe('module_not_found');
    const offer = (await fail(
      clientOf(buyer).gateway.startTrade({ body: { ...start, offerUsd: '0.5' } }),
    )) as BadRequestError;
    expect(offer.fields[0]!.field).toBe('body.offerUsd');
    const nul = (await fail(
      clientOf(buyer).gateway.startTrade({ body: { ...start, need: 'fees \u0000 landing' } }),
    )) as BadRequestError;
    expect(nul.fields[0]!.field).toBe('body.need');
    expect(
      await fail(
        clientOf(buyer).gateway.startTrade({ body: { ...start, negotiationId: 'neg_1111111111111111111111' } }),
      ),
    ).toMatchObject({ status: 404, code: 'negotiation_not_found' });
    // The plan's negotiation is still countered: not an agreement yet; and it is the buyer's, not the stranger's.
    expect(
      await fail(clientOf(buyer).gateway.startTrade({ body: { ...start, negotiationId: plan.negotiation!.id } })),
    ).toMatchObject({ status: 409, code: 'negotiation_not_accepted', details: { state: 'countered' } });
    const strangerBefore = balance(stranger.address);
    expect(
      await fail(clientOf(stranger).gateway.startTrade({ body: { ...start, negotiationId: plan.negotiation!.id } })),
    ).toMatchObject({ status: 422, code: 'negotiation_mismatch' });
    expect(balance(stranger.address)).toBe(strangerBefore);
    urls.market = 'http://127.0.0.1:9';
    const down = await fail(clientOf(buyer).gateway.startTrade({ body: start })).finally(
      () => (urls.market = market.url),
    );
    expect(down).toMatchObject({ status: 502, code: 'upstream_unavailable', details: { service: 'knowledge-market' } });
    expect(balance(buyer.address)).toBe(before);
  });

  it('will not trade over a negotiation the buyer opened without the gateway', async () => {
    const own = await clientOf(buyer).negotiation.open({ body: { moduleId: ids.mev, offerUsd: '0.2' } });
    const before = balance(buyer.address);
    const exists = await fail(
      clientOf(buyer).gateway.startTrade({ body: { ...start, capabilities: ['mev-protection'], moduleId: ids.mev } }),
    );
    expect(exists).toBeInstanceOf(ConflictError);
    expect(exists).toMatchObject({ code: 'negotiation_exists', details: { negotiationId: own.id } });
    const notBrokered = await fail(
      clientOf(buyer).gateway.startTrade({
        body: { ...start, capabilities: ['mev-protection'], negotiationId: own.id },
      }),
    );
    expect(notBrokered.code).toBe('negotiation_not_brokered');
    expect(balance(buyer.address)).toBe(before);
  });
});

describe('trade/execute', () => {
  it('accepts the counter, buys for the buyer, checks the hash and reports the trade, in one payment of price + fee', async () => {
    const gatewayWallet = gatewaySvc.context.wallet.address;
    // The quote asks for exactly the seller's standing counter (0.45) plus the fee, to the gateway's wallet.
    const quoted = (await fail(
      createClient({
        baseUrls: { gateway: gatewaySvc.url },
        wallet: buyer,
        payments: false,
        maxRetries: 0,
      }).gateway.executeTrade({ body: { planId: plan.id } }),
    )) as PaymentRequiredError;
    expect(quoted).toBeInstanceOf(PaymentRequiredError);
    expect(quoted.quote!.accepts[0]).toMatchObject({ amount: '470000', payTo: gatewayWallet });
    const [b, s, g] = [balance(buyer.address), balance(seller.address), balance(gatewayWallet)];
    const response = await clientOf(buyer).gateway.executeTrade.withResponse({ body: { planId: plan.id } });
    const execution = response.data;
    expect(response.payment).toMatchObject({ amount: '470000', payer: buyer.address, payTo: gatewayWallet });
    expect(balance(buyer.address)).toBe(b - 470_000n);
    expect(balance(seller.address)).toBe(s + 450_000n);
    // In: 0.47. Out: 0.45 to the seller, 0.001 for the reputation report.
    expect(balance(gatewayWallet)).toBe(g + 470_000n - 450_000n - 1_000n);
    expect(execution).toMatchObject({
      planId: plan.id,
      buyer: buyer.address,
      seller: seller.address,
      moduleId: ids.fees,
      verification: { status: 'certified', contentHash: sha256(modules.fees.content), contentMatches: true },
      purchase: {
        priceUsd: '0.45',
        listPriceUsd: '0.5',
        priceBasis: 'agreed',
        negotiationId: plan.negotiation!.id,
        content: modules.fees.content,
        paidBy: gatewayWallet,
      },
      reputation: { status: 'reported' },
      charges: { modulePriceUsd: '0.45', gatewayFeeUsd: '0.02', totalUsd: '0.47' },
    });
    expect(execution.steps.map((st) => st.status)).toEqual(['done', 'done', 'done', 'done', 'done']);
    // The purchase is the buyer's, who reads it and rates the module.
    const purchase = await clientOf(buyer).knowledgeMarket.download({
      params: { purchaseId: execution.purchase.purchaseId },
    });
    expect(purchase).toMatchObject({ buyer: buyer.address, paidBy: gatewayWallet, priceUsd: '0.45' });
    const rated = await clientOf(buyer).knowledgeMarket.rate({
      params: { moduleId: ids.fees },
      body: { purchaseId: purchase.id, rating: 5 },
    });
    expect(rated.moduleRating).toEqual({ average: 5, count: 1 });
    // The report counts as verified, for the buyer, filed by the gateway.
    const profile = await clientOf(stranger).reputation.get({ params: { agentId: seller.address } });
    expect(profile.history.items[0]).toMatchObject({
      id: execution.reputation.reportId,
      reporter: gatewayWallet,
      ratedBy: buyer.address,
      outcome: 'completed',
      amount: '450000',
      verified: true,
      moduleId: ids.fees,
    });
  });

  it('executes a plan once: the second call is refused before any charge', async () => {
    const before = balance(buyer.address);
    const again = await fail(clientOf(buyer).gateway.executeTrade({ body: { planId: plan.id } }));
    expect(again).toBeInstanceOf(ConflictError);
    expect(again.code).toBe('plan_already_executed');
    expect((again.details as { purchaseId: string }).purchaseId).toMatch(/^pur_/);
    expect(balance(buyer.address)).toBe(before);
    const eco = await clientOf().gateway.ecosystem();
    expect(eco.stats).toMatchObject({ tradesExecuted: 1, tradeVolumeUsd: '0.45', purchases: 1, registeredAgents: 1 });
  });

  it('refuses unknown, foreign, expired, out-of-plan, over-budget and uncertified executions before charging', async () => {
    const rpcPlan = await clientOf(buyer).gateway.startTrade({
      body: { need: 'choosing rpc providers', moduleId: ids.rpc, maxPriceUsd: '0.3' },
    });
    expect(rpcPlan.negotiation).toBeNull();
    expect(rpcPlan.estimate).toMatchObject({ modulePriceUsd: '0.2', priceBasis: 'list', totalUsd: '0.22' });
    const [b, st] = [balance(buyer.address), balance(stranger.address)];
    expect(
      await fail(clientOf(buyer).gateway.executeTrade({ body: { planId: 'plan_1111111111111111111111' } })),
    ).toMatchObject({ status: 404, code: 'plan_not_found' });
    expect(await fail(clientOf(stranger).gateway.executeTrade({ body: { planId: rpcPlan.id } }))).toMatchObject({
      status: 403,
      code: 'not_plan_owner',
    });
    expect(
      await fail(clientOf(buyer).gateway.executeTrade({ body: { planId: rpcPlan.id, moduleId: ids.mev } })),
    ).toMatchObject({ status: 422, code: 'module_not_in_plan' });
    expect(
      await fail(clientOf(buyer).gateway.executeTrade({ body: { planId: rpcPlan.id, maxPriceUsd: '0.1' } })),
    ).toMatchObject({ status: 422, code: 'price_above_max' });
    verificationClock = new Date(Date.now() + 400 * DAY);
    expect(await fail(clientOf(buyer).gateway.executeTrade({ body: { planId: rpcPlan.id } }))).toMatchObject({
      status: 422,
      code: 'verification_failed',
    });
    verificationClock = new Date();
    gatewayClock = new Date(Date.now() + 61 * 60_000);
    expect(await fail(clientOf(buyer).gateway.executeTrade({ body: { planId: rpcPlan.id } }))).toMatchObject({
      status: 409,
      code: 'plan_expired',
    });
    gatewayClock = new Date();
    expect([balance(buyer.address), balance(stranger.address)]).toEqual([b, st]);
  });

  it('waits for a manual seller, and stops when it rejects or the market is down: not charged', async () => {
    const mevPlan = await clientOf(stranger).gateway.startTrade({
      body: { need: 'protect swaps from sandwiches', moduleId: ids.mev, maxPriceUsd: '0.3', offerUsd: '0.2' },
    });
    expect(mevPlan.negotiation).toMatchObject({ mode: 'manual', state: 'open', turn: 'seller' });
    expect(mevPlan.steps.map((s) => s.status)).toEqual(['done', 'waiting', 'waiting', 'waiting', 'waiting']);
    const before = balance(stranger.address);
    expect(await fail(clientOf(stranger).gateway.executeTrade({ body: { planId: mevPlan.id } }))).toMatchObject({
      status: 409,
      code: 'negotiation_pending',
    });
    urls.market = 'http://127.0.0.1:9';
    const down = await fail(clientOf(stranger).gateway.executeTrade({ body: { planId: mevPlan.id } })).finally(
      () => (urls.market = market.url),
    );
    expect(down).toMatchObject({ status: 502, code: 'upstream_unavailable' });
    // The seller walks away: the plan cannot be executed any more.
    await clientOf(seller).negotiation.reject({
      params: { negotiationId: mevPlan.negotiation!.id },
      body: { reason: 'Not at that price.' },
    });
    expect(await fail(clientOf(stranger).gateway.executeTrade({ body: { planId: mevPlan.id } }))).toMatchObject({
      status: 409,
      code: 'negotiation_closed',
      details: { state: 'rejected' },
    });
    expect(balance(stranger.address)).toBe(before);
  });

  it('serves a purchase whose content does not hash to the certified one, flagged: never refunded while the buyer keeps it', async () => {
    const rpcPlan = await clientOf(buyer).gateway.startTrade({
      body: { need: 'choosing rpc providers', moduleId: ids.rpc, maxPriceUsd: '0.3' },
    });
    // A market that delivers other content than it lists (tampered storage).
    await market.database.db
      .updateTable('knowledge_market_modules')
      .set({ content: 'tampered content' })
      .where('id', '=', ids.rpc)
      .execute();
    const gatewayWallet = gatewaySvc.context.wallet.address;
    const [b, s, g] = [balance(buyer.address), balance(seller.address), balance(gatewayWallet)];
    const executed = await clientOf(buyer)
      .gateway.executeTrade.withResponse({ body: { planId: rpcPlan.id } })
      .finally(() =>
        market.database.db
          .updateTable('knowledge_market_modules')
          .set({ content: modules.rpc.content })
          .where('id', '=', ids.rpc)
          .execute(),
      );
    const execution = executed.data;
    // The purchase is made in the buyer's name (the market has no way to take it back), so the trade is served and
    // says what was delivered: the buyer holds it and was charged once, nothing refunded.
    expect(execution).toMatchObject({
      verification: { status: 'certified', contentHash: sha256('tampered content'), contentMatches: false },
      purchase: { content: 'tampered content', priceUsd: '0.2', paidBy: gatewayWallet },
      charges: { totalUsd: '0.22' },
    });
    expect(executed.payment).toMatchObject({ amount: '220000', payer: buyer.address });
    expect(executed.payment!.refund).toBeUndefined();
    const held = await clientOf(buyer).knowledgeMarket.download({
      params: { purchaseId: execution.purchase.purchaseId },
    });
    expect(held).toMatchObject({ buyer: buyer.address, moduleId: ids.rpc });
    // Money, to the atomic unit: the buyer paid 0.22 once, the seller got 0.20, the gateway its fee less the report.
    expect(balance(buyer.address)).toBe(b - 220_000n);
    expect(balance(seller.address)).toBe(s + 200_000n);
    expect(balance(gatewayWallet)).toBe(g + 220_000n - 200_000n - 1_000n);
    // The mismatch is on the seller's record, and the plan is spent: executing it again charges nothing.
    const profile = await clientOf(stranger).reputation.get({
      params: { agentId: seller.address },
      query: { limit: 100 },
    });
    expect(profile.history.items.find((r) => r.comment?.includes(execution.id))?.comment).toContain(
      `not the certified ${sha256(modules.rpc.content)}`,
    );
    const again = await fail(clientOf(buyer).gateway.executeTrade({ body: { planId: rpcPlan.id } }));
    expect(again.code).toBe('plan_already_executed');
    expect(balance(buyer.address)).toBe(b - 220_000n);
  });
});

describe('trade/execute under contention and outages', () => {
  const rpcTrade = () =>
    clientOf(buyer).gateway.startTrade({
      body: { need: 'choosing rpc providers', moduleId: ids.rpc, maxPriceUsd: '0.3' },
    });

  it('executes a plan once when two payments race for it: the loser is refunded on chain', async () => {
    const racing = await rpcTrade();
    const [b, s] = [balance(buyer.address), balance(seller.address)];
    const results = await Promise.allSettled(
      [0, 1].map(() => clientOf(buyer).gateway.executeTrade({ body: { planId: racing.id } })),
    );
    const { won, lost } = raceOutcome(results);
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    // Refused before the quote (the plan was already executed), or after settlement and then refunded.
    expect(lost[0]!.code).toBe('plan_already_executed');
    expect(balance(buyer.address)).toBe(b - 220_000n);
    expect(balance(seller.address)).toBe(s + 200_000n);
  });

  it('finishes a trade whose process died after the purchase when the same payment comes again: never buys or charges twice', async () => {
    const plan = await rpcTrade();
    // The buyer's payment header, as its SDK sent it.
    let header: string | undefined;
    const http = axios.create();
    http.interceptors.request.use((config) => {
      header = (config.headers['payment-signature'] as string | undefined) ?? header;
      return config;
    });
    const payer = createClient({
      baseUrls: { gateway: gatewaySvc.url },
      wallet: buyer,
      payments: { rpcUrl: economy.rpcUrl, maxPerCallUsd: '5' },
      maxRetries: 0,
      axios: http,
    });
    const first = await payer.gateway.executeTrade({ body: { planId: plan.id } });
    const [b, s] = [balance(buyer.address), balance(seller.address)];
    // What a SIGKILL after the purchase (noted) and before the commit leaves: the trade running with its purchase, the
    // payment settled but never answered, its lease over.
    const db = gatewaySvc.database.db;
    const trade = await db
      .selectFrom('gateway_trades')
      .select('payment_key')
      .where('plan_id', '=', plan.id)
      .executeTakeFirstOrThrow();
    await servedRecorded(db, trade.payment_key);
    await db
      .updateTable('gateway_trades')
      .set({ status: 'running', execution: null, completed_at: null })
      .where('plan_id', '=', plan.id)
      .execute();
    await db
      .updateTable('runtime_payments')
      .set({ status: 'settled', served_at: null, lease_until: new Date(Date.now() - 60_000) })
      .where('key', '=', trade.payment_key)
      .execute();

    const resumed = await clientOf(buyer).gateway.executeTrade(
      { body: { planId: plan.id } },
      { headers: { 'payment-signature': header! } },
    );
    expect(resumed).toMatchObject({
      id: first.id,
      planId: plan.id,
      purchase: { purchaseId: first.purchase.purchaseId, transaction: first.purchase.transaction },
      charges: first.charges,
    });
    expect(balance(buyer.address)).toBe(b);
    expect(balance(seller.address)).toBe(s);
    // Served once. Presented again, the payment names its payment identifier (the SDK adds one), so the paywall replays
    // the answer it kept for it: the same trade, nothing bought or charged again.
    const again = await clientOf(buyer).gateway.executeTrade.withResponse(
      { body: { planId: plan.id } },
      { headers: { 'payment-signature': header! } },
    );
    expect(again.headers['payment-identifier-replayed']).toBe('true');
    expect(again.data).toEqual(resumed);
    expect(balance(buyer.address)).toBe(b);
    expect(balance(seller.address)).toBe(s);
  });

  it('queues the trade report when reputation does not answer, and files it on the next probe round', async () => {
    const queued = await rpcTrade();
    urls.reputation = 'http://127.0.0.1:9';
    const execution = await clientOf(buyer)
      .gateway.executeTrade({ body: { planId: queued.id } })
      .finally(() => (urls.reputation = reputation.url));
    expect(execution.reputation).toMatchObject({ status: 'queued', reportId: null });
    gatewayClock = new Date(Date.now() + 30_000);
    await prober.tick();
    gatewayClock = new Date();
    const profile = await clientOf(stranger).reputation.get({
      params: { agentId: seller.address },
      query: { limit: 100 },
    });
    expect(
      profile.history.items.some(
        (r) =>
          r.comment?.includes(execution.id) &&
          r.reporter === gatewaySvc.context.wallet.address &&
          r.ratedBy === buyer.address,
      ),
    ).toBe(true);
  });

  it('finds the negotiations it opened in search, without their parties or prices', async () => {
    const result = await clientOf().gateway.search({ query: { q: 'priority fees', types: 'negotiation' } });
    const hit = result.items.find((h) => h.id === plan.negotiation!.id)!;
    expect(hit).toMatchObject({
      type: 'negotiation',
      service: 'negotiation',
      negotiation: { moduleId: ids.fees, state: 'accepted', mode: 'auto' },
    });
    expect(JSON.stringify(hit)).not.toContain(buyer.address);
  });
});

describe('trade/execute against a market that takes the payment and does not answer', () => {
  // The market behind a proxy, as the gateway reaches it. `drop`: a paid purchase goes through (it settles, the seller
  // is paid) and its answer is dropped, as a market colluding with the buyer would, or a network that failed; `lie`: a
  // paid purchase is answered 402 "nothing settled" without reaching the market, whatever happened before;
  // `swallow`: a paid purchase never reaches the market (its payment never settles); `pass`: everything goes through.
  let proxy: Server;
  let proxyUrl = '';
  let mode: 'pass' | 'drop' | 'lie' | 'swallow' = 'pass';

  beforeAll(async () => {
    proxy = createServer((req, res) => {
      const paid = !!req.headers['payment-signature'] && req.method === 'POST';
      if (paid && mode === 'swallow') return void req.socket.destroy();
      if (paid && mode === 'lie') {
        req.resume();
        res.writeHead(402, { 'content-type': 'application/json' });
        return void res.end(
          JSON.stringify({
            error: { code: 'payment_invalid', message: 'The payment was refused; nothing was charged', requestId: 'x' },
          }),
        );
      }
      const target = new URL(req.url ?? '/', market.url);
      const upstream = httpRequest(
        target,
        { method: req.method, headers: { ...req.headers, host: target.host } },
        (answer) => {
          if (paid && mode === 'drop' && answer.statusCode === 200) {
            answer.resume();
            answer.on('end', () => req.socket.destroy());
            return;
          }
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  });

  afterAll(() => {
    urls.market = market.url;
    proxy?.closeAllConnections();
    proxy?.close();
  });

  /** A plan for the rpc module (0.20 + fee 0.02), to execute through the proxy; the buyer's payment header is kept. */
  async function planThroughProxy(wallet: Signer) {
    const plan = await clientOf(wallet).gateway.startTrade({
      body: { need: 'choosing rpc providers', moduleId: ids.rpc, maxPriceUsd: '0.3' },
    });
    let header: string | undefined;
    const http = axios.create();
    http.interceptors.request.use((config) => {
      header = (config.headers['payment-signature'] as string | undefined) ?? header;
      return config;
    });
    const payer = createClient({
      baseUrls: { gateway: gatewaySvc.url },
      wallet,
      payments: { rpcUrl: economy.rpcUrl, maxPerCallUsd: '5' },
      maxRetries: 0,
      axios: http,
    });
    /** The first execution, the market reached as `first`. */
    const execute = (first: typeof mode) => {
      mode = first;
      urls.market = proxyUrl;
      return fail(payer.gateway.executeTrade.withResponse({ body: { planId: plan.id } }));
    };
    /** The same payment presented again, the market reached as `then`. */
    const again = (then: typeof mode) => {
      mode = then;
      return clientOf(wallet).gateway.executeTrade.withResponse(
        { body: { planId: plan.id } },
        { headers: { 'payment-signature': header! } },
      );
    };
    return { plan, execute, again };
  }

  const purchasesOf = async (wallet: string) =>
    (
      await market.database.db
        .selectFrom('knowledge_market_purchases')
        .select('id')
        .where('module_id', '=', ids.rpc)
        .where('buyer', '=', wallet)
        .execute()
    ).map((r) => r.id);

  it('does not drain the gateway: a market that keeps the payment and never answers gets no refund paid for it', async () => {
    const gatewayWallet = gatewaySvc.context.wallet.address;
    const { execute, again } = await planThroughProxy(stranger);
    const [b, s, g] = [balance(stranger.address), balance(seller.address), balance(gatewayWallet)];
    const bought = await purchasesOf(stranger.address);
    try {
      const error = await execute('drop');
      // The market settled the purchase (the seller is paid) and its answer never came: pending, nothing refunded.
      expect(error).toMatchObject({ status: 503, code: 'trade_pending' });
      expect(error.headers['retry-after']).toBe('5');
      expect(error.message).toContain('Present the same payment again');
      const receipt = decodeX402Header(error.headers['payment-response']!) as { success: boolean; refund?: unknown };
      expect(receipt).toMatchObject({ success: true });
      expect(receipt.refund).toBeUndefined();
      expect(balance(stranger.address)).toBe(b - 220_000n);
      expect(balance(seller.address)).toBe(s + 200_000n);
      // The gateway holds the buyer's 0.22 against the 0.20 it paid: the pair gained nothing from it.
      expect(balance(gatewayWallet)).toBe(g + 20_000n);
      // Presented again while the market still drops its answer: still pending, still nothing refunded or paid again.
      const still = await fail(again('drop'));
      expect(still).toMatchObject({ status: 503, code: 'trade_pending' });
      expect([balance(stranger.address), balance(seller.address), balance(gatewayWallet)]).toEqual([
        b - 220_000n,
        s + 200_000n,
        g + 20_000n,
      ]);
      // The market now says nothing settled: the facilitator says the payment did. The market kept the money; the
      // trade fails against the payee, unrefunded, and the gateway does not pay twice.
      const kept = await fail(again('lie'));
      expect(kept).toMatchObject({ status: 502, code: 'market_kept_payment' });
      expect(kept.message).toContain('reported to reputation as failed');
      expect([balance(stranger.address), balance(seller.address), balance(gatewayWallet)]).toEqual([
        b - 220_000n,
        s + 200_000n,
        g + 20_000n - 1_000n,
      ]);
      const profile = await clientOf(buyer).reputation.get({
        params: { agentId: seller.address },
        query: { limit: 100 },
      });
      const tradeId = (kept.details as { tradeId: string }).tradeId;
      expect(profile.history.items.find((r) => r.comment?.includes(tradeId))).toMatchObject({
        outcome: 'expired',
        reporter: gatewaySvc.context.wallet.address,
        ratedBy: stranger.address,
        verified: true,
        amount: '200000',
        moduleId: ids.rpc,
      });
      // Asked again, the same answer: reported once, nothing moved.
      expect(await fail(again('pass'))).toMatchObject({ status: 502, code: 'market_kept_payment' });
      expect(balance(gatewayWallet)).toBe(g + 20_000n - 1_000n);
      expect((await purchasesOf(stranger.address)).length).toBe(bought.length + 1);
    } finally {
      mode = 'pass';
      urls.market = market.url;
    }
  });

  it('fails a trade against a market that settled and has not answered for an hour: not refunded, reported', async () => {
    const gatewayWallet = gatewaySvc.context.wallet.address;
    const { execute, again } = await planThroughProxy(stranger);
    const [b, s, g] = [balance(stranger.address), balance(seller.address), balance(gatewayWallet)];
    try {
      expect(await execute('drop')).toMatchObject({ status: 503, code: 'trade_pending' });
      gatewayClock = new Date(Date.now() + 61 * 60_000);
      const kept = await fail(again('drop'));
      expect(kept).toMatchObject({ status: 502, code: 'market_kept_payment' });
      const tradeId = (kept.details as { tradeId: string }).tradeId;
      const profile = await clientOf(buyer).reputation.get({
        params: { agentId: seller.address },
        query: { limit: 100 },
      });
      expect(profile.history.items.find((r) => r.comment?.includes(tradeId))).toMatchObject({
        outcome: 'expired',
        ratedBy: stranger.address,
        verified: true,
      });
      // Money, to the atomic unit: nothing refunded, nothing paid twice; the gateway paid the report.
      expect([balance(stranger.address), balance(seller.address), balance(gatewayWallet)]).toEqual([
        b - 220_000n,
        s + 200_000n,
        g + 20_000n - 1_000n,
      ]);
    } finally {
      gatewayClock = new Date();
      mode = 'pass';
      urls.market = market.url;
    }
  });

  it('serves an honest buyer whose market answer was lost once the market is back: bought and charged once', async () => {
    const gatewayWallet = gatewaySvc.context.wallet.address;
    const { plan, execute, again } = await planThroughProxy(buyer);
    const [b, s, g] = [balance(buyer.address), balance(seller.address), balance(gatewayWallet)];
    const bought = await purchasesOf(buyer.address);
    try {
      const error = await execute('drop');
      expect(error).toMatchObject({ status: 503, code: 'trade_pending' });
      expect(balance(buyer.address)).toBe(b - 220_000n);
      const resumed = await again('pass');
      const after = await purchasesOf(buyer.address);
      expect(after.length).toBe(bought.length + 1);
      expect(resumed.data).toMatchObject({
        planId: plan.id,
        purchase: { purchaseId: after.find((id) => !bought.includes(id)), priceUsd: '0.2', paidBy: gatewayWallet },
        verification: { contentMatches: true },
        charges: { totalUsd: '0.22' },
      });
      expect(resumed.payment?.refund).toBeUndefined();
      // Money, to the atomic unit: one payment by the buyer, one purchase paid to the seller, one trade report.
      expect(balance(buyer.address)).toBe(b - 220_000n);
      expect(balance(seller.address)).toBe(s + 200_000n);
      expect(balance(gatewayWallet)).toBe(g + 20_000n - 1_000n);
    } finally {
      mode = 'pass';
      urls.market = market.url;
    }
  });

  it('refunds a buyer whose market payment never settled, once its blockhash has expired', async () => {
    const gatewayWallet = gatewaySvc.context.wallet.address;
    const { plan, execute, again } = await planThroughProxy(buyer);
    const [b, s, g] = [balance(buyer.address), balance(seller.address), balance(gatewayWallet)];
    const bought = await purchasesOf(buyer.address);
    try {
      const error = await execute('swallow');
      // The payment may still settle (the market could hold it): pending until its blockhash expires.
      expect(error).toMatchObject({ status: 503, code: 'trade_pending' });
      expect(error.headers['retry-after']).toBe('30');
      expect(balance(buyer.address)).toBe(b - 220_000n);
      expect(balance(gatewayWallet)).toBe(g + 220_000n);
      economy.ledger.warp(151);
      // The market is gone altogether now: the facilitator alone says the payment never settled and never will.
      urls.market = 'http://127.0.0.1:9';
      const refunded = await fail(again('pass'));
      expect(refunded).toMatchObject({ status: 502, code: 'upstream_unavailable' });
      expect((refunded.details as { refund?: { amountAtomic: string } }).refund).toMatchObject({
        amountAtomic: '220000',
      });
      // Money, to the atomic unit: the buyer has it all back, the seller was never paid, the gateway is even.
      expect(balance(buyer.address)).toBe(b);
      expect(balance(seller.address)).toBe(s);
      expect(balance(gatewayWallet)).toBe(g);
      expect((await purchasesOf(buyer.address)).length).toBe(bought.length);
      // The plan was given back: executed again through a working market, it buys once.
      mode = 'pass';
      urls.market = market.url;
      const execution = await clientOf(buyer).gateway.executeTrade({ body: { planId: plan.id } });
      expect(execution.purchase).toMatchObject({ priceUsd: '0.2', paidBy: gatewayWallet });
      expect(balance(buyer.address)).toBe(b - 220_000n);
      expect(balance(seller.address)).toBe(s + 200_000n);
    } finally {
      mode = 'pass';
      urls.market = market.url;
    }
  });
});

describe('trade/execute across a crash of the gateway', () => {
  // The gateway runs as a real process (`npm start`'s main.ts with SERVICES=gateway, the same wallet) in front of this
  // file's services. It is killed (SIGKILL) at the worst moment of a trade: the market has settled its purchase (the
  // seller is paid) and answered, and the answer has not reached the gateway. Started again on the same database, it
  // gets the buyer's payment again and must finish the trade without buying twice.
  const root = new URL('..', import.meta.url).pathname;
  let child: { process: ChildProcess; url: string; exited: Promise<unknown> } | undefined;
  let proxy: Server | undefined;
  const dirs: string[] = [];
  let database: { env: Record<string, string>; endLease(key: string): Promise<void>; close(): Promise<void> };
  let env: Record<string, string>;
  /** Kill the gateway when the market has answered a paid purchase. */
  let armed = false;
  // The same port each time: the buyer's payment is for that resource (its identifier is bound to the request's URL).
  let port = 0;

  async function startGateway() {
    const spawned = spawn(process.execPath, ['--import', 'tsx', '--conditions=ae-source', 'servers/src/main.ts'], {
      cwd: root,
      env: { ...process.env, ...env, GATEWAY_PORT: String(port), LOG_LEVEL: 'error' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise((resolve) => spawned.on('exit', (code, signal) => resolve(signal ?? code)));
    await new Promise<void>((resolve, reject) => {
      let output = '';
      const collect = (chunk: Buffer) => {
        output += chunk;
        if (output.includes('Ctrl-C stops')) resolve();
      };
      spawned.stdout!.on('data', collect);
      spawned.stderr!.on('data', collect);
      void exited.then((how) => reject(new Error(`gateway exited with ${String(how)}:\n${output}`)));
    });
    child = { process: spawned, url: `http://127.0.0.1:${port}`, exited };
    return child;
  }

  async function stopGateway() {
    if (child && child.process.exitCode === null && child.process.signalCode === null) {
      child.process.kill('SIGINT');
      await child.exited;
    }
    child = undefined;
  }

  beforeAll(async () => {
    const DATABASE_URL = process.env.TEST_DATABASE_URL;
    if (DATABASE_URL) {
      const schema = `gwcrash_${randomBytes(6).toString('hex')}`;
      const admin = new pg.Client({ connectionString: DATABASE_URL });
      await admin.connect();
      await admin.query(`create schema ${schema}`);
      const url = new URL(DATABASE_URL);
      url.searchParams.set('options', `-c search_path=${schema}`);
      database = {
        env: { DATABASE_URL: url.toString() },
        endLease: async (key) =>
          void (await admin.query(
            `update ${schema}.runtime_payments set lease_until = now() - interval '1 second' where key = $1`,
            [key],
          )),
        close: async () => {
          await admin.query(`drop schema if exists ${schema} cascade`);
          await admin.end();
        },
      };
    } else {
      const dir = mkdtempSync(join(tmpdir(), 'ae-gateway-crash-'));
      dirs.push(dir);
      database = {
        env: { DATA_DIR: dir },
        // No process holds the data directory now: the test opens it to end the lease, then lets it go.
        endLease: async (key) => {
          const opened = await openDatabase({ dataDir: join(dir, 'db') });
          await opened.db
            .updateTable('runtime_payments')
            .set({ lease_until: new Date(Date.now() - 1000) })
            .where('key', '=', key)
            .execute();
          await opened.close();
        },
        close: async () => {},
      };
    }
    // The market, reached through a connection that kills the gateway when a paid purchase has been answered.
    proxy = createServer((req, res) => {
      const target = new URL(req.url ?? '/', market.url);
      const upstream = httpRequest(
        target,
        { method: req.method, headers: { ...req.headers, host: target.host } },
        (answer) => {
          if (armed && req.headers['payment-signature'] && answer.statusCode === 200) {
            armed = false;
            child!.process.kill('SIGKILL');
            answer.resume();
            answer.on('end', () => req.socket.destroy());
            return;
          }
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy!.listen(0, '127.0.0.1', resolve));
    port = await freePort();
    env = {
      SERVICES: 'gateway',
      SOLANA_RPC_URL: economy.rpcUrl,
      FACILITATOR_URL: economy.facilitator.url,
      // The wallet of this file's gateway: a registered broker, trusted reporter and seller at the facilitator.
      GATEWAY_WALLET_SECRET: JSON.stringify([...gatewaySvc.context.wallet.secretKey]),
      KNOWLEDGE_MARKET_PUBLIC_URL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
      NEGOTIATION_PUBLIC_URL: negotiations.url,
      REPUTATION_PUBLIC_URL: reputation.url,
      VERIFICATION_PUBLIC_URL: verification.url,
      ...database.env,
    };
  });

  afterAll(async () => {
    await stopGateway();
    proxy?.closeAllConnections();
    proxy?.close();
    await database?.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  /** Starts a trade on a fresh gateway process, kills it after the market was paid, and resumes on another. */
  async function crashTrade(wallet: Signer, start: { need: string; moduleId: string; maxPriceUsd: string }) {
    const dying = await startGateway();
    const clientAt = (http?: ReturnType<typeof axios.create>) =>
      createClient({
        baseUrls: { gateway: `http://127.0.0.1:${port}` },
        wallet,
        payments: { rpcUrl: economy.rpcUrl, maxPerCallUsd: '5' },
        maxRetries: 0,
        ...(http ? { axios: http } : {}),
      });
    const plan = await clientAt().gateway.startTrade({ body: start });
    const price = usdToAtomic(plan.estimate.modulePriceUsd);
    const total = usdToAtomic(plan.estimate.totalUsd);
    const gatewayWallet = gatewaySvc.context.wallet.address;
    const purchases = async () =>
      (
        await market.database.db
          .selectFrom('knowledge_market_purchases')
          .select('id')
          .where('module_id', '=', start.moduleId)
          .where('buyer', '=', wallet.address)
          .execute()
      ).map((r) => r.id);
    const [b, s, g, bought] = [
      balance(wallet.address),
      balance(seller.address),
      balance(gatewayWallet),
      await purchases(),
    ];

    // The buyer's payment header, as its SDK sent it.
    let header: string | undefined;
    const http = axios.create();
    http.interceptors.request.use((config) => {
      header = (config.headers['payment-signature'] as string | undefined) ?? header;
      return config;
    });
    armed = true;
    const lost = await clientAt(http)
      .gateway.executeTrade({ body: { planId: plan.id } })
      .catch((e: unknown) => e);
    expect(await dying.exited).toBe('SIGKILL');
    expect(lost).toBeInstanceOf(Error);
    // Charged by the gateway, which paid the seller for a purchase it never noted.
    expect(balance(wallet.address)).toBe(b - total);
    expect(balance(seller.address)).toBe(s + price);
    expect((await purchases()).length).toBe(bought.length + 1);

    // The dead request's claim ends (as its lease's time passing would); the same payment comes again.
    await database.endLease(paymentKey(decodeX402Header(header!) as X402PaymentPayload)!);
    await startGateway();
    const resumed = await clientAt().gateway.executeTrade(
      { body: { planId: plan.id } },
      { headers: { 'payment-signature': header! } },
    );
    await stopGateway();
    const after = await purchases();
    expect(after.length).toBe(bought.length + 1);
    expect(resumed).toMatchObject({
      planId: plan.id,
      purchase: {
        purchaseId: after.find((id) => !bought.includes(id)),
        priceUsd: plan.estimate.modulePriceUsd,
        paidBy: gatewayWallet,
      },
      verification: { contentMatches: true },
      charges: { modulePriceUsd: plan.estimate.modulePriceUsd, totalUsd: plan.estimate.totalUsd },
    });
    // Money, to the atomic unit: one payment by the buyer, one purchase paid to the seller, one trade report.
    expect(balance(wallet.address)).toBe(b - total);
    expect(balance(seller.address)).toBe(s + price);
    expect(balance(gatewayWallet)).toBe(g + total - price - 1_000n);
    return { plan, resumed };
  }

  it('finishes a trade whose process died after the market was paid and before it noted the purchase: bought and charged once', async () => {
    const { plan } = await crashTrade(buyer, {
      need: 'choosing rpc providers',
      moduleId: ids.rpc,
      maxPriceUsd: '0.3',
    });
    expect(plan.estimate).toMatchObject({ modulePriceUsd: '0.2', priceBasis: 'list', totalUsd: '0.22' });
  }, 240_000);

  it('does the same for a negotiated purchase: the agreement the dead process used buys once', async () => {
    await economy.ledger.mintTo(stranger.address, usdToAtomic('1'));
    const { plan, resumed } = await crashTrade(stranger, {
      need: 'land transactions with the right priority fee',
      moduleId: ids.fees,
      maxPriceUsd: '0.5',
    });
    expect(plan.negotiation).toMatchObject({ mode: 'auto' });
    expect(resumed.purchase).toMatchObject({ priceBasis: 'agreed', negotiationId: plan.negotiation!.id });
  }, 240_000);
});

describe('assist', () => {
  it('answers trading questions from the documents, with the module’s floor, citing endpoints; charged 0.01', async () => {
    const before = balance(buyer.address);
    const answer = await clientOf(buyer).gateway.assist({
      body: { question: 'How do I get a discount on this module before buying it?', moduleId: ids.fees },
    });
    expect(balance(buyer.address)).toBe(before - 10_000n);
    expect(answer.topic).toBe('trading');
    expect(answer.answer).toContain('its floor is 0.4 USD');
    expect(answer.endpoints.map((e) => `${e.service} ${e.method} ${e.path}`)).toEqual(
      expect.arrayContaining([
        'gateway POST /api/trade/start',
        'gateway POST /api/trade/execute',
        'negotiation POST /api/negotiations/:negotiationId/counter',
      ]),
    );
    expect(answer.endpoints.find((e) => e.path === '/api/trade/start')!.pricing).toMatchObject({
      kind: 'fixed',
      maxUsd: '0.03',
    });
    expect(answer.generator.engine).toBe('builtin');
  });

  it('helps with disputes through the escrow service and looks endpoints up', async () => {
    const dispute = await clientOf(buyer).gateway.assist({
      body: { question: 'The seller delivered wrong content: how do I dispute and get a refund?' },
    });
    expect(dispute.topic).toBe('disputes');
    expect(dispute.endpoints.some((e) => e.service === 'escrow' && e.path === '/api/escrow/dispute')).toBe(true);
    const lookup = await clientOf(buyer).gateway.assist({
      body: { question: 'Which endpoint lists certificates?', topic: 'endpoints' },
    });
    expect(lookup.endpoints[0]).toMatchObject({ service: 'verification', method: 'GET', path: '/api/certificates' });
  });

  it('refuses questions out of scope and unknown modules before charging', async () => {
    const before = balance(buyer.address);
    expect(
      await fail(clientOf(buyer).gateway.assist({ body: { question: 'Bake sourdough bread with rye flour' } })),
    ).toMatchObject({ status: 422, code: 'question_out_of_scope' });
    expect(
      await fail(
        clientOf(buyer).gateway.assist({
          body: { question: 'Is this module good?', moduleId: 'mod_1111111111111111111111' },
        }),
      ),
    ).toMatchObject({ status: 404, code: 'module_not_found' });
    expect(balance(buyer.address)).toBe(before);
  });
});

describe('example', () => {
  it('npm run example:trade onboards, searches, trades and rates through the gateway, printing prices and transactions', async () => {
    const { execFile } = await import('node:child_process');
    const { promisify } = await import('node:util');
    const { mkdtempSync, rmSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { fileURLToPath } = await import('node:url');
    const { SOLANA_DEVNET, USDC_DEVNET } = await import('@agent-economy/contracts');
    const dataDir = mkdtempSync(join(tmpdir(), 'ae-trade-'));
    try {
      const keyFile = join(dataDir, 'demo-agent.json');
      writeFileSync(keyFile, JSON.stringify([...economy.buyer.secretKey]));
      const service = (id: string, s: RunningService) => ({ id, url: s.url, wallet: s.context.wallet.address });
      writeFileSync(
        join(dataDir, 'services.json'),
        JSON.stringify({
          chain: {
            rpcUrl: economy.rpcUrl,
            stablecoin: USDC_DEVNET,
            network: SOLANA_DEVNET,
            faucet: `${economy.rpcUrl}/faucet`,
          },
          demoWallet: { address: economy.buyer.address, keyFile },
          services: [
            service('gateway', gatewaySvc),
            service('knowledge-market', market),
            service('negotiation', negotiations),
            service('reputation', reputation),
            service('verification', verification),
          ],
        }),
      );
      const before = balance(economy.buyer.address);
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ['--import', 'tsx', '--conditions=ae-source', 'examples/trade.ts'],
        {
          cwd: fileURLToPath(new URL('..', import.meta.url)),
          env: { ...process.env, DATA_DIR: dataDir, AGENT_ECONOMY_WALLET: '' },
        },
      );
      expect(stdout).toMatch(/0b\. scan: verdict pass, score [\d.]+, certificate cert_/);
      expect(stdout).toMatch(
        new RegExp(`1\\. onboard ${economy.buyer.address} \\((new|known)\\): 0\\.01 USD, transaction \\w+`),
      );
      expect(stdout).toContain('negotiation neg_');
      expect(stdout).toContain('offered 0.2, countered, standing seller offer 0.225');
      expect(stdout).toMatch(/4\. trade\/execute trd_\w+: 0\.245 USD, transaction \w+/);
      expect(stdout).toContain('content SHA-256 matches: true');
      expect(stdout).toContain('5. rate 5/5: the module is rated 5 by 1: free');
      expect(stdout).toContain('The buyer spent 0.285 USD in 3 payments; the seller 0.03 USD.');
      // Onboard 0.01 + start 0.03 + execute 0.225 + 0.02.
      expect(balance(economy.buyer.address)).toBe(before - 285_000n);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
