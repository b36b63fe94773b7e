import { cognition, withPrices } from '@agent-economy/contracts';
import { migrate } from '../../db';
import { createServiceApp, fromContext } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import {
  checkAssignments,
  checkContext,
  checkMemory,
  checkSchedulable,
  checkScores,
  checkStateTimes,
  driftWindows,
  parseTime,
} from './domain';
import { cognitionHandlers, diagnosticInputs, stateNotFound } from './handlers';
import { cognitionStore, migrations } from './store';

export async function createCognitionApp(context: ServiceContext) {
  await migrate(context.db, 'cognition', migrations);
  const store = cognitionStore(context.db);
  const service = withPrices(cognition, context.prices ?? {});
  return await createServiceApp({
    service: cognition,
    handlers: cognitionHandlers({ store, reasoner: context.reasoner, service }),
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
      contextRelevance: ({ body }) => checkContext(body.items),
      confidenceCalibration: ({ body }) => {
        body.predictions.forEach((p: { at?: string }, i: number) => p.at !== undefined && parseTime(p.at, `body.predictions.${i}.at`));
      },
      cognitiveLoad: ({ body }) => checkAssignments(body.agents, body.tasks),
      performanceDrift: ({ body }) => {
        checkScores(body.scores);
        driftWindows(body);
      },
      fullDiagnostic: async ({ body }, caller) => {
        if (body.state) checkStateTimes(body.state, 'body.state.');
        await diagnosticInputs(store, caller!, body.agentId, body.state, Date.now());
      },
    },
  });
}
