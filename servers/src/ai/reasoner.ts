import type { Generator } from '@agent-economy/contracts';
import type { z } from 'zod';

export type { Generator };

/**
 * One AI output the spec asks for (a lesson, a tutor answer, a mediation, a summary). The built-in
 * engine derives it from the input by explicit rules (`builtin`); an LLM gets `instructions` and the
 * input as JSON and must answer with JSON that `output` accepts.
 */
export interface AiTask<I, O> {
  name: string;
  instructions: string;
  input: I;
  output: z.ZodType<O>;
  builtin: (input: I) => O;
}

export interface AiResult<O> {
  output: O;
  generator: Generator;
}

export interface Reasoner {
  readonly generator: Generator;
  /** The same task input always gives the same output (the built-in engine's rules): an answer may be kept. */
  readonly deterministic: boolean;
  run<I, O>(task: AiTask<I, O>): Promise<AiResult<O>>;
}

export const BUILTIN_GENERATOR: Generator = { engine: 'builtin', model: 'builtin-rules-v1' };

/** The default engine: deterministic, explainable, offline. */
export function builtinReasoner(): Reasoner {
  return {
    generator: BUILTIN_GENERATOR,
    deterministic: true,
    async run(task) {
      return { output: task.builtin(task.input), generator: BUILTIN_GENERATOR };
    },
  };
}
