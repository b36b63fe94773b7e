import {
  TRADE_GATEWAY_FEE_USD,
  atomicToUsd,
  usdToAtomic,
  type GatewayEndpointRef,
  type GatewayPricing,
  type GatewayRecommendedModule,
  type GatewaySearchHit,
  type GatewaySearchType,
  type GatewayServiceId,
  type MarketModule,
  type TradeCandidate,
  type TradeEstimate,
  type TradeNegotiationSnapshot,
  type TradeStep,
  type TradeStepEndpoint,
} from '@agent-economy/contracts';
import { Bm25Index, tokenize } from '../../ai/retrieval';

// Pure rules of the gateway: ranking, recommendation and match formulas, the trade plan's steps and estimate.

const round4 = (n: number) => Math.round(n * 10_000) / 10_000;

// ---- search ----

/** A record to rank: its BM25 text and how to make it a hit once scored. */
export interface SearchDoc {
  type: GatewaySearchType;
  id: string;
  text: string;
  /** Texts a snippet may be cut from, most telling first. */
  snippetFrom: string[];
  hit: (score: number, snippet: string) => GatewaySearchHit;
}

/** Up to 200 characters of the first text that contains a matched term, around it. */
export function snippetOf(texts: string[], matched: string[]): string {
  for (const text of texts) {
    const lower = text.toLowerCase();
    const at = Math.min(...matched.map((m) => lower.indexOf(m)).filter((i) => i >= 0));
    if (Number.isFinite(at)) {
      const start = Math.max(0, at - 60);
      const cut = text
        .slice(start, start + 200)
        .replace(/\s+/g, ' ')
        .trim();
      return `${start > 0 ? '…' : ''}${cut}`.slice(0, 200);
    }
  }
  return (texts[0] ?? '').replace(/\s+/g, ' ').trim().slice(0, 200);
}

/**
 * Ranks each type's records by Okapi BM25 (k1 1.2, b 0.75) over their text, then normalises per type:
 * score = BM25 / the type's best BM25 × the share of the query's terms the record contains; so each type's best
 * full match scores 1. Merged best first; ties by type (module, agent, certificate, negotiation), then id.
 */
export function rankSearch(query: string, docs: SearchDoc[]): GatewaySearchHit[] {
  const terms = [...new Set(tokenize(query))];
  if (!terms.length) return [];
  const order: GatewaySearchType[] = ['module', 'agent', 'certificate', 'negotiation'];
  const hits: GatewaySearchHit[] = [];
  for (const type of order) {
    const ofType = docs.filter((d) => d.type === type);
    if (!ofType.length) continue;
    const index = new Bm25Index(ofType.map((doc) => ({ doc, text: doc.text })));
    const ranked = index.search(query, ofType.length);
    const best = ranked[0]?.score ?? 0;
    for (const { doc, score, matched } of ranked) {
      hits.push(doc.hit(round4((score / best) * (matched.length / terms.length)), snippetOf(doc.snippetFrom, matched)));
    }
  }
  return hits.sort(
    (a, b) => b.score - a.score || order.indexOf(a.type) - order.indexOf(b.type) || a.id.localeCompare(b.id),
  );
}

// ---- onboarding ----

const overlap = (wanted: string[], offered: Iterable<string>) => {
  const set = new Set(offered);
  return wanted.filter((w) => set.has(w));
};

/**
 * Modules for an agent: score = 0.6 × capability overlap + 0.2 × interest overlap + 0.2 × rating / 5 (unrated 0.5),
 * where an overlap is the share of the agent's capabilities (interests) the module declares (as a capability or
 * tag). Only modules that match at least one, not the agent's own; best first, certified first on equal scores.
 */
export function recommend(
  agent: { wallet: string; capabilities: string[]; interests: string[] },
  modules: MarketModule[],
  certified: (module: MarketModule) => boolean,
  limit = 5,
): GatewayRecommendedModule[] {
  const picks: GatewayRecommendedModule[] = [];
  for (const m of modules) {
    if (m.seller.wallet === agent.wallet) continue;
    const caps = overlap(agent.capabilities, m.capabilities);
    const interests = overlap(agent.interests, [...m.tags, ...m.capabilities]);
    if (!caps.length && !interests.length) continue;
    const capShare = caps.length / agent.capabilities.length;
    const interestShare = agent.interests.length ? interests.length / agent.interests.length : 0;
    const ratingShare = m.rating.average === null ? 0.5 : m.rating.average / 5;
    const score = round4(0.6 * capShare + 0.2 * interestShare + 0.2 * ratingShare);
    const isCertified = certified(m);
    const reason = [
      caps.length
        ? `declares ${caps.length} of your ${agent.capabilities.length} capabilities (${caps.join(', ')})`
        : 'declares none of your capabilities',
      interests.length ? `covers ${interests.join(', ')}` : null,
      m.rating.average === null ? 'unrated' : `rated ${m.rating.average}/5 by ${m.rating.count}`,
      isCertified ? 'certified by the verification service' : 'not certified',
    ]
      .filter(Boolean)
      .join('; ');
    picks.push({
      moduleId: m.id,
      title: m.title,
      seller: m.seller.wallet,
      priceUsd: m.priceUsd,
      rating: m.rating.average,
      certified: isCertified,
      matchedCapabilities: caps,
      matchedInterests: interests,
      score,
      reason,
    });
  }
  return picks
    .sort(
      (a, b) => b.score - a.score || Number(b.certified) - Number(a.certified) || a.moduleId.localeCompare(b.moduleId),
    )
    .slice(0, limit);
}

// ---- discovery ----

/** The lowest price the buyer can reach: the floor in negotiation mode auto, else the list price. */
export const lowestPriceOf = (m: MarketModule): string =>
  m.negotiation.mode === 'auto' && m.negotiation.floorUsd !== null ? m.negotiation.floorUsd : m.priceUsd;

/**
 * Text relevance of each module to the need: BM25 over title, description, tags and capabilities, normalised as search.
 */
export function relevance(need: string, modules: MarketModule[]): Map<string, number> {
  const terms = [...new Set(tokenize(need))];
  const index = new Bm25Index(
    modules.map((m) => ({
      doc: m.id,
      text: `${m.title} ${m.description} ${m.tags.join(' ')} ${m.capabilities.join(' ')}`,
    })),
  );
  const ranked = index.search(need, modules.length);
  const best = ranked[0]?.score ?? 0;
  return new Map(ranked.map((h) => [h.doc, terms.length ? (h.score / best) * (h.matched.length / terms.length) : 0]));
}

export interface CandidateFacts {
  module: MarketModule;
  text: number;
  sellerScore: number | null;
  certificate: TradeCandidate['certificate'];
}

/**
 * matchScore = 0.5 × text relevance + 0.2 × capability overlap + 0.15 × rating / 5 + 0.15 × sellerScore / 100, an
 * unknown rating or score, or no capabilities asked for, counting half.
 */
export function candidateOf(facts: CandidateFacts, capabilities: string[] | undefined): TradeCandidate {
  const { module: m, text, sellerScore, certificate } = facts;
  const matched = capabilities ? overlap(capabilities, m.capabilities) : [];
  const capShare = capabilities?.length ? matched.length / capabilities.length : 0.5;
  const ratingShare = m.rating.average === null ? 0.5 : m.rating.average / 5;
  const sellerShare = sellerScore === null ? 0.5 : sellerScore / 100;
  const matchScore = round4(0.5 * text + 0.2 * capShare + 0.15 * ratingShare + 0.15 * sellerShare);
  const reasons = [
    `text relevance ${round4(text)}`,
    capabilities?.length
      ? `${matched.length} of ${capabilities.length} capabilities asked for (${matched.join(', ') || 'none'})`
      : 'no capabilities asked for',
    m.rating.average === null ? 'unrated' : `rated ${m.rating.average}/5 by ${m.rating.count} buyers`,
    sellerScore === null ? 'seller reputation unknown' : `seller reputation ${sellerScore}`,
    certificate ? `certificate ${certificate.id} scores ${certificate.score}` : 'no certificate',
    m.negotiation.mode === 'auto'
      ? `negotiable down to ${m.negotiation.floorUsd} USD`
      : m.negotiation.mode === 'manual'
        ? 'the seller negotiates by hand'
        : 'list price only',
  ];
  return {
    moduleId: m.id,
    title: m.title,
    seller: { wallet: m.seller.wallet, name: m.seller.name },
    priceUsd: m.priceUsd,
    lowestPriceUsd: lowestPriceOf(m),
    negotiationMode: m.negotiation.mode,
    rating: { average: m.rating.average, count: m.rating.count },
    sellerScore,
    certificate,
    matchScore,
    matchedCapabilities: matched,
    reasons,
  };
}

/** Best match first; on equal scores the cheaper reachable price, then the module id. */
export const rankCandidates = (candidates: TradeCandidate[]) =>
  [...candidates].sort((a, b) => {
    if (b.matchScore !== a.matchScore) return b.matchScore - a.matchScore;
    const [pa, pb] = [usdToAtomic(a.lowestPriceUsd), usdToAtomic(b.lowestPriceUsd)];
    return pa === pb ? a.moduleId.localeCompare(b.moduleId) : pa < pb ? -1 : 1;
  });

/**
 * The default opening offer: the lower of the buyer's maximum and 80 percent of the list price (rounded up to
 * 0.000001).
 */
export function defaultOffer(listPriceUsd: string, maxPriceUsd: string): string {
  const eighty = (usdToAtomic(listPriceUsd) * 80n + 99n) / 100n;
  const max = usdToAtomic(maxPriceUsd);
  return atomicToUsd(eighty < max ? eighty : max);
}

// ---- plan ----

/** What execute would charge now for the selected module. */
export function estimateOf(
  listPriceUsd: string,
  negotiation: TradeNegotiationSnapshot | null,
  maxPriceUsd: string,
  feeUsd = TRADE_GATEWAY_FEE_USD,
): TradeEstimate {
  let price = listPriceUsd;
  let basis: TradeEstimate['priceBasis'] = 'list';
  if (negotiation?.state === 'accepted' && negotiation.agreedPriceUsd) {
    price = negotiation.agreedPriceUsd;
    basis = 'agreed';
  } else if (negotiation && negotiation.turn === 'buyer' && negotiation.standingOffer?.by === 'seller') {
    price = negotiation.standingOffer.priceUsd;
    basis = 'standing-offer';
  }
  const atomic = usdToAtomic(price);
  return {
    modulePriceUsd: atomicToUsd(atomic),
    priceBasis: basis,
    gatewayFeeUsd: feeUsd,
    totalUsd: atomicToUsd(atomic + usdToAtomic(feeUsd)),
    withinBudget: atomic <= usdToAtomic(maxPriceUsd),
  };
}

export type PricingOf = (service: GatewayServiceId, key: string) => GatewayPricing;

export interface StepFacts {
  moduleId: string;
  seller: string;
  buyer: string;
  negotiation: TradeNegotiationSnapshot | null;
  /** The module's negotiation mode (off: nothing to negotiate). */
  mode: 'auto' | 'manual' | 'off';
  certificateId: string | null;
  contentHash: string;
  requireCertificate: boolean;
  /** What has run: after execute, verify, purchase and rate are done. */
  executed?: { purchaseId: string; reported: boolean };
}

const ref = (service: GatewayServiceId, method: GatewayEndpointRef['method'], path: string): GatewayEndpointRef => ({
  service,
  method,
  path,
});

/** The five steps in lifecycle order, each with the gateway call that runs it and the services' own endpoints. */
export function planSteps(facts: StepFacts, pricing: PricingOf): TradeStep[] {
  const endpoint = (
    service: GatewayServiceId,
    key: string,
    method: GatewayEndpointRef['method'],
    path: string,
    purpose: string,
    paidBy: TradeStepEndpoint['paidBy'],
  ): TradeStepEndpoint => {
    const price = pricing(service, key);
    return { ...ref(service, method, path), purpose, pricing: price, paidBy: price.maxUsd === '0' ? 'nobody' : paidBy };
  };
  const start = ref('gateway', 'POST', '/api/trade/start');
  const execute = ref('gateway', 'POST', '/api/trade/execute');
  const n = facts.negotiation;
  const negId = n?.id ?? ':negotiationId';
  const done = facts.executed;

  let negotiateStatus: TradeStep['status'];
  let negotiateSummary: string;
  if (facts.mode === 'off' && !n) {
    negotiateStatus = 'skipped';
    negotiateSummary = 'The module is sold at its list price only (negotiation mode off).';
  } else if (!n) {
    negotiateStatus = 'skipped';
    negotiateSummary = 'Another candidate was chosen at its list price; no negotiation.';
  } else if (n.state === 'accepted') {
    negotiateStatus = 'done';
    negotiateSummary = `Agreed at ${n.agreedPriceUsd} USD (list ${n.listPriceUsd}).`;
  } else if (n.state === 'rejected' || n.state === 'expired') {
    negotiateStatus = 'failed';
    negotiateSummary = `The negotiation is ${n.state}; start a new plan.`;
  } else if (n.turn === 'seller') {
    negotiateStatus = 'waiting';
    negotiateSummary = `Your offer of ${n.lastBuyerOfferUsd} USD awaits the seller.`;
  } else {
    negotiateStatus = 'ready';
    negotiateSummary = `The seller counters at ${n.standingOffer?.priceUsd} USD: accept it (execute does), or counter.`;
  }
  const negotiable = negotiateStatus === 'done' || negotiateStatus === 'ready' || negotiateStatus === 'skipped';
  const verifyStatus: TradeStep['status'] = done
    ? facts.certificateId
      ? 'done'
      : 'skipped'
    : !facts.certificateId && !facts.requireCertificate
      ? 'skipped'
      : negotiable
        ? 'ready'
        : 'waiting';
  const after: TradeStep['status'] = done
    ? 'done'
    : negotiable
      ? 'ready'
      : negotiateStatus === 'failed'
        ? 'failed'
        : 'waiting';

  return [
    {
      order: 1,
      name: 'discover',
      status: 'done',
      summary: 'Matching sellers found and ranked.',
      via: start,
      endpoints: [
        endpoint('knowledge-market', 'list', 'GET', '/api/modules', 'find modules for the need', 'nobody'),
        endpoint(
          'verification',
          'listCertificates',
          'GET',
          '/api/certificates',
          'find each module’s certificate by contentHash',
          'nobody',
        ),
        endpoint(
          'reputation',
          'get',
          'GET',
          `/api/reputation/agent/${facts.seller}`,
          'read the seller’s reputation score',
          'gateway',
        ),
      ],
    },
    {
      order: 2,
      name: 'negotiate',
      status: negotiateStatus,
      summary: negotiateSummary,
      via: start,
      endpoints:
        facts.mode === 'off' && !n
          ? []
          : [
              endpoint(
                'negotiation',
                'open',
                'POST',
                '/api/negotiations',
                'open the negotiation for the buyer, the gateway as broker',
                'gateway',
              ),
              endpoint('negotiation', 'get', 'GET', `/api/negotiations/${negId}`, 'read the seller’s answer', 'nobody'),
              endpoint(
                'negotiation',
                'counter',
                'POST',
                `/api/negotiations/${negId}/counter`,
                'make a counter-offer (the buyer or the gateway)',
                'buyer',
              ),
              endpoint(
                'negotiation',
                'accept',
                'POST',
                `/api/negotiations/${negId}/accept`,
                'accept the seller’s counter-offer',
                'nobody',
              ),
            ],
    },
    {
      order: 3,
      name: 'verify',
      status: verifyStatus,
      summary: facts.certificateId
        ? `Certificate ${facts.certificateId} must still be valid and bound to contentHash ${facts.contentHash}.`
        : 'No certificate exists for this content and the plan does not require one.',
      via: execute,
      endpoints: [
        endpoint(
          'verification',
          'listCertificates',
          'GET',
          '/api/certificates',
          'find the valid certificate for the contentHash',
          'nobody',
        ),
        ...(facts.certificateId
          ? [
              endpoint(
                'verification',
                'getCertificate',
                'GET',
                `/api/certificates/${facts.certificateId}`,
                'read the certificate and its signed proof',
                'nobody',
              ),
            ]
          : []),
      ],
    },
    {
      order: 4,
      name: 'purchase',
      status: after,
      summary: done
        ? `Bought as purchase ${done.purchaseId} for the buyer.`
        : 'The gateway buys the module for the buyer (beneficiary) and checks the content’s SHA-256.',
      via: execute,
      endpoints: [
        endpoint(
          'knowledge-market',
          'purchase',
          'POST',
          `/api/modules/${facts.moduleId}/purchase`,
          'buy the module, beneficiary = the buyer',
          'gateway',
        ),
        endpoint(
          'knowledge-market',
          'download',
          'GET',
          `/api/purchases/${done?.purchaseId ?? ':purchaseId'}`,
          'read the purchase again, content included',
          'nobody',
        ),
      ],
    },
    {
      order: 5,
      name: 'rate',
      status: after,
      summary: done
        ? done.reported
          ? 'Trade reported to the reputation service; rate the module yourself in the knowledge market.'
          : 'Trade report queued (the reputation service did not answer); rate the module yourself in the knowledge market.'
        : 'The gateway reports the trade to the reputation service; the buyer rates the module in the market.',
      via: execute,
      endpoints: [
        endpoint(
          'reputation',
          'report',
          'POST',
          '/api/reputation/report',
          'report the completed trade about the seller (the gateway as trusted reporter)',
          'gateway',
        ),
        endpoint(
          'knowledge-market',
          'rate',
          'POST',
          `/api/modules/${facts.moduleId}/rate`,
          'rate the module 1 to 5 (the buyer)',
          'buyer',
        ),
      ],
    },
  ];
}
