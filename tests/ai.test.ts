import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinReasoner, openAiReasoner, reasonerFromEnv } from '../servers/src/ai';
import { HttpError } from '../servers/src/runtime/errors';
import { curriculum } from '../servers/src/services/education/curriculum';
import { lessonTask, locateLesson, tutorTask, TutorIndex } from '../servers/src/services/education/domain';

/** A local server answering as the OpenAI Chat Completions API documents it. */
function fakeProvider(reply: (body: any) => { status: number; content?: string; raw?: string }) {
  const requests: any[] = [];
  let server: Server;
  return {
    requests,
    url: () => `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`,
    async start() {
      server = createServer(async (req: IncomingMessage, res) => {
        let text = '';
        for await (const chunk of req) text += chunk;
        const body = JSON.parse(text);
        requests.push({ path: req.url, auth: req.headers.authorization, body });
        const answer = reply(body);
        res.writeHead(answer.status, { 'content-type': 'application/json' });
        res.end(
          answer.raw ??
            JSON.stringify({
              id: 'chatcmpl-test',
              object: 'chat.completion',
              created: 1_700_000_000,
              model: body.model,
              choices: [
                {
                  index: 0,
                  message: { role: 'assistant', content: answer.content ?? '' },
                  finish_reason: 'stop',
                  logprobs: null,
                },
              ],
              usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
            }),
        );
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('OpenAI-compatible adapter', () => {
  const location = locateLesson(curriculum, 'foundations', 'agent-loop');
  const lessonBody = {
    introduction: 'An LLM-written introduction.',
    sections: [{ heading: 'The loop', explanation: 'Observe, think, act.' }],
    keyTakeaways: ['Loops need budgets.'],
  };
  let mode: 'ok' | 'not-json' | 'wrong-shape' | 'down' = 'ok';
  const provider = fakeProvider(() => {
    if (mode === 'down')
      return { status: 500, raw: JSON.stringify({ error: { message: 'overloaded', type: 'server_error' } }) };
    if (mode === 'not-json') return { status: 200, content: 'Sure! Here is your lesson.' };
    if (mode === 'wrong-shape') return { status: 200, content: JSON.stringify({ introduction: 'x', sections: [] }) };
    return { status: 200, content: JSON.stringify(lessonBody) };
  });
  beforeAll(() => provider.start());
  afterAll(() => provider.stop());

  it('sends the task as a JSON-mode chat completion and says which model produced the answer', async () => {
    mode = 'ok';
    const reasoner = openAiReasoner({ baseUrl: provider.url(), model: 'test-model', apiKey: 'sk-test' });
    const task = lessonTask(location, 'budgets');
    const { output, generator } = await reasoner.run(task);
    expect(output).toEqual(lessonBody);
    expect(generator).toEqual({ engine: 'llm', model: 'test-model' });
    const sent = provider.requests.at(-1);
    expect(sent.path).toBe('/v1/chat/completions');
    expect(sent.auth).toBe('Bearer sk-test');
    expect(sent.body.model).toBe('test-model');
    expect(sent.body.response_format).toEqual({ type: 'json_object' });
    expect(sent.body.messages[0].role).toBe('system');
    expect(sent.body.messages[0].content).toContain(task.instructions);
    expect(sent.body.messages[0].content).toContain('"keyTakeaways"');
    expect(JSON.parse(sent.body.messages[1].content)).toEqual(task.input);
  });

  it('answers 502 llm_invalid_output when the model does not return the asked JSON', async () => {
    const reasoner = openAiReasoner({ baseUrl: provider.url(), model: 'test-model' });
    for (const m of ['not-json', 'wrong-shape'] as const) {
      mode = m;
      const error = await reasoner.run(lessonTask(location)).catch((e) => e);
      expect(error).toBeInstanceOf(HttpError);
      expect(error).toMatchObject({ status: 502, code: 'llm_invalid_output' });
    }
  });

  it('answers 502 llm_unavailable with Retry-After when the provider fails', async () => {
    mode = 'down';
    const error = await openAiReasoner({ baseUrl: provider.url(), model: 'test-model' })
      .run(lessonTask(location))
      .catch((e) => e);
    expect(error).toMatchObject({ status: 502, code: 'llm_unavailable', headers: { 'retry-after': '10' } });
  });

  it('grounds tutor answers in the retrieved passages it is given', async () => {
    mode = 'ok';
    const passages = new TutorIndex(curriculum).retrieve('What do the BM25 parameters k1 and b control?');
    const tutorProvider = fakeProvider((body) => {
      const input = JSON.parse(body.messages[1].content);
      return {
        status: 200,
        content: JSON.stringify({
          answer: `k1 and b, per ${input.passages[0].lessonTitle}`,
          used: [0],
          excerpts: ['k1 saturates term frequency'],
        }),
      };
    });
    await tutorProvider.start();
    try {
      const { output } = await openAiReasoner({ baseUrl: tutorProvider.url(), model: 'm' }).run(
        tutorTask('What do the BM25 parameters k1 and b control?', passages),
      );
      expect(output.answer).toBe(`k1 and b, per ${passages[0]!.lessonTitle}`);
      expect(output.used).toEqual([0]);
    } finally {
      await tutorProvider.stop();
    }
  });

  it('is chosen from the environment only when both LLM_BASE_URL and LLM_MODEL are set', () => {
    expect(reasonerFromEnv({}).generator).toEqual(builtinReasoner().generator);
    expect(reasonerFromEnv({ LLM_BASE_URL: provider.url() }).generator.engine).toBe('builtin');
    expect(reasonerFromEnv({ LLM_BASE_URL: provider.url(), LLM_MODEL: 'm1' }).generator).toEqual({
      engine: 'llm',
      model: 'm1',
    });
  });
});
