import { generateSchema } from '@anatine/zod-openapi';
import type OpenAI from 'openai';
import type { Generator } from '@agent-economy/contracts';
import { HttpError } from '../runtime/errors';
import type { AiTask, Reasoner } from './reasoner';

export interface OpenAiOptions {
  baseUrl: string;
  model: string;
  apiKey?: string;
  timeoutMs?: number;
}

/**
 * An LLM behind any OpenAI-compatible Chat Completions API (LLM_BASE_URL, LLM_MODEL, LLM_API_KEY).
 * Output is requested as a JSON object and validated; a provider failure is a 502 and nothing is charged.
 */
export function openAiReasoner(options: OpenAiOptions): Reasoner {
  // The openai package (about 150 modules) loads on the first call: a process on the built-in engine never needs it.
  let client: Promise<OpenAI> | undefined;
  const openai = () =>
    (client ??= import('openai').then(
      ({ default: OpenAI }) =>
        new OpenAI({
          baseURL: options.baseUrl,
          apiKey: options.apiKey ?? 'not-needed',
          timeout: options.timeoutMs ?? 60_000,
          maxRetries: 1,
        }),
    ));
  const generator: Generator = { engine: 'llm', model: options.model };
  return {
    generator,
    deterministic: false,
    async run<I, O>(task: AiTask<I, O>) {
      const shape = JSON.stringify(generateSchema(task.output as Parameters<typeof generateSchema>[0]));
      let content: string | null | undefined;
      try {
        const completion = await (
          await openai()
        ).chat.completions.create({
          model: options.model,
          temperature: 0.2,
          response_format: { type: 'json_object' },
          messages: [
            {
              role: 'system',
              content: `${task.instructions}\n\nAnswer with one JSON object and nothing else. Its JSON Schema: ${shape}`,
            },
            { role: 'user', content: JSON.stringify(task.input) },
          ],
        });
        content = completion.choices[0]?.message?.content;
      } catch (error) {
        throw new HttpError(
          502,
          'llm_unavailable',
          `The language model provider failed: ${(error as Error).message}`,
          undefined,
          {
            'retry-after': '10',
          },
        );
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(content ?? '');
      } catch {
        throw new HttpError(502, 'llm_invalid_output', `The language model did not answer with JSON for ${task.name}`);
      }
      const result = task.output.safeParse(parsed);
      if (!result.success) {
        const where = result.error.issues[0];
        throw new HttpError(
          502,
          'llm_invalid_output',
          `The language model's ${task.name} output is malformed at ${where?.path.join('.') || 'the root'}: ${where?.message}`,
        );
      }
      return { output: result.data, generator };
    },
  };
}
