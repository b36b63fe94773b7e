import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { USDC_DEVNET, SOLANA_DEVNET, type CognitiveState, type PaymentMeta, type Task } from '@agent-economy/contracts';
import {
  AuthenticationError,
  BadRequestError,
  ConflictError,
  NotFoundError,
  PaymentRequiredError,
  UnprocessableEntityError,
  createClient,
  walletFromSecretKey,
  type Signer,
} from '@agent-economy/sdk';
import { createServer, type Server } from 'node:http';
import { openAiReasoner } from '../servers/src/ai';
import { createCognitionApp } from '../servers/src/services/cognition';
import { generateWallet } from '../servers/src/solana/keys';
import type { ServiceContext } from '../servers/src/runtime/context';
import { startService, type RunningService } from './support/servers';

// Expected values below are worked out by hand (or, for Welch's t-test and the least-squares slope, taken
// from scipy.stats.ttest_ind(equal_var=False) and numpy.polyfit on the same data) and written as numbers.

const ROUTES = [
  'updateState',
  'getState',
  'computeAllocation',
  'inferenceCost',
  'memoryCompression',
  'contextRelevance',
  'decisionComplexity',
  'exploreExploit',
  'confidenceCalibration',
  'overthinking',
  'cognitiveLoad',
  'performanceDrift',
  'fullDiagnostic',
];
const FREE: Record<string, PaymentMeta> = Object.fromEntries(ROUTES.map((r) => [r, { kind: 'fixed', usd: '0' }]));
const freeApp = (c: ServiceContext) => createCognitionApp({ ...c, prices: FREE });

let service: RunningService;
let alice: Signer;
let bob: Signer;
const clientOf = (wallet?: Signer, url = service.url) =>
  createClient({ baseUrls: { cognition: url }, ...(wallet ? { wallet } : {}), maxRetries: 0 }).cognition;
const api = () => clientOf(alice);

beforeAll(async () => {
  service = await startService(freeApp, { id: 'cognition' });
  alice = await walletFromSecretKey(generateWallet().secretKey);
  bob = await walletFromSecretKey(generateWallet().secretKey);
});
afterAll(() => service?.close());

async function stateRows(): Promise<number> {
  const row = await service.database.db
    .selectFrom('cognition_states')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

const FUTURE = '2999-01-01T00:00:00.000Z'; // clamped to "just now": recency weight 1
const ANCIENT = '1970-01-01T00:00:00.000Z'; // decades ago: recency weight 2^(−huge) = 0
const day = (d: number) => `2026-04-${String(d + 10).padStart(2, '0')}T00:00:00.000Z`;

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
const exampleTeam = [
  { id: 'researcher-1', capacityMinutes: 60, skills: ['research', 'training'] },
  { id: 'trainer-1', capacityMinutes: 120, skills: ['training'] },
  { id: 'analyst-1', capacityMinutes: 90, skills: ['research'] },
];
const models = {
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
const driftScores = [0.82, 0.84, 0.81, 0.83, 0.85, 0.8, 0.78, 0.74, 0.72, 0.7, 0.69, 0.66].map((score, d) => ({
  at: day(d),
  score,
}));
const predictions = (groups: [confidence: number, correct: number, wrong: number][]) =>
  groups.flatMap(([confidence, correct, wrong]) => [
    ...Array.from({ length: correct }, () => ({ confidence, correct: true })),
    ...Array.from({ length: wrong }, () => ({ confidence, correct: false })),
  ]);

describe('info', () => {
  it('lists the ten analyses with their paths, prices and state groups, and the grade scale', async () => {
    const priced = await startService(createCognitionApp, { id: 'cognition' });
    try {
      const info = await clientOf(undefined, priced.url).info();
      expect(info.analyses.map((a) => [a.id, a.path, a.priceUsd])).toEqual([
        ['compute-allocation', '/api/compute-allocation', '0.02'],
        ['inference-cost', '/api/inference-cost', '0.01'],
        ['memory-compression', '/api/memory-compression', '0.02'],
        ['context-relevance', '/api/context-relevance', '0.02'],
        ['decision-complexity', '/api/decision-complexity', '0.01'],
        ['explore-exploit', '/api/explore-exploit', '0.01'],
        ['confidence-calibration', '/api/confidence-calibration', '0.01'],
        ['overthinking-detector', '/api/overthinking-detector', '0.01'],
        ['cognitive-load', '/api/cognitive-load', '0.03'],
        ['performance-drift', '/api/performance-drift', '0.02'],
      ]);
      expect(info.analyses[0]!.stateGroups).toEqual(['compute', 'tasks']);
      expect(info.otherRoutes.map((r) => [r.id, r.path, r.priceUsd])).toEqual([
        ['state-update', '/api/state', '0.002'],
        ['state-read', '/api/state/:agentId', '0.001'],
        ['full-diagnostic', '/api/full-diagnostic', '0.008'], // from 0.008, per analysis that runs
      ]);
      expect(info.gradeScale).toEqual([
        { grade: 'A', minScore: 90 },
        { grade: 'B', minScore: 80 },
        { grade: 'C', minScore: 70 },
        { grade: 'D', minScore: 60 },
        { grade: 'F', minScore: 0 },
      ]);
      // A deployment's own prices show in its info.
      expect((await api().info()).analyses[0]!.priceUsd).toBe('0');
    } finally {
      await priced.close();
    }
  });
});

describe('compute allocation', () => {
  it('schedules the example queue: runs, waits for released units, and for units held outside the queue', async () => {
    const r = await api().computeAllocation({
      body: { compute: { gpus: { total: 4, available: 3 }, cpus: { total: 32, available: 20 } }, tasks: exampleTasks },
    });
    expect(r.strategy).toBe('priority');
    expect(
      r.allocations.map((a) => [a.taskId, a.decision, a.startInMinutes, a.finishInMinutes, a.meetsDeadline]),
    ).toEqual([
      ['embed-corpus', 'run_now', 0, 40, true],
      // 12 CPUs free; 16 only once embed-corpus releases its 8 at minute 40
      ['backtest', 'queue', 40, 65, null],
      // 4 GPUs: the 1 held outside the queue is assumed free once nothing of the queue runs (minute 65)
      ['fine-tune', 'queue', 65, 245, null],
    ]);
    expect(r.utilization).toEqual({ gpuPercent: 75, cpuPercent: 62.5 }); // (1 + 2) / 4, (12 + 8) / 32
    expect(r.idle).toEqual({ gpus: 1, cpus: 12 });
    expect([r.runningTasks, r.queuedTasks, r.infeasibleTasks, r.deadlineMisses]).toEqual([1, 2, 0, 0]);
    expect(r.priorityCoveredPercent).toBe(50); // 8 of 16
    expect(r.makespanMinutes).toBe(245);
    // 100 × (1 − 0.3 × 13 idle of 23 available units while tasks wait) = 83.04
    expect([r.score, r.status]).toEqual([83, 'ok']);
    expect(r.generator).toEqual({ engine: 'builtin', model: 'builtin-rules-v1' });
    expect(r.recommendation).toContain('Run 1 task(s) now, queue 2');
    expect(r.actions[0]).toBe('Start embed-corpus now (priority order).');
    expect(r.allocations[2]!.reason).toBe(
      "needs units busy outside this queue (only 3 GPU and 20 CPU are free); assumed free at minute 65, once none of the queue's tasks runs",
    );
  });

  const small = {
    compute: { gpus: { total: 2, available: 2 }, cpus: { total: 4, available: 4 } },
    tasks: [
      { id: 'big', priority: 9, gpus: 2, cpus: 4, estimatedMinutes: 60, deadlineMinutes: 30 },
      { id: 'small1', priority: 1, gpus: 1, cpus: 1, estimatedMinutes: 10 },
      { id: 'small2', priority: 2, gpus: 1, cpus: 2, estimatedMinutes: 20 },
      { id: 'huge', priority: 5, gpus: 3, estimatedMinutes: 5 },
    ],
  };

  it('priority strategy: the urgent big task first, a deadline it cannot meet, an infeasible task', async () => {
    const r = await api().computeAllocation({ body: { ...small, strategy: 'priority' } });
    expect(
      r.allocations.map((a) => [
        a.taskId,
        a.decision,
        a.gpus,
        a.cpus,
        a.startInMinutes,
        a.finishInMinutes,
        a.meetsDeadline,
      ]),
    ).toEqual([
      ['big', 'run_now', 2, 4, 0, 60, false],
      ['huge', 'infeasible', 0, 0, null, null, null],
      ['small2', 'queue', 1, 2, 60, 80, null],
      ['small1', 'queue', 1, 1, 60, 70, null],
    ]);
    expect(r.priorityCoveredPercent).toBe(52.94); // 9 / 17
    expect([r.deadlineMisses, r.infeasibleTasks, r.makespanMinutes]).toEqual([1, 1, 80]);
    // 100 × (1 − 0.4 × 1/4 − 0.3 × 1/4) = 82.5, but "huge" can never run: at most 50.
    expect([r.score, r.status]).toEqual([50, 'warning']);
  });

  it('throughput strategy: smallest resource-minutes first (ties by priority)', async () => {
    const r = await api().computeAllocation({ body: { ...small, strategy: 'throughput' } });
    // footprints: big (1 + 1) × 60 = 120, small1 0.75 × 10 = 7.5, small2 1 × 20 = 20, huge 1.5 × 5 = 7.5
    expect(r.allocations.map((a) => [a.taskId, a.decision, a.startInMinutes])).toEqual([
      ['huge', 'infeasible', null],
      ['small1', 'run_now', 0],
      ['small2', 'run_now', 0],
      ['big', 'queue', 20],
    ]);
    expect(r.utilization).toEqual({ gpuPercent: 100, cpuPercent: 75 });
    expect(r.idle).toEqual({ gpus: 0, cpus: 1 });
    expect(r.priorityCoveredPercent).toBe(17.65); // 3 / 17
    expect(r.score).toBe(50); // 82.5 − 0.3 × 100 × 1/6 idle = 77.5, capped at 50: "huge" can never run
  });

  it('deadline strategy: earliest deadline first, then priority', async () => {
    const r = await api().computeAllocation({ body: { ...small, strategy: 'deadline' } });
    expect(r.allocations.map((a) => a.taskId)).toEqual(['big', 'huge', 'small2', 'small1']);
  });

  it('422 nothing_schedulable when no task needs a GPU or CPU', async () => {
    const error = await api()
      .computeAllocation({
        body: { compute: small.compute, tasks: [{ id: 'think', priority: 3, estimatedMinutes: 5 }] },
      })
      .catch((e) => e);
    expect(error).toBeInstanceOf(UnprocessableEntityError);
    expect(error.code).toBe('nothing_schedulable');
  });
});

describe('inference cost', () => {
  const task = {
    inputTokens: 12000,
    outputTokens: 800,
    minAccuracy: 0.85,
    valueUsd: '0.40',
    errorCostUsd: '0.10',
    latencyBudgetMs: 10000,
  };

  it('picks the heavy model when the light one misses the accuracy floor', async () => {
    const r = await api().inferenceCost({ body: { task, models } });
    // light: 12000 × 0.05 / 1e6 + 800 × 0.08 / 1e6 = 0.000664; heavy: 0.036 + 0.012 = 0.048
    // EV light 0.78 × 0.40 − 0.22 × 0.10 − 0.000664 = 0.289336; heavy 0.372 − 0.007 − 0.048 = 0.317
    expect(r.evaluations).toEqual([
      {
        tier: 'light',
        name: 'small-8b',
        costUsd: '0.000664',
        expectedAccuracy: 0.78,
        expectedValueUsd: '0.289336',
        latencyMs: 900,
        meetsAccuracy: false,
        meetsLatency: true,
      },
      {
        tier: 'heavy',
        name: 'frontier-large',
        costUsd: '0.048',
        expectedAccuracy: 0.93,
        expectedValueUsd: '0.317',
        latencyMs: 6500,
        meetsAccuracy: true,
        meetsLatency: true,
      },
    ]);
    expect(r.choice).toBe('heavy');
    expect(r.costRatio).toBe(72.2892); // 48000 / 664
    expect(r.breakEvenValueUsd).toBe('0.215574'); // (0.048 − 0.000664) / 0.15 − 0.10, rounded up
    expect(r.savingsUsd).toBe('0');
    expect([r.score, r.status]).toEqual([100, 'ok']);
  });

  it('picks the light model when both qualify and it has the higher expected value', async () => {
    const r = await api().inferenceCost({
      body: { task: { ...task, minAccuracy: 0.7, valueUsd: '0.01', errorCostUsd: undefined }, models },
    });
    // 0.0078 − 0.000664; 0.0093 − 0.048
    expect(r.evaluations.map((e) => e.expectedValueUsd)).toEqual(['0.007136', '-0.0387']);
    expect(r.choice).toBe('light');
    expect(r.savingsUsd).toBe('0.047336');
    expect(r.breakEvenValueUsd).toBe('0.315574');
  });

  it('respects the latency budget', async () => {
    const r = await api().inferenceCost({
      body: { task: { ...task, minAccuracy: 0.7, latencyBudgetMs: 1000 }, models },
    });
    expect(r.evaluations.map((e) => e.meetsLatency)).toEqual([true, false]);
    expect(r.choice).toBe('light');
  });

  it('falls back to the more accurate model when neither meets the floor, and says so in its score', async () => {
    const r = await api().inferenceCost({ body: { task: { ...task, minAccuracy: 0.95 }, models } });
    expect(r.choice).toBe('heavy');
    expect([r.score, r.status]).toEqual([30, 'critical']);
    expect(r.actions.join(' ')).toContain('Neither model meets');
  });
});

describe('memory compression', () => {
  const items = [
    // retention = 0.5 × importance + 0.3 × recency + 0.2 × ln(1 + accesses) / ln(1 + 9)
    // 0.95
    { id: 'a', kind: 'semantic', tokens: 300, importance: 0.9, accessCount: 9, lastAccessedAt: FUTURE, pinned: true },
    // 0.2 + 0.2 × log10(4) = 0.320412
    { id: 'b', kind: 'episodic', tokens: 200, importance: 0.4, accessCount: 3, lastAccessedAt: ANCIENT },
    // 0.1 + 0.3 = 0.4
    { id: 'c', kind: 'working', tokens: 150, importance: 0.2, accessCount: 0, lastAccessedAt: FUTURE },
    // 0.05 + 0.2 × log10(2) = 0.110206
    { id: 'd', kind: 'procedural', tokens: 100, importance: 0.1, accessCount: 1, lastAccessedAt: ANCIENT },
    { id: 'e', kind: 'semantic', tokens: 250, importance: 0.1, accessCount: 0, lastAccessedAt: ANCIENT }, // 0.05
  ] as const;

  it('forgets the worst, summarizes middling episodic memory, keeps pinned and the best', async () => {
    const r = await api().memoryCompression({
      body: { capacityTokens: 1000, items: [...items], targetUtilization: 0.5 },
    });
    expect(r.decisions.map((d) => [d.id, d.action, d.retentionScore, d.tokensAfter])).toEqual([
      ['a', 'keep', 0.95, 300],
      ['b', 'summarize', 0.3204, 50], // ceil(200 × 0.25)
      ['c', 'keep', 0.4, 150],
      ['d', 'forget', 0.1102, 0],
      ['e', 'forget', 0.05, 0],
    ]);
    // 1000 → forget e (750) → forget d (650) → summarize b (500): fits the 500-token target
    expect(r.tokens).toEqual({ capacity: 1000, before: 1000, after: 500, freed: 500 });
    expect(r.counts).toEqual({ keep: 2, summarize: 1, forget: 2 });
    expect([r.utilizationBefore, r.utilizationAfter]).toEqual([1, 0.5]);
    expect([r.targetUtilization, r.halfLifeHours, r.summaryRatio]).toEqual([0.5, 72, 0.25]);
    expect([r.score, r.status]).toEqual([0, 'critical']); // twice the target: 100 × (1 − 500 / 500)
  });

  it('forgets summarized items too when summaries alone do not fit', async () => {
    const pinnedC = items.map((i) => (i.id === 'c' ? { ...i, pinned: true } : i));
    const r = await api().memoryCompression({
      body: { capacityTokens: 1000, items: pinnedC, targetUtilization: 0.5, summaryRatio: 0.9 },
    });
    // forget e (750), forget d (650), summarize b to 180 (630 > 500), then forget b too (450)
    expect(r.decisions.map((d) => d.action)).toEqual(['keep', 'forget', 'keep', 'forget', 'forget']);
    expect(r.tokens.after).toBe(450);
  });

  it('keeps everything when memory already fits', async () => {
    const r = await api().memoryCompression({ body: { capacityTokens: 10_000, items: [...items] } });
    expect(r.counts).toEqual({ keep: 5, summarize: 0, forget: 0 });
    expect(r.tokens.freed).toBe(0);
    expect(r.score).toBe(100);
  });

  it('ages memory by the service clock: read one half-life before its now, an item keeps half its recency', async () => {
    const readAt = '2026-04-10T00:00:00.000Z';
    const pinned = await startService(
      (c) => createCognitionApp({ ...c, prices: FREE }, { now: () => Date.parse(readAt) + 72 * 3_600_000 }),
      { id: 'cognition' },
    );
    try {
      const item = {
        id: 'x',
        kind: 'semantic',
        tokens: 10,
        importance: 0.5,
        accessCount: 0,
        lastAccessedAt: readAt,
      } as const;
      const r = await clientOf(alice, pinned.url).memoryCompression({
        body: { capacityTokens: 10_000, items: [item] },
      });
      // 0.5 × 0.5 + 0.3 × 2^(−72 h / 72 h) + 0.2 × 0 (nothing was accessed) = 0.4
      expect(r.decisions[0]!.retentionScore).toBe(0.4);
    } finally {
      await pinned.close();
    }
  });

  it('422 pinned_exceeds_target', async () => {
    const error = await api()
      .memoryCompression({ body: { capacityTokens: 500, items: [...items], targetUtilization: 0.5 } })
      .catch((e) => e);
    expect(error).toBeInstanceOf(UnprocessableEntityError);
    expect(error.code).toBe('pinned_exceeds_target');
    expect(error.details).toEqual({ pinnedTokens: 300, targetTokens: 250 });
  });
});

describe('context relevance', () => {
  it('ranks by BM25 against the goal, adds recency, fills the budget and names the irrelevant', async () => {
    const r = await api().contextRelevance({
      body: {
        goal: 'Buy the Solana module',
        items: [
          { id: 'x', text: 'solana module audit', addedAt: FUTURE },
          { id: 'y', text: 'weather report sunny', addedAt: FUTURE },
          { id: 'z', text: 'module module pricing', tokens: 10 },
        ],
        tokenBudget: 12,
      },
    });
    expect(r.goalTerms).toEqual(['buy', 'solana', 'module']);
    // N = 3, every item 3 terms long (so the length norm is k1 = 1.2):
    // idf(solana) = ln(1 + 2.5 / 1.5) = 0.980829, idf(module) = ln(1 + 1.5 / 2.5) = 0.470004
    // x: 0.980829 + 0.470004 = 1.450833; z: 0.470004 × (2 × 2.2) / (2 + 1.2) = 0.646255
    // relevance x = 0.8 + 0.2 × 1 = 1; z = 0.8 × 0.646255 / 1.450833 = 0.356347 (no addedAt: no recency part)
    expect(r.ranking).toEqual([
      {
        id: 'x',
        rank: 1,
        relevance: 1,
        bm25: 1.4508,
        recency: 1,
        matchedTerms: ['solana', 'module'],
        tokens: 5,
        include: true,
      },
      {
        id: 'z',
        rank: 2,
        relevance: 0.3563,
        bm25: 0.6463,
        recency: null,
        matchedTerms: ['module'],
        tokens: 10,
        include: false,
      },
      { id: 'y', rank: 3, relevance: 0, bm25: 0, recency: 1, matchedTerms: [], tokens: 5, include: false },
    ]);
    expect([r.includedTokens, r.includedItems, r.excludedItems]).toEqual([5, 1, 2]);
    expect(r.irrelevant).toEqual(['y']);
    // 100 × (0.5 × 1 / 1.356347 + 0.5 × (1 − 5 / 20)) = 74.36
    expect([r.score, r.status]).toEqual([74.4, 'warning']);
  });

  it('a goal of stop words cannot be scored: 422 goal_unscorable', async () => {
    const r = await api()
      .contextRelevance({
        body: { goal: 'what is this about', items: [{ id: 'x', text: 'anything at all' }], tokenBudget: 100 },
      })
      .catch((e) => e);
    expect(r).toBeInstanceOf(UnprocessableEntityError);
    expect(r).toMatchObject({ code: 'goal_unscorable', details: { field: 'body.goal' } });
  });
});

describe('decision complexity', () => {
  it('an irreversible, uncertain, novel choice among 1,024 options: System 2 with verification', async () => {
    const r = await api().decisionComplexity({
      body: { options: 1024, stakesUsd: '0', reversibility: 0, uncertainty: 1, novelty: 1, timeBudgetSeconds: 3600 },
    });
    expect(r.factors.map((f) => [f.factor, f.value, f.contribution])).toEqual([
      ['stakes', 0, 0],
      ['irreversibility', 1, 25],
      ['uncertainty', 1, 20],
      ['novelty', 1, 15],
      ['option_count', 1, 10],
      ['time_pressure', 0, 0], // an hour: no pressure
      ['track_record', 0, 0],
    ]);
    expect(r.complexityScore).toBe(70);
    expect(r.mode).toBe('system2');
    // steps round(1 + 9 × 0.7) = 7; tokens round(256 × 2^4.2) = 4705; 3 samples below 0.75; deadline 0.9 × 3600
    expect(r.budget).toEqual({
      reasoningSteps: 7,
      maxReasoningTokens: 4705,
      samples: 3,
      model: 'heavy',
      verify: true,
      deadlineSeconds: 3240,
    });
    expect(r.timeSufficient).toBe(true); // 4705 / 50 × 1.5 = 141 s
    expect(r.score).toBe(100);
  });

  it('a routine, reversible choice under time pressure: System 1, and the time does not suffice', async () => {
    const r = await api().decisionComplexity({
      body: {
        options: 2,
        stakesUsd: '10000',
        reversibility: 1,
        uncertainty: 0,
        novelty: 0,
        timeBudgetSeconds: 1,
        pastAccuracy: 0.4,
      },
    });
    const pressure = 1 - Math.log10(2) / Math.log10(3601);
    const complexity = 30 + 10 * 0.1 - 10 * pressure - 10 * 0.4; // stakes 1, log2(2) / 10, pressure, track record
    expect(r.complexityScore).toBeCloseTo(complexity, 2);
    expect(r.complexityScore).toBeCloseTo(17.85, 2);
    expect(r.mode).toBe('system1');
    const tokens = Math.round(256 * 2 ** (6 * (complexity / 100)));
    expect(tokens).toBe(538);
    expect(r.budget).toEqual({
      reasoningSteps: 3,
      maxReasoningTokens: 538,
      samples: 1,
      model: 'light',
      verify: false,
      deadlineSeconds: 0.9,
    });
    expect(r.timeSufficient).toBe(false); // 538 / 200 = 2.69 s > 0.9 s
    expect(r.score).toBe(33.5); // 100 × 0.9 / 2.69
  });
});

describe('explore versus exploit', () => {
  it('UCB1: the less-tried arm has the higher bound, so it explores', async () => {
    const r = await api().exploreExploit({
      body: {
        arms: [
          { id: 'a', trials: 10, meanReward: 0.6 },
          { id: 'b', trials: 5, meanReward: 0.4 },
        ],
        remainingDecisions: 1000,
      },
    });
    // N = 15: bonus a = sqrt(2 ln 15 / 10) = 0.735942, b = sqrt(2 ln 15 / 5) = 1.040779
    expect(r.arms.map((a) => [a.id, a.index, a.explorationBonus])).toEqual([
      ['a', 1.3359, 0.7359],
      ['b', 1.4408, 1.0408],
    ]);
    expect([r.strategy, r.chosenArm, r.bestKnownArm, r.decision]).toEqual(['ucb1', 'b', 'a', 'explore']);
    expect(r.totalTrials).toBe(15);
    expect(r.explorationRate).toBe(0.3333); // 5 of 15
    expect(r.recommendedExplorationRate).toBe(0.126); // (2 / 1000)^(1/3)
    expect(r.estimatedRegret).toBe(1); // 5 × (0.6 − 0.4)
    expect(r.score).toBe(79.3); // 100 × (1 − |0.3333 − 0.1260|)
  });

  it('tries an untried arm first', async () => {
    const r = await api().exploreExploit({
      body: {
        arms: [
          { id: 'a', trials: 10, meanReward: 0.6 },
          { id: 'b', trials: 5, meanReward: 0.4 },
          { id: 'c', trials: 0, meanReward: 0.9 },
        ],
      },
    });
    expect([r.chosenArm, r.decision]).toEqual(['c', 'explore']);
    expect(r.arms[2]).toMatchObject({ meanReward: 0, index: 4.2912, explorationBonus: 3.2912 }); // 1 + sqrt(4 ln 15)
  });

  it('Thompson: probability of being best matches the Beta posteriors, reproducibly', async () => {
    const body = {
      arms: [
        { id: 'won', trials: 1, meanReward: 1 },
        { id: 'lost', trials: 1, meanReward: 0 },
      ],
      strategy: 'thompson' as const,
      seed: 42,
    };
    const r = await api().exploreExploit({ body });
    // P(X > Y) for X ~ Beta(2, 1), Y ~ Beta(1, 2) = ∫ 2x (1 − (1 − x)²) dx = 5/6
    expect(Math.abs(r.arms[0]!.probabilityBest - 5 / 6)).toBeLessThan(0.015);
    expect(r.arms[0]!.probabilityBest + r.arms[1]!.probabilityBest).toBeCloseTo(1, 6);
    const again = await api().exploreExploit({ body });
    expect(again.arms).toEqual(r.arms);
    expect(again.chosenArm).toBe(r.chosenArm);
  });

  it('epsilon-greedy with epsilon 0 always exploits the best mean', async () => {
    const r = await api().exploreExploit({
      body: {
        arms: [
          { id: 'a', trials: 10, meanReward: 0.6 },
          { id: 'b', trials: 50, meanReward: 0.7 },
        ],
        strategy: 'epsilon-greedy',
        epsilon: 0,
      },
    });
    expect([r.chosenArm, r.decision]).toEqual(['b', 'exploit']);
    expect(r.arms.map((a) => a.index)).toEqual([0.6, 0.7]);
    expect(r.arms.map((a) => a.explorationBonus)).toEqual([0, 0]);
  });
});

describe('confidence calibration', () => {
  it('ECE, MCE, Brier and log loss by hand; overconfident', async () => {
    const r = await api().confidenceCalibration({
      body: {
        predictions: predictions([
          [0.9, 3, 2],
          [0.3, 2, 3],
        ]),
        bins: 5,
      },
    });
    expect([r.count, r.accuracy, r.meanConfidence, r.overconfidence]).toEqual([10, 0.5, 0.6, 0.1]);
    expect(r.ece).toBe(0.2); // 0.5 × |0.6 − 0.9| + 0.5 × |0.4 − 0.3|
    expect(r.mce).toBe(0.3);
    expect(r.brierScore).toBe(0.29); // (3 × 0.01 + 2 × 0.81 + 2 × 0.49 + 3 × 0.09) / 10
    expect(r.logLoss).toBe(0.8399); // −(3 ln 0.9 + 2 ln 0.1 + 2 ln 0.3 + 3 ln 0.7) / 10
    expect(r.verdict).toBe('overconfident');
    expect(r.bins).toEqual([
      { lower: 0, upper: 0.2, count: 0, meanConfidence: null, accuracy: null, gap: null },
      { lower: 0.2, upper: 0.4, count: 5, meanConfidence: 0.3, accuracy: 0.4, gap: -0.1 },
      { lower: 0.4, upper: 0.6, count: 0, meanConfidence: null, accuracy: null, gap: null },
      { lower: 0.6, upper: 0.8, count: 0, meanConfidence: null, accuracy: null, gap: null },
      { lower: 0.8, upper: 1, count: 5, meanConfidence: 0.9, accuracy: 0.6, gap: 0.3 },
    ]);
    expect([r.score, r.status]).toEqual([20, 'critical']); // 100 × (1 − 4 × 0.2)
  });

  it('temperature scaling: one confidence level calibrates at logit(p) / logit(accuracy)', async () => {
    const over = await api().confidenceCalibration({ body: { predictions: predictions([[0.8, 6, 4]]) } });
    expect(over.temperature).toBeCloseTo(Math.log(4) / Math.log(1.5), 2); // 1.386294 / 0.405465 = 3.419
    const under = await api().confidenceCalibration({ body: { predictions: predictions([[0.6, 9, 1]]) } });
    expect(under.verdict).toBe('underconfident');
    expect(under.temperature).toBeCloseTo(Math.log(1.5) / Math.log(9), 2); // 0.1845: sharpen
    const calibrated = await api().confidenceCalibration({ body: { predictions: predictions([[0.7, 7, 3]]) } });
    expect([calibrated.verdict, calibrated.ece, calibrated.score]).toEqual(['well_calibrated', 0, 100]);
    expect(calibrated.temperature).toBeCloseTo(1, 2);
  });
});

describe('overthinking detector', () => {
  const steps = [
    { step: 1, tokens: 800, quality: 0.52 },
    { step: 2, tokens: 900, quality: 0.71 },
    { step: 3, tokens: 1100, quality: 0.8 },
    { step: 4, tokens: 1500, quality: 0.81 },
    { step: 5, tokens: 2200, quality: 0.815 },
    { step: 6, tokens: 3000, quality: 0.82 },
  ];

  it('finds the knee where two steps in a row gain under 0.01 per 1,000 tokens', async () => {
    const r = await api().overthinking({ body: { steps: [...steps].reverse() } }); // order of the input does not matter
    expect(r.steps.map((s) => s.gainPer1kTokens)).toEqual([0.65, 0.211111, 0.081818, 0.006667, 0.002273, 0.001667]);
    expect(r.kneeStep).toBe(3);
    expect([r.totalTokens, r.tokensAfterKnee, r.wastedShare]).toEqual([9500, 6700, 0.7053]);
    expect([r.qualityAtKnee, r.finalQuality, r.qualityGainAfterKnee]).toEqual([0.8, 0.82, 0.02]);
    expect(r.recommendedTokenBudget).toBe(3080); // 2800 + 10 %
    expect(r.overthinking).toBe(true);
    expect([r.score, r.status]).toEqual([29.5, 'critical']);
  });

  it('patience 4 finds no run of four low-gain steps', async () => {
    const r = await api().overthinking({ body: { steps, patience: 4 } });
    expect([r.kneeStep, r.overthinking, r.tokensAfterKnee, r.recommendedTokenBudget, r.score]).toEqual([
      null,
      false,
      0,
      10450,
      100,
    ]);
  });

  it('steady gains: no knee', async () => {
    const r = await api().overthinking({
      body: {
        steps: [
          { step: 1, tokens: 1000, quality: 0.2 },
          { step: 2, tokens: 1000, quality: 0.4 },
          { step: 3, tokens: 1000, quality: 0.6 },
        ],
      },
    });
    expect([r.kneeStep, r.qualityAtKnee, r.recommendedTokenBudget]).toEqual([null, 0.6, 3300]);
  });
});

describe('cognitive load', () => {
  it('moves work from overloaded agents to the least-loaded one with the skills', async () => {
    const r = await api().cognitiveLoad({ body: { agents: exampleTeam, tasks: exampleTasks } });
    expect(r.before.map((a) => [a.agentId, a.assignedMinutes, a.utilization, a.status])).toEqual([
      ['researcher-1', 65, 1.0833, 'overloaded'],
      ['trainer-1', 180, 1.5, 'overloaded'],
      ['analyst-1', 0, 0, 'underloaded'],
    ]);
    // fine-tune (180 min, needs training) fits nobody; embed-corpus (40) goes to analyst-1: 40 / 90 ≤ 0.85
    expect(r.moves.map((m) => [m.taskId, m.from, m.to, m.minutes])).toEqual([
      ['embed-corpus', 'researcher-1', 'analyst-1', 40],
    ]);
    expect(r.after.map((a) => [a.agentId, a.utilization, a.status])).toEqual([
      ['researcher-1', 0.4167, 'underloaded'],
      ['trainer-1', 1.5, 'overloaded'],
      ['analyst-1', 0.4444, 'balanced'],
    ]);
    expect([r.imbalanceBefore, r.imbalanceAfter]).toEqual([0.7342, 0.6407]); // population sd / mean
    expect(r.unplaced).toEqual([]);
    expect([r.score, r.status]).toEqual([52, 'warning']); // 100 − 50 × 2/3 − 20 × 0.734181
  });

  it('places unassigned tasks, largest first, and reports those nobody can take', async () => {
    const r = await api().cognitiveLoad({
      body: {
        agents: [
          { id: 'p', capacityMinutes: 100, skills: ['go'] },
          { id: 'q', capacityMinutes: 100, skills: [] },
        ],
        tasks: [
          { id: 't1', priority: 5, estimatedMinutes: 30 },
          { id: 't2', priority: 5, estimatedMinutes: 50 },
          { id: 't3', priority: 5, estimatedMinutes: 10, requiredSkills: ['rust'] },
        ],
        targetUtilization: 0.8,
      },
    });
    // t2 (50) to p (tie at 0: more room, then order), t1 (30) to q (now the least loaded)
    expect(r.moves.map((m) => [m.taskId, m.from, m.to])).toEqual([
      ['t2', null, 'p'],
      ['t1', null, 'q'],
    ]);
    expect(r.unplaced).toEqual(['t3']);
    expect(r.after.map((a) => a.utilization)).toEqual([0.5, 0.3]);
    // 100 − 30 × 3/3 unassigned = 70, capped at 50 while t3 is unplaced; nobody overloaded, imbalance 0 (mean 0)
    expect(r.score).toBe(50);
  });

  it('422 unknown_agent when a task names an agent not in the team', async () => {
    const error = await api()
      .cognitiveLoad({
        body: { agents: exampleTeam, tasks: [{ id: 't', priority: 1, estimatedMinutes: 5, assignedTo: 'ghost' }] },
      })
      .catch((e) => e);
    expect(error).toBeInstanceOf(UnprocessableEntityError);
    expect(error.code).toBe('unknown_agent');
  });
});

describe('performance drift', () => {
  it('detects a major degradation: Welch t-test, trend and CUSUM change point', async () => {
    const r = await api().performanceDrift({
      body: { scores: [...driftScores].reverse(), baselineSize: 6, recentSize: 6 },
    });
    expect(r.baseline).toEqual({ from: day(0), to: day(5), count: 6, mean: 0.825, stdDev: 0.0187 });
    expect(r.recent).toEqual({ from: day(6), to: day(11), count: 6, mean: 0.715, stdDev: 0.0418 });
    expect([r.delta, r.relativeChange]).toEqual([-0.11, -0.1333]);
    expect(r.tStatistic).toBe(-5.8797); // scipy: -5.879747
    expect(r.pValue).toBeCloseTo(0.000637441, 6); // scipy: 0.0006374414
    expect(r.slopePerDay).toBeCloseTo(-0.01671329, 6); // numpy.polyfit
    // lower CUSUM with k = σ/2, h = 5σ (σ = 0.018708) first exceeds h at index 7
    expect(r.changePoint).toEqual({ index: 7, at: day(7) });
    expect([r.drifting, r.direction, r.severity]).toEqual([true, 'degrading', 'major']);
    expect([r.score, r.status]).toEqual([60, 'warning']); // 100 − 300 × 0.1333
  });

  it('a flat series is stable', async () => {
    const scores = [0.8, 0.9, 0.8, 0.9, 0.8, 0.9, 0.8, 0.9, 0.8, 0.9].map((score, d) => ({ at: day(d), score }));
    const r = await api().performanceDrift({ body: { scores } });
    // default windows: half (5) against a quarter, at least 5
    expect([r.baseline.count, r.recent.count, r.baseline.mean, r.recent.mean]).toEqual([5, 5, 0.84, 0.86]);
    expect([r.drifting, r.direction, r.severity, r.score, r.changePoint]).toEqual([false, 'stable', 'none', 100, null]);
  });

  it('422 window_too_large', async () => {
    const error = await api()
      .performanceDrift({ body: { scores: driftScores, baselineSize: 8, recentSize: 5 } })
      .catch((e) => e);
    expect(error).toBeInstanceOf(UnprocessableEntityError);
    expect(error.code).toBe('window_too_large');
  });
});

describe('cognitive state', () => {
  it('writes groups, bumps the version, replaces only the groups sent, and reads them back', async () => {
    const first = await api().updateState({
      body: {
        agentId: 'planner-7',
        compute: { gpus: { total: 4, available: 3 }, cpus: { total: 32, available: 20 } },
        tasks: { queue: exampleTasks },
      },
    });
    expect(first).toMatchObject({ agentId: 'planner-7', owner: alice.address, version: 1 });
    expect(Object.keys(first.groupUpdatedAt).sort()).toEqual(['compute', 'tasks']);
    const second = await api().updateState({
      body: { agentId: 'planner-7', expectedVersion: 1, tasks: { queue: [], team: exampleTeam } },
    });
    expect(second.version).toBe(2);
    expect(second.state.compute).toEqual(first.state.compute);
    expect(second.state.tasks).toEqual({ queue: [], team: exampleTeam });
    expect(second.createdAt).toBe(first.createdAt);

    const all = await api().getState({ params: { agentId: 'planner-7' }, body: {} });
    expect(all).toEqual(second);
    const some = await api().getState({ params: { agentId: 'planner-7' }, body: { groups: ['tasks', 'memory'] } });
    expect(some.state).toEqual({ tasks: second.state.tasks });
    expect(Object.keys(some.groupUpdatedAt)).toEqual(['tasks']);
  });

  it('keeps each wallet’s agents apart', async () => {
    await api().updateState({
      body: {
        agentId: 'shared-name',
        memory: {
          capacityTokens: 100,
          items: [{ id: 'm', kind: 'working', tokens: 10, importance: 0.5, accessCount: 1, lastAccessedAt: FUTURE }],
        },
      },
    });
    const error = await clientOf(bob)
      .getState({ params: { agentId: 'shared-name' }, body: {} })
      .catch((e) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error.code).toBe('state_not_found');
    const bobs = await clientOf(bob).updateState({ body: { agentId: 'shared-name', tasks: { queue: [] } } });
    expect([bobs.owner, bobs.version]).toEqual([bob.address, 1]);
  });

  it('409 version_conflict on a stale expectedVersion, and nothing changes', async () => {
    await api().updateState({ body: { agentId: 'racer', tasks: { queue: [] } } });
    const error = await api()
      .updateState({ body: { agentId: 'racer', expectedVersion: 5, tasks: { queue: exampleTasks } } })
      .catch((e) => e);
    expect(error).toBeInstanceOf(ConflictError);
    expect(error.code).toBe('version_conflict');
    expect(error.details).toEqual({ expectedVersion: 5, currentVersion: 1 });
    const none = await api()
      .updateState({ body: { agentId: 'newcomer', expectedVersion: 1, tasks: { queue: [] } } })
      .catch((e) => e);
    expect(none).toBeInstanceOf(ConflictError);
    const state = await api().getState({ params: { agentId: 'racer' }, body: {} });
    expect([state.version, state.state.tasks]).toEqual([1, { queue: [] }]);
    await expect(api().getState({ params: { agentId: 'newcomer' }, body: {} })).rejects.toBeInstanceOf(NotFoundError);
  });

  it('needs SIGN-IN-WITH-X', async () => {
    const error = await clientOf()
      .updateState({ body: { agentId: 'anon', tasks: { queue: [] } } })
      .catch((e) => e);
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error.code).toBe('siwx_invalid');
  });

  it('survives a restart: a new server on the same database reads the state', async () => {
    await api().updateState({ body: { agentId: 'durable', performance: { qualityHistory: driftScores } } });
    const restarted = await startService(freeApp, { id: 'cognition', database: service.database });
    try {
      const state = await clientOf(alice, restarted.url).getState({ params: { agentId: 'durable' }, body: {} });
      expect(state.state.performance?.qualityHistory).toEqual(driftScores);
    } finally {
      await restarted.stopServer();
    }
  });
});

describe('full diagnostic', () => {
  const state: CognitiveState = {
    compute: { gpus: { total: 4, available: 3 }, cpus: { total: 32, available: 20 }, models },
    tasks: { queue: exampleTasks, team: exampleTeam },
    performance: {
      predictions: predictions([
        [0.9, 3, 2],
        [0.3, 2, 3],
      ]),
      qualityHistory: driftScores,
    },
    reasoning: {
      approaches: [
        { id: 'a', trials: 10, meanReward: 0.6 },
        { id: 'b', trials: 5, meanReward: 0.4 },
      ],
    },
  };

  it('runs every analysis the stored state allows, skips the others, and grades the mean score', async () => {
    const stored = await api().updateState({ body: { agentId: 'diag', ...state } });
    const report = await api().fullDiagnostic({ body: { agentId: 'diag' } });
    expect(report.stateVersion).toBe(stored.version);
    const ran = [
      'compute-allocation',
      'explore-exploit',
      'confidence-calibration',
      'cognitive-load',
      'performance-drift',
    ];
    expect(report.entries.filter((e) => e.status !== 'skipped').map((e) => e.analysis)).toEqual(ran);
    expect([report.analysesRun, report.analysesSkipped]).toEqual([5, 5]);
    expect(report.entries.find((e) => e.analysis === 'memory-compression')).toMatchObject({
      status: 'skipped',
      score: null,
      headline: 'skipped: missing memory',
      skippedReason: 'missing memory',
    });
    expect(report.entries.find((e) => e.analysis === 'inference-cost')?.skippedReason).toBe(
      'missing reasoning.nextInference',
    );
    // Default options of each route: the same numbers as the single analyses above.
    const scores = report.entries.map((e) => e.score).filter((s): s is number => s !== null);
    // explore-exploit without remainingDecisions: horizon max(N, K) = 15, advised (2/15)^(1/3) = 0.5109 → 82.2;
    // calibration with 10 bins: the same two bins, ECE 0.2 → 20; drift with the default windows 6 and 5:
    // recent mean 0.702, −14.91 % → 55.3
    expect(scores).toEqual([83, 82.2, 20, 52, 55.3]);
    expect(report.score).toBe(58.5);
    expect(report.grade).toBe('F'); // below 60
    expect(report.health).toBe('critical');
    expect(Object.keys(report.results).sort()).toEqual([
      'cognitiveLoad',
      'computeAllocation',
      'confidenceCalibration',
      'exploreExploit',
      'performanceDrift',
    ]);
    expect(report.results.performanceDrift!.changePoint).toEqual({ index: 7, at: day(7) });
    expect(report.topActions.length).toBeGreaterThan(0);
    expect(report.topActions.length).toBeLessThanOrEqual(5);
    // The worst analysis (calibration, 20) leads the actions.
    expect(report.topActions[0]).toBe(report.results.confidenceCalibration!.actions[0]);
    expect(report.summary).toContain('grade F');
    expect(report.generator.engine).toBe('builtin');
  });

  it('groups sent with the request override the stored ones for that run only', async () => {
    const calibrated = { performance: { predictions: predictions([[0.7, 7, 3]]) } };
    const report = await api().fullDiagnostic({ body: { agentId: 'diag', state: calibrated } });
    expect(report.results.confidenceCalibration!.verdict).toBe('well_calibrated');
    expect(report.results.performanceDrift).toBeUndefined(); // the whole performance group was replaced
    const stored = await api().getState({ params: { agentId: 'diag' }, body: { groups: ['performance'] } });
    expect(stored.state.performance?.qualityHistory).toEqual(driftScores); // not saved
  });

  it('runs on the request’s state alone when nothing is stored', async () => {
    const report = await api().fullDiagnostic({
      body: {
        agentId: 'ephemeral',
        state: {
          reasoning: {
            trace: [
              { step: 1, tokens: 1000, quality: 0.2 },
              { step: 2, tokens: 1000, quality: 0.4 },
            ],
          },
        },
      },
    });
    expect([report.stateVersion, report.analysesRun, report.score, report.grade, report.health]).toEqual([
      null,
      1,
      100,
      'A',
      'healthy',
    ]);
  });

  it('404 state_not_found without a stored state or a state; 422 state_incomplete when nothing can run', async () => {
    const missing = await api()
      .fullDiagnostic({ body: { agentId: 'nobody' } })
      .catch((e) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(missing.code).toBe('state_not_found');
    const incomplete = await api()
      .fullDiagnostic({ body: { agentId: 'nobody', state: { tasks: { queue: [] } } } })
      .catch((e) => e);
    expect(incomplete).toBeInstanceOf(UnprocessableEntityError);
    expect(incomplete.code).toBe('state_incomplete');
  });

  it('an analysis whose domain rule fails on the state is skipped with the reason', async () => {
    const memory = {
      capacityTokens: 100,
      items: [
        {
          id: 'm',
          kind: 'semantic' as const,
          tokens: 90,
          importance: 1,
          accessCount: 1,
          lastAccessedAt: FUTURE,
          pinned: true,
        },
      ],
    };
    const report = await api().fullDiagnostic({
      body: { agentId: 'nobody', state: { memory, reasoning: state.reasoning } },
    });
    expect(report.entries.find((e) => e.analysis === 'memory-compression')?.skippedReason).toContain(
      'Pinned items hold 90 tokens',
    );
    expect(report.analysesRun).toBe(1);
  });
});

describe('advice through a configured LLM', () => {
  let provider: Server;
  const seen: any[] = [];
  beforeAll(async () => {
    // A local stand-in for an OpenAI-compatible provider, answering in the Chat Completions format.
    provider = createServer(async (req, res) => {
      let text = '';
      for await (const chunk of req) text += chunk;
      const body = JSON.parse(text);
      seen.push(body);
      const diagnostic = String(body.messages[0].content).includes('health report');
      const content = diagnostic
        ? { summary: 'LLM summary.', topActions: ['LLM action.'] }
        : { recommendation: 'LLM recommendation.', actions: ['LLM step one.'] };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'chatcmpl-1',
          object: 'chat.completion',
          created: 1,
          model: body.model,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: JSON.stringify(content) },
              finish_reason: 'stop',
              logprobs: null,
            },
          ],
        }),
      );
    });
    await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => provider.close(() => resolve())));

  it('the words come from the model, the numbers from the analysis; the answer names the model', async () => {
    const reasoner = openAiReasoner({
      baseUrl: `http://127.0.0.1:${(provider.address() as { port: number }).port}/v1`,
      model: 'advisor-1',
    });
    const llm = await startService(freeApp, { id: 'cognition', reasoner });
    try {
      const steps = [
        { step: 1, tokens: 1000, quality: 0.2 },
        { step: 2, tokens: 1000, quality: 0.4 },
      ];
      const r = await clientOf(alice, llm.url).overthinking({ body: { steps } });
      expect([r.recommendation, r.actions, r.generator]).toEqual([
        'LLM recommendation.',
        ['LLM step one.'],
        { engine: 'llm', model: 'advisor-1' },
      ]);
      expect([r.kneeStep, r.recommendedTokenBudget]).toEqual([null, 2200]);
      // The model was given the computed result to explain.
      expect(JSON.parse(seen.at(-1).messages[1].content)).toMatchObject({
        analysis: 'overthinking-detector',
        totalTokens: 2000,
      });
      const report = await clientOf(alice, llm.url).fullDiagnostic({
        body: { agentId: 'llm', state: { reasoning: { trace: steps } } },
      });
      expect([
        report.summary,
        report.topActions,
        report.generator.engine,
        report.results.overthinkingDetector!.generator.model,
      ]).toEqual(['LLM summary.', ['LLM action.'], 'llm', 'advisor-1']);
    } finally {
      await llm.close();
    }
  });
});

describe('bad input gets a 400 naming the field, and stores nothing', () => {
  const compute = { gpus: { total: 4, available: 3 }, cpus: { total: 32, available: 20 } };
  const arms = [
    { id: 'a', trials: 1, meanReward: 0.5 },
    { id: 'b', trials: 1, meanReward: 0.5 },
  ];
  const memoryItem = { id: 'm', kind: 'working', tokens: 10, importance: 0.5, accessCount: 1, lastAccessedAt: FUTURE };
  const cases: [string, string, unknown, string[]][] = [
    [
      'computeAllocation',
      'available above total',
      { compute: { ...compute, gpus: { total: 1, available: 2 } }, tasks: exampleTasks },
      ['body.compute.gpus.available'],
    ],
    ['computeAllocation', 'no tasks', { compute, tasks: [] }, ['body.tasks']],
    ['computeAllocation', 'unknown strategy', { compute, tasks: exampleTasks, strategy: 'fastest' }, ['body.strategy']],
    [
      'computeAllocation',
      'priority 11',
      { compute, tasks: [{ ...exampleTasks[0], priority: 11 }] },
      ['body.tasks.0.priority'],
    ],
    ['computeAllocation', 'duplicate task ids', { compute, tasks: [exampleTasks[0], exampleTasks[0]] }, ['body.tasks']],
    [
      'inferenceCost',
      'accuracy above 1',
      { task: { inputTokens: 1, outputTokens: 1, minAccuracy: 1.5, valueUsd: '1' }, models },
      ['body.task.minAccuracy'],
    ],
    [
      'inferenceCost',
      'negative price',
      {
        task: { inputTokens: 1, outputTokens: 1, minAccuracy: 0.5, valueUsd: '1' },
        models: { ...models, light: { ...models.light, inputUsdPerMTok: '-1' } },
      },
      ['body.models.light.inputUsdPerMTok'],
    ],
    [
      'memoryCompression',
      'target too low',
      { capacityTokens: 100, items: [memoryItem], targetUtilization: 0.05 },
      ['body.targetUtilization'],
    ],
    ['memoryCompression', 'duplicate ids', { capacityTokens: 100, items: [memoryItem, memoryItem] }, ['body.items']],
    [
      'memoryCompression',
      'month 13',
      { capacityTokens: 100, items: [{ ...memoryItem, lastAccessedAt: '2026-13-01T00:00:00.000Z' }] },
      ['body.items.0.lastAccessedAt'],
    ],
    [
      'contextRelevance',
      'goal too short',
      { goal: ' ab ', items: [{ id: 'x', text: 'y' }], tokenBudget: 10 },
      ['body.goal'],
    ],
    [
      'contextRelevance',
      'zero budget',
      { goal: 'a goal', items: [{ id: 'x', text: 'y' }], tokenBudget: 0 },
      ['body.tokenBudget'],
    ],
    [
      'decisionComplexity',
      'one option',
      { options: 1, stakesUsd: '1', reversibility: 0, uncertainty: 0, novelty: 0, timeBudgetSeconds: 1 },
      ['body.options'],
    ],
    [
      'decisionComplexity',
      'seven decimals',
      { options: 2, stakesUsd: '1.1234567', reversibility: 0, uncertainty: 0, novelty: 0, timeBudgetSeconds: 1 },
      ['body.stakesUsd'],
    ],
    ['exploreExploit', 'one arm', { arms: [arms[0]] }, ['body.arms']],
    ['exploreExploit', 'epsilon 2', { arms, epsilon: 2 }, ['body.epsilon']],
    ['exploreExploit', 'negative seed', { arms, seed: -1 }, ['body.seed']],
    [
      'exploreExploit',
      'trials beyond a billion',
      { arms: [{ ...arms[0], trials: 1e308 }, arms[1]] },
      ['body.arms.0.trials'],
    ],
    ['confidenceCalibration', 'nine predictions', { predictions: predictions([[0.5, 9, 0]]) }, ['body.predictions']],
    ['confidenceCalibration', 'four bins', { predictions: predictions([[0.5, 10, 0]]), bins: 4 }, ['body.bins']],
    ['overthinking', 'one step', { steps: [{ step: 1, tokens: 1, quality: 0.1 }] }, ['body.steps']],
    [
      'overthinking',
      'patience 0',
      {
        steps: [
          { step: 1, tokens: 1, quality: 0.1 },
          { step: 2, tokens: 1, quality: 0.2 },
        ],
        patience: 0,
      },
      ['body.patience'],
    ],
    ['cognitiveLoad', 'one agent', { agents: [exampleTeam[0]], tasks: exampleTasks }, ['body.agents']],
    [
      'cognitiveLoad',
      'target 0.2',
      { agents: exampleTeam, tasks: exampleTasks, targetUtilization: 0.2 },
      ['body.targetUtilization'],
    ],
    ['performanceDrift', 'nine scores', { scores: driftScores.slice(0, 9) }, ['body.scores']],
    ['performanceDrift', 'threshold 0', { scores: driftScores, threshold: 0 }, ['body.threshold']],
    ['updateState', 'bad agent id', { agentId: 'bad id!', tasks: { queue: [] } }, ['body.agentId']],
    ['updateState', 'no group', { agentId: 'planner' }, ['body']],
    ['updateState', 'unknown field', { agentId: 'planner', tasks: { queue: [] }, mood: 'happy' }, ['body.mood']],
    [
      'updateState',
      'impossible time',
      {
        agentId: 'planner',
        performance: {
          qualityHistory: driftScores.map((s, i) => (i === 3 ? { ...s, at: '2026-04-10T25:00:00.000Z' } : s)),
        },
      },
      ['body.performance.qualityHistory.3.at'],
    ],
    ['fullDiagnostic', 'empty agent id', { agentId: '' }, ['body.agentId']],
  ];
  for (const [route, label, body, fields] of cases) {
    it(`${route}: ${label}`, async () => {
      const before = await stateRows();
      const error: any = await (api()[route as 'updateState'] as (args: unknown) => Promise<unknown>)({ body }).catch(
        (e) => e,
      );
      expect(error).toBeInstanceOf(BadRequestError);
      expect(error.fields.map((f: { field: string }) => f.field)).toEqual(fields);
      expect(await stateRows()).toBe(before);
    });
  }

  it('getState: a path parameter that is not an agent id', async () => {
    const error = await api()
      .getState({ params: { agentId: 'no spaces' }, body: {} })
      .catch((e) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.fields.map((f: { field: string }) => f.field)).toEqual(['params.agentId']);
  });
});

describe('payment', () => {
  it('quotes the contract prices; failing requests are refused before the 402', async () => {
    const priced = await startService(createCognitionApp, { id: 'cognition' });
    try {
      const client = clientOf(alice, priced.url);
      const quote = await client
        .computeAllocation({
          body: {
            compute: { gpus: { total: 1, available: 1 }, cpus: { total: 1, available: 1 } },
            tasks: exampleTasks,
          },
        })
        .catch((e) => e);
      expect(quote).toBeInstanceOf(PaymentRequiredError);
      expect(quote.quote.accepts[0]).toMatchObject({
        scheme: 'exact',
        amount: '20000',
        asset: USDC_DEVNET,
        network: SOLANA_DEVNET,
      });
      const diagnostic = await client
        .fullDiagnostic({ body: { agentId: 'x', state: { performance: { qualityHistory: driftScores } } } })
        .catch((e) => e);
      expect(diagnostic.quote.accepts[0].amount).toBe('8000'); // one analysis (drift) has its inputs: 0.008
      // 404, 409 and 422 come before any price is asked.
      expect(await client.getState({ params: { agentId: 'nobody' }, body: {} }).catch((e) => e)).toBeInstanceOf(
        NotFoundError,
      );
      expect(await client.fullDiagnostic({ body: { agentId: 'nobody' } }).catch((e) => e)).toBeInstanceOf(
        NotFoundError,
      );
      expect(
        await client
          .updateState({ body: { agentId: 'nobody', expectedVersion: 3, tasks: { queue: [] } } })
          .catch((e) => e),
      ).toBeInstanceOf(ConflictError);
      const unschedulable = await client
        .computeAllocation({
          body: {
            compute: { gpus: { total: 1, available: 1 }, cpus: { total: 1, available: 1 } },
            tasks: [{ id: 't', priority: 1, estimatedMinutes: 1 }],
          },
        })
        .catch((e) => e);
      expect(unschedulable).toBeInstanceOf(UnprocessableEntityError);
      expect(await priced.database.db.selectFrom('cognition_states').selectAll().execute()).toEqual([]);
    } finally {
      await priced.close();
    }
  });

  it('an analysis and a state write paid for real on the local ledger', async () => {
    const { startEconomy } = await import('./support/economy');
    const economy = await startEconomy();
    try {
      const paid = await economy.startPaidService(createCognitionApp, { id: 'cognition' });
      const buyer = await walletFromSecretKey(economy.buyer.secretKey);
      const seller = paid.context.wallet.address;
      const client = createClient({
        baseUrls: { cognition: paid.url },
        wallet: buyer,
        payments: { rpcUrl: economy.rpcUrl },
        maxRetries: 0,
      }).cognition;
      const balances = () => [economy.ledger.tokenBalance(economy.buyer.address), economy.ledger.tokenBalance(seller)];
      const [buyerBefore, sellerBefore] = balances();

      const result = await client.overthinking.withResponse({
        body: {
          steps: [
            { step: 1, tokens: 1000, quality: 0.5 },
            { step: 2, tokens: 1000, quality: 0.9 },
          ],
        },
      });
      expect(result.data.kneeStep).toBeNull();
      expect(result.payment).toMatchObject({ amount: '10000', payTo: seller, payer: buyer.address });
      expect(balances()).toEqual([buyerBefore! - 10_000n, sellerBefore! + 10_000n]);

      // SIGN-IN-WITH-X and payment together: the state is stored under the paying wallet.
      const written = await client.updateState({ body: { agentId: 'paid-agent', tasks: { queue: [] } } });
      expect([written.owner, written.version]).toEqual([buyer.address, 1]);
      expect(balances()).toEqual([buyerBefore! - 12_000n, sellerBefore! + 12_000n]);
    } finally {
      await economy.close();
    }
  }, 60_000);
});

describe('integrity: a buyer pays for analyses that ran, on inputs they can score', () => {
  it('charges the full diagnostic 0.008 USD per analysis it will run, quoted before it runs, and says what it charged', async () => {
    const priced = await startService(createCognitionApp, { id: 'cognition' });
    try {
      const client = clientOf(alice, priced.url);
      // One analysis (performance drift) has its inputs: the quote is for one, not ten.
      const one = await client
        .fullDiagnostic({ body: { agentId: 'x', state: { performance: { qualityHistory: driftScores } } } })
        .catch((e) => e);
      expect(one).toBeInstanceOf(PaymentRequiredError);
      expect(one.quote.accepts[0].amount).toBe('8000');
      // Two (drift and explore-exploit): 0.016.
      const two = await client
        .fullDiagnostic({
          body: {
            agentId: 'x',
            state: {
              performance: { qualityHistory: driftScores },
              reasoning: {
                approaches: [
                  { id: 'a', trials: 3, meanReward: 0.5 },
                  { id: 'b', trials: 2, meanReward: 0.4 },
                ],
              },
            },
          },
        })
        .catch((e) => e);
      expect(two.quote.accepts[0].amount).toBe('16000');
    } finally {
      await priced.close();
    }
    // A deployment charging nothing says so.
    const report = await api().fullDiagnostic({
      body: { agentId: 'x', state: { performance: { qualityHistory: driftScores } } },
    });
    expect([report.analysesRun, report.chargedUsd]).toEqual([1, '0']);
  });

  it('refuses a goal made only of stopwords before payment (422 goal_unscorable), and the diagnostic skips it', async () => {
    const priced = await startService(createCognitionApp, { id: 'cognition' });
    try {
      const body = {
        goal: 'what is it that the',
        items: [{ id: 'a', text: 'Priority fees on Solana', tokens: 10 }],
        tokenBudget: 100,
      };
      const refused = await clientOf(alice, priced.url)
        .contextRelevance({ body })
        .catch((e) => e);
      expect(refused).toBeInstanceOf(UnprocessableEntityError);
      expect(refused).toMatchObject({ code: 'goal_unscorable' });
    } finally {
      await priced.close();
    }
    const report = await api().fullDiagnostic({
      body: {
        agentId: 'x',
        state: {
          reasoning: {
            goal: 'the of and',
            context: [{ id: 'a', text: 'fees', tokens: 5 }],
            tokenBudget: 10,
            approaches: [
              { id: 'a', trials: 3, meanReward: 0.5 },
              { id: 'b', trials: 2, meanReward: 0.4 },
            ],
          },
        },
      },
    });
    expect(report.entries.find((e) => e.analysis === 'context-relevance')).toMatchObject({
      status: 'skipped',
      score: null,
    });
    expect(report.entries.find((e) => e.analysis === 'context-relevance')!.skippedReason).toContain(
      'no word the analysis can score',
    );
  });

  it('does not call a plan with a task that can never run "ok"', async () => {
    // Two tasks, one needing more GPUs than the agent owns: it never runs. Formerly 100 × (1 − 0.3 × 1/2) = 85, "ok".
    const compute = await api().computeAllocation({
      body: {
        compute: { gpus: { total: 1, available: 1 }, cpus: { total: 2, available: 2 } },
        tasks: [
          { id: 'fits', priority: 1, gpus: 1, cpus: 1, estimatedMinutes: 10 },
          { id: 'never', priority: 1, gpus: 4, estimatedMinutes: 10 },
        ],
      },
    });
    expect(compute.infeasibleTasks).toBe(1);
    expect([compute.score, compute.status]).toEqual([50, 'warning']);
    // A task needing a skill nobody on the team has: unplaceable, so the load cannot be "ok" either.
    const load = await api().cognitiveLoad({
      body: {
        agents: [
          { id: 'p', capacityMinutes: 100, skills: [] },
          { id: 'q', capacityMinutes: 100, skills: [] },
        ],
        tasks: [
          { id: 'ok', priority: 1, estimatedMinutes: 30, assignedTo: 'p' },
          { id: 'rust', priority: 1, estimatedMinutes: 10, requiredSkills: ['rust'] },
        ],
      },
    });
    expect(load.unplaced).toEqual(['rust']);
    expect(load.status).not.toBe('ok');
    expect(load.score).toBeLessThanOrEqual(50);
  });
});
