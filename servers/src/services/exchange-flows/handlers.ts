import type { exchangeFlows } from '@agent-economy/contracts';
import type { RouterImplementation } from '../../runtime/app';
import type { ParsedRequest } from '../../runtime/validation';
import type { FlowsService } from './analysis';

type Paid = 'flows' | 'exchanges' | 'signal';

/**
 * Computes a paid answer in the preflight (before the 402) and keeps it for the handler of the same request, so a
 * failing provider or a refused filter is an error nobody pays for, and a paid answer is the one checked.
 */
export function answerer(service: FlowsService) {
  const answered = new WeakMap<object, Promise<unknown>>();
  // The body passed its route's schema (validation runs first), so it is that route's request.
  type Body<K extends Paid> = Parameters<FlowsService[K]>[0];
  const compute = (route: Paid, body: unknown): Promise<unknown> =>
    route === 'flows'
      ? service.flows(body as Body<'flows'>)
      : route === 'exchanges'
        ? service.exchanges(body as Body<'exchanges'>)
        : service.signal(body as Body<'signal'>);
  return {
    preflight: (route: Paid) => async (request: ParsedRequest) => {
      const answer = compute(route, request.body);
      answered.set(request, answer);
      await answer;
    },
    answer: <T>(route: Paid, parsed: ParsedRequest | undefined, body: unknown): Promise<T> =>
      ((parsed && answered.get(parsed)) ?? compute(route, body)) as Promise<T>,
  };
}

// Handlers only translate between the contract and the analysis.
export function exchangeFlowsHandlers(
  service: FlowsService,
  answers: ReturnType<typeof answerer>,
): RouterImplementation<typeof exchangeFlows.router> {
  const parsedOf = (res: { locals: Record<string, unknown> }) => res.locals.parsed as ParsedRequest | undefined;
  return {
    summary: async () => ({ status: 200, body: await service.summary() }),
    flows: async ({ body, res }) => ({
      status: 200,
      body: await answers.answer<Awaited<ReturnType<FlowsService['flows']>>>('flows', parsedOf(res), body),
    }),
    exchanges: async ({ body, res }) => ({
      status: 200,
      body: await answers.answer<Awaited<ReturnType<FlowsService['exchanges']>>>('exchanges', parsedOf(res), body),
    }),
    signal: async ({ body, res }) => ({
      status: 200,
      body: await answers.answer<Awaited<ReturnType<FlowsService['signal']>>>('signal', parsedOf(res), body),
    }),
  };
}
