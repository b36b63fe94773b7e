import { atomicToUsd, cognition, usdToAtomic, withPrices } from '@agent-economy/contracts';
import { migrate } from '../../db';
import { createServiceApp, fromContext } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import {
  checkAssignments,
  checkContext,
  checkGoal,
  checkMemory,
  checkSchedulable,
  checkScores,
  checkStateTimes,
  ANALYSES,
  DIAGNOSTIC_USD_PER_ANALYSIS,
  driftWindows,
  parseTime,
} from './domain';
import { cognitionHandlers, diagnosticInputs, stateNotFound } from './handlers';
import { cognitionStore, migrations } from './store';

export interface CognitionOptions {
  /** The clock, Unix ms (default Date.now): a test moves it rather than waiting for memory to age. */
  now?: () => number;
}

export async function createCognitionApp(context: ServiceContext, options: CognitionOptions = {}) {
  const now = options.now ?? Date.now;
  await migrate(context.db, 'cognition', migrations);
  const store = cognitionStore(context.db);
  const service = withPrices(cognition, context.prices ?? {});
  // The preflight's reading of the state, for the price resolver (which sees the request but not the caller).
  const diagnostics = new WeakMap<object, Awaited<ReturnType<typeof diagnosticInputs>>>();
  return await createServiceApp({
    service: cognition,
    handlers: cognitionHandlers({ store, reasoner: context.reasoner, service, now }),
    ...fromContext(context),
    // Every domain rule that can fail a request is checked here, before the 402: nobody pays for a 404, 409 or 422.
    preflight: {
      updateState: async ({ body }, caller) => {
        checkStateTimes(body, 'body.');
        await store.checkVersion(caller!, body.agentId, body.expectedVersion);
      },
      getState: async ({ params }, caller) => {
        if (!(await store.get(caller!, params.agentId))) throw stateNotFound(params.agentId);
      },
      computeAllocation: ({ body }) => checkSchedulable(body.tasks),
      memoryCompression: ({ body }) => checkMemory(body),
      contextRelevance: ({ body }) => {
        checkContext(body.items);
        checkGoal(body.goal, 'body.goal');
      },
      confidenceCalibration: ({ body }) => {
        body.predictions.forEach(
          (p: { at?: string }, i: number) => p.at !== undefined && parseTime(p.at, `body.predictions.${i}.at`),
        );
      },
      cognitiveLoad: ({ body }) => checkAssignments(body.agents, body.tasks),
      performanceDrift: ({ body }) => {
        checkScores(body.scores);
        driftWindows(body);
      },
      fullDiagnostic: async (request, caller) => {
        if (request.body.state) checkStateTimes(request.body.state, 'body.state.');
        diagnostics.set(
          request,
          await diagnosticInputs(store, caller!, request.body.agentId, request.body.state, now()),
        );
      },
    },
    // The diagnostic costs what it runs: 0.008 USD per analysis whose inputs the state holds, decided in the preflight.
    pricing: {
      fullDiagnostic: (request) => {
        const ran = diagnostics.get(request)?.outcomes.filter((o) => 'core' in o).length ?? ANALYSES.length;
        return { usd: atomicToUsd(usdToAtomic(DIAGNOSTIC_USD_PER_ANALYSIS) * BigInt(ran)) };
      },
    },
  });
}
