import {
  escrow,
  listRoutes,
  routeMeta,
  type GatewayAssistAnswer,
  type GatewayDirectoryEntry,
  type GatewayPricing,
  type MarketModule,
  type TradeStepName,
} from '@agent-economy/contracts';
import { z } from 'zod';
import type { AiTask } from '../../ai';
import { Bm25Index, tokenize } from '../../ai/retrieval';
import { unprocessable } from '../../runtime/errors';
import { pricingOf } from './directory';

// The assistant: one question answered from the endpoint directory (the services' own documents) and the rules
// those documents state. The built-in engine retrieves endpoints by BM25 and composes the answer by topic; an LLM,
// when configured, gets the same retrieved material and may cite only those endpoints.

type Topic = GatewayAssistAnswer['topic'];
type Cited = GatewayAssistAnswer['endpoints'][number];

export interface AssistFacts {
  question: string;
  topic: Topic;
  /** Endpoints retrieved for the question, best first, each with why it was retrieved. */
  endpoints: Cited[];
  /** Endpoints the topic's procedure uses, by role. */
  procedure: Record<string, Cited>;
  module: {
    id: string;
    title: string;
    priceUsd: string;
    mode: 'auto' | 'manual' | 'off';
    floorUsd: string | null;
    maxDiscountPercent: number;
    contentHash: string;
    certificate: { id: string; score: number } | null;
    rating: number | null;
  } | null;
  lifecycle: TradeStepName[];
}

const TOPIC_WORDS: Record<Exclude<Topic, 'general'>, RegExp> = {
  disputes:
    /\b(disput\w*|refund\w*|escrow\w*|scam\w*|fraud\w*|complain\w*|mediat\w*|arbitrat\w*|cheat\w*|wrong content|not delivered)\b/i,
  trading:
    /\b(buy\w*|sell\w*|negotiat\w*|price\w*|discount\w*|offer\w*|trad\w*|purchas\w*|cheap\w*|deal\w*|counter\w*|floor)\b/i,
  endpoints: /\b(endpoint\w*|route\w*|api|path\w*|url|sdk|curl|call|openapi|method)\b/i,
};

/** The topic of a question: the first of disputes, trading, endpoints whose words it uses, else general. */
export function detectTopic(question: string): Topic {
  for (const topic of ['disputes', 'trading', 'endpoints'] as const)
    if (TOPIC_WORDS[topic].test(question)) return topic;
  return 'general';
}

const META_WORDS = /\b(endpoints?|routes?|apis?|calls?|paths?|urls?|methods?|sdk|curl|which|lookup|look)\b/gi;

const price = (p: GatewayPricing) =>
  p.kind === 'free' || p.maxUsd === '0'
    ? 'free'
    : p.minUsd === p.maxUsd
      ? `${p.maxUsd} USD`
      : `${p.minUsd} to ${p.maxUsd} USD`;
const cite = (
  e: { service: string; method: Cited['method']; path: string; summary: string; pricing: GatewayPricing },
  why: string,
): Cited => ({
  service: e.service,
  method: e.method,
  path: e.path,
  summary: e.summary,
  pricing: e.pricing,
  why,
});
const ref = (c: Cited) => `${c.method} ${c.path} on ${c.service} (${price(c.pricing)})`;

/** An endpoint the assistant can cite: the directory's five services, and the escrow service for disputes. */
type Indexed = Omit<
  Pick<GatewayDirectoryEntry, 'key' | 'method' | 'path' | 'summary' | 'description' | 'pricing'>,
  never
> & { service: string };

/** The escrow service's endpoints from its contract (it is not one of the gateway's five, but disputes go there). */
export function escrowEntries(): Indexed[] {
  return listRoutes(escrow.router).map(({ key, route }) => ({
    service: 'escrow',
    key,
    method: route.method as Cited['method'],
    path: route.path,
    summary: route.summary ?? '',
    description: route.description ?? '',
    pricing: pricingOf(routeMeta(route).payment),
  }));
}

export function assistIndex(entries: Indexed[]) {
  const all = [...entries, ...escrowEntries()];
  const index = new Bm25Index(
    all.map((e) => ({
      doc: e,
      text: `${e.service} ${e.key.replace(/([a-z])([A-Z])/g, '$1 $2')} ${e.path.replace(/[/:]/g, ' ')} ${e.summary} ${e.summary} ${e.description}`,
    })),
  );
  const find = (service: string, key: string) => all.find((e) => e.service === service && e.key === key);
  return {
    /** 422 question_out_of_scope when no word of the question occurs in any document (checked before the charge). */
    assertInScope(question: string) {
      if (!index.knownTerms(question).length) {
        throw unprocessable(
          'question_out_of_scope',
          'The question is not about this ecosystem: none of its words occurs in the services’ documents',
          {
            words: [...new Set(tokenize(question))].slice(0, 20),
          },
        );
      }
    },
    retrieve(question: string, topic: Topic, limit = 5): Cited[] {
      const filter = topic === 'disputes' ? undefined : (e: Indexed) => e.service !== 'escrow';
      // Words about endpoints in general ("which endpoint…") say nothing about which one: they are left out.
      const specific = question.replace(META_WORDS, ' ');
      return index
        .search(tokenize(specific).length ? specific : question, limit, filter)
        .map((h) => cite(h.doc, `matches “${h.matched.join('”, “')}” in its summary or description`));
    },
    procedure(topic: Topic): Record<string, Cited> {
      const pick = (role: string, service: string, key: string, why: string): [string, Cited][] => {
        const e = find(service, key);
        return e ? [[role, cite(e, why)]] : [];
      };
      const trading = [
        ...pick('search', 'gateway', 'search', 'discover modules, sellers and certificates'),
        ...pick('start', 'gateway', 'startTrade', 'rank sellers and open the negotiation for you'),
        ...pick('counter', 'negotiation', 'counter', 'answer the seller’s counter-offer yourself'),
        ...pick('execute', 'gateway', 'executeTrade', 'verify, buy and report in one payment'),
        ...pick('rate', 'knowledge-market', 'rate', 'rate the module after the purchase'),
      ];
      const disputes = [
        ...pick('dispute', 'escrow', 'dispute', 'freeze escrowed funds and open an investigation'),
        ...pick('resolve', 'escrow', 'resolve', 'the AI mediator’s binding decision'),
        ...pick('scan', 'verification', 'getScan', 'scan results cited as evidence'),
        ...pick(
          'certificate',
          'verification',
          'getCertificate',
          'check the certificate against the content you received',
        ),
        ...pick('reputation', 'reputation', 'get', 'the counterparty’s record'),
        ...pick('download', 'knowledge-market', 'download', 'the purchase and its content hash, again'),
      ];
      const general = [
        ...pick('ecosystem', 'gateway', 'ecosystem', 'every service, its health and statistics'),
        ...pick('directory', 'gateway', 'directory', 'every endpoint with price and usage'),
        ...pick('onboard', 'gateway', 'onboard', 'register and get a guide'),
      ];
      return Object.fromEntries(
        topic === 'trading' ? trading : topic === 'disputes' ? disputes : topic === 'general' ? general : [],
      );
    },
  };
}

export function moduleFacts(
  m: MarketModule,
  certificate: { id: string; score: number } | null,
): NonNullable<AssistFacts['module']> {
  return {
    id: m.id,
    title: m.title,
    priceUsd: m.priceUsd,
    mode: m.negotiation.mode,
    floorUsd: m.negotiation.floorUsd,
    maxDiscountPercent: m.negotiation.maxDiscountPercent,
    contentHash: m.contentHash,
    certificate,
    rating: m.rating.average,
  };
}

const Output = z.object({
  answer: z.string().min(1).max(4000),
  steps: z.array(z.string().max(500)).max(12),
  endpoints: z
    .array(
      z.object({
        service: z.string(),
        method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']),
        path: z.string(),
        why: z.string().max(300),
      }),
    )
    .max(10),
  followUps: z.array(z.string().max(300)).max(5),
});
type Output = z.infer<typeof Output>;

/**
 * The built-in engine: the topic's procedure with this deployment's endpoints and prices, then the retrieved endpoints.
 */
export function builtinAnswer(f: AssistFacts): Output {
  const p = f.procedure;
  const m = f.module;
  const steps: string[] = [];
  const paragraphs: string[] = [];
  const used: Cited[] = [];
  const use = (c: Cited | undefined) => {
    if (c && !used.some((u) => u.service === c.service && u.method === c.method && u.path === c.path)) used.push(c);
    return c ? ref(c) : 'the endpoint (not listed on this deployment)';
  };
  let followUps: string[];

  if (f.topic === 'trading') {
    paragraphs.push(
      `A trade runs ${f.lifecycle.join(', ')}. The gateway runs discovery and opens the negotiation as your broker, then executes verification, purchase and the reputation report in one payment (module price plus its fee); what can be refused is refused before you pay, a step that fails before the purchase is refunded on chain, and once bought the purchase is yours: delivered content that does not hash to its certificate is flagged (contentMatches false) and reported to reputation.`,
    );
    steps.push(
      `Find candidates: ${use(p.search)}.`,
      `Start the trade: ${use(p.start)}; it opens the negotiation at your offer (default 80 percent of the list price, never above your maximum).`,
    );
    if (m?.mode === 'auto' && m.floorUsd) {
      paragraphs.push(
        `“${m.title}” lists at ${m.priceUsd} USD and negotiates automatically with at most ${m.maxDiscountPercent} percent off: its floor is ${m.floorUsd} USD. The responder splits the difference between your offer and its ask but never goes below the floor, and in the fifth round accepts any offer at or above the floor. Offering ${m.floorUsd} USD in every round therefore closes at ${m.floorUsd} USD.`,
      );
      steps.push(
        `Counter at the floor, ${m.floorUsd} USD, each round: ${use(p.counter)}; after your fifth offer the responder accepts it.`,
      );
    } else if (m?.mode === 'manual') {
      paragraphs.push(
        `“${m.title}” lists at ${m.priceUsd} USD and its seller answers offers by hand: expect to wait for each move.`,
      );
      steps.push(`Wait for the seller’s counter, then counter or execute: ${use(p.counter)}.`);
    } else if (m?.mode === 'off') {
      paragraphs.push(
        `“${m.title}” is sold at its list price, ${m.priceUsd} USD, only: there is nothing to negotiate.`,
      );
    } else {
      paragraphs.push(
        'In mode auto the floor is public (the module’s negotiation.floorUsd): offering it in every round reaches it by the fifth offer. In mode manual the seller answers; in mode off only the list price applies.',
      );
      steps.push(`Counter the seller’s offer when it is above your target: ${use(p.counter)}.`);
    }
    if (m)
      paragraphs.push(
        m.certificate
          ? `Its content is certified (${m.certificate.id}, score ${m.certificate.score}) for SHA-256 ${m.contentHash}; execute checks the delivered content against it.`
          : `Its content has no valid certificate: execute refuses it unless the plan was started with requireCertificate false.`,
      );
    steps.push(`Execute the plan: ${use(p.execute)}.`, `Rate the module: ${use(p.rate)}.`);
    followUps = [
      'How is a seller’s reputation score computed?',
      'What happens if the delivered content does not match its certificate?',
    ];
  } else if (f.topic === 'disputes') {
    paragraphs.push(
      'A trade executed through the gateway cannot go wrong silently: if the certificate is no longer valid, execute refuses before you pay; if the delivered content does not hash to the certified SHA-256, the execution says so (verification.contentMatches false) and the trade report carries it to the seller’s reputation. For trades held in escrow, either party may dispute: the funds freeze, and a mediator decides from both sides’ evidence, the verification scan and both parties’ reputation, with partial refunds possible.',
    );
    steps.push(
      `Gather evidence: the purchase and its content hash (${use(p.download)}) and the certificate (${use(p.certificate)}).`,
      `Open the dispute with that evidence: ${use(p.dispute)}.`,
      `The mediator rules: ${use(p.resolve)}; read scan evidence with ${use(p.scan)} and the counterparty’s record with ${use(p.reputation)}.`,
    );
    followUps = ['How do I check a certificate’s signature?', 'How does a dispute change reputation?'];
  } else if (f.topic === 'endpoints') {
    paragraphs.push(
      f.endpoints.length
        ? `The closest endpoints: ${f.endpoints.map((e) => `${e.method} ${e.path} on ${e.service} — ${e.summary} (${price(e.pricing)})`).join('; ')}.`
        : 'No endpoint matches those words; GET /api/directory lists them all.',
    );
    followUps = ['Which endpoints are free?', 'How do I pay for a paid endpoint with the SDK?'];
  } else {
    paragraphs.push(
      'The gateway is the entry point over four services: the knowledge market (modules for sale), negotiation (prices in turns), reputation (scores from trade reports) and verification (scans and signed certificates).',
    );
    steps.push(
      `See every service and its state: ${use(p.ecosystem)}.`,
      `Look endpoints up: ${use(p.directory)}.`,
      `Register and get a guide: ${use(p.onboard)}.`,
    );
    followUps = ['How do I buy a module at a discount?', 'Which endpoints does a seller use?'];
  }
  for (const e of f.endpoints.slice(0, 3)) use(e);
  return {
    answer: paragraphs.join('\n\n'),
    steps,
    endpoints: used.map((c) => ({ service: c.service, method: c.method, path: c.path, why: c.why })),
    followUps,
  };
}

export function assistTask(facts: AssistFacts): AiTask<AssistFacts, Output> {
  return {
    name: 'gateway-assist',
    instructions:
      'You are the assistant of an agent economy gateway. Answer the question using only the facts given: the topic, the ' +
      'endpoints retrieved for it and the procedure endpoints (with prices), and the module if any. Cite in `endpoints` only ' +
      'endpoints from the input (service, method and path exactly as given), each with why. Give concrete steps and at most ' +
      'three follow-up questions.',
    input: facts,
    output: Output,
    builtin: builtinAnswer,
  };
}

/** The answer as the contract has it: cited endpoints limited to the ones given to the engine, with their pricing. */
export function toAnswer(
  facts: AssistFacts,
  output: Output,
  generator: GatewayAssistAnswer['generator'],
): GatewayAssistAnswer {
  const known = [...Object.values(facts.procedure), ...facts.endpoints];
  const endpoints: Cited[] = [];
  for (const e of output.endpoints) {
    const found = known.find((k) => k.service === e.service && k.method === e.method && k.path === e.path);
    if (
      found &&
      !endpoints.some((x) => x.service === found.service && x.method === found.method && x.path === found.path)
    )
      endpoints.push({ ...found, why: e.why || found.why });
  }
  return {
    question: facts.question,
    topic: facts.topic,
    answer: output.answer,
    steps: output.steps,
    endpoints,
    followUps: output.followUps,
    generator,
  };
}
