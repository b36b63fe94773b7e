import { builtinReasoner, type Reasoner } from './reasoner';
import { openAiReasoner } from './openai';

export * from './reasoner';
export * from './retrieval';
export { openAiReasoner } from './openai';

/** The LLM adapter when LLM_BASE_URL and LLM_MODEL are set, otherwise the built-in engine. */
export function reasonerFromEnv(env: NodeJS.ProcessEnv = process.env): Reasoner {
  if (env.LLM_BASE_URL && env.LLM_MODEL) {
    return openAiReasoner({
      baseUrl: env.LLM_BASE_URL,
      model: env.LLM_MODEL,
      ...(env.LLM_API_KEY ? { apiKey: env.LLM_API_KEY } : {}),
    });
  }
  return builtinReasoner();
}
