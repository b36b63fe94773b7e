import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService } from '../core/service';
import { named } from '../core/names';
import { ErrorEnvelope, paymentErrors, standardErrors } from '../core/errors';
import { adaptive, fixed, free, type RouteMeta } from '../core/payment';
import { SolanaAddress, Timestamp } from '../core/chain';
import { UsdAmount } from '../core/money';
import { Generator, authErrors } from './shared';

const c = initContract();

// Interfaces first, then schemas annotated with them: keeps the emitted declarations small.

/** The ten analyses, by the last segment of their path. */
export type AnalysisId =
  | 'compute-allocation'
  | 'inference-cost'
  | 'memory-compression'
  | 'context-relevance'
  | 'decision-complexity'
  | 'explore-exploit'
  | 'confidence-calibration'
  | 'overthinking-detector'
  | 'cognitive-load'
  | 'performance-drift';
/** The five groups of a stored cognitive state. */
export type StateGroup = 'compute' | 'memory' | 'reasoning' | 'performance' | 'tasks';
/** Health of one dimension: ok at a score of 75 or more, warning from 50 to 74, critical below 50. */
export type HealthStatus = 'ok' | 'warning' | 'critical';
export type Grade = 'A' | 'B' | 'C' | 'D' | 'F';

// ---- building blocks of the cognitive state (each analysis takes the slice it needs) ----

export interface ResourcePool {
  /** Units the agent owns. */
  total: number;
  /** Units free right now (at most total). */
  available: number;
}
export interface ModelProfile {
  name: string;
  /** USD per million input tokens. */
  inputUsdPerMTok: string;
  /** USD per million output tokens. */
  outputUsdPerMTok: string;
  /** Probability, 0 to 1, that the model answers this kind of task correctly. */
  expectedAccuracy: number;
  /** Typical latency of one call, milliseconds. */
  latencyMs: number;
}
export interface ModelPair {
  light: ModelProfile;
  heavy: ModelProfile;
}
export interface ComputeState {
  gpus: ResourcePool;
  cpus: ResourcePool;
  /** The light and heavy model the agent can choose between (used by inference-cost). */
  models?: ModelPair;
}
export type MemoryKind = 'working' | 'episodic' | 'semantic' | 'procedural';
export interface MemoryItem {
  id: string;
  kind: MemoryKind;
  tokens: number;
  /** 0 to 1, the agent's own estimate. */
  importance: number;
  accessCount: number;
  lastAccessedAt: string;
  /** Pinned items are always kept. */
  pinned?: boolean;
}
export interface MemoryState {
  capacityTokens: number;
  items: MemoryItem[];
}
export interface ContextItem {
  id: string;
  text: string;
  /** Tokens the item costs in the context window; ceil(characters / 4) when omitted. */
  tokens?: number;
  addedAt?: string;
  source?: string;
}
export interface InferenceTask {
  inputTokens: number;
  outputTokens: number;
  /** The lowest acceptable probability of a correct answer, 0 to 1. */
  minAccuracy: number;
  /** What a correct answer is worth, USD. */
  valueUsd: string;
  /** What a wrong answer costs, USD (default "0"). */
  errorCostUsd?: string;
  /** Latency budget of the call, milliseconds. */
  latencyBudgetMs?: number;
}
export interface DecisionProfile {
  description?: string;
  /** Number of alternatives to choose from. */
  options: number;
  /** USD at stake. */
  stakesUsd: string;
  /** 0 (irreversible) to 1 (fully reversible). */
  reversibility: number;
  /** 0 (outcome known) to 1 (outcome unknowable). */
  uncertainty: number;
  /** 0 (routine) to 1 (never seen before). */
  novelty: number;
  /** Time available for the decision, seconds. */
  timeBudgetSeconds: number;
  /** Accuracy of past decisions of this kind, 0 to 1. */
  pastAccuracy?: number;
}
export interface Arm {
  /** An approach, strategy or tool the agent can use. */
  id: string;
  trials: number;
  /** Mean reward of the trials so far, 0 to 1. */
  meanReward: number;
}
export interface ReasoningStep {
  step: number;
  /** Tokens spent in this step. */
  tokens: number;
  /** Quality (or confidence) of the best answer after this step, 0 to 1. */
  quality: number;
}
export interface ReasoningState {
  goal?: string;
  tokenBudget?: number;
  context?: ContextItem[];
  nextInference?: InferenceTask;
  pendingDecision?: DecisionProfile;
  approaches?: Arm[];
  trace?: ReasoningStep[];
}
export interface Prediction {
  /** Stated confidence, 0 to 1. */
  confidence: number;
  correct: boolean;
  at?: string;
}
export interface ScorePoint {
  at: string;
  /** Decision quality, 0 to 1. */
  score: number;
}
export interface PerformanceState {
  predictions?: Prediction[];
  qualityHistory?: ScorePoint[];
}
export interface Task {
  id: string;
  /** 1 (can wait) to 10 (most urgent). */
  priority: number;
  /** GPUs the task needs while it runs; 0 when omitted. */
  gpus?: number;
  /** CPUs the task needs while it runs; 0 when omitted. */
  cpus?: number;
  /** Run time, minutes; also the task's effort when balancing load across agents. */
  estimatedMinutes: number;
  /** Minutes from now by which the task must finish. */
  deadlineMinutes?: number;
  requiredSkills?: string[];
  /** The team member (TeamMember.id) the task is assigned to; unassigned when omitted. */
  assignedTo?: string;
}
export interface TeamMember {
  id: string;
  /** Minutes of work the agent can absorb in the planning horizon. */
  capacityMinutes: number;
  skills: string[];
}
export interface TaskState {
  queue: Task[];
  team?: TeamMember[];
}
export interface CognitiveState {
  compute?: ComputeState;
  memory?: MemoryState;
  reasoning?: ReasoningState;
  performance?: PerformanceState;
  tasks?: TaskState;
}
export interface CognitiveStateRecord {
  agentId: string;
  /** The wallet that wrote the state: states live in the caller wallet's own namespace. */
  owner: string;
  /** 1 on the first write, then +1 per update. */
  version: number;
  state: CognitiveState;
  groupUpdatedAt: Partial<Record<StateGroup, string>>;
  createdAt: string;
  updatedAt: string;
}
export interface StateUpdate extends CognitiveState {
  agentId: string;
  /** Optimistic concurrency: refuse (409 version_conflict) unless the stored version is this one. */
  expectedVersion?: number;
}
export interface StateRead {
  groups?: StateGroup[];
}

// ---- info ----

export interface CognitiveApi {
  id: AnalysisId | 'state-update' | 'state-read' | 'full-diagnostic';
  method: 'POST';
  path: string;
  summary: string;
  priceUsd: string;
  /** The state groups the route reads or writes. */
  stateGroups: StateGroup[];
}
export interface CognitionInfo {
  service: 'cognition';
  version: '1.0.0';
  analyses: CognitiveApi[];
  otherRoutes: CognitiveApi[];
  stateGroups: StateGroup[];
  gradeScale: { grade: Grade; minScore: number }[];
}

// ---- analyses ----

/** Fields every analysis answers. */
export interface AnalysisBase {
  analysis: AnalysisId;
  status: HealthStatus;
  /** Health of this dimension, 0 to 100 (100 = nothing to fix); the full diagnostic averages these. */
  score: number;
  recommendation: string;
  actions: string[];
  generator: Generator;
  computedAt: string;
}

export type AllocationStrategy = 'priority' | 'deadline' | 'throughput';
export interface ComputeAllocationRequest {
  compute: ComputeState;
  tasks: Task[];
  strategy: AllocationStrategy;
}
export type ComputeAllocationRequestInput = Omit<ComputeAllocationRequest, 'strategy'> & {
  strategy?: AllocationStrategy;
};
export interface TaskAllocation {
  taskId: string;
  decision: 'run_now' | 'queue' | 'infeasible';
  gpus: number;
  cpus: number;
  startInMinutes: number | null;
  finishInMinutes: number | null;
  meetsDeadline: boolean | null;
  reason: string;
}
export interface ComputeAllocationResult extends AnalysisBase {
  analysis: 'compute-allocation';
  strategy: AllocationStrategy;
  allocations: TaskAllocation[];
  utilization: { gpuPercent: number; cpuPercent: number };
  idle: { gpus: number; cpus: number };
  runningTasks: number;
  queuedTasks: number;
  infeasibleTasks: number;
  deadlineMisses: number;
  priorityCoveredPercent: number;
  makespanMinutes: number;
}

export interface InferenceCostRequest {
  task: InferenceTask;
  models: ModelPair;
}
export interface ModelEvaluation {
  tier: 'light' | 'heavy';
  name: string;
  costUsd: string;
  expectedAccuracy: number;
  expectedValueUsd: string;
  latencyMs: number;
  meetsAccuracy: boolean;
  meetsLatency: boolean;
}
export interface InferenceCostResult extends AnalysisBase {
  analysis: 'inference-cost';
  choice: 'light' | 'heavy';
  evaluations: ModelEvaluation[];
  costRatio: number;
  breakEvenValueUsd: string | null;
  savingsUsd: string;
}

export interface MemoryCompressionRequest extends MemoryState {
  targetUtilization: number;
  halfLifeHours: number;
  summaryRatio: number;
}
export type MemoryCompressionRequestInput = MemoryState & {
  targetUtilization?: number;
  halfLifeHours?: number;
  summaryRatio?: number;
};
export interface MemoryDecision {
  id: string;
  action: 'keep' | 'summarize' | 'forget';
  retentionScore: number;
  tokensBefore: number;
  tokensAfter: number;
  reason: string;
}
export interface MemoryCompressionResult extends AnalysisBase {
  analysis: 'memory-compression';
  decisions: MemoryDecision[];
  counts: { keep: number; summarize: number; forget: number };
  tokens: { capacity: number; before: number; after: number; freed: number };
  utilizationBefore: number;
  utilizationAfter: number;
  targetUtilization: number;
  halfLifeHours: number;
  summaryRatio: number;
}

export interface ContextRelevanceRequest {
  goal: string;
  items: ContextItem[];
  tokenBudget: number;
}
export interface ContextRanking {
  id: string;
  rank: number;
  relevance: number;
  bm25: number;
  recency: number | null;
  matchedTerms: string[];
  tokens: number;
  include: boolean;
}
export interface ContextRelevanceResult extends AnalysisBase {
  analysis: 'context-relevance';
  goalTerms: string[];
  ranking: ContextRanking[];
  tokenBudget: number;
  includedTokens: number;
  includedItems: number;
  excludedItems: number;
  irrelevant: string[];
}

export type ComplexityFactor =
  'stakes' | 'irreversibility' | 'uncertainty' | 'novelty' | 'option_count' | 'time_pressure' | 'track_record';
export interface DecisionComplexityResult extends AnalysisBase {
  analysis: 'decision-complexity';
  mode: 'system1' | 'system2';
  complexityScore: number;
  factors: { factor: ComplexityFactor; value: number; weight: number; contribution: number }[];
  budget: {
    reasoningSteps: number;
    maxReasoningTokens: number;
    samples: number;
    model: 'light' | 'heavy';
    verify: boolean;
    deadlineSeconds: number;
  };
  timeSufficient: boolean;
}

export type BanditStrategy = 'ucb1' | 'thompson' | 'epsilon-greedy';
export interface ExploreExploitRequest {
  arms: Arm[];
  strategy: BanditStrategy;
  epsilon: number;
  remainingDecisions?: number;
  seed: number;
}
export type ExploreExploitRequestInput = Omit<ExploreExploitRequest, 'strategy' | 'epsilon' | 'seed'> & {
  strategy?: BanditStrategy;
  epsilon?: number;
  seed?: number;
};
export interface ArmEvaluation {
  id: string;
  trials: number;
  meanReward: number;
  index: number;
  explorationBonus: number;
  probabilityBest: number;
}
export interface ExploreExploitResult extends AnalysisBase {
  analysis: 'explore-exploit';
  decision: 'explore' | 'exploit';
  chosenArm: string;
  bestKnownArm: string;
  strategy: BanditStrategy;
  arms: ArmEvaluation[];
  totalTrials: number;
  explorationRate: number;
  recommendedExplorationRate: number;
  estimatedRegret: number;
}

export interface ConfidenceCalibrationRequest {
  predictions: Prediction[];
  bins: number;
}
export type ConfidenceCalibrationRequestInput = Omit<ConfidenceCalibrationRequest, 'bins'> & { bins?: number };
export interface CalibrationBin {
  lower: number;
  upper: number;
  count: number;
  meanConfidence: number | null;
  accuracy: number | null;
  gap: number | null;
}
export interface ConfidenceCalibrationResult extends AnalysisBase {
  analysis: 'confidence-calibration';
  verdict: 'overconfident' | 'underconfident' | 'well_calibrated';
  count: number;
  accuracy: number;
  meanConfidence: number;
  overconfidence: number;
  brierScore: number;
  ece: number;
  mce: number;
  logLoss: number;
  temperature: number;
  bins: CalibrationBin[];
}

export interface OverthinkingRequest {
  steps: ReasoningStep[];
  minGainPer1kTokens: number;
  patience: number;
}
export type OverthinkingRequestInput = Omit<OverthinkingRequest, 'minGainPer1kTokens' | 'patience'> & {
  minGainPer1kTokens?: number;
  patience?: number;
};
export interface StepGain {
  step: number;
  tokens: number;
  cumulativeTokens: number;
  quality: number;
  gain: number;
  gainPer1kTokens: number;
}
export interface OverthinkingResult extends AnalysisBase {
  analysis: 'overthinking-detector';
  overthinking: boolean;
  kneeStep: number | null;
  totalTokens: number;
  tokensAfterKnee: number;
  wastedShare: number;
  qualityAtKnee: number;
  finalQuality: number;
  qualityGainAfterKnee: number;
  recommendedTokenBudget: number;
  steps: StepGain[];
}

export interface CognitiveLoadRequest {
  agents: TeamMember[];
  tasks: Task[];
  targetUtilization: number;
}
export type CognitiveLoadRequestInput = Omit<CognitiveLoadRequest, 'targetUtilization'> & {
  targetUtilization?: number;
};
export interface AgentLoad {
  agentId: string;
  tasks: number;
  assignedMinutes: number;
  capacityMinutes: number;
  utilization: number;
  status: 'overloaded' | 'balanced' | 'underloaded';
}
export interface TaskMove {
  taskId: string;
  from: string | null;
  to: string;
  minutes: number;
  reason: string;
}
export interface CognitiveLoadResult extends AnalysisBase {
  analysis: 'cognitive-load';
  targetUtilization: number;
  before: AgentLoad[];
  after: AgentLoad[];
  moves: TaskMove[];
  imbalanceBefore: number;
  imbalanceAfter: number;
  unplaced: string[];
}

export interface PerformanceDriftRequest {
  scores: ScorePoint[];
  baselineSize?: number;
  recentSize?: number;
  threshold: number;
}
export type PerformanceDriftRequestInput = Omit<PerformanceDriftRequest, 'threshold'> & { threshold?: number };
export interface WindowStats {
  from: string;
  to: string;
  count: number;
  mean: number;
  stdDev: number;
}
export interface PerformanceDriftResult extends AnalysisBase {
  analysis: 'performance-drift';
  drifting: boolean;
  direction: 'degrading' | 'improving' | 'stable';
  severity: 'none' | 'minor' | 'major' | 'critical';
  baseline: WindowStats;
  recent: WindowStats;
  delta: number;
  relativeChange: number;
  slopePerDay: number;
  tStatistic: number;
  pValue: number;
  changePoint: { index: number; at: string } | null;
}

// ---- full diagnostic ----

export interface DiagnosticRequest {
  agentId: string;
  state?: CognitiveState;
}
export interface DiagnosticEntry {
  analysis: AnalysisId;
  status: HealthStatus | 'skipped';
  score: number | null;
  headline: string;
  /** Why the analysis did not run: the state groups or fields it was missing. */
  skippedReason: string | null;
}
export interface DiagnosticResults {
  computeAllocation?: ComputeAllocationResult;
  inferenceCost?: InferenceCostResult;
  memoryCompression?: MemoryCompressionResult;
  contextRelevance?: ContextRelevanceResult;
  decisionComplexity?: DecisionComplexityResult;
  exploreExploit?: ExploreExploitResult;
  confidenceCalibration?: ConfidenceCalibrationResult;
  overthinkingDetector?: OverthinkingResult;
  cognitiveLoad?: CognitiveLoadResult;
  performanceDrift?: PerformanceDriftResult;
}
export interface HealthReport {
  agentId: string;
  /** The stored state's version the report used; null when it ran on the request's state alone. */
  stateVersion: number | null;
  grade: Grade;
  score: number;
  health: 'healthy' | 'degraded' | 'critical';
  analysesRun: number;
  analysesSkipped: number;
  /** What this report was charged: 0.008 USD per analysis that ran (at this deployment's price), "0" when free. */
  chargedUsd: string;
  entries: DiagnosticEntry[];
  topActions: string[];
  summary: string;
  results: DiagnosticResults;
  generator: Generator;
  computedAt: string;
}

// ---- schemas ----

const unit = () => z.number().min(0).max(1);
const count = () => z.number().int().min(0);
const ItemId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/, 'must be 1 to 64 letters, digits, ".", "_", ":" or "-"');
const AgentId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/, 'must be 1 to 128 letters, digits, ".", "_", ":" or "-" (a DID works)')
  .describe('your name for the agent; states live in the calling wallet’s own namespace');
/** A signed USD decimal string (an expected value can be negative). */
const SignedUsd = z
  .string()
  .regex(/^-?(0|[1-9]\d{0,11})(\.\d{1,6})?$/, 'must be a signed USD decimal string, e.g. "-0.0125"');
const uniqueIds = <T extends { id: string }>(items: T[]) => new Set(items.map((i) => i.id)).size === items.length;

const AnalysisIdSchema = named(
  'AnalysisId',
  z.enum([
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
  ]),
);
const StateGroupSchema = named('StateGroup', z.enum(['compute', 'memory', 'reasoning', 'performance', 'tasks']));
const HealthStatusSchema = named('HealthStatus', z.enum(['ok', 'warning', 'critical']));
const GradeSchema = named('Grade', z.enum(['A', 'B', 'C', 'D', 'F']));

const ResourcePoolSchema: z.ZodType<ResourcePool> = named(
  'ResourcePool',
  z
    .object({
      total: z.number().int().min(0).max(100_000),
      available: z.number().int().min(0).max(100_000).describe('free right now; at most total'),
    })
    .strict()
    .refine((p) => p.available <= p.total, { message: 'available must not exceed total', path: ['available'] }),
);
const ModelProfileSchema: z.ZodType<ModelProfile> = named(
  'ModelProfile',
  z
    .object({
      name: z.string().min(1).max(100),
      inputUsdPerMTok: UsdAmount.describe('USD per million input tokens'),
      outputUsdPerMTok: UsdAmount.describe('USD per million output tokens'),
      expectedAccuracy: unit().describe('probability the model answers this kind of task correctly'),
      latencyMs: z.number().int().min(1).max(600_000).describe('typical latency of one call, milliseconds'),
    })
    .strict(),
);
const ModelPairSchema: z.ZodType<ModelPair> = named(
  'ModelPair',
  z.object({ light: ModelProfileSchema, heavy: ModelProfileSchema }).strict(),
);
const ComputeStateSchema: z.ZodType<ComputeState> = named(
  'ComputeState',
  z.object({ gpus: ResourcePoolSchema, cpus: ResourcePoolSchema, models: ModelPairSchema.optional() }).strict(),
);
const MemoryItemSchema: z.ZodType<MemoryItem> = named(
  'MemoryItem',
  z
    .object({
      id: ItemId,
      kind: z.enum(['working', 'episodic', 'semantic', 'procedural']),
      tokens: z.number().int().min(1).max(10_000_000),
      importance: unit().describe('the agent’s own estimate, 0 to 1'),
      accessCount: count(),
      lastAccessedAt: Timestamp,
      pinned: z.boolean().optional().describe('pinned items are always kept'),
    })
    .strict(),
);
const memoryFields = {
  capacityTokens: z.number().int().min(1).max(100_000_000).describe('size of the memory, tokens'),
  items: z.array(MemoryItemSchema).min(1).max(500).refine(uniqueIds, 'item ids must be unique'),
};
const MemoryStateSchema: z.ZodType<MemoryState> = named('MemoryState', z.object(memoryFields).strict());
const ContextItemSchema: z.ZodType<ContextItem> = named(
  'ContextItem',
  z
    .object({
      id: ItemId,
      text: z.string().min(1).max(4000),
      tokens: z.number().int().min(1).max(1_000_000).optional().describe('ceil(characters / 4) when omitted'),
      addedAt: Timestamp.optional().describe('when present, recent items rank a little higher (half-life 24 h)'),
      source: z.string().min(1).max(100).optional(),
    })
    .strict(),
);
const InferenceTaskSchema: z.ZodType<InferenceTask> = named(
  'InferenceTask',
  z
    .object({
      inputTokens: z.number().int().min(0).max(10_000_000),
      outputTokens: z.number().int().min(1).max(1_000_000),
      minAccuracy: unit().describe('lowest acceptable probability of a correct answer'),
      valueUsd: UsdAmount.describe('what a correct answer is worth'),
      errorCostUsd: UsdAmount.optional().describe('what a wrong answer costs; default "0"'),
      latencyBudgetMs: z.number().int().min(1).max(3_600_000).optional(),
    })
    .strict(),
);
const DecisionProfileSchema: z.ZodType<DecisionProfile> = named(
  'DecisionProfile',
  z
    .object({
      description: z.string().min(1).max(500).optional(),
      options: z.number().int().min(2).max(1_000_000).describe('number of alternatives'),
      stakesUsd: UsdAmount.describe('USD at stake'),
      reversibility: unit().describe('0 irreversible to 1 fully reversible'),
      uncertainty: unit().describe('0 outcome known to 1 unknowable'),
      novelty: unit().describe('0 routine to 1 never seen before'),
      timeBudgetSeconds: z.number().min(0.001).max(604_800).describe('time available for the decision, seconds'),
      pastAccuracy: unit().optional().describe('accuracy of past decisions of this kind'),
    })
    .strict(),
);
const ArmSchema: z.ZodType<Arm> = named(
  'Arm',
  z
    .object({
      id: ItemId.describe('an approach, strategy or tool'),
      trials: count().max(1_000_000_000).describe('times this arm was tried, at most 1,000,000,000'),
      meanReward: unit().describe('mean reward of the trials so far (ignored at 0 trials)'),
    })
    .strict(),
);
const ReasoningStepSchema: z.ZodType<ReasoningStep> = named(
  'ReasoningStep',
  z
    .object({
      step: z.number().int().min(1),
      tokens: z.number().int().min(0).max(10_000_000).describe('tokens spent in this step'),
      quality: unit().describe('quality or confidence of the best answer after this step'),
    })
    .strict(),
);
const contextItems = () => z.array(ContextItemSchema).min(1).max(50).refine(uniqueIds, 'item ids must be unique');
const arms = () => z.array(ArmSchema).min(2).max(50).refine(uniqueIds, 'arm ids must be unique');
const traceSteps = () => z.array(ReasoningStepSchema).min(2).max(500);
const Goal = z.string().trim().min(3).max(2000).describe('the agent’s current objective');
const TokenBudget = z.number().int().min(1).max(10_000_000).describe('tokens the context window can spend');
const ReasoningStateSchema: z.ZodType<ReasoningState> = named(
  'ReasoningState',
  z
    .object({
      goal: Goal.optional(),
      tokenBudget: TokenBudget.optional(),
      context: contextItems().optional(),
      nextInference: InferenceTaskSchema.optional(),
      pendingDecision: DecisionProfileSchema.optional(),
      approaches: arms().optional(),
      trace: traceSteps().optional(),
    })
    .strict(),
);
const PredictionSchema: z.ZodType<Prediction> = named(
  'Prediction',
  z
    .object({ confidence: unit().describe('stated confidence'), correct: z.boolean(), at: Timestamp.optional() })
    .strict(),
);
const ScorePointSchema: z.ZodType<ScorePoint> = named(
  'ScorePoint',
  z.object({ at: Timestamp, score: unit().describe('decision quality') }).strict(),
);
const predictions = () => z.array(PredictionSchema).min(10).max(2000);
const qualityHistory = () => z.array(ScorePointSchema).min(10).max(2000);
const PerformanceStateSchema: z.ZodType<PerformanceState> = named(
  'PerformanceState',
  z.object({ predictions: predictions().optional(), qualityHistory: qualityHistory().optional() }).strict(),
);
const Skill = z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'must be a lowercase slug such as "code-review"');
const TaskSchema: z.ZodType<Task> = named(
  'Task',
  z
    .object({
      id: ItemId,
      priority: z.number().int().min(1).max(10).describe('1 can wait, 10 most urgent'),
      gpus: z.number().int().min(0).max(100_000).optional().describe('GPUs it needs while it runs; 0 when omitted'),
      cpus: z.number().int().min(0).max(100_000).optional().describe('CPUs it needs while it runs; 0 when omitted'),
      estimatedMinutes: z.number().min(0.01).max(525_600).describe('run time; also the effort when balancing load'),
      deadlineMinutes: z
        .number()
        .min(0.01)
        .max(525_600)
        .optional()
        .describe('minutes from now by which it must finish'),
      requiredSkills: z.array(Skill).max(20).optional(),
      assignedTo: ItemId.optional().describe('a TeamMember id; unassigned when omitted'),
    })
    .strict(),
);
const TeamMemberSchema: z.ZodType<TeamMember> = named(
  'TeamMember',
  z
    .object({
      id: ItemId,
      capacityMinutes: z
        .number()
        .min(0.01)
        .max(525_600)
        .describe('minutes of work it can absorb in the planning horizon'),
      skills: z.array(Skill).max(50),
    })
    .strict(),
);
const tasks = (min: number) => z.array(TaskSchema).min(min).max(500).refine(uniqueIds, 'task ids must be unique');
const team = () => z.array(TeamMemberSchema).min(2).max(100).refine(uniqueIds, 'agent ids must be unique');
const TaskStateSchema: z.ZodType<TaskState> = named(
  'TaskState',
  z.object({ queue: tasks(0), team: team().optional() }).strict(),
);
const stateGroups = {
  compute: ComputeStateSchema.optional(),
  memory: MemoryStateSchema.optional(),
  reasoning: ReasoningStateSchema.optional(),
  performance: PerformanceStateSchema.optional(),
  tasks: TaskStateSchema.optional(),
};
const CognitiveStateSchema: z.ZodType<CognitiveState> = named('CognitiveState', z.object(stateGroups).strict());
const hasGroup = (s: CognitiveState) =>
  s.compute !== undefined ||
  s.memory !== undefined ||
  s.reasoning !== undefined ||
  s.performance !== undefined ||
  s.tasks !== undefined;

const CognitiveStateRecordSchema: z.ZodType<CognitiveStateRecord> = named(
  'CognitiveStateRecord',
  z.object({
    agentId: z.string(),
    owner: SolanaAddress.describe('the wallet that owns this state (the SIGN-IN-WITH-X caller)'),
    version: z.number().int().min(1),
    state: CognitiveStateSchema,
    groupUpdatedAt: z
      .object({
        compute: Timestamp.optional(),
        memory: Timestamp.optional(),
        reasoning: Timestamp.optional(),
        performance: Timestamp.optional(),
        tasks: Timestamp.optional(),
      })
      .describe('when each stored group was last written'),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
);

const CognitiveApiSchema: z.ZodType<CognitiveApi> = named(
  'CognitiveApi',
  z.object({
    id: z.union([AnalysisIdSchema, z.enum(['state-update', 'state-read', 'full-diagnostic'])]),
    method: z.literal('POST'),
    path: z.string(),
    summary: z.string(),
    priceUsd: UsdAmount,
    stateGroups: z.array(StateGroupSchema),
  }),
);
const CognitionInfoSchema: z.ZodType<CognitionInfo> = named(
  'CognitionInfo',
  z.object({
    service: z.literal('cognition'),
    version: z.literal('1.0.0'),
    analyses: z.array(CognitiveApiSchema).describe('the ten analyses, in route order'),
    otherRoutes: z.array(CognitiveApiSchema).describe('state update, state read and the full diagnostic'),
    stateGroups: z.array(StateGroupSchema),
    gradeScale: z.array(z.object({ grade: GradeSchema, minScore: z.number() })),
  }),
);

const analysisBase = {
  status: HealthStatusSchema.describe('ok at a score of 75 or more, warning 50 to 74, critical below 50'),
  score: z.number().min(0).max(100).describe('health of this dimension; 100 = nothing to fix'),
  recommendation: z.string(),
  actions: z.array(z.string()).describe('concrete next steps, most important first'),
  generator: Generator,
  computedAt: Timestamp,
};

// compute allocation
const StrategySchema = named('Strategy', z.enum(['priority', 'deadline', 'throughput']));
const ComputeAllocationBody: z.ZodType<ComputeAllocationRequest, z.ZodTypeDef, ComputeAllocationRequestInput> = named(
  'ComputeAllocationRequest',
  z
    .object({
      compute: ComputeStateSchema.describe('the compute group of the state (models, if present, are not used here)'),
      tasks: tasks(1).describe('the task queue (tasks.queue of the state)'),
      strategy: StrategySchema.default('priority').describe(
        'priority: highest priority first; deadline: earliest deadline first; throughput: most tasks per resource first',
      ),
    })
    .strict(),
);
const ComputeAllocationResultSchema: z.ZodType<ComputeAllocationResult> = named(
  'ComputeAllocationResult',
  z.object({
    analysis: z.literal('compute-allocation'),
    ...analysisBase,
    strategy: StrategySchema,
    allocations: z.array(
      z.object({
        taskId: z.string(),
        decision: z.enum(['run_now', 'queue', 'infeasible']).describe('infeasible: needs more than the agent owns'),
        gpus: count(),
        cpus: count(),
        startInMinutes: z
          .number()
          .nullable()
          .describe('0 for run_now; simulated start for queue; null when infeasible'),
        finishInMinutes: z.number().nullable(),
        meetsDeadline: z.boolean().nullable().describe('null when the task has no deadline'),
        reason: z.string(),
      }),
    ),
    utilization: z
      .object({ gpuPercent: z.number(), cpuPercent: z.number() })
      .describe('share of the total pools in use once the run_now tasks start'),
    idle: z.object({ gpus: count(), cpus: count() }).describe('units still free after the run_now placements'),
    runningTasks: count(),
    queuedTasks: count(),
    infeasibleTasks: count(),
    deadlineMisses: count(),
    priorityCoveredPercent: z.number().describe('share of the total priority weight that runs now'),
    makespanMinutes: z.number().describe('simulated time until every feasible task has finished'),
  }),
);

// inference cost
const InferenceCostBody: z.ZodType<InferenceCostRequest> = named(
  'InferenceCostRequest',
  z
    .object({
      task: InferenceTaskSchema.describe('reasoning.nextInference of the state'),
      models: ModelPairSchema.describe('compute.models of the state'),
    })
    .strict(),
);
const InferenceCostResultSchema: z.ZodType<InferenceCostResult> = named(
  'InferenceCostResult',
  z.object({
    analysis: z.literal('inference-cost'),
    ...analysisBase,
    choice: z.enum(['light', 'heavy']),
    evaluations: z.array(
      z.object({
        tier: z.enum(['light', 'heavy']),
        name: z.string(),
        costUsd: UsdAmount.describe(
          'inputTokens × input price + outputTokens × output price, rounded up to 6 decimals',
        ),
        expectedAccuracy: unit(),
        expectedValueUsd: SignedUsd.describe('accuracy × value − (1 − accuracy) × error cost − cost'),
        latencyMs: z.number(),
        meetsAccuracy: z.boolean(),
        meetsLatency: z.boolean(),
      }),
    ),
    costRatio: z.number().describe('heavy cost / light cost'),
    breakEvenValueUsd: UsdAmount.nullable().describe(
      'value of a correct answer above which the heavy model pays off; null when it is not more accurate',
    ),
    savingsUsd: UsdAmount.describe('cost avoided against the other model ("0" when the choice is the dearer one)'),
  }),
);

// memory compression
const MemoryCompressionBody: z.ZodType<MemoryCompressionRequest, z.ZodTypeDef, MemoryCompressionRequestInput> = named(
  'MemoryCompressionRequest',
  z
    .object({
      ...memoryFields,
      targetUtilization: z
        .number()
        .min(0.1)
        .max(1)
        .default(0.7)
        .describe('share of capacity to fill after compression'),
      halfLifeHours: z.number().min(0.1).max(87_600).default(72).describe('recency half-life of the retention score'),
      summaryRatio: z.number().min(0.05).max(0.9).default(0.25).describe('size of a summary relative to the item'),
    })
    .strict(),
);
const MemoryCompressionResultSchema: z.ZodType<MemoryCompressionResult> = named(
  'MemoryCompressionResult',
  z.object({
    analysis: z.literal('memory-compression'),
    ...analysisBase,
    decisions: z.array(
      z.object({
        id: z.string(),
        action: z.enum(['keep', 'summarize', 'forget']),
        retentionScore: unit().describe(
          '0.5 × importance + 0.3 × 2^(−hours since last access / half-life) + 0.2 × ln(1 + accesses) / ln(1 + most accesses)',
        ),
        tokensBefore: count(),
        tokensAfter: count(),
        reason: z.string(),
      }),
    ),
    counts: z.object({ keep: count(), summarize: count(), forget: count() }),
    tokens: z.object({ capacity: count(), before: count(), after: count(), freed: count() }),
    utilizationBefore: z.number(),
    utilizationAfter: z.number(),
    targetUtilization: z.number(),
    halfLifeHours: z.number(),
    summaryRatio: z.number(),
  }),
);

// context relevance
const ContextRelevanceBody: z.ZodType<ContextRelevanceRequest> = named(
  'ContextRelevanceRequest',
  z
    .object({
      goal: Goal.describe('reasoning.goal of the state'),
      items: contextItems().describe('reasoning.context of the state'),
      tokenBudget: TokenBudget.describe('reasoning.tokenBudget of the state'),
    })
    .strict(),
);
const ContextRelevanceResultSchema: z.ZodType<ContextRelevanceResult> = named(
  'ContextRelevanceResult',
  z.object({
    analysis: z.literal('context-relevance'),
    ...analysisBase,
    goalTerms: z.array(z.string()).describe('the goal’s terms after stop-word removal and stemming'),
    ranking: z.array(
      z.object({
        id: z.string(),
        rank: z.number().int().min(1),
        relevance: unit().describe(
          '0.8 × BM25 normalised to the best item + 0.2 × recency (recency weight 0 when addedAt is absent); 0 for an item sharing no term with the goal',
        ),
        bm25: z.number(),
        recency: unit().nullable(),
        matchedTerms: z.array(z.string()),
        tokens: count(),
        include: z
          .boolean()
          .describe('kept in the context: best first while the token budget lasts; never when relevance is 0'),
      }),
    ),
    tokenBudget: count(),
    includedTokens: count(),
    includedItems: count(),
    excludedItems: count(),
    irrelevant: z.array(z.string()).describe('ids of items sharing no term with the goal: drop them'),
  }),
);

// decision complexity
const DecisionComplexityBody: z.ZodType<DecisionProfile> = named('DecisionComplexityRequest', DecisionProfileSchema);
const DecisionComplexityResultSchema: z.ZodType<DecisionComplexityResult> = named(
  'DecisionComplexityResult',
  z.object({
    analysis: z.literal('decision-complexity'),
    ...analysisBase,
    mode: z.enum(['system1', 'system2']).describe('system2 (deliberate) at a complexity score of 50 or more'),
    complexityScore: z.number().min(0).max(100),
    factors: z.array(
      z.object({
        factor: z.enum([
          'stakes',
          'irreversibility',
          'uncertainty',
          'novelty',
          'option_count',
          'time_pressure',
          'track_record',
        ]),
        value: unit().describe('the factor normalised to 0..1'),
        weight: unit(),
        contribution: z.number().describe('weight × value × 100 (time_pressure and track_record subtract)'),
      }),
    ),
    budget: z.object({
      reasoningSteps: z.number().int().min(1),
      maxReasoningTokens: z.number().int().min(1),
      samples: z.number().int().min(1).describe('independent answers to vote over (self-consistency)'),
      model: z.enum(['light', 'heavy']),
      verify: z.boolean().describe('check the answer before acting'),
      deadlineSeconds: z.number(),
    }),
    timeSufficient: z.boolean().describe('false when the recommended budget does not fit timeBudgetSeconds'),
  }),
);

// explore / exploit
const BanditStrategySchema = named('BanditStrategy', z.enum(['ucb1', 'thompson', 'epsilon-greedy']));
const ExploreExploitBody: z.ZodType<ExploreExploitRequest, z.ZodTypeDef, ExploreExploitRequestInput> = named(
  'ExploreExploitRequest',
  z
    .object({
      arms: arms().describe('reasoning.approaches of the state'),
      strategy: BanditStrategySchema.default('ucb1'),
      epsilon: unit().default(0.1).describe('exploration rate of epsilon-greedy'),
      remainingDecisions: z
        .number()
        .int()
        .min(1)
        .max(10_000_000)
        .optional()
        .describe('decisions left; fewer left favours exploiting'),
      seed: z
        .number()
        .int()
        .min(0)
        .max(2_147_483_647)
        .default(0)
        .describe('seed of Thompson sampling and epsilon draws, for reproducible answers'),
    })
    .strict(),
);
const ExploreExploitResultSchema: z.ZodType<ExploreExploitResult> = named(
  'ExploreExploitResult',
  z.object({
    analysis: z.literal('explore-exploit'),
    ...analysisBase,
    decision: z.enum(['explore', 'exploit']).describe('exploit when the chosen arm is the best known one'),
    chosenArm: z.string(),
    bestKnownArm: z.string().describe('highest mean reward among arms with at least one trial'),
    strategy: BanditStrategySchema,
    arms: z.array(
      z.object({
        id: z.string(),
        trials: count(),
        meanReward: unit(),
        index: z.number().describe('the strategy’s value: UCB1 bound, Thompson draw, or mean for epsilon-greedy'),
        explorationBonus: z
          .number()
          .describe(
            'sqrt(2 ln N / n) for UCB1 (an untried arm, whose bound is infinite, shows sqrt(4 ln max(N, 2)) and an index of 1 plus that); 0 otherwise',
          ),
        probabilityBest: unit().describe(
          'posterior probability of being the best arm (Beta posteriors, 10,000 seeded draws)',
        ),
      }),
    ),
    totalTrials: count(),
    explorationRate: unit().describe('share of past trials spent on arms other than the best known'),
    recommendedExplorationRate: unit(),
    estimatedRegret: z.number().describe('Σ trials × (best mean − arm mean), in reward units'),
  }),
);

// confidence calibration
const ConfidenceCalibrationBody: z.ZodType<
  ConfidenceCalibrationRequest,
  z.ZodTypeDef,
  ConfidenceCalibrationRequestInput
> = named(
  'ConfidenceCalibrationRequest',
  z
    .object({
      predictions: predictions().describe(
        'performance.predictions of the state: stated confidence and whether it came true',
      ),
      bins: z.number().int().min(5).max(20).default(10).describe('equal-width confidence bins'),
    })
    .strict(),
);
const ConfidenceCalibrationResultSchema: z.ZodType<ConfidenceCalibrationResult> = named(
  'ConfidenceCalibrationResult',
  z.object({
    analysis: z.literal('confidence-calibration'),
    ...analysisBase,
    verdict: z
      .enum(['overconfident', 'underconfident', 'well_calibrated'])
      .describe('well_calibrated when ECE < 0.05; otherwise the sign of overconfidence decides'),
    count: count(),
    accuracy: unit(),
    meanConfidence: unit(),
    overconfidence: z.number().describe('meanConfidence − accuracy; positive = overconfident'),
    brierScore: unit().describe('mean of (confidence − outcome)²; 0 is perfect'),
    ece: unit().describe('expected calibration error: Σ (bin count / n) × |bin accuracy − bin confidence|'),
    mce: unit().describe('maximum calibration error over the non-empty bins'),
    logLoss: z.number().describe('mean negative log-likelihood, confidences clipped to [1e-6, 1 − 1e-6]'),
    temperature: z
      .number()
      .min(0)
      .describe(
        'temperature minimising log loss when applied to the confidences’ logits; > 1 softens (overconfident), < 1 sharpens',
      ),
    bins: z.array(
      z.object({
        lower: unit(),
        upper: unit(),
        count: count(),
        meanConfidence: unit().nullable(),
        accuracy: unit().nullable(),
        gap: z.number().nullable().describe('meanConfidence − accuracy; null for an empty bin'),
      }),
    ),
  }),
);

// overthinking
const OverthinkingBody: z.ZodType<OverthinkingRequest, z.ZodTypeDef, OverthinkingRequestInput> = named(
  'OverthinkingRequest',
  z
    .object({
      steps: traceSteps().describe('reasoning.trace of the state, in step order'),
      minGainPer1kTokens: z
        .number()
        .min(0)
        .max(1)
        .default(0.01)
        .describe('quality gain per 1,000 tokens below which a step is not worth it'),
      patience: z.number().int().min(1).max(20).default(2).describe('consecutive low-gain steps that mark the knee'),
    })
    .strict(),
);
const OverthinkingResultSchema: z.ZodType<OverthinkingResult> = named(
  'OverthinkingResult',
  z.object({
    analysis: z.literal('overthinking-detector'),
    ...analysisBase,
    overthinking: z.boolean().describe('true when a knee exists and more than 10 % of the tokens were spent after it'),
    kneeStep: z
      .number()
      .int()
      .nullable()
      .describe('first step of the first run of `patience` low-gain steps, minus one; null when gains never fall off'),
    totalTokens: count(),
    tokensAfterKnee: count(),
    wastedShare: unit(),
    qualityAtKnee: unit(),
    finalQuality: unit(),
    qualityGainAfterKnee: z.number(),
    recommendedTokenBudget: count().describe('cumulative tokens at the knee, plus 10 %'),
    steps: z.array(
      z.object({
        step: z.number().int(),
        tokens: count(),
        cumulativeTokens: count(),
        quality: unit(),
        gain: z.number().describe('quality change since the previous step'),
        gainPer1kTokens: z.number(),
      }),
    ),
  }),
);

// cognitive load
const CognitiveLoadBody: z.ZodType<CognitiveLoadRequest, z.ZodTypeDef, CognitiveLoadRequestInput> = named(
  'CognitiveLoadRequest',
  z
    .object({
      agents: team().describe('tasks.team of the state'),
      tasks: tasks(1).describe('tasks.queue of the state; assignedTo names an agent of `agents`'),
      targetUtilization: z
        .number()
        .min(0.3)
        .max(1)
        .default(0.85)
        .describe('utilization above which an agent is overloaded'),
    })
    .strict(),
);
const AgentLoadSchema: z.ZodType<AgentLoad> = named(
  'AgentLoad',
  z.object({
    agentId: z.string(),
    tasks: count(),
    assignedMinutes: z.number(),
    capacityMinutes: z.number(),
    utilization: z.number().describe('assignedMinutes / capacityMinutes'),
    status: z
      .enum(['overloaded', 'balanced', 'underloaded'])
      .describe('overloaded above target; underloaded below half of it'),
  }),
);
const CognitiveLoadResultSchema: z.ZodType<CognitiveLoadResult> = named(
  'CognitiveLoadResult',
  z.object({
    analysis: z.literal('cognitive-load'),
    ...analysisBase,
    targetUtilization: z.number(),
    before: z.array(AgentLoadSchema),
    after: z.array(AgentLoadSchema),
    moves: z.array(
      z.object({
        taskId: z.string(),
        from: z.string().nullable().describe('null for a task that was unassigned'),
        to: z.string(),
        minutes: z.number(),
        reason: z.string(),
      }),
    ),
    imbalanceBefore: z.number().describe('coefficient of variation of the agents’ utilization; 0 = perfectly even'),
    imbalanceAfter: z.number(),
    unplaced: z.array(z.string()).describe('tasks no agent with the required skills can absorb'),
  }),
);

// performance drift
const PerformanceDriftBody: z.ZodType<PerformanceDriftRequest, z.ZodTypeDef, PerformanceDriftRequestInput> = named(
  'PerformanceDriftRequest',
  z
    .object({
      scores: qualityHistory().describe('performance.qualityHistory of the state; sorted by time before analysis'),
      baselineSize: z
        .number()
        .int()
        .min(5)
        .max(1995)
        .optional()
        .describe('oldest scores forming the baseline; default half of them'),
      recentSize: z
        .number()
        .int()
        .min(5)
        .max(1995)
        .optional()
        .describe('newest scores compared with it; default a quarter, at least 5'),
      threshold: z
        .number()
        .min(0.001)
        .max(1)
        .default(0.05)
        .describe('relative change of the mean that counts as drift'),
    })
    .strict(),
);
const WindowStatsSchema: z.ZodType<WindowStats> = named(
  'WindowStats',
  z.object({
    from: Timestamp,
    to: Timestamp,
    count: count(),
    mean: unit(),
    stdDev: z.number().min(0),
  }),
);
const PerformanceDriftResultSchema: z.ZodType<PerformanceDriftResult> = named(
  'PerformanceDriftResult',
  z.object({
    analysis: z.literal('performance-drift'),
    ...analysisBase,
    drifting: z.boolean().describe('|relativeChange| ≥ threshold and pValue < 0.05'),
    direction: z.enum(['degrading', 'improving', 'stable']),
    severity: z
      .enum(['none', 'minor', 'major', 'critical'])
      .describe('by the size of a degradation: under 10 %, under 25 %, 25 % or more'),
    baseline: WindowStatsSchema,
    recent: WindowStatsSchema,
    delta: z.number().describe('recent mean − baseline mean'),
    relativeChange: z.number().describe('delta / baseline mean'),
    slopePerDay: z.number().describe('least-squares trend of the whole series, score units per day'),
    tStatistic: z.number().describe('Welch’s t of recent against baseline'),
    pValue: unit(),
    changePoint: z
      .object({ index: z.number().int().min(0), at: Timestamp })
      .nullable()
      .describe('where a two-sided CUSUM first signals a shift; null when it never does'),
  }),
);

// full diagnostic
const DiagnosticBody: z.ZodType<DiagnosticRequest> = named(
  'DiagnosticRequest',
  z
    .object({
      agentId: AgentId,
      state: CognitiveStateSchema.optional().describe(
        'groups that override the stored ones for this run only (not saved)',
      ),
    })
    .strict(),
);
const HealthReportSchema: z.ZodType<HealthReport> = named(
  'HealthReport',
  z.object({
    agentId: z.string(),
    stateVersion: z
      .number()
      .int()
      .nullable()
      .describe('the stored version used; null when only the request’s state was used'),
    grade: GradeSchema.describe('A ≥ 90, B ≥ 80, C ≥ 70, D ≥ 60, F below'),
    score: z.number().min(0).max(100).describe('mean score of the analyses that ran'),
    health: z
      .enum(['healthy', 'degraded', 'critical'])
      .describe('critical: an analysis is critical or the grade is F; degraded: a warning or grade C/D; else healthy'),
    analysesRun: count(),
    analysesSkipped: count(),
    chargedUsd: UsdAmount.describe(
      'what this report was charged: 0.008 USD per analysis that ran, quoted before it ran; "0" when the deployment charges nothing',
    ),
    entries: z.array(
      z.object({
        analysis: AnalysisIdSchema,
        status: z.enum(['ok', 'warning', 'critical', 'skipped']),
        score: z.number().nullable(),
        headline: z.string(),
        skippedReason: z.string().nullable().describe('the state fields the analysis was missing'),
      }),
    ),
    topActions: z.array(z.string()).max(5),
    summary: z.string(),
    results: z
      .object({
        computeAllocation: ComputeAllocationResultSchema.optional(),
        inferenceCost: InferenceCostResultSchema.optional(),
        memoryCompression: MemoryCompressionResultSchema.optional(),
        contextRelevance: ContextRelevanceResultSchema.optional(),
        decisionComplexity: DecisionComplexityResultSchema.optional(),
        exploreExploit: ExploreExploitResultSchema.optional(),
        confidenceCalibration: ConfidenceCalibrationResultSchema.optional(),
        overthinkingDetector: OverthinkingResultSchema.optional(),
        cognitiveLoad: CognitiveLoadResultSchema.optional(),
        performanceDrift: PerformanceDriftResultSchema.optional(),
      })
      .describe('the full result of each analysis that ran'),
    generator: Generator,
    computedAt: Timestamp,
  }),
);

const StateUpdateBody: z.ZodType<StateUpdate> = named(
  'StateUpdate',
  z
    .object({
      agentId: AgentId,
      expectedVersion: z
        .number()
        .int()
        .min(1)
        .optional()
        .describe('refuse with 409 version_conflict unless the stored version is this'),
      ...stateGroups,
    })
    .strict()
    .refine(hasGroup, 'send at least one group: compute, memory, reasoning, performance or tasks'),
);
const StateReadBody: z.ZodType<StateRead> = named(
  'StateRead',
  z
    .object({
      groups: z.array(StateGroupSchema).min(1).max(5).optional().describe('groups to return; all when omitted'),
    })
    .strict(),
);

// ---- examples ----

const exampleTasks: Task[] = [
  {
    id: 'embed-corpus',
    priority: 8,
    gpus: 2,
    cpus: 8,
    estimatedMinutes: 40,
    deadlineMinutes: 90,
    assignedTo: 'researcher-1',
  },
  { id: 'backtest', priority: 5, gpus: 0, cpus: 16, estimatedMinutes: 25, assignedTo: 'researcher-1' },
  {
    id: 'fine-tune',
    priority: 3,
    gpus: 4,
    cpus: 8,
    estimatedMinutes: 180,
    requiredSkills: ['training'],
    assignedTo: 'trainer-1',
  },
];
const exampleTeam: TeamMember[] = [
  { id: 'researcher-1', capacityMinutes: 60, skills: ['research', 'training'] },
  { id: 'trainer-1', capacityMinutes: 120, skills: ['training'] },
  { id: 'analyst-1', capacityMinutes: 90, skills: ['research'] },
];
const examplePredictions: Prediction[] = [
  { confidence: 0.95, correct: true },
  { confidence: 0.9, correct: false },
  { confidence: 0.9, correct: true },
  { confidence: 0.85, correct: false },
  { confidence: 0.8, correct: true },
  { confidence: 0.8, correct: false },
  { confidence: 0.7, correct: true },
  { confidence: 0.65, correct: false },
  { confidence: 0.6, correct: true },
  { confidence: 0.55, correct: false },
];
const exampleScores: ScorePoint[] = [0.82, 0.84, 0.81, 0.83, 0.85, 0.8, 0.78, 0.74, 0.72, 0.7, 0.69, 0.66].map(
  (score, day) => ({
    at: `2026-04-${String(day + 10).padStart(2, '0')}T00:00:00.000Z`,
    score,
  }),
);
const exampleModels: ModelPair = {
  light: {
    name: 'small-8b',
    inputUsdPerMTok: '0.05',
    outputUsdPerMTok: '0.08',
    expectedAccuracy: 0.78,
    latencyMs: 900,
  },
  heavy: {
    name: 'frontier-large',
    inputUsdPerMTok: '3',
    outputUsdPerMTok: '15',
    expectedAccuracy: 0.93,
    latencyMs: 6500,
  },
};

/** Generic over the result schema so the SDK types each analysis's 200 body (a ZodTypeAny parameter made it any). */
const analysisResponses = <T extends z.ZodTypeAny>(schema: T) => ({
  200: schema,
  422: ErrorEnvelope,
  ...standardErrors,
  ...paymentErrors,
});

const router = c.router({
  info: {
    method: 'GET',
    path: '/api/info',
    summary: 'The 10 cognitive APIs with pricing and descriptions',
    description:
      'Lists the ten analyses (path, summary, price, the state groups each reads), the state and diagnostic routes, and the ' +
      'grade scale. Free: it describes the service, like the descriptor.',
    responses: { 200: CognitionInfoSchema, ...standardErrors },
    metadata: { payment: free() } satisfies RouteMeta,
  },
  updateState: {
    method: 'POST',
    path: '/api/state',
    body: StateUpdateBody,
    summary: 'Update an agent’s cognitive state',
    description:
      'Writes one or more groups of an agent’s cognitive state: compute, memory, reasoning, performance, tasks. Each group ' +
      'sent replaces the stored group whole; groups not sent are kept. The first write creates the state (version 1); each ' +
      'write adds 1. Design: states live in the calling wallet’s own namespace (SIGN-IN-WITH-X), so two wallets may both ' +
      'use agentId "planner" without seeing each other’s state. Errors: 409 version_conflict when expectedVersion is not ' +
      'the stored version; 413 payload_too_large above the body limit (256 KB by default).',
    responses: {
      200: CognitiveStateRecordSchema,
      409: ErrorEnvelope,
      ...standardErrors,
      ...paymentErrors,
      ...authErrors,
    },
    metadata: {
      payment: fixed('0.002'),
      auth: 'siwx',
      example: {
        body: {
          agentId: 'planner-7',
          compute: { gpus: { total: 4, available: 3 }, cpus: { total: 32, available: 20 }, models: exampleModels },
          tasks: { queue: exampleTasks, team: exampleTeam },
        },
      },
    } satisfies RouteMeta,
  },
  getState: {
    method: 'POST',
    path: '/api/state/:agentId',
    pathParams: z.object({ agentId: AgentId }),
    body: StateReadBody,
    summary: 'Read an agent’s current cognitive state (a read done with POST)',
    description:
      'The stored cognitive state of one of the caller’s agents, all groups or those named in `groups`; a body of `{}` ' +
      'reads everything. A read done with POST, as the specification defines it. Errors: 404 state_not_found when the ' +
      'calling wallet has no state under this agentId.',
    responses: {
      200: CognitiveStateRecordSchema,
      404: ErrorEnvelope,
      ...standardErrors,
      ...paymentErrors,
      ...authErrors,
    },
    metadata: {
      payment: fixed('0.001'),
      auth: 'siwx',
      example: { params: { agentId: 'planner-7' }, body: { groups: ['compute', 'tasks'] } },
    } satisfies RouteMeta,
  },
  computeAllocation: {
    method: 'POST',
    path: '/api/compute-allocation',
    body: ComputeAllocationBody,
    summary: 'Where to allocate GPUs and CPUs now',
    description:
      'Schedules the task queue onto the free GPUs and CPUs: which tasks run now, which wait (with a simulated start and ' +
      'finish as running tasks release their units; units busy outside the queue, total − available, are assumed free once none of the queue’s tasks runs), which can never fit. Reports utilization, idle units, deadline ' +
      'misses and the share of priority served now. Design: input is the compute group plus tasks.queue of the state. ' +
      'Score 100 × (1 − 0.4 × deadline misses / n − 0.3 × infeasible / n − 0.3 × idle share while tasks wait), at most 50 ' +
      '(warning) when a task can never run on the agent’s compute. Errors: 422 nothing_schedulable when no task needs any GPU or CPU.',
    responses: analysisResponses(ComputeAllocationResultSchema),
    metadata: {
      payment: fixed('0.02'),
      example: {
        body: {
          compute: { gpus: { total: 4, available: 3 }, cpus: { total: 32, available: 20 } },
          tasks: exampleTasks,
        },
      },
    } satisfies RouteMeta,
  },
  inferenceCost: {
    method: 'POST',
    path: '/api/inference-cost',
    body: InferenceCostBody,
    summary: 'Whether to run a heavy or a light model',
    description:
      'Prices one inference on the light and the heavy model and picks the one with the higher expected value ' +
      '(accuracy × value − (1 − accuracy) × error cost − cost) among those meeting minAccuracy and the latency budget; ' +
      'when neither meets both, the more accurate one. Reports the cost ratio and the break-even value of a correct ' +
      'answer. Design: input is reasoning.nextInference and compute.models of the state; money is USD decimal strings.',
    responses: analysisResponses(InferenceCostResultSchema),
    metadata: {
      payment: fixed('0.01'),
      example: {
        body: {
          task: {
            inputTokens: 12000,
            outputTokens: 800,
            minAccuracy: 0.85,
            valueUsd: '0.40',
            errorCostUsd: '0.10',
            latencyBudgetMs: 10000,
          },
          models: exampleModels,
        },
      },
    } satisfies RouteMeta,
  },
  memoryCompression: {
    method: 'POST',
    path: '/api/memory-compression',
    body: MemoryCompressionBody,
    summary: 'What to forget and what to keep',
    description:
      'Scores each memory item for retention (importance, recency with a half-life, access frequency), then keeps the best ' +
      'items, summarizes middling (retention score 0.3 or more) episodic and semantic items to summaryRatio of their size, and forgets the rest until ' +
      'the memory fits targetUtilization of its capacity. Pinned items are always kept. Design: input is the memory ' +
      'group of the state. Errors: 422 pinned_exceeds_target when pinned items alone exceed the target.',
    responses: analysisResponses(MemoryCompressionResultSchema),
    metadata: {
      payment: fixed('0.02'),
      example: {
        body: {
          capacityTokens: 128000,
          items: [
            {
              id: 'm-1',
              kind: 'semantic',
              tokens: 42000,
              importance: 0.9,
              accessCount: 31,
              lastAccessedAt: '2026-05-04T09:00:00.000Z',
              pinned: true,
            },
            {
              id: 'm-2',
              kind: 'episodic',
              tokens: 51000,
              importance: 0.4,
              accessCount: 3,
              lastAccessedAt: '2026-04-20T15:30:00.000Z',
            },
            {
              id: 'm-3',
              kind: 'working',
              tokens: 22000,
              importance: 0.2,
              accessCount: 1,
              lastAccessedAt: '2026-04-28T08:10:00.000Z',
            },
          ],
          targetUtilization: 0.7,
        },
      },
    } satisfies RouteMeta,
  },
  contextRelevance: {
    method: 'POST',
    path: '/api/context-relevance',
    body: ContextRelevanceBody,
    summary: 'Which data is important now',
    description:
      'Ranks context items against the current goal (BM25 over stemmed terms, plus a small recency weight when addedAt is ' +
      'given) and selects the best ones that fit the token budget. Items sharing no term with the goal are listed as ' +
      'irrelevant. Design: input is reasoning.goal, reasoning.context and reasoning.tokenBudget of the state. Errors: 422 ' +
      'goal_unscorable when the goal has no word that can be scored (only stopwords or punctuation), refused before payment.',
    responses: analysisResponses(ContextRelevanceResultSchema),
    metadata: {
      payment: fixed('0.02'),
      example: {
        body: {
          goal: 'Decide whether to buy the Solana MEV module from seller agent 42',
          items: [
            {
              id: 'c-1',
              text: 'Seller agent 42 has 37 completed escrows and 1 dispute; reputation 88/100.',
              addedAt: '2026-05-04T11:00:00.000Z',
            },
            { id: 'c-2', text: 'Weather in Lisbon is sunny.', addedAt: '2026-05-04T10:00:00.000Z' },
            { id: 'c-3', text: 'The MEV module verification scan found no critical issues.', tokens: 20 },
          ],
          tokenBudget: 2000,
        },
      },
    } satisfies RouteMeta,
  },
  decisionComplexity: {
    method: 'POST',
    path: '/api/decision-complexity',
    body: DecisionComplexityBody,
    summary: 'How complex the reasoning should be (System 1 versus System 2)',
    description:
      'Scores the decision 0 to 100 from stakes (log scale, 10,000 USD = 1), irreversibility, uncertainty, novelty and ' +
      'the number of options, less time pressure and a good track record, and recommends fast intuitive (system1) or ' +
      'slow deliberate (system2) reasoning with a budget: steps, tokens, samples to vote over, light or heavy model, ' +
      'verification. Design: input is reasoning.pendingDecision of the state.',
    responses: analysisResponses(DecisionComplexityResultSchema),
    metadata: {
      payment: fixed('0.01'),
      example: {
        body: {
          description: 'Release 2,500 USD from escrow to the seller',
          options: 3,
          stakesUsd: '2500',
          reversibility: 0.1,
          uncertainty: 0.4,
          novelty: 0.6,
          timeBudgetSeconds: 120,
          pastAccuracy: 0.82,
        },
      },
    } satisfies RouteMeta,
  },
  exploreExploit: {
    method: 'POST',
    path: '/api/explore-exploit',
    body: ExploreExploitBody,
    summary: 'Explore new approaches or exploit known-good ones',
    description:
      'A multi-armed bandit over the agent’s approaches (rewards 0 to 1): UCB1 (default), Thompson sampling or ' +
      'epsilon-greedy chooses the next arm; the answer says whether that is exploring or exploiting, each arm’s index, ' +
      'bonus and probability of being best, the exploration rate so far and the estimated regret. Arms with no trial are ' +
      'tried first. Seeded, so the same request gives the same answer. Design: input is reasoning.approaches of the state.',
    responses: analysisResponses(ExploreExploitResultSchema),
    metadata: {
      payment: fixed('0.01'),
      example: {
        body: {
          arms: [
            { id: 'momentum', trials: 120, meanReward: 0.61 },
            { id: 'mean-reversion', trials: 45, meanReward: 0.58 },
            { id: 'llm-sentiment', trials: 6, meanReward: 0.5 },
          ],
          strategy: 'ucb1',
          remainingDecisions: 500,
        },
      },
    } satisfies RouteMeta,
  },
  confidenceCalibration: {
    method: 'POST',
    path: '/api/confidence-calibration',
    body: ConfidenceCalibrationBody,
    summary: 'Whether the agent is overconfident or underconfident',
    description:
      'From past predictions (stated confidence, whether it came true): accuracy against mean confidence, Brier score, ' +
      'expected and maximum calibration error over equal-width bins, log loss, and the temperature that would calibrate ' +
      'the confidences. Verdict: well_calibrated when ECE < 0.05, else over- or underconfident. Design: input is ' +
      'performance.predictions of the state (10 to 2,000).',
    responses: analysisResponses(ConfidenceCalibrationResultSchema),
    metadata: {
      payment: fixed('0.01'),
      example: { body: { predictions: examplePredictions, bins: 5 } },
    } satisfies RouteMeta,
  },
  overthinking: {
    method: 'POST',
    path: '/api/overthinking-detector',
    body: OverthinkingBody,
    summary: 'Whether computation is spent for diminishing returns',
    description:
      'Follows a reasoning trace step by step (tokens spent, quality of the best answer) and finds the knee after which ' +
      '`patience` consecutive steps gain less than minGainPer1kTokens quality per 1,000 tokens; reports the tokens spent ' +
      'after the knee, their share, the quality they bought and a token budget for next time. Design: input is ' +
      'reasoning.trace of the state.',
    responses: analysisResponses(OverthinkingResultSchema),
    metadata: {
      payment: fixed('0.01'),
      example: {
        body: {
          steps: [
            { step: 1, tokens: 800, quality: 0.52 },
            { step: 2, tokens: 900, quality: 0.71 },
            { step: 3, tokens: 1100, quality: 0.8 },
            { step: 4, tokens: 1500, quality: 0.81 },
            { step: 5, tokens: 2200, quality: 0.815 },
            { step: 6, tokens: 3000, quality: 0.82 },
          ],
        },
      },
    } satisfies RouteMeta,
  },
  cognitiveLoad: {
    method: 'POST',
    path: '/api/cognitive-load',
    body: CognitiveLoadBody,
    summary: 'Task redistribution across a multi-agent system',
    description:
      'Measures each agent’s utilization (assigned task minutes / capacity), then moves tasks from overloaded agents, and ' +
      'places unassigned tasks, onto the least-loaded agents that have the required skills, largest moves first, until ' +
      'no agent is above targetUtilization or nothing more can move. Reports loads before and after, the moves and the ' +
      'imbalance (coefficient of variation). Score at most 50 (warning) while a task is `unplaced` (no agent can take it). ' +
      'Design: input is tasks.team and tasks.queue of the state. Errors: 422 unknown_agent when a task is assigned to an ' +
      'agent not in `agents`.',
    responses: analysisResponses(CognitiveLoadResultSchema),
    metadata: {
      payment: fixed('0.03'),
      example: { body: { agents: exampleTeam, tasks: exampleTasks, targetUtilization: 0.85 } },
    } satisfies RouteMeta,
  },
  performanceDrift: {
    method: 'POST',
    path: '/api/performance-drift',
    body: PerformanceDriftBody,
    summary: 'Whether decision quality degrades over time',
    description:
      'Compares the newest decision-quality scores with a baseline of the oldest (means, Welch’s t-test), fits a ' +
      'least-squares trend per day and locates a change point with CUSUM. Drift: the relative change of the mean reaches ' +
      'the threshold with p < 0.05. Design: input is performance.qualityHistory of the state (10 to 2,000 points). Errors: ' +
      '422 window_too_large when baselineSize + recentSize exceeds the number of scores.',
    responses: analysisResponses(PerformanceDriftResultSchema),
    metadata: {
      payment: fixed('0.02'),
      example: { body: { scores: exampleScores, baselineSize: 6, recentSize: 6 } },
    } satisfies RouteMeta,
  },
  fullDiagnostic: {
    method: 'POST',
    path: '/api/full-diagnostic',
    body: DiagnosticBody,
    summary: 'All 10 analyses in one call: a unified health report with a grade',
    description:
      'Runs every analysis on the agent’s stored state, with any groups sent in `state` overriding the stored ones for ' +
      'this run (not saved), and answers one health report: score (mean of the analyses that ran), letter grade ' +
      '(A ≥ 90, B ≥ 80, C ≥ 70, D ≥ 60, F), overall health, one entry per analysis, the top actions, and every ' +
      'analysis’s full result. Analyses whose inputs are missing from the state (or that cannot score them) are skipped ' +
      'with the reason, using default options. The price is what runs: 0.008 USD per analysis that will run, decided ' +
      'before the quote (0.08 for all ten); `chargedUsd` says what was charged. Design: the state is the caller’s own ' +
      '(SIGN-IN-WITH-X). Errors: 404 state_not_found when there is no stored state and no `state` is sent; 422 ' +
      'state_incomplete when no analysis has its inputs.',
    responses: {
      200: HealthReportSchema,
      404: ErrorEnvelope,
      422: ErrorEnvelope,
      ...standardErrors,
      ...paymentErrors,
      ...authErrors,
    },
    metadata: {
      payment: adaptive('0.008', '0.08'),
      auth: 'siwx',
      example: {
        body: {
          agentId: 'planner-7',
          state: {
            performance: { predictions: examplePredictions, qualityHistory: exampleScores },
            reasoning: {
              goal: 'Rebalance the trading team',
              approaches: [
                { id: 'momentum', trials: 12, meanReward: 0.6 },
                { id: 'carry', trials: 3, meanReward: 0.4 },
              ],
            },
          },
        },
      },
    } satisfies RouteMeta,
  },
});

export const cognition = defineService({
  id: 'cognition',
  title: 'Cognition Service',
  description:
    'Ten metacognitive analyses that advise an autonomous agent about its own operation (compute allocation, inference ' +
    'cost, memory compression, context relevance, decision complexity, explore versus exploit, confidence calibration, ' +
    'overthinking, cognitive load across several agents, performance drift), a stored per-agent cognitive state, and a ' +
    'full diagnostic that runs all ten and returns a health report with a grade.',
  router,
});
