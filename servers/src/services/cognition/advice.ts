import { z } from 'zod';
import type {
  CognitiveLoadResult,
  ComputeAllocationResult,
  ConfidenceCalibrationResult,
  ContextRelevanceResult,
  DecisionComplexityResult,
  ExploreExploitResult,
  InferenceCostResult,
  MemoryCompressionResult,
  OverthinkingResult,
  PerformanceDriftResult,
} from '@agent-economy/contracts';
import type { AiTask } from '../../ai';
import type { AnyCore, Core } from './domain';

// The words of each analysis: a one-line headline (facts only, for the diagnostic's entries) and a
// recommendation with concrete actions. The built-in engine writes them from the numbers by explicit
// rules; an LLM, when configured, gets the same numbers and must not change them.

export interface Advice {
  recommendation: string;
  actions: string[];
}
const AdviceSchema: z.ZodType<Advice> = z.object({
  recommendation: z.string().min(1).max(2000),
  actions: z.array(z.string().min(1).max(500)).max(8),
});

const pct = (share: number) => `${Math.round(share * 1000) / 10} %`;
const list = (ids: readonly string[], max = 3) =>
  ids.length <= max ? ids.join(', ') : `${ids.slice(0, max).join(', ')} and ${ids.length - max} more`;

function computeAdvice(r: Core<ComputeAllocationResult>): Advice {
  const now = r.allocations.filter((a) => a.decision === 'run_now').map((a) => a.taskId);
  const infeasible = r.allocations.filter((a) => a.decision === 'infeasible').map((a) => a.taskId);
  const missed = r.allocations
    .filter((a) => a.meetsDeadline === false && a.decision !== 'infeasible')
    .map((a) => a.taskId);
  const actions: string[] = [];
  if (now.length) actions.push(`Start ${list(now)} now (${r.strategy} order).`);
  if (missed.length)
    actions.push(`Renegotiate the deadlines of ${list(missed)} or add units: the simulation misses them.`);
  if (infeasible.length)
    actions.push(`Split or re-target ${list(infeasible)}: they need more GPUs or CPUs than the agent owns.`);
  if (r.queuedTasks && (r.idle.gpus || r.idle.cpus))
    actions.push(
      `${r.idle.gpus} GPU and ${r.idle.cpus} CPU stay idle while ${r.queuedTasks} task(s) wait: resize the waiting tasks to fit them.`,
    );
  if (r.queuedTasks) actions.push(`Expect the queue to drain in ${r.makespanMinutes} minutes.`);
  return {
    recommendation:
      `Run ${r.runningTasks} task(s) now, queue ${r.queuedTasks}` +
      (r.infeasibleTasks ? `, drop or split ${r.infeasibleTasks}` : '') +
      `: GPU use ${r.utilization.gpuPercent} %, CPU use ${r.utilization.cpuPercent} %, ${r.priorityCoveredPercent} % of the priority served now` +
      (r.deadlineMisses ? `, ${r.deadlineMisses} deadline miss(es).` : ', no deadline missed.'),
    actions,
  };
}

function inferenceAdvice(r: Core<InferenceCostResult>): Advice {
  const chosen = r.evaluations.find((e) => e.tier === r.choice)!;
  const other = r.evaluations.find((e) => e.tier !== r.choice)!;
  const meets = chosen.meetsAccuracy && chosen.meetsLatency;
  const actions = [`Call ${chosen.name} (${r.choice}) for this task at ${chosen.costUsd} USD.`];
  if (!meets)
    actions.push(`Neither model meets both the accuracy floor and the latency budget: relax one, or add verification.`);
  if (meets && chosen.expectedValueUsd.startsWith('-'))
    actions.push('The call is expected to lose money: skip it, batch it, or raise its value.');
  if (r.breakEvenValueUsd !== null)
    actions.push(`Switch to the heavy model when a correct answer is worth more than ${r.breakEvenValueUsd} USD.`);
  return {
    recommendation:
      `Use the ${r.choice} model ${chosen.name}: expected value ${chosen.expectedValueUsd} USD against ${other.expectedValueUsd} USD for ${other.name}` +
      (r.savingsUsd !== '0' ? `, saving ${r.savingsUsd} USD per call` : '') +
      `; the heavy model costs ${r.costRatio}× the light one.`,
    actions,
  };
}

function memoryAdvice(r: Core<MemoryCompressionResult>): Advice {
  const ids = (a: string) => r.decisions.filter((d) => d.action === a).map((d) => d.id);
  if (r.tokens.freed === 0) {
    return {
      recommendation: `Memory holds ${r.tokens.before} of ${r.tokens.capacity} tokens (${pct(r.utilizationBefore)}), within the ${pct(r.targetUtilization)} target: keep everything.`,
      actions: ['Nothing to compress now.'],
    };
  }
  const actions: string[] = [];
  if (ids('forget').length) actions.push(`Forget ${list(ids('forget'))}.`);
  if (ids('summarize').length)
    actions.push(`Summarize ${list(ids('summarize'))} to ${pct(r.summaryRatio)} of their size.`);
  actions.push(`Re-run compression when utilization passes ${pct(r.targetUtilization)} again.`);
  return {
    recommendation: `Free ${r.tokens.freed} tokens: memory goes from ${pct(r.utilizationBefore)} to ${pct(r.utilizationAfter)} of capacity (target ${pct(r.targetUtilization)}), keeping ${r.counts.keep} item(s), summarizing ${r.counts.summarize}, forgetting ${r.counts.forget}.`,
    actions,
  };
}

function contextAdvice(r: Core<ContextRelevanceResult>): Advice {
  const kept = r.ranking.filter((x) => x.include).map((x) => x.id);
  const skipped = r.ranking.filter((x) => !x.include && x.relevance > 0).map((x) => x.id);
  const actions: string[] = [];
  if (kept.length) actions.push(`Keep ${list(kept)} in the context (${r.includedTokens} of ${r.tokenBudget} tokens).`);
  if (r.irrelevant.length) actions.push(`Drop ${list(r.irrelevant)}: no term in common with the goal.`);
  if (skipped.length) actions.push(`Relevant but over budget: ${list(skipped)}; summarize them or raise the budget.`);
  if (!kept.length) actions.push('Nothing in the context serves the goal: retrieve material about it first.');
  return {
    recommendation: `${r.includedItems} of ${r.ranking.length} item(s) serve the goal (${r.goalTerms.join(', ') || 'no content terms'}) and fit the budget; ${r.irrelevant.length} are irrelevant.`,
    actions,
  };
}

function complexityAdvice(r: Core<DecisionComplexityResult>): Advice {
  const b = r.budget;
  const top = [...r.factors]
    .sort((x, y) => y.contribution - x.contribution)
    .slice(0, 2)
    .map((f) => f.factor.replace('_', ' '));
  const actions =
    r.mode === 'system2'
      ? [
          `Reason deliberately with the ${b.model} model: up to ${b.reasoningSteps} steps and ${b.maxReasoningTokens} tokens.`,
          `Sample ${b.samples} independent answers and take the majority.`,
        ]
      : [
          `Answer directly with the ${b.model} model in ${b.reasoningSteps} step(s), at most ${b.maxReasoningTokens} tokens.`,
        ];
  if (b.verify) actions.push('Verify the answer before acting: the decision is costly to undo.');
  if (!r.timeSufficient)
    actions.push(`The budget does not fit ${b.deadlineSeconds} s: ask for more time or cut the sample count.`);
  return {
    recommendation: `Complexity ${r.complexityScore}/100, driven by ${top.join(' and ')}: use ${r.mode === 'system2' ? 'slow, deliberate (System 2)' : 'fast, intuitive (System 1)'} reasoning and decide within ${b.deadlineSeconds} s.`,
    actions,
  };
}

function banditAdvice(r: Core<ExploreExploitResult>): Advice {
  const untried = r.arms.filter((a) => a.trials === 0).map((a) => a.id);
  const actions = [`Use ${r.chosenArm} next (${r.decision}).`];
  if (untried.length) actions.push(`Try ${list(untried)} at least once: nothing is known about them.`);
  if (r.explorationRate > r.recommendedExplorationRate + 0.05)
    actions.push(
      `Explore less: ${pct(r.explorationRate)} of trials went to other arms than ${r.bestKnownArm}; about ${pct(r.recommendedExplorationRate)} suffices.`,
    );
  else if (r.explorationRate < r.recommendedExplorationRate - 0.05)
    actions.push(
      `Explore more: only ${pct(r.explorationRate)} of trials tested alternatives; about ${pct(r.recommendedExplorationRate)} is advisable.`,
    );
  return {
    recommendation: `${r.decision === 'exploit' ? 'Exploit' : 'Explore'}: ${r.strategy} picks ${r.chosenArm}; the best known arm is ${r.bestKnownArm} (probability best ${pct(r.arms.find((a) => a.id === r.bestKnownArm)?.probabilityBest ?? 0)}), estimated regret so far ${r.estimatedRegret}.`,
    actions,
  };
}

function calibrationAdvice(r: Core<ConfidenceCalibrationResult>): Advice {
  const actions: string[] = [];
  if (r.verdict === 'overconfident')
    actions.push(`Divide confidence logits by ${r.temperature} (temperature scaling) before acting on them.`);
  if (r.verdict === 'underconfident')
    actions.push(`Sharpen confidences: temperature ${r.temperature} calibrates them.`);
  const worst = r.bins.filter((b) => b.gap !== null && Math.abs(b.gap) >= 0.1).map((b) => `${b.lower}–${b.upper}`);
  if (worst.length)
    actions.push(`Review predictions in the confidence ranges ${worst.join(', ')}: the gap is 10 points or more.`);
  if (r.verdict === 'well_calibrated') actions.push('Keep stating confidences as now.');
  return {
    recommendation: `${r.verdict.replace('_', ' ')}: accuracy ${pct(r.accuracy)} against mean confidence ${pct(r.meanConfidence)}; ECE ${r.ece}, Brier ${r.brierScore} over ${r.count} predictions.`,
    actions,
  };
}

function overthinkingAdvice(r: Core<OverthinkingResult>): Advice {
  if (r.kneeStep === null) {
    return {
      recommendation: `Every step still paid off: quality reached ${r.finalQuality} with ${r.totalTokens} tokens.`,
      actions: ['Keep the current reasoning depth.'],
    };
  }
  return {
    recommendation:
      `Returns fell off after step ${r.kneeStep}: the last ${r.tokensAfterKnee} tokens (${pct(r.wastedShare)}) bought ${r.qualityGainAfterKnee} quality.` +
      (r.overthinking ? ' Stop earlier.' : ''),
    actions: [
      `Cap reasoning at ${r.recommendedTokenBudget} tokens for tasks like this.`,
      'Stop when two consecutive steps gain less than the threshold.',
    ],
  };
}

function loadAdvice(r: Core<CognitiveLoadResult>): Advice {
  const actions = r.moves
    .map((m) => `Move ${m.taskId} (${m.minutes} min) ${m.from ? `from ${m.from} ` : ''}to ${m.to}.`)
    .slice(0, 5);
  const still = r.after.filter((a) => a.status === 'overloaded').map((a) => a.agentId);
  if (r.unplaced.length)
    actions.push(`No agent with the skills has room for ${list(r.unplaced)}: add capacity or defer them.`);
  if (still.length) actions.push(`${list(still)} remain overloaded: nothing they hold can move.`);
  if (!actions.length) actions.push('No change needed.');
  return {
    recommendation: `${r.moves.length} move(s) bring the imbalance from ${r.imbalanceBefore} to ${r.imbalanceAfter} (coefficient of variation) with a ${pct(r.targetUtilization)} utilization target.`,
    actions,
  };
}

function driftAdvice(r: Core<PerformanceDriftResult>): Advice {
  const change = `${r.baseline.mean} → ${r.recent.mean} (${pct(r.relativeChange)}, p = ${r.pValue})`;
  if (r.direction === 'degrading') {
    return {
      recommendation:
        `Decision quality is degrading, ${r.severity}: ${change}` +
        (r.changePoint ? `; the shift shows from ${r.changePoint.at}.` : '.'),
      actions: [
        r.changePoint
          ? `Review what changed around ${r.changePoint.at} (model, prompts, data, environment).`
          : 'Review recent changes to models, prompts and data.',
        'Re-evaluate on a fixed benchmark and roll back the change if quality stays low.',
      ],
    };
  }
  if (r.direction === 'improving')
    return {
      recommendation: `Decision quality is improving: ${change}.`,
      actions: ['Keep the recent changes; record what caused the gain.'],
    };
  return {
    recommendation: `No significant drift: ${change}; trend ${r.slopePerDay} per day.`,
    actions: ['Keep monitoring.'],
  };
}

/** The built-in engine's advice for any analysis. */
export function composeAdvice(core: AnyCore): Advice {
  switch (core.analysis) {
    case 'compute-allocation':
      return computeAdvice(core);
    case 'inference-cost':
      return inferenceAdvice(core);
    case 'memory-compression':
      return memoryAdvice(core);
    case 'context-relevance':
      return contextAdvice(core);
    case 'decision-complexity':
      return complexityAdvice(core);
    case 'explore-exploit':
      return banditAdvice(core);
    case 'confidence-calibration':
      return calibrationAdvice(core);
    case 'overthinking-detector':
      return overthinkingAdvice(core);
    case 'cognitive-load':
      return loadAdvice(core);
    case 'performance-drift':
      return driftAdvice(core);
  }
}

/** One line of facts for the diagnostic's entry. */
export function headline(core: AnyCore): string {
  switch (core.analysis) {
    case 'compute-allocation':
      return `${core.runningTasks} run now, ${core.queuedTasks} queued, ${core.infeasibleTasks} infeasible, ${core.deadlineMisses} deadline miss(es)`;
    case 'inference-cost':
      return `use the ${core.choice} model; heavy costs ${core.costRatio}× light`;
    case 'memory-compression':
      return `memory at ${pct(core.utilizationBefore)} of capacity; ${core.tokens.freed} tokens to free`;
    case 'context-relevance':
      return `${core.includedItems} of ${core.ranking.length} context items relevant and within budget; ${core.irrelevant.length} irrelevant`;
    case 'decision-complexity':
      return `${core.mode}, complexity ${core.complexityScore}/100`;
    case 'explore-exploit':
      return `${core.decision} ${core.chosenArm}; exploration ${pct(core.explorationRate)} vs ${pct(core.recommendedExplorationRate)} advised`;
    case 'confidence-calibration':
      return `${core.verdict.replace('_', ' ')}, ECE ${core.ece}`;
    case 'overthinking-detector':
      return core.kneeStep === null
        ? 'no diminishing returns'
        : `knee at step ${core.kneeStep}; ${pct(core.wastedShare)} of tokens after it`;
    case 'cognitive-load':
      return `${core.before.filter((a) => a.status === 'overloaded').length} overloaded agent(s); ${core.moves.length} move(s) proposed`;
    case 'performance-drift':
      return `${core.direction}${core.severity !== 'none' ? ` (${core.severity})` : ''}, ${pct(core.relativeChange)} change`;
  }
}

export function adviceTask(core: AnyCore): AiTask<AnyCore, Advice> {
  return {
    name: `${core.analysis}-advice`,
    instructions:
      `You advise an autonomous AI agent about its own operation. The JSON input is the computed result of the ` +
      `"${core.analysis}" analysis. Write a one- or two-sentence recommendation and up to five concrete actions, most ` +
      'important first. Use only the numbers and ids given; do not invent or change any.',
    input: core,
    output: AdviceSchema,
    builtin: composeAdvice,
  };
}

export interface DiagnosticInput {
  agentId: string;
  score: number;
  grade: string;
  health: string;
  entries: {
    analysis: string;
    status: string;
    score: number | null;
    headline: string;
    skippedReason: string | null;
    actions: string[];
  }[];
}
export interface DiagnosticWords {
  summary: string;
  topActions: string[];
}
const DiagnosticWordsSchema: z.ZodType<DiagnosticWords> = z.object({
  summary: z.string().min(1).max(3000),
  topActions: z.array(z.string().min(1).max(500)).max(5),
});

/** Worst analyses first, the first action of each, then the second ones, up to five in all. */
export function composeDiagnostic(input: DiagnosticInput): DiagnosticWords {
  const ran = input.entries.filter((e) => e.score !== null).sort((a, b) => a.score! - b.score!);
  const topActions: string[] = [];
  for (let round = 0; topActions.length < 5 && ran.some((e) => e.actions.length > round); round++) {
    for (const e of ran) if (e.actions[round] && topActions.length < 5) topActions.push(e.actions[round]!);
  }
  const skipped = input.entries.filter((e) => e.score === null).map((e) => e.analysis);
  const weakest = ran.filter((e) => e.status !== 'ok').map((e) => `${e.analysis} (${e.headline})`);
  const summary =
    `Agent ${input.agentId}: grade ${input.grade}, score ${input.score}/100, ${input.health}, over ${ran.length} analyses. ` +
    (weakest.length ? `Needs attention: ${weakest.join('; ')}. ` : 'Every analysis that ran is ok. ') +
    (skipped.length ? `Skipped for missing state: ${skipped.join(', ')}.` : '');
  return { summary: summary.trim(), topActions };
}

export function diagnosticTask(input: DiagnosticInput): AiTask<DiagnosticInput, DiagnosticWords> {
  return {
    name: 'full-diagnostic',
    instructions:
      'You summarise a health report of an autonomous AI agent. The JSON input holds the overall score, grade and health ' +
      'and one entry per analysis (its status, score, headline and proposed actions). Write a short summary (at most four ' +
      'sentences) naming what needs attention, and pick at most five top actions from the entries, most urgent first. ' +
      'Do not invent numbers.',
    input,
    output: DiagnosticWordsSchema,
    builtin: composeDiagnostic,
  };
}
