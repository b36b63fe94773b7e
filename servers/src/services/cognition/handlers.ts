import {
  atomicToUsd,
  priceRange,
  routeMeta,
  type AnalysisId,
  type CognitionInfo,
  type CognitiveApi,
  type CognitiveStateRecord,
  type DiagnosticResults,
  type HealthReport,
  type StateGroup,
  cognition,
} from '@agent-economy/contracts';
import type { Reasoner } from '../../ai';
import { callerOf, type RouterImplementation } from '../../runtime/app';
import { notFound, unprocessable } from '../../runtime/errors';
import type { VerifiedPayment } from '../../runtime/paywall';
import { adviceTask, diagnosticTask, headline } from './advice';
import {
  GRADE_SCALE,
  cognitiveLoad,
  computeAllocation,
  confidenceCalibration,
  contextRelevance,
  decisionComplexity,
  exploreExploit,
  inferenceCost,
  memoryCompression,
  mergeState,
  overallHealth,
  overthinking,
  performanceDrift,
  runAnalyses,
  type AnyCore,
  type Outcome,
} from './domain';
import { STATE_GROUPS, type CognitionStore } from './store';

export interface CognitionDeps {
  store: CognitionStore;
  reasoner: Reasoner;
  /** The service as deployed (its prices, after any overrides), for the info route. */
  service: typeof cognition;
  /** The clock, Unix ms: recency weights and the computedAt stamps read it. */
  now: () => number;
}

/** Route key, analysis id and the state groups each analysis reads, in route order. */
const ANALYSIS_ROUTES: [keyof typeof cognition.router, AnalysisId, StateGroup[]][] = [
  ['computeAllocation', 'compute-allocation', ['compute', 'tasks']],
  ['inferenceCost', 'inference-cost', ['reasoning', 'compute']],
  ['memoryCompression', 'memory-compression', ['memory']],
  ['contextRelevance', 'context-relevance', ['reasoning']],
  ['decisionComplexity', 'decision-complexity', ['reasoning']],
  ['exploreExploit', 'explore-exploit', ['reasoning']],
  ['confidenceCalibration', 'confidence-calibration', ['performance']],
  ['overthinking', 'overthinking-detector', ['reasoning']],
  ['cognitiveLoad', 'cognitive-load', ['tasks']],
  ['performanceDrift', 'performance-drift', ['performance']],
];
const RESULT_KEYS: Record<AnalysisId, keyof DiagnosticResults> = {
  'compute-allocation': 'computeAllocation',
  'inference-cost': 'inferenceCost',
  'memory-compression': 'memoryCompression',
  'context-relevance': 'contextRelevance',
  'decision-complexity': 'decisionComplexity',
  'explore-exploit': 'exploreExploit',
  'confidence-calibration': 'confidenceCalibration',
  'overthinking-detector': 'overthinkingDetector',
  'cognitive-load': 'cognitiveLoad',
  'performance-drift': 'performanceDrift',
};

export function buildInfo(service: typeof cognition): CognitionInfo {
  const api = (key: keyof typeof cognition.router, id: CognitiveApi['id'], stateGroups: StateGroup[]): CognitiveApi => {
    const route = service.router[key];
    return {
      id,
      method: 'POST',
      path: route.path,
      summary: route.summary ?? '',
      priceUsd: priceRange(routeMeta(route).payment).minUsd,
      stateGroups,
    };
  };
  return {
    service: 'cognition',
    version: '1.0.0',
    analyses: ANALYSIS_ROUTES.map(([key, id, groups]) => api(key, id, groups)),
    otherRoutes: [
      api('updateState', 'state-update', [...STATE_GROUPS]),
      api('getState', 'state-read', [...STATE_GROUPS]),
      api('fullDiagnostic', 'full-diagnostic', [...STATE_GROUPS]),
    ],
    stateGroups: [...STATE_GROUPS],
    gradeScale: GRADE_SCALE,
  };
}

export const stateNotFound = (agentId: string) =>
  notFound('state_not_found', `You have no cognitive state for agent "${agentId}"; write one with POST /api/state`);

/** The stored state (if any) with the request's groups laid over it; 404 / 422 when there is nothing to analyse. */
export async function diagnosticInputs(
  store: CognitionStore,
  owner: string,
  agentId: string,
  override: CognitiveStateRecord['state'] | undefined,
  now: number,
) {
  const stored = await store.get(owner, agentId);
  if (!stored && !override) throw stateNotFound(agentId);
  const outcomes = runAnalyses(mergeState(stored?.state, override), now);
  if (!outcomes.some((o) => 'core' in o)) {
    throw unprocessable('state_incomplete', 'No analysis has its inputs in this state', {
      skipped: outcomes.map((o) => ({ analysis: o.analysis, reason: 'skippedReason' in o ? o.skippedReason : null })),
    });
  }
  return { stored, outcomes };
}

// Handlers only translate between the contract and the domain.
export function cognitionHandlers({
  store,
  reasoner,
  service,
  now,
}: CognitionDeps): RouterImplementation<typeof cognition.router> {
  const info = buildInfo(service);
  /** Adds the recommendation and actions (built-in rules or the configured LLM) to an analysis's numbers. */
  const advise = async <C extends AnyCore>(core: C) => {
    const { output, generator } = await reasoner.run(adviceTask(core));
    return {
      ...core,
      recommendation: output.recommendation,
      actions: output.actions,
      generator,
      computedAt: new Date(now()).toISOString(),
    };
  };

  return {
    info: async () => ({ status: 200, body: info }),

    updateState: async ({ body, res }) => {
      const { agentId, expectedVersion, ...groups } = body;
      return { status: 200, body: await store.write(callerOf(res), agentId, groups, expectedVersion, new Date(now())) };
    },

    getState: async ({ params, body, res }) => {
      const record = await store.get(callerOf(res), params.agentId);
      if (!record) throw stateNotFound(params.agentId);
      if (!body.groups) return { status: 200, body: record };
      const keep = new Set(body.groups);
      const pick = <T extends object>(o: T) =>
        Object.fromEntries(Object.entries(o).filter(([g]) => keep.has(g as StateGroup)));
      return {
        status: 200,
        body: { ...record, state: pick(record.state), groupUpdatedAt: pick(record.groupUpdatedAt) },
      };
    },

    computeAllocation: async ({ body }) => ({ status: 200, body: await advise(computeAllocation(body)) }),
    inferenceCost: async ({ body }) => ({ status: 200, body: await advise(inferenceCost(body)) }),
    memoryCompression: async ({ body }) => ({ status: 200, body: await advise(memoryCompression(body, now())) }),
    contextRelevance: async ({ body }) => ({ status: 200, body: await advise(contextRelevance(body, now())) }),
    decisionComplexity: async ({ body }) => ({ status: 200, body: await advise(decisionComplexity(body)) }),
    exploreExploit: async ({ body }) => ({ status: 200, body: await advise(exploreExploit(body)) }),
    confidenceCalibration: async ({ body }) => ({ status: 200, body: await advise(confidenceCalibration(body)) }),
    overthinking: async ({ body }) => ({ status: 200, body: await advise(overthinking(body)) }),
    cognitiveLoad: async ({ body }) => ({ status: 200, body: await advise(cognitiveLoad(body)) }),
    performanceDrift: async ({ body }) => ({ status: 200, body: await advise(performanceDrift(body)) }),

    fullDiagnostic: async ({ body, res }) => {
      const { stored, outcomes } = await diagnosticInputs(store, callerOf(res), body.agentId, body.state, now());
      const ran = outcomes.filter((o): o is Extract<Outcome, { core: AnyCore }> => 'core' in o);
      const advised = await Promise.all(ran.map((o) => advise(o.core)));
      const byAnalysis = new Map(advised.map((r) => [r.analysis, r]));
      const entries = outcomes.map((o) => {
        const result = byAnalysis.get(o.analysis);
        return result
          ? {
              analysis: o.analysis,
              status: result.status,
              score: result.score,
              headline: headline(result),
              skippedReason: null,
              actions: result.actions,
            }
          : {
              analysis: o.analysis,
              status: 'skipped' as const,
              score: null,
              headline: `skipped: ${'skippedReason' in o ? o.skippedReason : ''}`,
              skippedReason: 'skippedReason' in o ? o.skippedReason : null,
              actions: [],
            };
      });
      const overall = overallHealth(advised);
      const { output, generator } = await reasoner.run(diagnosticTask({ agentId: body.agentId, ...overall, entries }));
      const results: DiagnosticResults = {};
      for (const r of advised) (results as Record<string, unknown>)[RESULT_KEYS[r.analysis]] = r;
      const report: HealthReport = {
        agentId: body.agentId,
        stateVersion: stored?.version ?? null,
        ...overall,
        analysesRun: advised.length,
        analysesSkipped: outcomes.length - advised.length,
        chargedUsd: atomicToUsd(BigInt((res.locals.payment as VerifiedPayment | undefined)?.amount ?? '0')),
        entries: entries.map(({ actions: _actions, ...e }) => e),
        topActions: output.topActions.slice(0, 5),
        summary: output.summary,
        results,
        generator,
        computedAt: new Date(now()).toISOString(),
      };
      return { status: 200, body: report };
    },
  };
}
