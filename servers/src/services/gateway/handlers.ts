import {
  atomicToUsd,
  gateway,
  type GatewayEcosystem,
  type GatewayGuideStep,
  type GatewayOnboardBodyOut,
  type GatewayOnboarding,
  type GatewaySearchHit,
  type GatewaySearchType,
  type GatewayServiceId,
  type MarketModule,
  type TradeStepName,
} from '@agent-economy/contracts';
import { z } from 'zod';
import type { Reasoner } from '../../ai';
import { tokenize } from '../../ai/retrieval';
import type { RouterImplementation } from '../../runtime/app';
import { callerOf } from '../../runtime/app';
import { keepPayment, settlementOf } from '../../runtime/paywall';
import type { ParsedRequest } from '../../runtime/validation';
import { assistIndex, assistTask, detectTopic, moduleFacts, toAnswer } from './assist';
import { contractPricing, type DirectorySource } from './directory';
import { rankSearch, recommend, type PricingOf, type SearchDoc } from './domain';
import { PROBE_INTERVAL_SECONDS, WINDOW_SECONDS, type Prober } from './prober';
import type { GatewayStore } from './store';
import { KeptPayment, badField, type TradeLogic, type PreparedExecution } from './trade';
import { CONNECTED, CONTRACTS, SEARCH_TIMEOUT_MS, type ConnectedId, type Upstream } from './upstream';

export const LIFECYCLE: TradeStepName[] = ['discover', 'negotiate', 'verify', 'purchase', 'rate'];
const ALL_TYPES: GatewaySearchType[] = ['module', 'agent', 'certificate', 'negotiation'];

export interface GatewayDeps {
  store: GatewayStore;
  upstream: Upstream;
  directory: DirectorySource;
  prober: Prober;
  trade: TradeLogic;
  reasoner: Reasoner;
  startedAt: Date;
  now: () => Date;
  /** The preflight's decisions, shared with the price resolver and the handler of the same request. */
  prepared(request: ParsedRequest, caller: string): Promise<PreparedExecution>;
  discovered(request: ParsedRequest, caller: string): ReturnType<TradeLogic['discover']>;
  assistModule(request: ParsedRequest): Promise<MarketModule | null>;
}

/** Route prices from the directory (this deployment's documents), else the contracts. */
export async function pricingFrom(directory: DirectorySource): Promise<PricingOf> {
  const docs = await directory.documents();
  return (service, key) =>
    docs.find((d) => d.id === service)?.entries.find((e) => e.key === key)?.pricing ??
    contractPricing(service === 'gateway' ? gateway : CONTRACTS[service as ConnectedId], key);
}

// ---- search cursor: the offset into the merged ranking, bound to the query it was made for ----

const cursorKey = (q: string, types: GatewaySearchType[]) => `${q}\u0000${types.join(',')}`;
function encodeCursor(offset: number, q: string, types: GatewaySearchType[]): string {
  return Buffer.from(JSON.stringify({ o: offset, k: cursorKey(q, types) })).toString('base64url');
}
function decodeCursor(cursor: string | undefined, q: string, types: GatewaySearchType[]): number {
  if (!cursor) return 0;
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { o?: unknown; k?: unknown };
    if (Number.isInteger(parsed.o) && (parsed.o as number) >= 0 && parsed.k === cursorKey(q, types))
      return parsed.o as number;
  } catch {
    // falls through to the 400
  }
  throw badField('query.cursor', 'is not a cursor this search returned (it belongs to another query, or is malformed)');
}

/** Distinct words of a query as the services' substring filters take them (at least 2 characters, not stop words). */
const filterWords = (q: string) =>
  [...new Set(q.toLowerCase().match(/[a-z0-9]+/g) ?? [])]
    .filter((w) => w.length >= 2 && tokenize(w).length)
    .slice(0, 5);

export function gatewayHandlers(deps: GatewayDeps): RouterImplementation<typeof gateway.router> {
  const { store, upstream, directory, prober, trade, now } = deps;

  /** The probes of the current slot (when no replica has made them yet), then every service's health. */
  async function freshHealth() {
    await prober.probe().catch(() => undefined);
    return prober.health();
  }

  async function onboardingGuide(agent: GatewayOnboardBodyOut): Promise<GatewayGuideStep[]> {
    const w = agent.wallet;
    const plan: [GatewayServiceId, string, string, (path: string) => string, string][] = [];
    const seller: typeof plan = [
      [
        'knowledge-market',
        'publish',
        'Publish a module',
        (p) => p,
        'List a knowledge module with its price, capabilities and negotiation terms; the market computes its SHA-256 contentHash. Your wallet needs a stablecoin token account to be paid.',
      ],
      [
        'verification',
        'scan',
        'Get it certified',
        (p) => p,
        'Scan the content with your module id and your wallet as holder: a pass issues a signed certificate bound to the contentHash, which the gateway requires by default.',
      ],
      [
        'negotiation',
        'list',
        'Watch your negotiations',
        (p) => p.replace(':wallet', w),
        'Buyers’ offers on your modules; in mode auto the responder answers for you.',
      ],
      [
        'negotiation',
        'counter',
        'Answer offers',
        (p) => p,
        'In mode manual, counter (or accept, or reject) the buyer’s offer when it is your turn.',
      ],
    ];
    const buyer: typeof plan = [
      [
        'gateway',
        'search',
        'Search the ecosystem',
        (p) => p,
        'One query over modules, agents, certificates and negotiations, ranked by BM25.',
      ],
      [
        'gateway',
        'startTrade',
        'Start a trade',
        (p) => p,
        'Ranks matching sellers by relevance, capabilities, rating and reputation, and opens a negotiation for you with the gateway as broker.',
      ],
      [
        'negotiation',
        'counter',
        'Negotiate (optional)',
        (p) => p,
        'Counter the seller’s offer yourself before executing; the plan lists the negotiation’s id.',
      ],
      [
        'gateway',
        'executeTrade',
        'Execute the trade',
        (p) => p,
        'One payment (module price plus fee): verification, purchase for you, content hash check and the reputation report.',
      ],
      [
        'knowledge-market',
        'rate',
        'Rate the module',
        (p) => p,
        'Rate what you bought, 1 to 5, with the purchase id from the execution.',
      ],
    ];
    if (agent.role !== 'buyer') plan.push(...seller);
    if (agent.role !== 'seller') plan.push(...buyer.filter((b) => !plan.some((s) => s[0] === b[0] && s[1] === b[1])));
    plan.push([
      'reputation',
      'get',
      'Follow your reputation',
      (p) => p.replace(':agentId', w),
      'Your score (50 until the first report), tier and the reports about you.',
    ]);
    const pricing = await pricingFrom(directory);
    const steps: GatewayGuideStep[] = [];
    for (const [service, key, title, fill, detail] of plan) {
      const entry = await directory.entry(service, key);
      const price = pricing(service, key);
      const priceText =
        price.maxUsd === '0'
          ? 'free'
          : price.minUsd === price.maxUsd
            ? `${price.maxUsd} USD`
            : `${price.minUsd} to ${price.maxUsd} USD`;
      steps.push({
        order: steps.length + 1,
        title,
        detail: `${detail} ${entry ? `${entry.summary}. ` : ''}Price: ${priceText}${entry?.auth === 'siwx' ? '; sign in with your wallet (SIGN-IN-WITH-X)' : ''}.`,
        endpoint: { service, method: entry?.method ?? 'GET', path: fill(entry?.path ?? '') },
        pricing: price,
      });
    }
    return steps;
  }

  return {
    ecosystem: async () => {
      const [health, docs, agents, totals, stats] = await Promise.all([
        freshHealth(),
        directory.documents(),
        store.countAgents(),
        store.tradeTotals(),
        Promise.all(
          CONNECTED.map((id) =>
            upstream
              .reader(id, SEARCH_TIMEOUT_MS)
              .stats()
              .then(
                (s) => s as unknown,
                () => null,
              ),
          ),
        ),
      ]);
      const [market, negotiations, reputation, verification] = stats as [
        { modules: number; sellers: number; purchases: number; volumeUsd: string; averageRating: number | null } | null,
        { byState: Record<string, number>; agreementRate: number | null } | null,
        { agents: number; averageScore: number | null } | null,
        { scans: number; certificates: { valid: number } } | null,
      ];
      const at = now().toISOString();
      const body: GatewayEcosystem = {
        lifecycle: LIFECYCLE,
        services: CONNECTED.map((id) => {
          const h = health.find((s) => s.id === id)!;
          const doc = docs.find((d) => d.id === id)!;
          return {
            id,
            title: doc.title,
            description: CONTRACTS[id].description,
            url: h.url,
            status: h.status,
            responseTimeMs: h.responseTimeMs.last,
            availabilityPercent: h.availabilityPercent,
            endpoints: doc.entries.length,
            paidEndpoints: doc.entries.filter((e) => e.pricing.maxUsd !== '0').length,
          };
        }),
        stats: {
          registeredAgents: agents,
          modules: market?.modules ?? null,
          sellers: market?.sellers ?? null,
          purchases: market?.purchases ?? null,
          marketVolumeUsd: market?.volumeUsd ?? null,
          averageModuleRating: market?.averageRating ?? null,
          negotiationsOpen: negotiations
            ? (negotiations.byState.open ?? 0) + (negotiations.byState.countered ?? 0)
            : null,
          agreementRate: negotiations?.agreementRate ?? null,
          scans: verification?.scans ?? null,
          certificatesValid: verification?.certificates.valid ?? null,
          ratedAgents: reputation?.agents ?? null,
          averageReputation: reputation?.averageScore ?? null,
          tradesExecuted: totals.trades,
          tradeVolumeUsd: atomicToUsd(totals.volume),
          asOf: at,
        },
        directory: docs.flatMap((d) => d.entries),
        generatedAt: at,
      };
      return { status: 200, body };
    },

    search: async ({ query }) => {
      const started = performance.now();
      const types = query.types ? ([...new Set(query.types.split(','))] as GatewaySearchType[]) : ALL_TYPES;
      const offset = decodeCursor(query.cursor, query.q, types);
      const words = filterWords(query.q);
      const unavailable: GatewayServiceId[] = [];
      const attempt = async <T>(id: ConnectedId, call: () => Promise<T>): Promise<T | null> => {
        try {
          return await call();
        } catch {
          unavailable.push(id);
          return null;
        }
      };
      const [modules, certificates, negotiations, agents] = await Promise.all([
        types.includes('module')
          ? attempt('knowledge-market', () =>
              upstream
                .reader('knowledge-market', SEARCH_TIMEOUT_MS)
                .list({ query: { q: query.q, sort: 'relevance', limit: 100 } })
                .then((p) => p.items),
            )
          : null,
        types.includes('certificate') && words.length
          ? attempt('verification', async () =>
              (
                await Promise.all(
                  words.map((q) =>
                    upstream.reader('verification', SEARCH_TIMEOUT_MS).listCertificates({ query: { q, limit: 100 } }),
                  ),
                )
              ).flatMap((p) => p.items),
            )
          : null,
        types.includes('negotiation') && words.length
          ? attempt('negotiation', async () =>
              (
                await Promise.all(
                  words.map((q) =>
                    upstream.reader('negotiation', SEARCH_TIMEOUT_MS).search({ query: { q, limit: 100 } }),
                  ),
                )
              ).flatMap((p) => p.items),
            )
          : null,
        types.includes('agent') ? store.agents() : null,
      ]);
      const docs: SearchDoc[] = [];
      for (const m of new Map((modules ?? []).map((m) => [m.id, m])).values()) {
        docs.push({
          type: 'module',
          id: m.id,
          text: `${m.title} ${m.title} ${m.description} ${m.tags.join(' ')} ${m.capabilities.join(' ')} ${m.preview ?? ''}`,
          snippetFrom: [m.description, m.preview ?? '', m.title],
          hit: (score, snippet): GatewaySearchHit => ({
            type: 'module',
            id: m.id,
            title: m.title,
            snippet,
            score,
            service: 'knowledge-market',
            href: { service: 'knowledge-market', method: 'GET', path: `/api/modules/${m.id}` },
            module: {
              priceUsd: m.priceUsd,
              seller: m.seller.wallet,
              rating: m.rating.average,
              ratingCount: m.rating.count,
              tags: m.tags,
              capabilities: m.capabilities,
              negotiationMode: m.negotiation.mode,
              contentHash: m.contentHash,
            },
          }),
        });
      }
      for (const a of agents ?? []) {
        docs.push({
          type: 'agent',
          id: a.wallet,
          text: `${a.name} ${a.name} ${a.role} ${a.capabilities.join(' ')} ${a.interests.join(' ')} ${a.description ?? ''}`,
          snippetFrom: [
            a.description ?? '',
            `${a.role}: ${a.capabilities.join(', ')}; interests ${a.interests.join(', ')}`,
          ],
          hit: (score, snippet) => ({
            type: 'agent',
            id: a.wallet,
            title: a.name,
            snippet,
            score,
            service: 'gateway',
            href: { service: 'reputation', method: 'GET', path: `/api/reputation/agent/${a.wallet}` },
            agent: {
              wallet: a.wallet,
              name: a.name,
              role: a.role,
              capabilities: a.capabilities,
              reputationScore: a.reputationScore,
              tradeCount: a.tradeCount,
            },
          }),
        });
      }
      for (const c of new Map((certificates ?? []).map((c) => [c.id, c])).values()) {
        docs.push({
          type: 'certificate',
          id: c.id,
          text: `${c.title} ${c.moduleId ?? ''} ${c.format}`,
          snippetFrom: [c.title, c.moduleId ?? ''],
          hit: (score, snippet) => ({
            type: 'certificate',
            id: c.id,
            title: c.title,
            snippet: `${snippet} (score ${c.score}, ${c.status})`.slice(0, 200),
            score,
            service: 'verification',
            href: { service: 'verification', method: 'GET', path: `/api/certificates/${c.id}` },
            certificate: {
              moduleId: c.moduleId,
              contentHash: c.contentHash,
              score: c.score,
              status: c.status,
              holder: c.holder,
              expiresAt: c.expiresAt,
            },
          }),
        });
      }
      for (const n of new Map((negotiations ?? []).map((n) => [n.id, n])).values()) {
        docs.push({
          type: 'negotiation',
          id: n.id,
          text: n.moduleTitle,
          snippetFrom: [n.moduleTitle],
          hit: (score, snippet) => ({
            type: 'negotiation',
            id: n.id,
            title: n.moduleTitle,
            snippet: `${snippet} (${n.state}, round ${n.rounds} of ${n.maxRounds})`.slice(0, 200),
            score,
            service: 'negotiation',
            href: { service: 'negotiation', method: 'GET', path: `/api/negotiations/${n.id}` },
            negotiation: {
              moduleId: n.moduleId,
              moduleTitle: n.moduleTitle,
              state: n.state,
              mode: n.mode,
              rounds: n.rounds,
              maxRounds: n.maxRounds,
              updatedAt: n.updatedAt,
            },
          }),
        });
      }
      const ranked = rankSearch(query.q, docs);
      const counts = { module: 0, agent: 0, certificate: 0, negotiation: 0 };
      for (const hit of ranked) counts[hit.type]++;
      const items = ranked.slice(offset, offset + query.limit);
      return {
        status: 200,
        body: {
          query: query.q,
          types,
          items,
          nextCursor: offset + query.limit < ranked.length ? encodeCursor(offset + query.limit, query.q, types) : null,
          counts,
          unavailable: [...new Set(unavailable)],
          tookMs: Math.round((performance.now() - started) * 10) / 10,
        },
      };
    },

    onboard: async ({ body, res }) => {
      callerOf(res);
      const at = now();
      const description = body.description ?? null;
      const { newlyRegistered, registeredAt } = await store.upsertAgent(
        {
          wallet: body.wallet,
          name: body.name,
          role: body.role,
          capabilities: [...new Set(body.capabilities)],
          interests: [...new Set(body.interests)],
          description,
        },
        at,
      );
      const w = body.wallet;
      const market = upstream.reader('knowledge-market');
      // What each service knows of the agent (they identify agents by wallet: nothing to register there).
      const [profile, listed, certificates, negotiations, candidates] = await Promise.all([
        upstream
          .agent('reputation')
          .get({ params: { agentId: w }, query: { limit: 1 } })
          .catch(() => null),
        market.list({ query: { seller: w, limit: 100 } }).then(
          (p) => p.items.length,
          () => null,
        ),
        upstream
          .reader('verification')
          .listCertificates({ query: { holder: w, limit: 100 } })
          .then(
            (p) => p.items.length,
            () => null,
          ),
        upstream
          .reader('negotiation')
          .stats()
          .then(
            () => true,
            () => false,
          ),
        Promise.all([
          ...body.capabilities.map((capability) => market.list({ query: { capability, limit: 100 } })),
          ...(body.interests.length
            ? [market.list({ query: { tags: body.interests.slice(0, 10).join(','), limit: 100 } })]
            : []),
        ]).then(
          (pages) => [...new Map(pages.flatMap((p) => p.items).map((m) => [m.id, m])).values()],
          () => [] as MarketModule[],
        ),
      ]);
      if (profile) await store.cacheReputation(w, profile.score, profile.tradeCount, at);
      // Certificates are looked up for the best matches only, then decide ties.
      const provisional = recommend(
        { wallet: w, capabilities: body.capabilities, interests: body.interests },
        candidates,
        () => false,
        10,
      );
      const certified = new Set<string>();
      await Promise.all(
        provisional.map(async (r) => {
          const module = candidates.find((m) => m.id === r.moduleId)!;
          if (await trade.certificateFor(module).catch(() => null)) certified.add(module.id);
        }),
      );
      const recommendedModules = recommend(
        { wallet: w, capabilities: body.capabilities, interests: body.interests },
        candidates.filter((m) => provisional.some((p) => p.moduleId === m.id)),
        (m) => certified.has(m.id),
      );
      const noAnswer = (service: string) =>
        `${service} did not answer; it identifies agents by wallet, so there is nothing to register`;
      const registrations: GatewayOnboarding['registrations'] = [
        {
          service: 'gateway',
          status: newlyRegistered ? 'registered' : 'already-registered',
          reference: `/api/search?q=${encodeURIComponent(body.name)}&types=agent`,
          detail: newlyRegistered
            ? 'Added to the gateway’s agent registry: search and recommendations find you'
            : 'Your profile in the gateway’s registry was updated',
        },
        {
          service: 'knowledge-market',
          status: 'ready',
          reference: `/api/modules?seller=${w}`,
          detail:
            listed === null
              ? noAnswer('The knowledge market')
              : `Identifies sellers and buyers by wallet; you list ${listed} module${listed === 1 ? '' : 's'}`,
        },
        {
          service: 'negotiation',
          status: 'ready',
          reference: `/api/agents/${w}/negotiations`,
          detail: negotiations
            ? 'Identifies parties by wallet (SIGN-IN-WITH-X); the gateway can open negotiations for you as broker'
            : noAnswer('The negotiation service'),
        },
        {
          service: 'reputation',
          status: 'ready',
          reference: `/api/reputation/agent/${w}`,
          detail: profile
            ? `Score ${profile.score} (${profile.tier}) from ${profile.tradeCount} trade reports`
            : noAnswer('The reputation service'),
        },
        {
          service: 'verification',
          status: 'ready',
          reference: `/api/certificates?holder=${w}`,
          detail:
            certificates === null
              ? noAnswer('The verification service')
              : `Names certificate holders by wallet; you hold ${certificates} certificate${certificates === 1 ? '' : 's'}`,
        },
      ];
      const steps = await onboardingGuide(body);
      const summaryTask = {
        name: 'gateway-onboarding-summary',
        instructions:
          'Write a two-sentence getting-started summary for this agent from its role, capabilities and the guide steps given. Plain text.',
        input: {
          name: body.name,
          role: body.role,
          capabilities: body.capabilities,
          steps: steps.map((s) => s.title),
          recommended: recommendedModules.map((r) => r.title),
        },
        output: z.object({ summary: z.string().min(1).max(1000) }),
        builtin: (i: {
          name: string;
          role: string;
          capabilities: string[];
          steps: string[];
          recommended: string[];
        }) => ({
          summary:
            `Welcome, ${i.name}: as a ${i.role === 'both' ? 'buyer and seller' : i.role} with ${i.capabilities.join(', ')}, follow these ${i.steps.length} steps: ${i.steps.join('; ')}.` +
            (i.recommended.length
              ? ` Start with ${i.recommended.length === 1 ? 'the recommended module' : 'the recommended modules'}: ${i.recommended.join('; ')}.`
              : ' No module matches your capabilities or interests yet.'),
        }),
      };
      const { output, generator } = await deps.reasoner.run(summaryTask);
      return {
        status: 200,
        body: {
          agent: {
            wallet: w,
            name: body.name,
            role: body.role,
            capabilities: [...new Set(body.capabilities)],
            interests: [...new Set(body.interests)],
            description,
            registeredAt: registeredAt.toISOString(),
            newlyRegistered,
          },
          registrations,
          recommendedModules,
          guide: { summary: output.summary, steps },
          generator,
        },
      };
    },

    startTrade: async ({ body, res }) => {
      const buyer = callerOf(res);
      const discovery = await deps.discovered(res.locals.parsed as ParsedRequest, buyer);
      return { status: 200, body: await trade.start(body, buyer, discovery) };
    },

    executeTrade: async ({ res }) => {
      const buyer = callerOf(res);
      const settlement = settlementOf(res);
      const prepared = await deps.prepared(res.locals.parsed as ParsedRequest, buyer);
      try {
        return { status: 200, body: await trade.execute(prepared, settlement, buyer) };
      } catch (error) {
        // The market may have been paid: not refunded now; the same payment presented again finishes the trade.
        if (error instanceof KeptPayment) keepPayment(res);
        throw error;
      }
    },

    assist: async ({ body, res }) => {
      const module = await deps.assistModule(res.locals.parsed as ParsedRequest);
      const docs = await directory.documents();
      const index = assistIndex(docs.flatMap((d) => d.entries));
      const topic = body.topic ?? detectTopic(body.question);
      const certificate = module ? await trade.certificateFor(module).catch(() => null) : null;
      const facts = {
        question: body.question,
        topic,
        endpoints: index.retrieve(body.question, topic),
        procedure: index.procedure(topic),
        module: module ? moduleFacts(module, certificate && { id: certificate.id, score: certificate.score }) : null,
        lifecycle: LIFECYCLE,
      };
      const { output, generator } = await deps.reasoner.run(assistTask(facts));
      return { status: 200, body: toAnswer(facts, output, generator) };
    },

    health: async () => {
      const services = await freshHealth();
      const at = now();
      const up = services.filter((s) => s.status === 'up').length;
      const down = services.filter((s) => s.status === 'down').length;
      return {
        status: 200,
        body: {
          status: up === services.length ? 'ok' : down === services.length ? 'down' : 'degraded',
          startedAt: deps.startedAt.toISOString(),
          uptimeSeconds: Math.max(0, Math.floor((at.getTime() - deps.startedAt.getTime()) / 1000)),
          checkedAt: at.toISOString(),
          windowSeconds: WINDOW_SECONDS,
          probeIntervalSeconds: PROBE_INTERVAL_SECONDS,
          services,
        },
      };
    },

    directory: async ({ query }) => {
      return {
        status: 200,
        body: await directory.directory({
          ...(query.service ? { service: query.service } : {}),
          ...(query.paid ? { paid: query.paid === 'true' } : {}),
          ...(query.q ? { q: query.q } : {}),
        }),
      };
    },
  };
}
