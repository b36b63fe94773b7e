import { z } from 'zod';
import type {
  EscrowDispute,
  EscrowInvestigation,
  EscrowMediatorFactor,
  EscrowParty,
  EscrowReputationSnapshot,
  EscrowScanSummary,
  Generator,
  ScanResult,
} from '@agent-economy/contracts';
import type { AiTask, Reasoner } from '../../ai';
import { deliveryFacts, distribute, newId, type DraftDecision, type EscrowDoc } from './domain';

// The mediator: an investigation gathers the facts (verification scans of the delivered content, both parties'
// reputation, delivery timing, the statements and their evidence); a rule engine weighs them into a binding split.
// An LLM (LLM_BASE_URL) may weigh them instead, through the same task; the facts it reads are the same.

/** How the escrow reads the other services; each throws when the service cannot be reached. */
export interface Readers {
  /** The scan of a delivered milestone: the seller's attached one, one made earlier, or a new one (paid). */
  scan(doc: EscrowDoc, milestoneId: string, knownScanId: string | null): Promise<ScanResult>;
  reputation(agent: string): Promise<EscrowReputationSnapshot>;
}

const SEVERITY = ['info', 'low', 'medium', 'high', 'critical'] as const;
/** A delivery shorter than this many words is no delivery to weigh in the seller's favour. */
const TRIVIAL_WORDS = 20;

export function scanSummary(scan: ScanResult, milestoneId: string): EscrowScanSummary {
  const highest = scan.findings.reduce<number>((max, f) => Math.max(max, SEVERITY.indexOf(f.severity)), -1);
  return {
    scanId: scan.id,
    milestoneId,
    score: scan.score,
    verdict: scan.verdict,
    findingCount: scan.findings.length,
    highestSeverity: highest < 0 ? null : SEVERITY[highest]!,
    plagiarismSimilarity: scan.plagiarism ? scan.plagiarism.maxSimilarity : null,
    certificateId: scan.certification.certificateId,
  };
}

/**
 * A scan already made of a milestone's delivered content (deliveries never change): this investigation's earlier one,
 * one another investigation of the escrow made, or the seller's attached scan. Read again by id for free; only a
 * milestone no scan is known of is scanned anew (paid).
 */
export function knownScan(doc: EscrowDoc, milestoneId: string, previous: EscrowInvestigation | null): string | null {
  const of = (inv: EscrowInvestigation | null | undefined) => inv?.scans.find((s) => s.milestoneId === milestoneId);
  const earlier = of(previous) ?? doc.disputes.map((d) => of(d.investigation)).find((s) => s !== undefined);
  return earlier?.scanId ?? doc.milestones.find((m) => m.id === milestoneId)?.delivery?.scanId ?? null;
}

const reason = (error: unknown) => (error instanceof Error ? error.message : String(error)).slice(0, 200);

/** Gathers the facts of a dispute over `milestoneIds`. Unreachable services are named, never skipped silently. */
export async function investigate(
  doc: EscrowDoc,
  milestoneIds: string[],
  previous: EscrowInvestigation | null,
  readers: Readers,
  now: Date,
  generator: Generator,
): Promise<EscrowInvestigation> {
  const observations: string[] = [];
  const unavailable = new Set<'verification' | 'reputation'>();
  const { disputed, delivered, deliveredBeforeTimeout } = deliveryFacts(doc, milestoneIds);
  const scans: EscrowScanSummary[] = [];
  for (const m of delivered) {
    const known = knownScan(doc, m.id, previous);
    try {
      const scan = await readers.scan(doc, m.id, known);
      scans.push(scanSummary(scan, m.id));
      observations.push(
        `Scan ${scan.id} of ${m.id}: score ${scan.score}, verdict ${scan.verdict}, ${scan.findings.length} finding(s)`,
      );
    } catch (error) {
      unavailable.add('verification');
      observations.push(
        `The verification service could not be reached for ${m.id} (${reason(error)}); the delivered content was not scanned`,
      );
    }
  }
  const reputation: EscrowInvestigation['reputation'] = { buyer: null, seller: null };
  for (const party of ['buyer', 'seller'] as const) {
    try {
      reputation[party] = await readers.reputation(doc[party]);
      observations.push(
        `Reputation of the ${party}: score ${reputation[party]!.score} (${reputation[party]!.tier}, ${reputation[party]!.tradeCount} trades)`,
      );
    } catch (error) {
      unavailable.add('reputation');
      observations.push(`The reputation service could not be reached for the ${party} (${reason(error)})`);
    }
  }
  if (disputed.length > delivered.length)
    observations.push(`${disputed.length - delivered.length} disputed milestone(s) were never delivered`);
  const draft: EscrowInvestigation = {
    status: unavailable.size ? 'partial' : 'complete',
    scans,
    reputation,
    milestonesDelivered: delivered.length,
    milestonesDisputed: disputed.length,
    deliveredBeforeTimeout,
    observations,
    leaning: 'neutral',
    unavailable: [...unavailable],
    generator,
    updatedAt: now.toISOString(),
  };
  const { score } = weigh(mediationInput(doc, milestoneIds, [], draft));
  return { ...draft, leaning: score > 0.1 ? 'seller' : score < -0.1 ? 'buyer' : 'neutral' };
}

/** What the mediator decides from: facts only, no ids it could be steered by. */
export interface MediationInput {
  terms: string | null;
  termWords: string[];
  milestones: { id: string; amount: string; delivered: boolean; wordCount: number; contentWords: string[] }[];
  statements: { party: EscrowParty; reason: string; statement: string; evidence: number }[];
  investigation: EscrowInvestigation;
}

const STOP = new Set(
  'the and for with that this from are was were will have has not but all any can its into only also each more than such their them then there these they what when which while must should would could about other'.split(
    ' ',
  ),
);
const words = (text: string) =>
  [...new Set(text.toLowerCase().match(/[a-z][a-z0-9-]{3,}/g) ?? [])].filter((w) => !STOP.has(w));

export function mediationInput(
  doc: EscrowDoc,
  milestoneIds: string[],
  statements: EscrowDispute['statements'],
  investigation: EscrowInvestigation,
): MediationInput {
  return {
    terms: doc.terms,
    termWords: words(`${doc.terms ?? ''}`),
    milestones: doc.milestones
      .filter((m) => milestoneIds.includes(m.id))
      .map((m) => ({
        id: m.id,
        amount: m.amount,
        delivered: !!m.delivery,
        wordCount: m.delivery ? (m.delivery.content.body.match(/\S+/g) ?? []).length : 0,
        contentWords: m.delivery ? words(`${m.delivery.content.title} ${m.delivery.content.body}`) : [],
      })),
    statements: statements.map((s) => ({
      party: s.party,
      reason: s.reason,
      statement: s.statement,
      evidence: s.evidence.length,
    })),
    investigation,
  };
}

/** The rule engine: each fact is a factor favouring a side with a weight; the score is their weighted mean, -1 to 1. */
export function weigh(input: MediationInput): { score: number; factors: EscrowMediatorFactor[] } {
  const factors: EscrowMediatorFactor[] = [];
  const add = (
    factor: EscrowMediatorFactor['factor'],
    finding: string,
    favors: EscrowMediatorFactor['favors'],
    weight: number,
  ) => factors.push({ factor, finding, favors, weight });
  const { investigation: inv, milestones } = input;
  const undelivered = milestones.filter((m) => !m.delivered);
  if (undelivered.length === milestones.length)
    add('delivery', `Nothing disputed was delivered (${undelivered.map((m) => m.id).join(', ')})`, 'buyer', 1);
  else if (undelivered.length)
    add('delivery', `${undelivered.map((m) => m.id).join(', ')} not delivered; the rest was`, 'buyer', 0.5);
  else if (milestones.some((m) => m.wordCount < TRIVIAL_WORDS)) {
    const thin = milestones.filter((m) => m.wordCount < TRIVIAL_WORDS);
    add(
      'delivery',
      `Delivered, but ${thin.map((m) => `${m.id} holds ${m.wordCount} word(s)`).join(', ')}: hardly a delivery`,
      'buyer',
      thin.length === milestones.length ? 1 : 0.5,
    );
  } else
    add(
      'delivery',
      `Every disputed milestone was delivered (${milestones.map((m) => m.id).join(', ')})`,
      'seller',
      0.2,
    );

  const delivered = milestones.filter((m) => m.delivered);
  if (input.termWords.length && delivered.length) {
    const covered = (m: (typeof delivered)[number]) =>
      input.termWords.filter((w) => m.contentWords.includes(w)).length / input.termWords.length;
    const coverage = delivered.reduce((s, m) => s + covered(m), 0) / delivered.length;
    const pct = Math.round(coverage * 100);
    add(
      'terms',
      `The delivered content uses ${pct}% of the terms' key words`,
      coverage >= 0.5 ? 'seller' : coverage < 0.25 ? 'buyer' : 'neutral',
      coverage < 0.25 ? 0.8 : 0.5,
    );
  } else if (delivered.length)
    add('terms', 'No terms were agreed: the delivery is judged on quality alone', 'neutral', 0);

  if (inv.unavailable.includes('verification'))
    add('quality', 'The verification service could not be reached: no scan was weighed', 'neutral', 0);
  const thin = new Set(milestones.filter((m) => m.delivered && m.wordCount < TRIVIAL_WORDS).map((m) => m.id));
  for (const scan of inv.scans) {
    // A scan cannot vouch for a delivery of a few words: it says little about what was asked for.
    if (thin.has(scan.milestoneId)) {
      add(
        'quality',
        `Scan ${scan.scanId} of ${scan.milestoneId}: score ${scan.score}, verdict ${scan.verdict}, but of a few words only`,
        'neutral',
        0.2,
      );
      continue;
    }
    add(
      'quality',
      `Scan ${scan.scanId} of ${scan.milestoneId}: score ${scan.score}, verdict ${scan.verdict}`,
      scan.verdict === 'pass' ? 'seller' : scan.verdict === 'fail' ? 'buyer' : 'neutral',
      scan.verdict === 'fail' ? 0.6 : 0.5,
    );
    if (scan.highestSeverity === 'high' || scan.highestSeverity === 'critical')
      add('safety', `Scan ${scan.scanId} found a ${scan.highestSeverity} finding`, 'buyer', 0.6);
    if (scan.plagiarismSimilarity !== null && scan.plagiarismSimilarity >= 0.8) {
      add(
        'plagiarism',
        `Scan ${scan.scanId}: ${Math.round(scan.plagiarismSimilarity * 100)}% similar to earlier content`,
        'buyer',
        0.6,
      );
    }
  }
  if (inv.deliveredBeforeTimeout !== null) {
    add(
      'timeliness',
      inv.deliveredBeforeTimeout ? 'Delivered before the delivery deadline' : 'Delivered after the delivery deadline',
      inv.deliveredBeforeTimeout ? 'seller' : 'buyer',
      0.1,
    );
  }
  if (inv.unavailable.includes('reputation'))
    add('reputation', 'The reputation service could not be reached: no reputation was weighed', 'neutral', 0);
  else if (inv.reputation.buyer && inv.reputation.seller) {
    const gap = inv.reputation.seller.score - inv.reputation.buyer.score;
    add(
      'reputation',
      `Seller score ${inv.reputation.seller.score}, buyer score ${inv.reputation.buyer.score}`,
      gap > 15 ? 'seller' : gap < -15 ? 'buyer' : 'neutral',
      0.1,
    );
  }
  const parties = new Set(input.statements.map((s) => s.party));
  if (input.statements.length && parties.size === 1) {
    const only = input.statements[0]!.party;
    add(
      'evidence',
      `Only the ${only} stated its side (${input.statements[0]!.evidence} piece(s) of evidence); the other party did not answer`,
      only,
      0.2,
    );
  } else if (parties.size === 2) {
    const count = (p: EscrowParty) => input.statements.filter((s) => s.party === p).reduce((n, s) => n + s.evidence, 0);
    const [b, s] = [count('buyer'), count('seller')];
    add(
      'evidence',
      `Both parties stated their side (evidence: buyer ${b}, seller ${s})`,
      b > s ? 'buyer' : s > b ? 'seller' : 'neutral',
      0.1,
    );
  }
  const total = factors.reduce((n, f) => n + f.weight, 0);
  const signed = factors.reduce(
    (n, f) => n + f.weight * (f.favors === 'seller' ? 1 : f.favors === 'buyer' ? -1 : 0),
    0,
  );
  return { score: total ? signed / total : 0, factors: factors.map((f) => ({ ...f, weight: Math.min(1, f.weight) })) };
}

export interface MediationOutput {
  sellerPercent: number;
  rationale: string;
  factors: EscrowMediatorFactor[];
  confidence: number;
}

/** The built-in mediator: a clear lean pays all to that side; anything closer is split in proportion. */
export function ruleMediator(input: MediationInput): MediationOutput {
  const { score, factors } = weigh(input);
  const raw = Math.round(50 + 50 * score);
  const sellerPercent = raw >= 80 ? 100 : raw <= 20 ? 0 : raw;
  const decisive = factors.filter((f) => f.weight > 0 && f.favors !== 'neutral').sort((a, b) => b.weight - a.weight);
  const outcome =
    sellerPercent === 100
      ? 'release the disputed funds to the seller'
      : sellerPercent === 0
        ? 'refund the disputed funds to the buyer'
        : `split: ${sellerPercent}% to the seller, ${100 - sellerPercent}% to the buyer`;
  const because = decisive
    .slice(0, 3)
    .map((f) => `${f.finding} (favours the ${f.favors})`)
    .join('; ');
  const missing = input.investigation.unavailable.length
    ? ` Not weighed: ${input.investigation.unavailable.join(' and ')} (unreachable).`
    : '';
  return {
    sellerPercent,
    rationale: `Decision: ${outcome}. ${because ? `Weighed most: ${because}.` : 'No factor favoured either side.'}${missing}`,
    factors,
    confidence:
      Math.round(Math.min(1, Math.abs(score) * (input.investigation.status === 'complete' ? 1 : 0.7) + 0.3) * 100) /
      100,
  };
}

const MediationOutputSchema: z.ZodType<MediationOutput> = z.object({
  sellerPercent: z.number().int().min(0).max(100),
  rationale: z.string().min(1).max(4000),
  factors: z.array(
    z.object({
      factor: z.enum(['delivery', 'terms', 'quality', 'safety', 'plagiarism', 'timeliness', 'reputation', 'evidence']),
      finding: z.string(),
      favors: z.enum(['buyer', 'seller', 'neutral']),
      weight: z.number().min(0).max(1),
    }),
  ),
  confidence: z.number().min(0).max(1),
});

/**
 * The binding decision over an open dispute, by the context's reasoner (the rule engine unless an LLM is configured).
 */
export async function decide(
  reasoner: Reasoner,
  doc: EscrowDoc,
  dispute: EscrowDispute,
  investigation: EscrowInvestigation,
  requestedBy: EscrowParty | 'system',
  now: Date,
): Promise<DraftDecision> {
  const input = mediationInput(doc, dispute.milestoneIds, dispute.statements, investigation);
  const task: AiTask<MediationInput, MediationOutput> = {
    name: 'escrow mediation',
    instructions:
      'You are the binding mediator of an escrow dispute over a knowledge module. Decide what whole percent (sellerPercent) of the ' +
      'disputed amount goes to the seller; the rest is refunded to the buyer. Judge the delivered content against the terms, the ' +
      'verification scans (quality, safety, plagiarism), delivery timing, both parties’ statements and reputation. List the factors ' +
      'you weighed, each with the side it favours and a weight from 0 to 1, and explain the decision in the rationale.',
    input,
    output: MediationOutputSchema,
    builtin: ruleMediator,
  };
  const { output, generator } = await reasoner.run(task);
  const { milestones, distribution } = distribute(doc, dispute, output.sellerPercent);
  return {
    id: newId('dec'),
    outcome:
      output.sellerPercent === 100 ? 'release_to_seller' : output.sellerPercent === 0 ? 'refund_to_buyer' : 'split',
    sellerPercent: output.sellerPercent,
    distribution,
    milestones,
    rationale: output.rationale,
    factors: output.factors,
    confidence: output.confidence,
    binding: true,
    requestedBy,
    decidedAt: now.toISOString(),
    generator,
  };
}
