import {
  atomicToUsd,
  usdToAtomic,
  type AgentLoad,
  type AnalysisBase,
  type AnalysisId,
  type Arm,
  type ArmEvaluation,
  type BanditStrategy,
  type CalibrationBin,
  type CognitiveLoadRequest,
  type CognitiveLoadResult,
  type CognitiveState,
  type ComplexityFactor,
  type ComputeAllocationRequest,
  type ComputeAllocationResult,
  type ConfidenceCalibrationRequest,
  type ConfidenceCalibrationResult,
  type ContextRanking,
  type ContextRelevanceRequest,
  type ContextRelevanceResult,
  type DecisionComplexityResult,
  type DecisionProfile,
  type ExploreExploitRequest,
  type ExploreExploitResult,
  type HealthStatus,
  type InferenceCostRequest,
  type InferenceCostResult,
  type MemoryCompressionRequest,
  type MemoryCompressionResult,
  type MemoryDecision,
  type ModelEvaluation,
  type ModelProfile,
  type OverthinkingRequest,
  type OverthinkingResult,
  type PerformanceDriftRequest,
  type PerformanceDriftResult,
  type ScorePoint,
  type StepGain,
  type Task,
  type TaskAllocation,
  type TaskMove,
  type TeamMember,
  type WindowStats,
} from '@agent-economy/contracts';
import { Bm25Index, tokenize } from '../../ai';
import { HttpError, unprocessable } from '../../runtime/errors';
import { mulberry32 } from '../../upstream/market/random';
import { betaSample, clamp, coefficientOfVariation, mean, round, sampleStdDev, studentTwoSidedP } from './stats';

// The ten analyses: plain functions over plain data. Each returns its numbers and decisions (the "core");
// the recommendation and actions are written from the core afterwards (advice.ts, through the reasoner).

export type Core<T extends AnalysisBase> = Omit<T, 'recommendation' | 'actions' | 'generator' | 'computedAt'>;
export type AnyCore =
  | Core<ComputeAllocationResult>
  | Core<InferenceCostResult>
  | Core<MemoryCompressionResult>
  | Core<ContextRelevanceResult>
  | Core<DecisionComplexityResult>
  | Core<ExploreExploitResult>
  | Core<ConfidenceCalibrationResult>
  | Core<OverthinkingResult>
  | Core<CognitiveLoadResult>
  | Core<PerformanceDriftResult>;

/** ok at 75 or more, warning from 50 to 74, critical below 50 (the contract's scale). */
export function statusOf(score: number): HealthStatus {
  return score >= 75 ? 'ok' : score >= 50 ? 'warning' : 'critical';
}
const scored = (score: number) => {
  const s = round(clamp(score, 0, 100), 1);
  return { score: s, status: statusOf(s) };
};

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
const invalid = (field: string, message: string) =>
  new HttpError(400, 'invalid_request', `Invalid request: ${field} ${message}`, { fields: [{ field, message }] });

/** Timestamps pass the contract's pattern; this also refuses the ones no calendar has (month 13, hour 25). */
export function parseTime(value: string, field: string): number {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw invalid(field, 'is not a valid date and time');
  return ms;
}
const hoursBetween = (earlier: number, now: number) => Math.max(0, (now - earlier) / HOUR_MS);

// ---------------------------------------------------------------- 1. compute allocation

const needs = (t: Task) => ({ gpus: t.gpus ?? 0, cpus: t.cpus ?? 0 });

/** 422 nothing_schedulable when no task needs any GPU or CPU (there is nothing to allocate). */
export function checkSchedulable(tasks: readonly Task[]): void {
  if (!tasks.some((t) => needs(t).gpus > 0 || needs(t).cpus > 0)) {
    throw unprocessable('nothing_schedulable', 'No task needs a GPU or a CPU: there is nothing to allocate');
  }
}

/** The order in which the strategy considers tasks; ties keep the queue's order. */
export function scheduleOrder(request: ComputeAllocationRequest): Task[] {
  const { tasks, strategy, compute } = request;
  const deadline = (t: Task) => t.deadlineMinutes ?? Infinity;
  // Resource-minutes as a share of the pools: the smallest jobs first maximise tasks finished per unit.
  const footprint = (t: Task) =>
    (needs(t).gpus / Math.max(1, compute.gpus.total) + needs(t).cpus / Math.max(1, compute.cpus.total)) *
    t.estimatedMinutes;
  const indexed = tasks.map((task, index) => ({ task, index }));
  const byPriority = (a: Task, b: Task) => b.priority - a.priority;
  const byDeadline = (a: Task, b: Task) => deadline(a) - deadline(b) || 0;
  const compare = {
    priority: (a: Task, b: Task) => byPriority(a, b) || byDeadline(a, b),
    deadline: (a: Task, b: Task) => byDeadline(a, b) || byPriority(a, b),
    throughput: (a: Task, b: Task) => footprint(a) - footprint(b) || byPriority(a, b),
  }[strategy];
  return indexed.sort((a, b) => compare(a.task, b.task) || a.index - b.index).map((x) => x.task);
}

export function computeAllocation(request: ComputeAllocationRequest): Core<ComputeAllocationResult> {
  checkSchedulable(request.tasks);
  const { gpus, cpus } = request.compute;
  const ordered = scheduleOrder(request);
  const infeasible = new Set(ordered.filter((t) => needs(t).gpus > gpus.total || needs(t).cpus > cpus.total));
  const start = new Map<Task, number>();
  const startedNow = new Set<Task>();

  // Event simulation: free units start at `available`; a running task releases its units when it finishes.
  // Units held outside this queue (total − available) have no known release time: they are assumed free
  // once nothing of this queue is running any more (so a task that needs them does start, last).
  let free = { gpus: gpus.available, cpus: cpus.available };
  let held = { gpus: gpus.total - gpus.available, cpus: cpus.total - cpus.available };
  const running: { task: Task; end: number }[] = [];
  let waiting = ordered.filter((t) => !infeasible.has(t));
  const startFitting = (now: number, initial: boolean) => {
    waiting = waiting.filter((task) => {
      const n = needs(task);
      if (n.gpus > free.gpus || n.cpus > free.cpus) return true;
      free = { gpus: free.gpus - n.gpus, cpus: free.cpus - n.cpus };
      running.push({ task, end: now + task.estimatedMinutes });
      start.set(task, now);
      if (initial) startedNow.add(task);
      return false;
    });
  };
  startFitting(0, true);
  let now = 0;
  while (waiting.length) {
    if (running.length === 0) {
      if (held.gpus === 0 && held.cpus === 0) break; // cannot happen: every feasible task fits the whole pool
      free = { gpus: free.gpus + held.gpus, cpus: free.cpus + held.cpus };
      held = { gpus: 0, cpus: 0 };
    } else {
      now = Math.min(...running.map((r) => r.end));
      for (let i = running.length - 1; i >= 0; i--) {
        if (running[i]!.end !== now) continue;
        const n = needs(running[i]!.task);
        free = { gpus: free.gpus + n.gpus, cpus: free.cpus + n.cpus };
        running.splice(i, 1);
      }
    }
    startFitting(now, false);
  }

  const allocations: TaskAllocation[] = ordered.map((task) => {
    const n = needs(task);
    const deadline = task.deadlineMinutes;
    if (infeasible.has(task)) {
      return {
        taskId: task.id,
        decision: 'infeasible',
        gpus: 0,
        cpus: 0,
        startInMinutes: null,
        finishInMinutes: null,
        meetsDeadline: deadline === undefined ? null : false,
        reason: `needs ${n.gpus} GPU and ${n.cpus} CPU but the agent owns ${gpus.total} GPU and ${cpus.total} CPU`,
      };
    }
    const begin = start.get(task)!;
    const finish = round(begin + task.estimatedMinutes, 2);
    const meets = deadline === undefined ? null : finish <= deadline;
    const deadlineNote =
      deadline === undefined
        ? ''
        : meets
          ? `; finishes within its ${deadline}-minute deadline`
          : `; misses its ${deadline}-minute deadline`;
    const immediate = startedNow.has(task);
    const needsHeld = n.gpus > gpus.available || n.cpus > cpus.available;
    return {
      taskId: task.id,
      decision: immediate ? 'run_now' : 'queue',
      gpus: n.gpus,
      cpus: n.cpus,
      startInMinutes: round(begin, 2),
      finishInMinutes: finish,
      meetsDeadline: meets,
      reason: immediate
        ? `runs now on ${n.gpus} GPU and ${n.cpus} CPU${deadlineNote}`
        : needsHeld
          ? `needs units busy outside this queue (only ${gpus.available} GPU and ${cpus.available} CPU are free); assumed free at minute ${round(begin, 2)}, once none of the queue's tasks runs${deadlineNote}`
          : `waits ${round(begin, 2)} minutes until ${n.gpus} GPU and ${n.cpus} CPU are free${deadlineNote}`,
    };
  });

  const usedNow = [...startedNow].reduce((s, t) => ({ gpus: s.gpus + needs(t).gpus, cpus: s.cpus + needs(t).cpus }), {
    gpus: 0,
    cpus: 0,
  });
  const idle = { gpus: gpus.available - usedNow.gpus, cpus: cpus.available - usedNow.cpus };
  const percent = (pool: { total: number; available: number }, used: number) =>
    pool.total > 0 ? round(((pool.total - pool.available + used) / pool.total) * 100, 2) : 0;
  const count = (d: TaskAllocation['decision']) => allocations.filter((a) => a.decision === d).length;
  const totalPriority = request.tasks.reduce((s, t) => s + t.priority, 0);
  const priorityNow = [...startedNow].reduce((s, t) => s + t.priority, 0);
  const deadlineMisses = allocations.filter((a) => a.meetsDeadline === false).length;
  const n = request.tasks.length;
  const queued = count('queue');
  const availableUnits = gpus.available + cpus.available;
  // Idle units while work waits: capacity wasted by fragmentation (the waiting tasks do not fit in it).
  const waste = queued > 0 && availableUnits > 0 ? (idle.gpus + idle.cpus) / availableUnits : 0;
  return {
    analysis: 'compute-allocation',
    // A task that can never run on this compute is a plan that cannot complete: never "ok", whatever the rest does.
    ...scored(
      Math.min(
        100 * (1 - 0.4 * (deadlineMisses / n) - 0.3 * (count('infeasible') / n) - 0.3 * waste),
        count('infeasible') ? 50 : 100,
      ),
    ),
    strategy: request.strategy,
    allocations,
    utilization: { gpuPercent: percent(gpus, usedNow.gpus), cpuPercent: percent(cpus, usedNow.cpus) },
    idle,
    runningTasks: count('run_now'),
    queuedTasks: queued,
    infeasibleTasks: count('infeasible'),
    deadlineMisses,
    priorityCoveredPercent: totalPriority > 0 ? round((priorityNow / totalPriority) * 100, 2) : 0,
    makespanMinutes: round(Math.max(0, ...allocations.map((a) => a.finishInMinutes ?? 0)), 2),
  };
}

// ---------------------------------------------------------------- 2. inference cost

const MICRO = 1_000_000n;
const PPB = 1_000_000_000n; // probabilities are carried as parts per billion so money stays exact bigint
const ppb = (p: number) => BigInt(Math.round(p * 1e9));
const ceilDiv = (a: bigint, b: bigint) => (a <= 0n ? -(-a / b) : (a + b - 1n) / b);
const halfUpDiv = (a: bigint, b: bigint) => (a >= 0n ? (2n * a + b) / (2n * b) : -((2n * -a + b) / (2n * b)));
export const signedUsd = (atomic: bigint) => (atomic < 0n ? `-${atomicToUsd(-atomic)}` : atomicToUsd(atomic));

/** inputTokens × input price + outputTokens × output price (prices per million tokens), rounded up to 1e-6 USD. */
export function callCostAtomic(model: ModelProfile, inputTokens: number, outputTokens: number): bigint {
  const perMillion =
    BigInt(inputTokens) * usdToAtomic(model.inputUsdPerMTok) +
    BigInt(outputTokens) * usdToAtomic(model.outputUsdPerMTok);
  return ceilDiv(perMillion, MICRO);
}

export function inferenceCost({ task, models }: InferenceCostRequest): Core<InferenceCostResult> {
  const value = usdToAtomic(task.valueUsd);
  const errorCost = usdToAtomic(task.errorCostUsd ?? '0');
  const evaluate = (tier: 'light' | 'heavy') => {
    const m = models[tier];
    const cost = callCostAtomic(m, task.inputTokens, task.outputTokens);
    const a = ppb(m.expectedAccuracy);
    // accuracy × value − (1 − accuracy) × error cost − cost, in atomic units
    const ev = halfUpDiv(a * value - (PPB - a) * errorCost, PPB) - cost;
    return {
      tier,
      m,
      cost,
      ev,
      accuracyPpb: a,
      meetsAccuracy: m.expectedAccuracy >= task.minAccuracy,
      meetsLatency: task.latencyBudgetMs === undefined || m.latencyMs <= task.latencyBudgetMs,
    };
  };
  const light = evaluate('light');
  const heavy = evaluate('heavy');
  const qualified = [light, heavy].filter((e) => e.meetsAccuracy && e.meetsLatency);
  let chosen: typeof light;
  if (qualified.length === 2)
    chosen = heavy.ev > light.ev ? heavy : light; // a tie goes to the light model
  else if (qualified.length === 1) chosen = qualified[0]!;
  else chosen = heavy.m.expectedAccuracy > light.m.expectedAccuracy ? heavy : light;
  const other = chosen === light ? heavy : light;

  const deltaA = heavy.accuracyPpb - light.accuracyPpb;
  let breakEven: string | null = null;
  if (deltaA > 0n) {
    // (Δaccuracy)(V + E) = Δcost  ⇒  V* = Δcost / Δaccuracy − E; never below 0
    const v = ceilDiv((heavy.cost - light.cost) * PPB, deltaA) - errorCost;
    breakEven = atomicToUsd(v > 0n ? v : 0n);
  }
  const fallback = qualified.length === 0;
  const score = fallback ? (chosen.meetsAccuracy ? 55 : 30) : chosen.ev >= 0n ? 100 : 60;
  const evaluations: ModelEvaluation[] = [light, heavy].map((e) => ({
    tier: e.tier,
    name: e.m.name,
    costUsd: atomicToUsd(e.cost),
    expectedAccuracy: e.m.expectedAccuracy,
    expectedValueUsd: signedUsd(e.ev),
    latencyMs: e.m.latencyMs,
    meetsAccuracy: e.meetsAccuracy,
    meetsLatency: e.meetsLatency,
  }));
  return {
    analysis: 'inference-cost',
    ...scored(score),
    choice: chosen.tier,
    evaluations,
    // A free light model is counted as one micro-dollar so the ratio stays finite.
    costRatio: round(Number(heavy.cost) / Number(light.cost > 0n ? light.cost : 1n), 4),
    breakEvenValueUsd: breakEven,
    savingsUsd: atomicToUsd(other.cost > chosen.cost ? other.cost - chosen.cost : 0n),
  };
}

// ---------------------------------------------------------------- 3. memory compression

/** Episodic and semantic items at or above this retention score are summarized rather than forgotten. */
export const SUMMARIZE_FLOOR = 0.3;

export function checkMemory(
  request: Pick<MemoryCompressionRequest, 'capacityTokens' | 'items' | 'targetUtilization'>,
): void {
  request.items.forEach((item, i) => parseTime(item.lastAccessedAt, `body.items.${i}.lastAccessedAt`));
  const target = Math.floor(request.targetUtilization * request.capacityTokens);
  const pinned = request.items.filter((i) => i.pinned).reduce((s, i) => s + i.tokens, 0);
  if (pinned > target) {
    throw unprocessable(
      'pinned_exceeds_target',
      `Pinned items hold ${pinned} tokens, more than the target of ${target} tokens: unpin some or raise targetUtilization`,
      {
        pinnedTokens: pinned,
        targetTokens: target,
      },
    );
  }
}

/** 0.5 × importance + 0.3 × 2^(−hours / half-life) + 0.2 × ln(1 + accesses) / ln(1 + most accesses). */
export function retentionScore(
  importance: number,
  hoursSinceAccess: number,
  halfLifeHours: number,
  accessCount: number,
  maxAccessCount: number,
): number {
  const recency = Math.pow(2, -hoursSinceAccess / halfLifeHours);
  const frequency = maxAccessCount > 0 ? Math.log1p(accessCount) / Math.log1p(maxAccessCount) : 0;
  return 0.5 * importance + 0.3 * recency + 0.2 * frequency;
}

export function memoryCompression(request: MemoryCompressionRequest, now: number): Core<MemoryCompressionResult> {
  checkMemory(request);
  const { items, capacityTokens, targetUtilization, halfLifeHours, summaryRatio } = request;
  const maxAccess = Math.max(...items.map((i) => i.accessCount));
  const scores = items.map((i) =>
    retentionScore(
      i.importance,
      hoursBetween(Date.parse(i.lastAccessedAt), now),
      halfLifeHours,
      i.accessCount,
      maxAccess,
    ),
  );
  const target = Math.floor(targetUtilization * capacityTokens);
  const before = items.reduce((s, i) => s + i.tokens, 0);
  const action = items.map(() => 'keep' as MemoryDecision['action']);
  const after = items.map((i) => i.tokens);
  let total = before;

  // Worst first (lowest retention; on a tie the larger item, which frees more): summarize the middling
  // episodic and semantic items, forget the rest, until the memory fits the target.
  const order = items
    .map((item, index) => ({ item, index }))
    .filter(({ item }) => !item.pinned)
    .sort((a, b) => scores[a.index]! - scores[b.index]! || b.item.tokens - a.item.tokens || a.index - b.index);
  for (const { item, index } of order) {
    if (total <= target) break;
    const summarizable = (item.kind === 'episodic' || item.kind === 'semantic') && scores[index]! >= SUMMARIZE_FLOOR;
    if (summarizable) {
      after[index] = Math.max(1, Math.ceil(item.tokens * summaryRatio));
      action[index] = 'summarize';
    } else {
      after[index] = 0;
      action[index] = 'forget';
    }
    total -= item.tokens - after[index]!;
  }
  // Summaries alone may not be enough: then forget summarized items too, worst first.
  for (const { index } of order) {
    if (total <= target) break;
    if (action[index] !== 'summarize') continue;
    total -= after[index]!;
    after[index] = 0;
    action[index] = 'forget';
  }

  const decisions: MemoryDecision[] = items.map((item, i) => {
    const s = round(scores[i]!, 4);
    const reason = item.pinned
      ? 'pinned: always kept'
      : action[i] === 'keep'
        ? before <= target
          ? 'memory already fits the target'
          : `retention ${s} is among the best`
        : action[i] === 'summarize'
          ? `middling retention ${s}: condensed to ${Math.round(summaryRatio * 100)} % of its size`
          : `low retention ${s}${(item.kind === 'episodic' || item.kind === 'semantic') && scores[i]! >= SUMMARIZE_FLOOR ? ' and summaries alone did not free enough' : ''}: forgotten`;
    return {
      id: item.id,
      action: action[i]!,
      retentionScore: s,
      tokensBefore: item.tokens,
      tokensAfter: after[i]!,
      reason,
    };
  });
  const counts = { keep: 0, summarize: 0, forget: 0 };
  for (const a of action) counts[a]++;
  return {
    analysis: 'memory-compression',
    ...scored(before <= target ? 100 : 100 * (1 - (before - target) / target)),
    decisions,
    counts,
    tokens: { capacity: capacityTokens, before, after: total, freed: before - total },
    utilizationBefore: round(before / capacityTokens, 4),
    utilizationAfter: round(total / capacityTokens, 4),
    targetUtilization,
    halfLifeHours,
    summaryRatio,
  };
}

// ---------------------------------------------------------------- 4. context relevance

export const itemTokens = (item: { text: string; tokens?: number }) => item.tokens ?? Math.ceil(item.text.length / 4);

export function checkContext(items: readonly { addedAt?: string }[], field = 'body.items'): void {
  items.forEach((item, i) => item.addedAt !== undefined && parseTime(item.addedAt, `${field}.${i}.addedAt`));
}

/**
 * A goal must hold a word BM25 can score; one of stopwords and punctuation only would rank every item 0 (422
 * goal_unscorable).
 */
export function checkGoal(goal: string, field = 'goal'): void {
  if (!tokenize(goal).length) {
    throw unprocessable(
      'goal_unscorable',
      'The goal has no word the analysis can score: only stopwords or punctuation',
      { field, goal },
    );
  }
}

export function contextRelevance(request: ContextRelevanceRequest, now: number): Core<ContextRelevanceResult> {
  checkContext(request.items);
  checkGoal(request.goal);
  const { goal, items, tokenBudget } = request;
  const goalTerms = [...new Set(tokenize(goal))];
  const index = new Bm25Index(items.map((item, i) => ({ doc: i, text: item.text })));
  const hits = new Map(index.search(goal, items.length).map((h) => [h.doc, h]));
  const best = Math.max(0, ...[...hits.values()].map((h) => h.score));
  const rows = items.map((item, i) => {
    const bm25 = hits.get(i)?.score ?? 0;
    const recency = item.addedAt === undefined ? null : Math.pow(2, -hoursBetween(Date.parse(item.addedAt), now) / 24);
    // An item sharing no term with the goal has relevance 0 whatever its age: recency only orders relevant items.
    const relevance = bm25 > 0 ? 0.8 * (bm25 / best) + 0.2 * (recency ?? 0) : 0;
    return { item, i, bm25, recency, relevance, matched: hits.get(i)?.matched ?? [], tokens: itemTokens(item) };
  });
  rows.sort((a, b) => b.relevance - a.relevance || b.bm25 - a.bm25 || a.i - b.i);
  let used = 0;
  const ranking: ContextRanking[] = rows.map((r, rank) => {
    // Greedy by relevance: an item that does not fit is skipped and smaller ones after it may still fit.
    const include = r.relevance > 0 && used + r.tokens <= tokenBudget;
    if (include) used += r.tokens;
    return {
      id: r.item.id,
      rank: rank + 1,
      relevance: round(r.relevance, 4),
      bm25: round(r.bm25, 4),
      recency: r.recency === null ? null : round(r.recency, 4),
      matchedTerms: r.matched,
      tokens: r.tokens,
      include,
    };
  });
  const irrelevantRows = rows.filter((r) => r.bm25 === 0).sort((a, b) => a.i - b.i);
  const totalRelevance = rows.reduce((s, r) => s + r.relevance, 0);
  const includedRelevance = rows.filter((_, k) => ranking[k]!.include).reduce((s, r) => s + r.relevance, 0);
  const totalTokens = rows.reduce((s, r) => s + r.tokens, 0);
  const irrelevantTokens = irrelevantRows.reduce((s, r) => s + r.tokens, 0);
  const coverage = totalRelevance > 0 ? includedRelevance / totalRelevance : 0;
  const included = ranking.filter((r) => r.include).length;
  return {
    analysis: 'context-relevance',
    // Half: how much of the relevant material fits; half: how little of the context is noise.
    ...scored(100 * (0.5 * coverage + 0.5 * (1 - irrelevantTokens / totalTokens))),
    goalTerms,
    ranking,
    tokenBudget,
    includedTokens: used,
    includedItems: included,
    excludedItems: items.length - included,
    irrelevant: irrelevantRows.map((r) => r.item.id),
  };
}

// ---------------------------------------------------------------- 5. decision complexity

export const COMPLEXITY_WEIGHTS: Record<ComplexityFactor, number> = {
  stakes: 0.3,
  irreversibility: 0.25,
  uncertainty: 0.2,
  novelty: 0.15,
  option_count: 0.1,
  time_pressure: 0.1,
  track_record: 0.1,
};
/** Tokens per second assumed for the light and the heavy model when checking the time budget. */
export const TOKENS_PER_SECOND = { light: 200, heavy: 50 } as const;

export function decisionComplexity(d: DecisionProfile): Core<DecisionComplexityResult> {
  const stakes = Math.min(1, Math.log10(1 + Number(d.stakesUsd)) / Math.log10(10_001)); // 10,000 USD = 1
  const values: Record<ComplexityFactor, number> = {
    stakes,
    irreversibility: 1 - d.reversibility,
    uncertainty: d.uncertainty,
    novelty: d.novelty,
    option_count: Math.min(1, Math.log2(d.options) / 10), // Hick: effort grows with log2(options); 1,024 = 1
    time_pressure: 1 - Math.min(1, Math.log10(1 + d.timeBudgetSeconds) / Math.log10(3_601)), // an hour or more: none
    track_record: d.pastAccuracy ?? 0,
  };
  const subtracts = new Set<ComplexityFactor>(['time_pressure', 'track_record']);
  const factors = (Object.keys(COMPLEXITY_WEIGHTS) as ComplexityFactor[]).map((factor) => {
    const weight = COMPLEXITY_WEIGHTS[factor];
    const raw = (subtracts.has(factor) ? -1 : 1) * weight * values[factor] * 100;
    return { factor, value: round(values[factor], 4), weight, contribution: round(raw, 2), raw };
  });
  const complexity = clamp(
    factors.reduce((s, f) => s + f.raw, 0),
    0,
    100,
  );
  const system2 = complexity >= 50;
  const c = complexity / 100;
  const model = system2 ? 'heavy' : 'light';
  const verify = system2 && (values.irreversibility >= 0.5 || stakes >= 0.5);
  const maxReasoningTokens = Math.round(256 * Math.pow(2, 6 * c));
  const deadlineSeconds = round(0.9 * d.timeBudgetSeconds, 2); // 10 % of the time is left to act
  // Samples run in parallel; verification adds half a pass.
  const neededSeconds = (maxReasoningTokens / TOKENS_PER_SECOND[model]) * (verify ? 1.5 : 1);
  const timeSufficient = neededSeconds <= deadlineSeconds;
  let score = timeSufficient ? 100 : (100 * deadlineSeconds) / neededSeconds;
  // a poor record on this kind of decision
  if (d.pastAccuracy !== undefined) score = Math.min(score, (100 * d.pastAccuracy) / 0.8);
  return {
    analysis: 'decision-complexity',
    ...scored(score),
    mode: system2 ? 'system2' : 'system1',
    complexityScore: round(complexity, 2),
    factors: factors.map(({ raw: _raw, ...f }) => f),
    budget: {
      reasoningSteps: Math.max(1, Math.round(1 + 9 * c)),
      maxReasoningTokens,
      samples: system2 ? (c >= 0.75 ? 5 : 3) : 1,
      model,
      verify,
      deadlineSeconds,
    },
    timeSufficient,
  };
}

// ---------------------------------------------------------------- 6. explore vs exploit

export const THOMPSON_DRAWS = 10_000;

/** Beta posterior of an arm with rewards in [0, 1]: Beta(1 + successes, 1 + failures), fractional counts allowed. */
const posterior = (arm: Arm) => [1 + arm.meanReward * arm.trials, 1 + (1 - arm.meanReward) * arm.trials] as const;

/** Posterior probability that each arm is the best, from seeded joint draws of every arm's Beta posterior. */
export function probabilityBest(arms: readonly Arm[], seed: number, draws = THOMPSON_DRAWS): number[] {
  const random = mulberry32(seed);
  const params = arms.map(posterior);
  const wins = arms.map(() => 0);
  for (let d = 0; d < draws; d++) {
    let bestIndex = 0;
    let bestDraw = -1;
    params.forEach(([a, b], i) => {
      const x = betaSample(a, b, random);
      if (x > bestDraw) [bestDraw, bestIndex] = [x, i];
    });
    wins[bestIndex]!++;
  }
  return wins.map((w) => w / draws);
}

export function exploreExploit(request: ExploreExploitRequest): Core<ExploreExploitResult> {
  // An untried arm's reward is unknown: its stated mean is ignored (taken as 0).
  const arms = request.arms.map((a) => (a.trials === 0 ? { ...a, meanReward: 0 } : a));
  const strategy: BanditStrategy = request.strategy;
  const totalTrials = arms.reduce((s, a) => s + a.trials, 0);
  const k = arms.length;
  let best: Arm | undefined;
  for (const arm of arms) {
    if (arm.trials === 0) continue;
    if (!best || arm.meanReward > best.meanReward || (arm.meanReward === best.meanReward && arm.trials > best.trials))
      best = arm;
  }
  const random = mulberry32(request.seed);
  const indexes = arms.map((arm) => {
    if (strategy === 'ucb1') {
      // UCB1 (Auer et al. 2002): mean + sqrt(2 ln N / n). An untried arm's bound is infinite; it is shown as
      // 1 + sqrt(4 ln max(N, 2)), which exceeds every tried arm's bound (mean ≤ 1, bonus ≤ sqrt(2 ln N)).
      const bonus =
        arm.trials > 0
          ? Math.sqrt((2 * Math.log(totalTrials)) / arm.trials)
          : Math.sqrt(4 * Math.log(Math.max(totalTrials, 2)));
      return { index: (arm.trials > 0 ? arm.meanReward : 1) + bonus, bonus };
    }
    if (strategy === 'thompson') return { index: betaSample(...posterior(arm), random), bonus: 0 };
    return { index: arm.meanReward, bonus: 0 };
  });
  const untried = arms.find((a) => a.trials === 0);
  let chosen: Arm;
  if (untried)
    chosen = untried; // every arm is tried once before any comparison means anything
  else if (strategy === 'epsilon-greedy') chosen = random() < request.epsilon ? arms[Math.floor(random() * k)]! : best!;
  else chosen = arms[indexes.reduce((bi, x, i) => (x.index > indexes[bi]!.index ? i : bi), 0)]!;
  const pBest = probabilityBest(arms, request.seed);
  const bestMean = best?.meanReward ?? 0;
  const horizon = request.remainingDecisions ?? Math.max(totalTrials, k);
  // Explore-then-commit's optimal exploration share for K arms over a horizon T is about (K / T)^(1/3).
  const recommended = Math.min(1, Math.cbrt(k / horizon));
  const explorationRate = best && totalTrials > 0 ? (totalTrials - best.trials) / totalTrials : 0;
  const evaluations: ArmEvaluation[] = arms.map((arm, i) => ({
    id: arm.id,
    trials: arm.trials,
    meanReward: arm.meanReward,
    index: round(indexes[i]!.index, 4),
    explorationBonus: round(indexes[i]!.bonus, 4),
    probabilityBest: round(pBest[i]!, 4),
  }));
  return {
    analysis: 'explore-exploit',
    ...scored(100 * (1 - Math.abs(explorationRate - recommended))),
    decision: best && chosen.id === best.id ? 'exploit' : 'explore',
    chosenArm: chosen.id,
    bestKnownArm: (best ?? chosen).id,
    strategy,
    arms: evaluations,
    totalTrials,
    explorationRate: round(explorationRate, 4),
    recommendedExplorationRate: round(recommended, 4),
    estimatedRegret: round(
      arms.reduce((s, a) => s + a.trials * (bestMean - a.meanReward), 0),
      4,
    ),
  };
}

// ---------------------------------------------------------------- 7. confidence calibration

const EPS = 1e-6;
const clipP = (p: number) => clamp(p, EPS, 1 - EPS);
const logit = (p: number) => Math.log(p / (1 - p));
const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));

/** Mean negative log-likelihood of outcomes under confidences σ(β · logit(p)). */
function scaledLogLoss(logits: readonly number[], outcomes: readonly boolean[], beta: number): number {
  let sum = 0;
  logits.forEach((z, i) => {
    const q = clipP(sigmoid(beta * z));
    sum -= outcomes[i] ? Math.log(q) : Math.log(1 - q);
  });
  return sum / logits.length;
}

/**
 * Temperature scaling (Guo et al. 2017) without an intercept: T = 1/β where β minimises the log loss of
 * σ(β · logit(p)). The loss is convex in β, so a golden-section search over β ∈ [0.01, 100] finds it.
 */
export function fitTemperature(confidences: readonly number[], outcomes: readonly boolean[]): number {
  const logits = confidences.map((p) => logit(clipP(p)));
  if (logits.every((z) => z === 0)) return 1; // confidences of 0.5 carry no scale to fit
  const phi = (Math.sqrt(5) - 1) / 2;
  let [lo, hi] = [0.01, 100];
  let x1 = hi - phi * (hi - lo);
  let x2 = lo + phi * (hi - lo);
  let f1 = scaledLogLoss(logits, outcomes, x1);
  let f2 = scaledLogLoss(logits, outcomes, x2);
  while (hi - lo > 1e-9) {
    if (f1 <= f2) {
      [hi, x2, f2] = [x2, x1, f1];
      x1 = hi - phi * (hi - lo);
      f1 = scaledLogLoss(logits, outcomes, x1);
    } else {
      [lo, x1, f1] = [x1, x2, f2];
      x2 = lo + phi * (hi - lo);
      f2 = scaledLogLoss(logits, outcomes, x2);
    }
  }
  return 1 / ((lo + hi) / 2);
}

export function confidenceCalibration({
  predictions,
  bins,
}: ConfidenceCalibrationRequest): Core<ConfidenceCalibrationResult> {
  const n = predictions.length;
  const outcome = (correct: boolean) => (correct ? 1 : 0);
  const accuracy = mean(predictions.map((p) => outcome(p.correct)));
  const meanConfidence = mean(predictions.map((p) => p.confidence));
  const brier = mean(predictions.map((p) => (p.confidence - outcome(p.correct)) ** 2));
  const logLoss = mean(predictions.map((p) => -Math.log(p.correct ? clipP(p.confidence) : 1 - clipP(p.confidence))));
  // Equal-width bins [i/B, (i+1)/B), the last one closed; the epsilon keeps 0.3 × 10 in bin 3.
  const members: { confidence: number; correct: boolean }[][] = Array.from({ length: bins }, () => []);
  for (const p of predictions) members[Math.min(bins - 1, Math.floor(p.confidence * bins + 1e-9))]!.push(p);
  let ece = 0;
  let mce = 0;
  const binRows: CalibrationBin[] = members.map((m, i) => {
    const row = { lower: round(i / bins, 4), upper: round((i + 1) / bins, 4), count: m.length };
    if (!m.length) return { ...row, meanConfidence: null, accuracy: null, gap: null };
    const conf = mean(m.map((p) => p.confidence));
    const acc = mean(m.map((p) => outcome(p.correct)));
    ece += (m.length / n) * Math.abs(acc - conf);
    mce = Math.max(mce, Math.abs(acc - conf));
    return { ...row, meanConfidence: round(conf, 4), accuracy: round(acc, 4), gap: round(conf - acc, 4) };
  });
  const overconfidence = meanConfidence - accuracy;
  return {
    analysis: 'confidence-calibration',
    ...scored(100 * (1 - 4 * ece)), // ECE 0 → 100, 0.05 → 80, 0.125 → 50, 0.25 or more → 0
    verdict: ece < 0.05 ? 'well_calibrated' : overconfidence >= 0 ? 'overconfident' : 'underconfident',
    count: n,
    accuracy: round(accuracy, 4),
    meanConfidence: round(meanConfidence, 4),
    overconfidence: round(overconfidence, 4),
    brierScore: round(brier, 4),
    ece: round(ece, 4),
    mce: round(mce, 4),
    logLoss: round(logLoss, 4),
    temperature: round(
      fitTemperature(
        predictions.map((p) => p.confidence),
        predictions.map((p) => p.correct),
      ),
      3,
    ),
    bins: binRows,
  };
}

// ---------------------------------------------------------------- 8. overthinking

export function overthinking(request: OverthinkingRequest): Core<OverthinkingResult> {
  const { minGainPer1kTokens, patience } = request;
  const steps = request.steps
    .map((s, i) => ({ s, i }))
    .sort((a, b) => a.s.step - b.s.step || a.i - b.i)
    .map((x) => x.s);
  let cumulative = 0;
  const rows: StepGain[] = steps.map((s, i) => {
    cumulative += s.tokens;
    const gain = s.quality - (i === 0 ? 0 : steps[i - 1]!.quality); // the first step gains from nothing
    // Marginal gain per 1,000 tokens; a step of 0 tokens counts as 1 token.
    return {
      step: s.step,
      tokens: s.tokens,
      cumulativeTokens: cumulative,
      quality: s.quality,
      gain: round(gain, 6),
      gainPer1kTokens: round((gain / Math.max(1, s.tokens)) * 1000, 6),
    };
  });
  const low = rows.map((r, i) => i > 0 && (r.gain / Math.max(1, r.tokens)) * 1000 < minGainPer1kTokens);
  // The knee: the step before the first run of `patience` consecutive low-gain steps.
  let kneeIndex: number | null = null;
  for (let i = 1; i + patience <= rows.length; i++) {
    if (low.slice(i, i + patience).every(Boolean)) {
      kneeIndex = i - 1;
      break;
    }
  }
  const totalTokens = cumulative;
  const final = rows.at(-1)!;
  const knee = kneeIndex === null ? null : rows[kneeIndex]!;
  const tokensAfterKnee = knee ? totalTokens - knee.cumulativeTokens : 0;
  const wastedShare = totalTokens > 0 ? tokensAfterKnee / totalTokens : 0;
  return {
    analysis: 'overthinking-detector',
    ...scored(100 * (1 - wastedShare)),
    overthinking: knee !== null && wastedShare > 0.1,
    kneeStep: knee ? knee.step : null,
    totalTokens,
    tokensAfterKnee,
    wastedShare: round(wastedShare, 4),
    qualityAtKnee: (knee ?? final).quality,
    finalQuality: final.quality,
    qualityGainAfterKnee: round(final.quality - (knee ?? final).quality, 6),
    // integer arithmetic: 2800 × 1.1 is 3080.0000000000005
    recommendedTokenBudget: Math.ceil(((knee ?? final).cumulativeTokens * 11) / 10),
    steps: rows,
  };
}

// ---------------------------------------------------------------- 9. cognitive load

export function checkAssignments(agents: readonly TeamMember[], tasks: readonly Task[]): void {
  const ids = new Set(agents.map((a) => a.id));
  const unknown = tasks.filter((t) => t.assignedTo !== undefined && !ids.has(t.assignedTo));
  if (unknown.length) {
    throw unprocessable(
      'unknown_agent',
      `Task ${unknown[0]!.id} is assigned to "${unknown[0]!.assignedTo}", which is not one of the agents`,
      {
        tasks: unknown.map((t) => ({ taskId: t.id, assignedTo: t.assignedTo })),
      },
    );
  }
}

export function cognitiveLoad(request: CognitiveLoadRequest): Core<CognitiveLoadResult> {
  checkAssignments(request.agents, request.tasks);
  const { agents, tasks, targetUtilization: target } = request;
  const owner = new Map<Task, string | null>(tasks.map((t) => [t, t.assignedTo ?? null]));
  // Assigned minutes per agent, kept up to date on every move (so utilization is O(1)).
  const minutes = new Map<string, number>(agents.map((a) => [a.id, 0]));
  for (const t of tasks)
    if (t.assignedTo !== undefined) minutes.set(t.assignedTo, minutes.get(t.assignedTo)! + t.estimatedMinutes);
  const assign = (t: Task, to: string) => {
    const from = owner.get(t);
    if (from) minutes.set(from, minutes.get(from)! - t.estimatedMinutes);
    minutes.set(to, minutes.get(to)! + t.estimatedMinutes);
    owner.set(t, to);
  };
  const utilization = (a: TeamMember) => minutes.get(a.id)! / a.capacityMinutes;
  const snapshot = (): AgentLoad[] =>
    agents.map((a) => {
      const held = tasks.filter((t) => owner.get(t) === a.id);
      const assigned = held.reduce((s, t) => s + t.estimatedMinutes, 0); // summed afresh: no drift from updates
      const u = assigned / a.capacityMinutes;
      return {
        agentId: a.id,
        tasks: held.length,
        assignedMinutes: round(assigned, 2),
        capacityMinutes: a.capacityMinutes,
        utilization: round(u, 4),
        status: u > target ? 'overloaded' : u < target / 2 ? 'underloaded' : 'balanced',
      };
    });
  const before = snapshot();
  const imbalanceBefore = coefficientOfVariation(agents.map(utilization));
  const skilled = (a: TeamMember, t: Task) => (t.requiredSkills ?? []).every((s) => a.skills.includes(s));
  const position = new Map(tasks.map((t, i) => [t, i]));
  const byMinutes = (a: Task, b: Task) =>
    b.estimatedMinutes - a.estimatedMinutes || position.get(a)! - position.get(b)!;
  const spare = (a: TeamMember) => a.capacityMinutes - minutes.get(a.id)!;
  /**
   * The least-loaded agent with the skills that stays at or under the target after taking the task (ties: more room,
   * then team order).
   */
  const receiver = (t: Task, exclude: string | null) =>
    agents
      .filter(
        (a) =>
          a.id !== exclude && skilled(a, t) && (minutes.get(a.id)! + t.estimatedMinutes) / a.capacityMinutes <= target,
      )
      .sort((a, b) => utilization(a) - utilization(b) || spare(b) - spare(a))[0];
  const moves: TaskMove[] = [];
  const unplaced: string[] = [];

  for (const task of tasks.filter((t) => owner.get(t) === null).sort(byMinutes)) {
    const to = receiver(task, null);
    if (!to) {
      unplaced.push(task.id);
      continue;
    }
    assign(task, to.id);
    moves.push({
      taskId: task.id,
      from: null,
      to: to.id,
      minutes: task.estimatedMinutes,
      reason: `unassigned; ${to.id} is the least-loaded agent with the skills and room for it`,
    });
  }
  // Relieve the most overloaded agent first, moving its largest movable task; every move lowers the total
  // overload (it goes from an agent above the target to one that stays at or below it), so this ends.
  for (;;) {
    const overloaded = agents.filter((a) => utilization(a) > target).sort((a, b) => utilization(b) - utilization(a));
    let moved = false;
    for (const from of overloaded) {
      for (const task of tasks.filter((t) => owner.get(t) === from.id).sort(byMinutes)) {
        const to = receiver(task, from.id);
        if (!to) continue;
        const fromU = round(utilization(from) * 100, 1);
        assign(task, to.id);
        moves.push({
          taskId: task.id,
          from: from.id,
          to: to.id,
          minutes: task.estimatedMinutes,
          reason: `${from.id} was at ${fromU} % of capacity; ${to.id} is the least-loaded agent with the skills and room for it`,
        });
        moved = true;
        break;
      }
      if (moved) break;
    }
    if (!moved) break;
  }
  const overloadedBefore = before.filter((l) => l.status === 'overloaded').length;
  const unassignedBefore = tasks.filter((t) => t.assignedTo === undefined).length;
  return {
    analysis: 'cognitive-load',
    // Health of the current assignment: overloaded agents, unassigned work and uneven load all need fixing.
    // Work no agent can take is never "ok": at most 50 (warning) while anything is unplaced.
    ...scored(
      Math.min(
        100 -
          50 * (overloadedBefore / agents.length) -
          30 * (unassignedBefore / tasks.length) -
          20 * Math.min(1, imbalanceBefore),
        unplaced.length ? 50 : 100,
      ),
    ),
    targetUtilization: target,
    before,
    after: snapshot(),
    moves,
    imbalanceBefore: round(imbalanceBefore, 4),
    imbalanceAfter: round(coefficientOfVariation(agents.map(utilization)), 4),
    unplaced,
  };
}

// ---------------------------------------------------------------- 10. performance drift

export function driftWindows(request: Pick<PerformanceDriftRequest, 'scores' | 'baselineSize' | 'recentSize'>): {
  baselineSize: number;
  recentSize: number;
} {
  const n = request.scores.length;
  const baselineSize = request.baselineSize ?? Math.floor(n / 2);
  const recentSize = request.recentSize ?? Math.max(5, Math.floor(n / 4));
  if (baselineSize + recentSize > n) {
    throw unprocessable(
      'window_too_large',
      `baselineSize + recentSize (${baselineSize} + ${recentSize}) exceeds the ${n} scores`,
      { baselineSize, recentSize, scores: n },
    );
  }
  return { baselineSize, recentSize };
}

export function checkScores(scores: readonly ScorePoint[], field = 'body.scores'): void {
  scores.forEach((s, i) => parseTime(s.at, `${field}.${i}.at`));
}

/**
 * Two-sided tabular CUSUM (Page 1954; Montgomery's k = σ/2, h = 5σ) around the baseline mean: the index of
 * the first point where either sum exceeds h, or null. σ is floored at 0.01 so a flat baseline still works.
 */
export function cusumChangePoint(values: readonly number[], target: number, sigma: number): number | null {
  const s = Math.max(sigma, 0.01);
  const [k, h] = [0.5 * s, 5 * s];
  let [high, low] = [0, 0];
  for (let i = 0; i < values.length; i++) {
    high = Math.max(0, high + values[i]! - target - k);
    low = Math.max(0, low + target - k - values[i]!);
    if (high > h || low > h) return i;
  }
  return null;
}

/** Welch's t-test of b against a: t, Welch–Satterthwaite degrees of freedom and the two-sided p-value. */
export function welch(a: readonly number[], b: readonly number[]): { t: number; df: number; p: number } {
  const [va, vb] = [sampleStdDev(a) ** 2 / a.length, sampleStdDev(b) ** 2 / b.length];
  const delta = mean(b) - mean(a);
  // Identical constant windows have no spread: floor the standard error so t stays finite.
  const se = Math.max(Math.sqrt(va + vb), 1e-9);
  const t = delta / se;
  const denominator = va ** 2 / (a.length - 1) + vb ** 2 / (b.length - 1);
  const df = denominator > 0 ? (va + vb) ** 2 / denominator : a.length + b.length - 2;
  return { t, df, p: delta === 0 ? 1 : studentTwoSidedP(t, df) };
}

export function performanceDrift(request: PerformanceDriftRequest): Core<PerformanceDriftResult> {
  checkScores(request.scores);
  const { baselineSize, recentSize } = driftWindows(request);
  const series = request.scores
    .map((p, i) => ({ p, i, t: Date.parse(p.at) }))
    .sort((a, b) => a.t - b.t || a.i - b.i)
    .map((x) => ({ at: x.p.at, t: x.t, score: x.p.score }));
  const values = series.map((s) => s.score);
  const base = series.slice(0, baselineSize);
  const recent = series.slice(series.length - recentSize);
  const stats = (w: typeof series): WindowStats => ({
    from: w[0]!.at,
    to: w.at(-1)!.at,
    count: w.length,
    mean: round(mean(w.map((s) => s.score)), 4),
    stdDev: round(sampleStdDev(w.map((s) => s.score)), 4),
  });
  const baseMean = mean(base.map((s) => s.score));
  const delta = mean(recent.map((s) => s.score)) - baseMean;
  // From a baseline mean of 0 any change counts as ±100 %.
  const relativeChange = baseMean > 0 ? delta / baseMean : delta === 0 ? 0 : Math.sign(delta);
  const { t, p } = welch(
    base.map((s) => s.score),
    recent.map((s) => s.score),
  );
  const drifting = Math.abs(relativeChange) >= request.threshold && p < 0.05;
  const direction = !drifting ? 'stable' : delta < 0 ? 'degrading' : 'improving';
  const size = Math.abs(relativeChange);
  const severity = direction !== 'degrading' ? 'none' : size < 0.1 ? 'minor' : size < 0.25 ? 'major' : 'critical';
  // Least-squares slope of score on time in days over the whole series.
  const days = series.map((s) => (s.t - series[0]!.t) / DAY_MS);
  const [mx, my] = [mean(days), mean(values)];
  const sxx = days.reduce((s, x) => s + (x - mx) ** 2, 0);
  const slope = sxx > 0 ? days.reduce((s, x, i) => s + (x - mx) * (values[i]! - my), 0) / sxx : 0;
  const change = cusumChangePoint(values, baseMean, sampleStdDev(base.map((s) => s.score)));
  return {
    analysis: 'performance-drift',
    ...scored(direction === 'degrading' ? 100 - 300 * size : 100),
    drifting,
    direction,
    severity,
    baseline: stats(base),
    recent: stats(recent),
    delta: round(delta, 4),
    relativeChange: round(relativeChange, 4),
    slopePerDay: round(slope, 6),
    tStatistic: round(t, 4),
    pValue: round(p, 6),
    changePoint: change === null ? null : { index: change, at: series[change]!.at },
  };
}

// ---------------------------------------------------------------- the full diagnostic

/** The full diagnostic's price per analysis that runs (all ten: 0.08 USD, the route's maximum). */
export const DIAGNOSTIC_USD_PER_ANALYSIS = '0.008';

export const ANALYSES: readonly AnalysisId[] = [
  'compute-allocation',
  'inference-cost',
  'memory-compression',
  'context-relevance',
  'decision-complexity',
  'explore-exploit',
  'confidence-calibration',
  'overthinking-detector',
  'cognitive-load',
  'performance-drift',
];

export type Outcome = { analysis: AnalysisId; core: AnyCore } | { analysis: AnalysisId; skippedReason: string };

/** What each analysis needs from the state, or the missing fields; the default options of each route. */
function planFor(analysis: AnalysisId, s: CognitiveState, now: number): (() => AnyCore) | string {
  const missing = (fields: [string, unknown][]) => {
    const absent = fields
      .filter(([, v]) => v === undefined || (Array.isArray(v) && v.length === 0))
      .map(([name]) => name);
    return absent.length ? `missing ${absent.join(', ')}` : null;
  };
  const r = s.reasoning;
  const check = (fields: [string, unknown][], run: () => AnyCore) => missing(fields) ?? run;
  switch (analysis) {
    case 'compute-allocation':
      return check(
        [
          ['compute', s.compute],
          ['tasks.queue', s.tasks?.queue],
        ],
        () => computeAllocation({ compute: s.compute!, tasks: s.tasks!.queue, strategy: 'priority' }),
      );
    case 'inference-cost':
      return check(
        [
          ['reasoning.nextInference', r?.nextInference],
          ['compute.models', s.compute?.models],
        ],
        () => inferenceCost({ task: r!.nextInference!, models: s.compute!.models! }),
      );
    case 'memory-compression':
      return check([['memory', s.memory]], () =>
        memoryCompression({ ...s.memory!, targetUtilization: 0.7, halfLifeHours: 72, summaryRatio: 0.25 }, now),
      );
    case 'context-relevance':
      return check(
        [
          ['reasoning.goal', r?.goal],
          ['reasoning.context', r?.context],
          ['reasoning.tokenBudget', r?.tokenBudget],
        ],
        () => contextRelevance({ goal: r!.goal!, items: r!.context!, tokenBudget: r!.tokenBudget! }, now),
      );
    case 'decision-complexity':
      return check([['reasoning.pendingDecision', r?.pendingDecision]], () => decisionComplexity(r!.pendingDecision!));
    case 'explore-exploit':
      return check([['reasoning.approaches', r?.approaches]], () =>
        exploreExploit({ arms: r!.approaches!, strategy: 'ucb1', epsilon: 0.1, seed: 0 }),
      );
    case 'confidence-calibration':
      return check([['performance.predictions', s.performance?.predictions]], () =>
        confidenceCalibration({ predictions: s.performance!.predictions!, bins: 10 }),
      );
    case 'overthinking-detector':
      return check([['reasoning.trace', r?.trace]], () =>
        overthinking({ steps: r!.trace!, minGainPer1kTokens: 0.01, patience: 2 }),
      );
    case 'cognitive-load':
      return check(
        [
          ['tasks.team', s.tasks?.team],
          ['tasks.queue', s.tasks?.queue],
        ],
        () => cognitiveLoad({ agents: s.tasks!.team!, tasks: s.tasks!.queue, targetUtilization: 0.85 }),
      );
    case 'performance-drift':
      return check([['performance.qualityHistory', s.performance?.qualityHistory]], () =>
        performanceDrift({ scores: s.performance!.qualityHistory!, threshold: 0.05 }),
      );
  }
}

/**
 * Runs every analysis whose inputs the state holds. An analysis that cannot run on this state (a domain
 * rule such as pinned memory above the target) is skipped with that reason rather than failing the rest.
 */
export function runAnalyses(state: CognitiveState, now: number): Outcome[] {
  return ANALYSES.map((analysis) => {
    const plan = planFor(analysis, state, now);
    if (typeof plan === 'string') return { analysis, skippedReason: plan };
    try {
      return { analysis, core: plan() };
    } catch (error) {
      if (error instanceof HttpError) return { analysis, skippedReason: `cannot run: ${error.message}` };
      throw error;
    }
  });
}

export function gradeOf(score: number): 'A' | 'B' | 'C' | 'D' | 'F' {
  return score >= 90 ? 'A' : score >= 80 ? 'B' : score >= 70 ? 'C' : score >= 60 ? 'D' : 'F';
}
export const GRADE_SCALE = [
  { grade: 'A' as const, minScore: 90 },
  { grade: 'B' as const, minScore: 80 },
  { grade: 'C' as const, minScore: 70 },
  { grade: 'D' as const, minScore: 60 },
  { grade: 'F' as const, minScore: 0 },
];

/** Score (mean of the analyses that ran), grade and health of a diagnostic. */
export function overallHealth(scores: readonly { score: number; status: HealthStatus }[]) {
  const score = round(mean(scores.map((s) => s.score)), 1);
  const grade = gradeOf(score);
  const health: 'healthy' | 'degraded' | 'critical' =
    scores.some((s) => s.status === 'critical') || grade === 'F'
      ? 'critical'
      : scores.some((s) => s.status === 'warning') || grade === 'C' || grade === 'D'
        ? 'degraded'
        : 'healthy';
  return { score, grade, health };
}

/** Refuses (400, naming the field) timestamps that match the pattern but name no real time, anywhere in a state. */
export function checkStateTimes(state: CognitiveState, prefix: string): void {
  state.memory?.items.forEach((item, i) => parseTime(item.lastAccessedAt, `${prefix}memory.items.${i}.lastAccessedAt`));
  if (state.reasoning?.context) checkContext(state.reasoning.context, `${prefix}reasoning.context`);
  state.performance?.predictions?.forEach(
    (p, i) => p.at !== undefined && parseTime(p.at, `${prefix}performance.predictions.${i}.at`),
  );
  if (state.performance?.qualityHistory)
    checkScores(state.performance.qualityHistory, `${prefix}performance.qualityHistory`);
}

/** Groups sent with the request replace the stored ones whole, for this run only. */
export function mergeState(stored: CognitiveState | undefined, override: CognitiveState | undefined): CognitiveState {
  return {
    ...(stored ?? {}),
    ...Object.fromEntries(Object.entries(override ?? {}).filter(([, v]) => v !== undefined)),
  };
}
