import { listRoutes, priceRange, routeMeta, services, type PaymentMeta } from '@agent-economy/contracts';

/**
 * Why each service is priced as it is. Prices the specification states are used as stated; the rest are
 * our defaults, which a deployment overrides with <ID>_PRICES.
 */
const RATIONALE: Record<string, string> = {
  facilitator:
    'Free: the settlement infrastructure is paid through operator agreements with sellers; charging x402 to reach the service that settles x402 would be circular.',
  ads: 'Free: campaign budgets and settlement fees pay for the ad network; a per-call fee would tax every settlement, and the impression beacon must cost nothing.',
  cognition:
    'Defaults: state reads and writes 0.001–0.002; arithmetic analyses 0.01; scheduling, compression, relevance and drift analyses 0.02; multi-agent load 0.03; the full diagnostic 0.008 per analysis it runs (0.08 for all ten, below the sum of its ten parts).',
  escrow:
    'Defaults: create costs the escrowed amount plus a 1 % fee (at least 0.01 USD); deliver 0.005 and confirm 0.001 (cheap so buyers release funds); dispute and resolve 0.05 (AI mediation, scans, reputation lookups); reads free (spec).',
  gateway:
    'Defaults: onboard 0.01; trade planning 0.03 (discovery, ranking, opening a negotiation); trade execution = module price + 0.02 fee; the assistant 0.01; overview, search, health and directory free (spec).',
  identity:
    'Defaults: lookups 0.001–0.005; writes 0.005–0.01; trust score 0.02 (four factors and an explanation); batch resolve 0.003 for up to 5 DIDs, 0.01 up to 25; status changes of credentials free so revoking is never priced out; stats free.',
  education:
    'As the specification states: lesson 0.05, quiz 0.03, exercise 0.05, tutor 0.03 per question; grading a quiz already bought is free.',
  pricing: 'As the specification states: adaptive ranges, base price × surge multiplier (0.5 to 5).',
  intel: 'Defaults: single-source analyses 0.03; analyses correlating many wallets or the whole market 0.05.',
  conviction:
    'Defaults: full analysis 0.05 (six or more sources and an AI summary); quick score 0.01; comparison of up to five tokens 0.08; info and health free.',
  gas: 'Defaults: cheap RPC reads with percentiles 0.003–0.005; a simulation 0.01; health free.',
  entropy:
    'Defaults: one harvest and a few HMACs per draw 0.001; a shuffle of up to 1,000 items 0.002; the full proof 0.003.',
  tokens:
    'Defaults: one-provider lookups 0.002–0.003; security and holder analyses 0.01; all four combined 0.02 (below their sum); a comparison of up to five 0.03.',
  funding:
    'Defaults: asset view 0.005; scan of every contract 0.01; ranked squeezes with AI commentary 0.03; overview free (spec).',
  'btc-metrics': 'Defaults: cached daily series 0.005; latest with cycle interpretation 0.01; info free (spec).',
  'exchange-flows': 'Defaults: flow and reserve analyses 0.01; the AI signal 0.02; summary free (spec).',
  'wallet-history':
    'As the specification states: by activity tier (light under 100 transactions, moderate under 1,000, heavy under 10,000, whale above); the quote is free.',
  marketplace: 'Free: the specification makes it a public read-only listing.',
  wagers: 'Free: money moves as stakes through the service’s vault, never as per-call fees.',
  'knowledge-market':
    'Defaults: publishing 0.01 (against spam); a purchase costs the module’s price, paid to its seller; browsing, downloads of bought modules and ratings free.',
  negotiation: 'Defaults: opening 0.002 and countering 0.001 (against spam); accepting, rejecting and reading free.',
  reputation: 'Defaults: reports 0.001; lookups 0.002; stats free.',
  verification: 'Defaults: a content scan 0.02; reading scans and the certificate registry free.',
};

function describe(payment: PaymentMeta): string {
  switch (payment.kind) {
    case 'free':
      return 'free';
    case 'fixed':
      return payment.usd;
    case 'adaptive': {
      const { minUsd, maxUsd } = priceRange(payment);
      return `${minUsd}–${maxUsd}`;
    }
    case 'tiered':
      return payment.tiers.map((t) => `${t.id} ${t.usd}`).join(', ');
  }
}

/** The README's price table: every route of every service, its price in USD, and why. */
export function renderPriceTable(): string {
  const rows = services.map((service) => {
    const routes = listRoutes(service.router).map(
      ({ route }) => `\`${route.method} ${route.path}\` ${describe(routeMeta(route).payment)}`,
    );
    const why = RATIONALE[service.id];
    if (!why) throw new Error(`no pricing rationale for ${service.id}`);
    return `| ${service.id} | ${routes.join('<br>')} | ${why} |`;
  });
  return ['| service | routes and prices (USD) | why |', '|---|---|---|', ...rows].join('\n');
}
