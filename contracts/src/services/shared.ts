import { z } from 'zod';

/** Which engine produced an AI output: the built-in rules engine or an LLM behind an OpenAI-compatible API. */
export interface Generator {
  engine: 'builtin' | 'llm';
  model: string;
}
export const Generator: z.ZodType<Generator> = z
  .object({ engine: z.enum(['builtin', 'llm']), model: z.string() })
  .describe('which engine produced this output');
