import type { CourseMaterial } from './types';

// Course 2: how agents act on the world through tools, including paid HTTP APIs settled with x402 on Solana.
export const toolUse: CourseMaterial = {
  id: 'tool-use',
  title: 'Tool Use and Function Calling',
  description:
    'How agents act through tools: function-calling schemas and the call/result round trip, designing tools models use correctly, validating tool calls with zod, calling paid HTTP APIs with x402 payments on Solana under strict budgets, and the safety controls that keep tool use contained.',
  difficulty: 'intermediate',
  prerequisites: ['foundations'],
  lessons: [
    // ------------------------------------------------------------------------------------------
    {
      id: 'function-calling',
      title: 'Function Calling',
      preview:
        'Explains the function-calling protocol: you describe tools with JSON Schemas, the model picks a tool and its arguments, and your runtime executes the call and sends back the result.',
      estimatedMinutes: 20,
      objectives: [
        'Describe a tool to a model with a name, a description and a JSON Schema for its parameters',
        'Trace the round trip from tool definition to tool call to tool result message',
        'Execute tool calls in the runtime and return each result under its call id',
        'Handle parallel tool calls and choose a tool_choice setting',
      ],
      sections: [
        {
          heading: 'The model proposes, the runtime executes',
          body: [
            `Function calling, also called tool use, is a protocol between your code and the model. You send the model a list of tool definitions along with the messages. Instead of answering in text, the model may answer with a tool call: the name of one of your tools and a set of arguments. The model does not execute anything. Your runtime receives the call, decides whether to run it, runs it, and sends the result back as a new message. The model then continues, possibly with another tool call.`,
            `The wire formats differ by provider, but the shape is the same. In OpenAI's Chat Completions API an assistant message carries a tool_calls array; each entry has an id, and a function with a name and an arguments field that is a JSON string you must parse. In Anthropic's Messages API the assistant content contains tool_use blocks with an id, a name and an already-parsed input object.`,
            `Because the model only proposes, every safety and correctness decision sits in the runtime: whether the tool exists, whether the arguments are valid, whether this agent is allowed to call it now. Treat a tool call like an HTTP request from an untrusted client, because that is effectively what it is.`,
          ].join('\n\n'),
        },
        {
          heading: 'Describing a tool',
          body: [
            `A tool definition has three parts. The name is an identifier the model emits verbatim; OpenAI and Anthropic both require it to match ^[a-zA-Z0-9_-]{1,64}$, so no spaces or dots. The description is prose the model reads when deciding whether and how to call the tool. The parameters are a JSON Schema of type object, with properties, a required list, and constraints such as enum, pattern and minimum.`,
            `Providers wrap the same content differently. Chat Completions expects { type: "function", function: { name, description, parameters } } and, with strict: true, constrains the generated arguments to the schema. Anthropic expects { name, description, input_schema }. Keeping one provider-neutral definition and converting it at the edge avoids maintaining two drifting copies.`,
            `Tool definitions are sent as input tokens on every request, in every step of the loop. Twenty tools with long schemas can add several thousand tokens per call, so offer each agent the tools its task needs rather than everything you have. The payoff of a precise schema is large: an enum of three values removes a whole class of invalid calls that a free-text string parameter would invite.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'One provider-neutral tool definition converted to the OpenAI Chat Completions and Anthropic Messages formats.',
            source: `interface ToolDefinition {
  name: string;
  description: string;
  parameters: { type: 'object'; properties: Record<string, unknown>; required: string[]; additionalProperties: false };
}

export const getWeather: ToolDefinition = {
  name: 'get_weather',
  description:
    'Current weather for a city. Use when the user asks about present conditions, not forecasts. ' +
    'Returns temperature, conditions and the observation time.',
  parameters: {
    type: 'object',
    properties: {
      city: { type: 'string', description: 'City name in English, e.g. "Oslo" or "New York".' },
      unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    },
    required: ['city', 'unit'],
    additionalProperties: false,
  },
};

export const toOpenAI = (t: ToolDefinition) => ({
  type: 'function' as const,
  function: { name: t.name, description: t.description, parameters: t.parameters, strict: true },
});

export const toAnthropic = (t: ToolDefinition) => ({
  name: t.name,
  description: t.description,
  input_schema: t.parameters,
});

console.log(JSON.stringify(toOpenAI(getWeather)).length, 'characters sent with every request');
console.log(toAnthropic(getWeather).input_schema.required); // [ 'city', 'unit' ]
`,
          },
        },
        {
          heading: 'The round trip',
          body: [
            `A complete exchange has four messages. The user asks a question. The assistant replies with a tool call, say get_weather with arguments {"city":"Oslo","unit":"celsius"} and the id call_abc123. Your runtime executes the function and appends a tool message whose tool_call_id is call_abc123 and whose content is the result, usually JSON or short text. You call the model again with the whole history, and it answers the user using the result, or calls another tool.`,
            `The id is what ties a result to its call, and providers enforce the pairing. OpenAI rejects the next request with a 400 error if an assistant message with tool_calls is not followed by tool messages for every id. Anthropic requires a tool_result block for every tool_use id in the very next user message. So every call gets a result, including calls you refused or that failed: return an error string as the content (Anthropic also has an is_error flag) so the model can react.`,
            `Keep results small and textual. The model reads them as tokens, so a 300 KB JSON dump costs money on every later step and buries the one field that mattered. Select the fields the task needs before returning them.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'Executing the tool calls of an assistant message and producing one tool message per call id.',
            source: `type ToolCall = { id: string; type: 'function'; function: { name: string; arguments: string } };
type AssistantMessage = { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] };
type ToolMessage = { role: 'tool'; tool_call_id: string; content: string };

const handlers: Record<string, (args: Record<string, unknown>) => Promise<unknown>> = {
  get_weather: async (args) => ({ city: args.city, tempC: 4, conditions: 'light rain', observedAt: '2025-05-03T09:00Z' }),
};

export async function executeToolCalls(message: AssistantMessage): Promise<ToolMessage[]> {
  const results: ToolMessage[] = [];
  for (const call of message.tool_calls ?? []) {
    let content: string;
    try {
      const handler = handlers[call.function.name];
      if (!handler) throw new Error(\`unknown tool \${call.function.name}\`);
      const args = JSON.parse(call.function.arguments) as Record<string, unknown>; // arguments arrive as a JSON string
      content = JSON.stringify(await handler(args));
    } catch (err) {
      content = \`Error: \${err instanceof Error ? err.message : String(err)}\`; // failures still get a result
    }
    results.push({ role: 'tool', tool_call_id: call.id, content });
  }
  return results;
}

const fromModel: AssistantMessage = {
  role: 'assistant',
  content: null,
  tool_calls: [{ id: 'call_abc123', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo","unit":"celsius"}' } }],
};
executeToolCalls(fromModel).then((msgs) => console.log(msgs)); // append these, then call the model again
`,
          },
        },
        {
          heading: 'Parallel calls and tool_choice',
          body: [
            `A model can request several tools in one turn, for example the weather in three cities. OpenAI enables this by default and lets you turn it off with parallel_tool_calls: false; Anthropic can return several tool_use blocks and lets you disable it with disable_parallel_tool_use. Independent read-only calls should run concurrently, which cuts latency to the slowest call instead of the sum. Calls with side effects are safer run one at a time in the order given, because the model may assume that order.`,
            `Whatever the execution order, return results keyed by call id and keep the original order in the message. Use Promise.allSettled rather than Promise.all, so one failing call produces an error result instead of rejecting the whole batch and leaving the other calls unanswered.`,
            `The tool_choice setting controls whether the model must call a tool. "auto", the default, lets it choose between answering and calling. "required" in OpenAI, or {type: "any"} in Anthropic, forces some tool call. Naming a specific tool forces that tool, which is a dependable way to get structured output in a given schema. "none" forbids tool calls, which is useful for a final summarising turn.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'Running a batch of tool calls concurrently when they are read-only and sequentially when any has side effects.',
            source: `type ToolUse = { id: string; name: string; input: Record<string, unknown> }; // Anthropic tool_use block
type ToolResult = { type: 'tool_result'; tool_use_id: string; content: string; is_error?: boolean };
type Runner = (call: ToolUse) => Promise<string>;

const SIDE_EFFECTS = new Set(['send_email', 'create_invoice', 'transfer_funds']);

export async function runBatch(calls: ToolUse[], run: Runner): Promise<ToolResult[]> {
  const toResult = (call: ToolUse, r: PromiseSettledResult<string>): ToolResult =>
    r.status === 'fulfilled'
      ? { type: 'tool_result', tool_use_id: call.id, content: r.value }
      : { type: 'tool_result', tool_use_id: call.id, content: String(r.reason), is_error: true };

  if (calls.some((c) => SIDE_EFFECTS.has(c.name))) {
    const results: ToolResult[] = [];
    for (const call of calls) {
      const [settled] = await Promise.allSettled([run(call)]); // one at a time, in the model's order
      results.push(toResult(call, settled));
    }
    return results;
  }
  const settled = await Promise.allSettled(calls.map(run)); // read-only: all at once
  return calls.map((call, i) => toResult(call, settled[i]!)); // allSettled keeps one result per call, in order
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const started = Date.now();
runBatch(
  ['Oslo', 'Lima', 'Pune'].map((city, i) => ({ id: \`toolu_0\${i}\`, name: 'get_weather', input: { city } })),
  async (call) => { await sleep(200); if (call.input.city === 'Lima') throw new Error('station offline'); return \`ok \${call.input.city}\`; },
).then((r) => console.log(r, \`\${Date.now() - started} ms\`)); // about 200 ms, not 600
`,
          },
        },
      ],
      keyTakeaways: [
        'The model only proposes a tool call with a name and arguments; the runtime decides whether to execute it and returns the result.',
        'A tool definition is a name matching ^[a-zA-Z0-9_-]{1,64}$, a description and a JSON Schema for its parameters, sent as input tokens on every request.',
        'Every tool call id must receive a result message, including refusals and errors, or the provider rejects the next request.',
        'Run independent read-only calls concurrently with Promise.allSettled, and side-effecting calls one at a time in order.',
        'tool_choice can leave the decision to the model, force some tool, force a named tool, or forbid tools.',
      ],
      questions: [
        {
          prompt: 'Who executes a tool when a model makes a function call?',
          correct: 'Your runtime, after it receives the tool name and arguments.',
          distractors: [
            'The model provider, which runs the function on its own servers.',
            'The model itself, by generating and evaluating the code of the function.',
            'The user, who must copy the arguments into the tool by hand.',
          ],
          explanation:
            'Function calling is a protocol: the model emits a structured request; your code validates it, executes it and returns the result.',
        },
        {
          prompt: 'In OpenAI Chat Completions, in what form do tool call arguments arrive?',
          correct: 'As a JSON string in function.arguments that your code must parse.',
          distractors: [
            'As a parsed object in an input field, already validated against the schema.',
            'As positional values in an array, in the order the schema lists them.',
            'As URL-encoded form fields appended to the tool name.',
          ],
          explanation:
            'Chat Completions sends arguments as a JSON string; Anthropic sends a parsed input object. Either way, parse and validate before use.',
        },
        {
          prompt: 'A tool call failed with an exception. What should the runtime send back?',
          correct: 'A tool result for that call id whose content describes the error.',
          distractors: [
            'Nothing; omit the failed call so the model does not get confused.',
            'A new user message asking the user to fix the tool and try again.',
            'The same tool call again, repeated until the call finally succeeds.',
          ],
          explanation:
            'Providers require a result for every call id, and an error result lets the model recover, for example by correcting arguments or choosing another tool.',
        },
        {
          prompt: 'Why use Promise.allSettled rather than Promise.all for a batch of parallel tool calls?',
          correct: 'A failing call becomes an error result instead of rejecting the batch.',
          distractors: [
            'Promise.allSettled runs the calls faster because it skips error handling.',
            'Promise.all cannot run more than two asynchronous calls at the same time.',
            'Providers require results to arrive in the order the calls finished.',
          ],
          explanation:
            'Promise.all rejects on the first failure and discards the other outcomes, leaving call ids unanswered; allSettled keeps every outcome.',
        },
        {
          prompt: 'You need the model to return output in an exact schema on this turn. Which tool_choice setting helps?',
          correct: 'Force a specific tool whose parameter schema is the shape you need.',
          distractors: [
            'Set tool_choice to "none" so that the model answers only in plain text.',
            'Set tool_choice to "auto" and describe the schema in the user message.',
            'Enable parallel tool calls so the model can produce several candidate outputs.',
          ],
          explanation:
            'Naming a tool forces the model to produce arguments for that tool, and the arguments follow its schema, which makes it a dependable structured-output mechanism.',
        },
      ],
      exercise: {
        title: 'Build a tool dispatcher',
        challenge:
          'Implement a ToolRegistry that registers handlers and dispatches a batch of tool calls in the OpenAI Chat Completions shape, where arguments arrive as a JSON string. The dispatcher must return exactly one tool message per call, turn every kind of failure into a readable error result, and run the batch concurrently.',
        requirements: [
          'register rejects names that do not match ^[a-zA-Z0-9_-]{1,64}$ by throwing an Error.',
          'dispatch returns one { role: "tool", tool_call_id, content } message per call, in the order of the calls.',
          'Invalid JSON, non-object arguments, unknown tools (listing the available ones) and handler exceptions all produce content starting with "Error:" instead of throwing.',
          'Results that are not strings are serialised with JSON.stringify.',
          'Calls run concurrently: two handlers that each take 100 ms finish in about 100 ms together.',
        ],
        starterCode: `export interface ToolCall {
  id: string;
  name: string;
  arguments: string; // a JSON string, as the model produced it
}

export interface ToolMessage {
  role: 'tool';
  tool_call_id: string;
  content: string;
}

export type Handler = (args: Record<string, unknown>) => Promise<unknown>;

export class ToolRegistry {
  private readonly handlers = new Map<string, Handler>();

  register(name: string, handler: Handler): this {
    // TODO: validate the name against ^[a-zA-Z0-9_-]{1,64}$
    this.handlers.set(name, handler);
    return this;
  }

  async dispatch(calls: ToolCall[]): Promise<ToolMessage[]> {
    // TODO: run all calls concurrently and keep their order
    // TODO: unknown tool, invalid JSON, non-object arguments, thrown errors -> 'Error: ...' content
    return [];
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const registry = new ToolRegistry()
  .register('get_time', async (args) => { await sleep(100); return \`12:00 in \${String(args.zone)}\`; })
  .register('get_fx_rate', async (args) => { await sleep(100); return { pair: args.pair, rate: 1.0842 }; })
  .register('fail', async () => { throw new Error('database unavailable'); });

const started = Date.now();
registry
  .dispatch([
    { id: 'call_1', name: 'get_time', arguments: '{"zone":"UTC"}' },
    { id: 'call_2', name: 'get_fx_rate', arguments: '{"pair":"EURUSD"}' },
    { id: 'call_3', name: 'get_weather', arguments: '{}' },
    { id: 'call_4', name: 'get_time', arguments: '{"zone":' },
    { id: 'call_5', name: 'fail', arguments: '{}' },
  ])
  .then((messages) => console.log(messages, \`\${Date.now() - started} ms\`));
`,
        solution: `export interface ToolCall {
  id: string;
  name: string;
  arguments: string; // a JSON string, as the model produced it
}

export interface ToolMessage {
  role: 'tool';
  tool_call_id: string;
  content: string;
}

export type Handler = (args: Record<string, unknown>) => Promise<unknown>;

export class ToolRegistry {
  private readonly handlers = new Map<string, Handler>();

  register(name: string, handler: Handler): this {
    if (!/^[a-zA-Z0-9_-]{1,64}$/.test(name)) throw new Error(\`invalid tool name: \${JSON.stringify(name)}\`);
    this.handlers.set(name, handler);
    return this;
  }

  async dispatch(calls: ToolCall[]): Promise<ToolMessage[]> {
    return Promise.all(
      calls.map(async (call): Promise<ToolMessage> => ({
        role: 'tool',
        tool_call_id: call.id,
        content: await this.runOne(call),
      })),
    );
  }

  private async runOne(call: ToolCall): Promise<string> {
    const handler = this.handlers.get(call.name);
    if (!handler) {
      return \`Error: unknown tool "\${call.name}". Available tools: \${[...this.handlers.keys()].join(', ')}\`;
    }
    let args: unknown;
    try {
      args = JSON.parse(call.arguments || '{}');
    } catch {
      return \`Error: arguments for \${call.name} are not valid JSON: \${call.arguments.slice(0, 200)}\`;
    }
    if (typeof args !== 'object' || args === null || Array.isArray(args)) {
      return \`Error: arguments for \${call.name} must be a JSON object\`;
    }
    try {
      const result = await handler(args as Record<string, unknown>);
      return typeof result === 'string' ? result : JSON.stringify(result);
    } catch (err) {
      return \`Error: \${call.name} failed: \${err instanceof Error ? err.message : String(err)}\`;
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const registry = new ToolRegistry()
  .register('get_time', async (args) => { await sleep(100); return \`12:00 in \${String(args.zone)}\`; })
  .register('get_fx_rate', async (args) => { await sleep(100); return { pair: args.pair, rate: 1.0842 }; })
  .register('fail', async () => { throw new Error('database unavailable'); });

const started = Date.now();
registry
  .dispatch([
    { id: 'call_1', name: 'get_time', arguments: '{"zone":"UTC"}' },
    { id: 'call_2', name: 'get_fx_rate', arguments: '{"pair":"EURUSD"}' },
    { id: 'call_3', name: 'get_weather', arguments: '{}' },
    { id: 'call_4', name: 'get_time', arguments: '{"zone":' },
    { id: 'call_5', name: 'fail', arguments: '{}' },
  ])
  .then((messages) => console.log(messages, \`\${Date.now() - started} ms\`)); // about 100 ms
`,
        hints: [
          'Put the per-call logic in a private method that always returns a string; dispatch then only maps and awaits.',
          'JSON.parse accepts "42" and "[1]", so check the parsed value is a non-null, non-array object.',
          'Promise.all over calls.map(async ...) runs the calls concurrently and keeps their order in the result.',
        ],
      },
    },
    // ------------------------------------------------------------------------------------------
    {
      id: 'tool-design',
      title: 'Designing Tools for Models',
      preview:
        'Covers how to name, scope and describe tools so models pick the right one with the right arguments, and why tools with side effects must be idempotent.',
      estimatedMinutes: 20,
      objectives: [
        'Choose tool and parameter names that make the intended use obvious',
        'Split broad tools into narrow ones with constrained parameters and compact results',
        'Write descriptions that say what a tool does, when to use it, when not to, and what it returns',
        'Make side-effecting tools idempotent with idempotency keys',
      ],
      sections: [
        {
          heading: 'Names are the first prompt',
          body: [
            `The model chooses among tools largely by name, so names should read like the action they perform. Use a verb_noun pattern with a consistent vocabulary: search_orders, get_order, refund_order, cancel_subscription. Reserve get_ for fetching one item by id and search_ or list_ for queries that return many, and keep that convention across every tool. Two tools called get_data and fetch_info force the model to guess; one called get_invoice and one called search_invoices do not.`,
            `With many tools from several systems, add a namespace prefix such as github_create_issue and jira_create_issue. Both providers limit names to 64 characters of letters, digits, underscores and hyphens, which leaves room for a prefix.`,
            `Parameter names matter as much. Prefer order_id to id when the model also handles customer ids, and put units into names: amount_cents, timeout_seconds, max_results. A parameter named amount invites the model to send 19.99 when your API expects 1999; a parameter named amount_cents with the description "integer number of cents, e.g. 1999 for $19.99" makes that mistake unlikely. Consistency across tools helps too: if one tool says customer_id, no other tool should say client_id for the same thing.`,
          ].join('\n\n'),
        },
        {
          heading: 'Narrow tools with constrained inputs',
          body: [
            `A tool should do one job. A run_sql tool that accepts any query is maximally flexible, and it is also maximally easy to misuse: the model has to know your schema, can write a slow or wrong query, and an injected instruction can turn it into DELETE FROM customers. A get_order(order_id) tool can do one thing, and it does it the same way every time. Prefer narrow tools for anything routine and keep broad ones, if any, for trusted and well-supervised agents.`,
            `Constrain every parameter you can: enums for fixed choices, patterns for identifiers, minimum and maximum for numbers, defaults for optional values. Fewer parameters means fewer ways to be wrong.`,
            `Narrow also applies to results. Return the fields the task needs and the identifiers the next call will need, paginate long lists, and cap sizes. Do not let the count of narrow tools explode either: selection accuracy drops as the menu grows. A few dozen tools per agent is workable; hundreds call for routing, such as a first step that picks a tool group, or a tool-search tool.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'A broad tool that invites mistakes, and the narrow replacement with constrained parameters.',
            source: `// Broad: the model must know the schema, can write any statement, and injections become SQL.
export const runSql = {
  name: 'run_sql',
  description: 'Run a SQL query against the orders database.',
  parameters: {
    type: 'object',
    properties: { query: { type: 'string' } },
    required: ['query'],
  },
};

// Narrow: one job, constrained inputs, bounded output.
export const searchOrders = {
  name: 'search_orders',
  description:
    "Find a customer's orders when you do not have an order id. Returns at most max_results orders, " +
    'newest first, each with order_id, status, total_cents and created_at. Use get_order for full details.',
  parameters: {
    type: 'object',
    properties: {
      customer_id: { type: 'string', pattern: '^cus_[A-Za-z0-9]{8,}$', description: 'e.g. cus_4Fj2K9aQ' },
      status: { type: 'string', enum: ['pending', 'shipped', 'delivered', 'refunded'] },
      max_results: { type: 'integer', minimum: 1, maximum: 20, default: 5 },
    },
    required: ['customer_id'],
    additionalProperties: false,
  },
} as const;

console.log(Object.keys(searchOrders.parameters.properties)); // [ 'customer_id', 'status', 'max_results' ]
`,
          },
        },
        {
          heading: 'Descriptions that guide the model',
          body: [
            `The description is the documentation the model reads at the moment of decision, so write it as you would for a new colleague who cannot ask questions. Cover four things: what the tool does, when to use it, when not to use it and what to use instead, and what it returns. Add anything surprising: side effects, cost, latency, or limits such as "covers the last 90 days only". Three to six sentences is typical for a tool with consequences; a one-line description such as "Gets order" is the most common cause of wrong tool choice.`,
            `Give formats by example. "Date in YYYY-MM-DD, e.g. 2025-05-03" beats "a date". Say where a value comes from when the model has to look it up: "order_id from search_orders or get_customer". Those cross-references teach the model the sequence of calls without any orchestration code.`,
            `Results and errors are part of the interface too. A result should include the identifiers the next step needs, and an error should say what to do next: "No orders found for cus_4Fj2K9aQ in the last 90 days; try without the status filter" lets the model recover, while an empty array or a bare "404" leaves it guessing.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'A tool with a description that covers purpose, when to use it, when not to, its return value and side effects.',
            source: `export const refundOrder = {
  name: 'refund_order',
  description: [
    'Refund all or part of a paid order to the original payment method. This moves money and cannot be undone.',
    'Use it only after get_order shows status "delivered" or "shipped" and the customer has asked for a refund.',
    'Do not use it for orders in status "pending"; use cancel_order instead, which releases the payment without a refund.',
    'amount_cents must not exceed the total_cents returned by get_order.',
    'Returns refund_id, amount_cents and the expected arrival date of the funds.',
  ].join(' '),
  parameters: {
    type: 'object',
    properties: {
      order_id: { type: 'string', pattern: '^ord_[A-Za-z0-9]{6,}$', description: 'From search_orders or get_order, e.g. ord_8KX2PQ.' },
      amount_cents: { type: 'integer', minimum: 1, description: 'Integer number of cents, e.g. 1999 for $19.99.' },
      reason: { type: 'string', enum: ['damaged', 'not_received', 'duplicate_charge', 'other'] },
    },
    required: ['order_id', 'amount_cents', 'reason'],
    additionalProperties: false,
  },
} as const;

// An error the model can act on, instead of a bare status code.
export function amountTooHigh(orderId: string, requested: number, total: number): string {
  return \`Error: amount_cents \${requested} exceeds the order total \${total} for \${orderId}. Refund at most \${total}.\`;
}

console.log(refundOrder.description.split('. ').length, 'sentences');
console.log(amountTooHigh('ord_8KX2PQ', 5_000, 3_499));
`,
          },
        },
        {
          heading: 'Idempotency',
          body: [
            `Agents repeat calls. The runtime retries after a timeout, the model re-plans and issues the same action again, a crashed run resumes from its last checkpoint. For a read, a repeat costs a little time. For charge_card, send_email or refund_order, a repeat is a second charge, a second email or a second refund. A tool is idempotent when calling it twice with the same input has the same effect as calling it once, and every side-effecting tool an agent can reach should be.`,
            `Some operations are naturally idempotent: "set the order status to shipped" can run twice safely, "increment the shipped count" cannot. For the rest, use an idempotency key: a unique value sent with the request, under which the server stores the first result and returns it for any repeat. Stripe's API works this way with its Idempotency-Key header, keeps keys for at least 24 hours, and rejects a reused key sent with different parameters.`,
            `Choose what the key identifies. Derived from the run id and the tool call id, it protects against runtime retries of one call. A model that re-issues the same refund as a new call gets a new call id, so for money also derive a key from the business operation, such as the order and amount within this run, or check for an existing refund before creating one. Never let the model invent the key.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'An idempotency wrapper: repeats with the same key return the stored result, and a key reused with different arguments is rejected.',
            source: `import { createHash } from 'node:crypto';

type Effect<A> = (args: A) => Promise<string>;

export function idempotent<A>(effect: Effect<A>) {
  const store = new Map<string, { argsHash: string; result: Promise<string> }>();
  return (key: string, args: A): Promise<string> => {
    const argsHash = createHash('sha256').update(JSON.stringify(args)).digest('hex');
    const previous = store.get(key);
    if (previous) {
      if (previous.argsHash !== argsHash) return Promise.reject(new Error(\`idempotency key \${key} reused with different arguments\`));
      return previous.result; // same key, same arguments: no second effect
    }
    const result = effect(args);
    store.set(key, { argsHash, result }); // stored before it settles, so concurrent repeats share it
    return result;
  };
}

let emailsSent = 0;
const sendEmail = idempotent(async (args: { to: string; subject: string }) => {
  emailsSent++;
  return \`sent "\${args.subject}" to \${args.to}\`;
});

const key = 'run_42:refund-confirmation:ord_8KX2PQ'; // derived from the operation, not invented by the model
Promise.all([
  sendEmail(key, { to: 'ana@example.com', subject: 'Your refund' }),
  sendEmail(key, { to: 'ana@example.com', subject: 'Your refund' }),
]).then((r) => console.log(r, 'emails sent:', emailsSent)); // emails sent: 1
`,
          },
        },
      ],
      keyTakeaways: [
        'Tool names in a consistent verb_noun vocabulary, and parameter names with units such as amount_cents, prevent most wrong choices and wrong values.',
        'Narrow tools with enums, patterns and ranges are safer and more reliable than broad tools such as run_sql.',
        'A good description says what the tool does, when to use it, when not to and what to use instead, and what it returns.',
        'Errors should tell the model what to do next, not just that something failed.',
        'Side-effecting tools need idempotency keys chosen by the runtime, so repeats return the stored result instead of acting twice.',
      ],
      questions: [
        {
          prompt: 'Which parameter definition is least likely to produce a wrong amount?',
          correct: 'amount_cents: integer, described as "number of cents, e.g. 1999 for $19.99".',
          distractors: [
            'amount: number, described as "the amount of money to use for the operation".',
            'value: string, described as "the value, formatted however is convenient".',
            'amt: number, with no description, since the short name is self-explanatory.',
          ],
          explanation: 'Units in the name and a concrete example in the description remove the cents-versus-dollars ambiguity.',
        },
        {
          prompt: 'Why is a get_order(order_id) tool usually preferable to a run_sql(query) tool for an agent?',
          correct: 'It does one job with a constrained input, so it cannot become arbitrary SQL.',
          distractors: [
            'It returns more data per call, which saves the agent several extra tool calls.',
            'It is faster because providers cache narrow tools between their requests.',
            'It lets the model write its own queries while the schema stays hidden.',
          ],
          explanation:
            'Broad tools require schema knowledge, invite wrong or slow queries and can be abused through injection; narrow tools bound what can happen.',
        },
        {
          prompt: 'What should a tool description cover beyond what the tool does?',
          correct: 'When to use it, when not to, what it returns and any side effects.',
          distractors: [
            'The internal implementation details and the database tables it touches.',
            'A list of every customer it has been used for in the past week.',
            'Nothing more; a short phrase is best because it saves input tokens.',
          ],
          explanation:
            'The description is read at decision time; guidance on when (not) to use the tool and what it returns is what drives correct selection.',
        },
        {
          prompt: 'What does an idempotency key achieve for a refund tool?',
          correct: 'A repeat with the same key returns the first result instead of refunding.',
          distractors: [
            'It encrypts the refund request so that it cannot be read in transit.',
            'It lets the model choose a new key for each retry to force a fresh refund.',
            'It guarantees the refund succeeds even if the payment provider is down.',
          ],
          explanation:
            'The server stores the first result under the key and returns it for repeats, so retries and re-issued calls cannot double the effect.',
        },
        {
          prompt: 'A key was derived from the tool call id, and the model later re-issues the same refund as a new call. What happens?',
          correct: 'It gets a new key, so it can refund again unless the key reflects the operation.',
          distractors: [
            'The payment provider detects the duplicate from the model name and rejects it.',
            'Nothing happens, because tool call ids stay the same when the model re-plans.',
            'The refund fails, because keys derived from call ids expire after a single use.',
          ],
          explanation:
            'Call-id keys only cover runtime retries of one call. For money, derive the key from the operation (order and amount in this run) or check for an existing refund.',
        },
      ],
      exercise: {
        title: 'An idempotent refund tool',
        challenge:
          'Write the definition and the handler for a refund_order tool. The definition must guide the model to use the tool correctly; the handler must make repeated and concurrent requests with the same idempotency key refund exactly once, reject a key reused for a different refund, and pass the key on to the payment provider so that retries after an ambiguous failure are deduplicated there too.',
        requirements: [
          'The definition uses a verb_noun name, a description stating what the tool does, when to use it, when not to, and that it moves money, and a schema with a pattern for order_id, an integer minimum for amount_cents, an enum for reason and additionalProperties: false.',
          'Repeated calls with the same key and the same arguments, including concurrent ones, call payments.refund once and all receive the same result.',
          'A key reused with different arguments returns an error string explaining the conflict and does not refund.',
          'The idempotency key is passed to payments.refund; if that call fails, the key is forgotten locally so the same request can be retried.',
        ],
        starterCode: `export const refundOrderTool = {
  name: 'TODO',
  description: 'TODO: what it does, when to use it, when not to, and that it moves money',
  parameters: {
    type: 'object',
    properties: {
      // TODO: order_id (pattern ^ord_[A-Za-z0-9]{6,}$), amount_cents (integer >= 1), reason (enum)
    },
    required: [] as string[],
    additionalProperties: false,
  },
};

export interface RefundArgs {
  order_id: string;
  amount_cents: number;
  reason: 'damaged' | 'not_received' | 'duplicate_charge' | 'other';
}

export interface PaymentsApi {
  refund(orderId: string, amountCents: number, idempotencyKey: string): Promise<{ refundId: string }>;
}

export class RefundHandler {
  constructor(private readonly payments: PaymentsApi) {}

  execute(args: RefundArgs, idempotencyKey: string): Promise<string> {
    // TODO: remember the in-flight or finished result per key, with a fingerprint of the arguments
    // TODO: same key + same args -> same promise; same key + different args -> error string
    // TODO: forget the key if the refund fails
    return Promise.resolve('TODO');
  }
}

let refunds = 0;
const handler = new RefundHandler({
  refund: async (orderId, amountCents, key) => {
    refunds++;
    return { refundId: \`re_\${refunds}_\${key.slice(-4)}\` };
  },
});

const args: RefundArgs = { order_id: 'ord_8KX2PQ', amount_cents: 1999, reason: 'damaged' };
Promise.all([handler.execute(args, 'run_7:ord_8KX2PQ:1999'), handler.execute(args, 'run_7:ord_8KX2PQ:1999')])
  .then(async (results) => {
    console.log(results, 'refunds:', refunds); // expect 1 refund
    console.log(await handler.execute({ ...args, amount_cents: 5000 }, 'run_7:ord_8KX2PQ:1999'));
  });
`,
        solution: `export const refundOrderTool = {
  name: 'refund_order',
  description: [
    'Refund all or part of a paid order to the original payment method. This moves money and cannot be undone.',
    'Use it only when the customer asked for a refund and get_order shows the order as shipped or delivered.',
    'Do not use it for pending orders; use cancel_order instead.',
    'Returns the refund id and the refunded amount in cents.',
  ].join(' '),
  parameters: {
    type: 'object',
    properties: {
      order_id: { type: 'string', pattern: '^ord_[A-Za-z0-9]{6,}$', description: 'From search_orders or get_order, e.g. ord_8KX2PQ.' },
      amount_cents: { type: 'integer', minimum: 1, description: 'Integer number of cents, at most the order total.' },
      reason: { type: 'string', enum: ['damaged', 'not_received', 'duplicate_charge', 'other'] },
    },
    required: ['order_id', 'amount_cents', 'reason'],
    additionalProperties: false,
  },
};

export interface RefundArgs {
  order_id: string;
  amount_cents: number;
  reason: 'damaged' | 'not_received' | 'duplicate_charge' | 'other';
}

export interface PaymentsApi {
  refund(orderId: string, amountCents: number, idempotencyKey: string): Promise<{ refundId: string }>;
}

export class RefundHandler {
  private readonly byKey = new Map<string, { fingerprint: string; result: Promise<string> }>();

  constructor(private readonly payments: PaymentsApi) {}

  execute(args: RefundArgs, idempotencyKey: string): Promise<string> {
    const fingerprint = JSON.stringify([args.order_id, args.amount_cents, args.reason]);
    const previous = this.byKey.get(idempotencyKey);
    if (previous) {
      if (previous.fingerprint === fingerprint) return previous.result;
      return Promise.resolve(
        \`Error: idempotency key \${idempotencyKey} was already used for a different refund \${previous.fingerprint}. \` +
          'A new refund needs a new key; if you meant to repeat the earlier refund, send the same arguments.',
      );
    }
    const result = this.payments
      .refund(args.order_id, args.amount_cents, idempotencyKey)
      .then((r) => \`Refunded \${args.amount_cents} cents on \${args.order_id}: refund \${r.refundId}.\`);
    this.byKey.set(idempotencyKey, { fingerprint, result });
    // The provider deduplicates on the same key, so a failed attempt can safely be retried.
    result.catch(() => this.byKey.delete(idempotencyKey));
    return result;
  }
}

let refunds = 0;
const handler = new RefundHandler({
  refund: async (orderId, amountCents, key) => {
    refunds++;
    return { refundId: \`re_\${refunds}_\${key.slice(-4)}\` };
  },
});

const args: RefundArgs = { order_id: 'ord_8KX2PQ', amount_cents: 1999, reason: 'damaged' };
Promise.all([handler.execute(args, 'run_7:ord_8KX2PQ:1999'), handler.execute(args, 'run_7:ord_8KX2PQ:1999')])
  .then(async (results) => {
    console.log(results, 'refunds:', refunds); // 1 refund, both callers get the same text
    console.log(await handler.execute({ ...args, amount_cents: 5000 }, 'run_7:ord_8KX2PQ:1999')); // conflict error
  });
`,
        hints: [
          'Store the promise, not the resolved value: a second call that arrives while the first is in flight must reuse it.',
          'A fingerprint such as JSON.stringify([order_id, amount_cents, reason]) has a fixed key order, unlike stringifying the object.',
          'Attach the cleanup with result.catch(...) but return the original promise, so callers still see the failure.',
        ],
      },
    },
    // ------------------------------------------------------------------------------------------
    {
      id: 'validating-tool-calls',
      title: 'Validating Tool Calls',
      preview:
        'Shows how to validate model-generated arguments with zod, turn validation failures into error messages the model can recover from, and retry without looping forever.',
      estimatedMinutes: 20,
      objectives: [
        'Validate tool arguments with zod schemas before executing any tool',
        'Turn zod issues into concise error messages that name the field and the fix',
        'Separate errors the model can fix from transient errors the runtime should retry',
        'Bound retries with consecutive-failure limits and exponential backoff',
      ],
      sections: [
        {
          heading: 'Never trust the arguments',
          body: [
            `Model-generated arguments fail in predictable ways: a string "42" where a number is expected, a missing required field, an enum value that is not in the enum ("refunded_partial"), a negative quantity, a date in the wrong format, an id that looks right but does not exist. Strict structured-output modes remove many shape errors, but not all providers or models support them for every schema, and none of them check meaning.`,
            `Validate at the boundary, before the handler runs, exactly as you would validate an HTTP request body. zod fits well: z.object describes the shape, .strict() rejects keys the schema does not declare (a common sign that the model confused two tools), and safeParse returns either { success: true, data } with fully typed data or { success: false, error } with a list of issues, without throwing. Be deliberate with coercion: z.coerce.number() turns "42" into 42, which is convenient, but it also turns "" into 0.`,
            `After the shape, check semantics against real state: the order exists, it belongs to this customer, the refund does not exceed the amount paid. These checks need a database, so they live in the handler, but they should produce the same kind of actionable error as the schema checks.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'A strict zod schema for a tool, and what safeParse reports for typical model mistakes.',
            source: `import { z } from 'zod';

export const CreateShipment = z
  .object({
    order_id: z.string().regex(/^ord_[A-Za-z0-9]{6,}$/, 'must look like ord_8KX2PQ'),
    carrier: z.enum(['ups', 'fedex', 'dhl']),
    weight_grams: z.number().int().positive().max(30_000),
    ship_date: z.string().regex(/^\\d{4}-\\d{2}-\\d{2}$/, 'must be YYYY-MM-DD'),
  })
  .strict();

export type CreateShipment = z.infer<typeof CreateShipment>;

const fromModel: unknown = JSON.parse(
  '{"order_id":"8KX2PQ","carrier":"usps","weight_grams":"1200","ship_date":"03/05/2025","notes":"fragile"}',
);

const result = CreateShipment.safeParse(fromModel);
if (result.success) {
  console.log('valid', result.data.weight_grams + 1); // data is fully typed here
} else {
  for (const issue of result.error.issues) console.log(issue.path.join('.') || '(root)', '-', issue.message);
}
// order_id - must look like ord_8KX2PQ
// carrier - Invalid enum value. Expected 'ups' | 'fedex' | 'dhl', received 'usps'
// weight_grams - Expected number, received string
// ship_date - must be YYYY-MM-DD
// (root) - Unrecognized key(s) in object: 'notes'
`,
          },
        },
        {
          heading: 'Error messages the model can recover from',
          body: [
            `When validation fails, do not throw and do not drop the call. Return the problem as the tool result, marked as an error (Anthropic's tool_result has is_error: true; with OpenAI, a clear "Error:" prefix in the content works), and let the model try again. Models are good at fixing a call when told precisely what is wrong, and poor at guessing from "invalid input".`,
            `A recoverable message names each field, says what was wrong, and says how to fix it: the expected format with an example, the allowed values, or which tool provides the value. "order_id: must look like ord_8KX2PQ; use search_orders to find it" gets a corrected call on the next step far more often than a bare schema error. List all problems at once, so the model fixes everything in one retry instead of discovering errors one at a time.`,
            `Keep internals out. A stack trace costs hundreds of tokens, helps the model not at all, and can leak file paths, hostnames or query text. Log the full error for your own debugging and hand the model only the actionable part.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'Formatting zod issues into one message that names every field and how to fix it.',
            source: `import { z } from 'zod';

const FIX_HINTS: Record<string, string> = {
  order_id: 'use search_orders to find the id',
  carrier: 'pick one of the listed carriers',
};

export function toRecoverableError(tool: string, error: z.ZodError): string {
  const lines = error.issues.map((issue) => {
    const field = issue.path.join('.') || '(arguments)';
    const hint = FIX_HINTS[String(issue.path[0])];
    return \`- \${field}: \${issue.message}\${hint ? \` (\${hint})\` : ''}\`;
  });
  return [\`Error: \${tool} was not called because \${lines.length} argument(s) are invalid:\`, ...lines, \`Fix all of them and call \${tool} again.\`].join('\\n');
}

const Schema = z.object({
  order_id: z.string().regex(/^ord_[A-Za-z0-9]{6,}$/, 'must look like ord_8KX2PQ'),
  carrier: z.enum(['ups', 'fedex', 'dhl']),
});

const parsed = Schema.safeParse({ order_id: '8KX2PQ', carrier: 'usps' });
if (!parsed.success) console.log(toRecoverableError('create_shipment', parsed.error));
`,
          },
        },
        {
          heading: 'Retries without loops',
          body: [
            `Different failures need different retry owners. Validation errors and semantic errors (unknown order, amount too high) go back to the model, because only the model can change the arguments. Transient failures, meaning timeouts, connection resets and HTTP 429, 502, 503 and 504, should be retried by the runtime without involving the model: the call was fine, the moment was not. Permanent failures such as 401, 403 or 404 are neither retried nor fixable by rephrasing, so report them to the model as facts ("not authorised to read this repository") and let it change course.`,
            `Runtime retries use exponential backoff with jitter: wait a random time between zero and base x 2^attempt, capped, for example 250 ms, 500 ms, 1 s, 2 s, and stop after three or four attempts. Honour a Retry-After header when the server sends one. Retry only idempotent operations, or ones that carry an idempotency key, since a timed-out POST may have succeeded.`,
            `Model retries need a limit too. Count consecutive invalid calls per tool; after two or three, stop offering corrections and tell the model to explain the problem or escalate. Without that limit, a model that misunderstands a parameter will spend the whole step budget on variations of one mistake.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'Runtime retries for transient HTTP failures with capped exponential backoff, full jitter and Retry-After.',
            source: `const TRANSIENT = new Set([429, 502, 503, 504]);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function fetchWithRetry(url: string, init: RequestInit = {}, maxAttempts = 4): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    let response: Response | undefined;
    try {
      response = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
      if (!TRANSIENT.has(response.status)) return response; // success or a permanent error: caller decides
    } catch (err) {
      if (attempt + 1 >= maxAttempts) throw err; // network error or timeout, out of attempts
    }
    if (attempt + 1 >= maxAttempts) return response!; // still transient: hand back the last response
    const retryAfter = Number(response?.headers.get('retry-after'));
    const backoff = Math.random() * Math.min(8_000, 250 * 2 ** attempt); // full jitter
    await sleep(Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1_000 : backoff);
  }
}

// Only safe for idempotent requests (GET, or POST with an Idempotency-Key header).
fetchWithRetry('https://httpbin.org/status/503', {}, 3)
  .then((r) => console.log('final status', r.status))
  .catch((err: Error) => console.log('gave up:', err.message));
`,
          },
        },
        {
          heading: 'A validated tool wrapper',
          body: [
            `The pieces combine into one small abstraction: a tool defined by a name, a zod schema and a handler typed from that schema. Its execute method takes the raw arguments from the model, validates them, formats issues into a recoverable message, tracks consecutive invalid calls, runs the handler only on valid input, and converts handler exceptions into error results. The handler never sees unvalidated data, and the agent loop never sees an exception from a tool.`,
            `The same schema can produce the JSON Schema you send to the provider, so the contract the model sees and the contract you enforce cannot drift apart. zod 4 has a built-in z.toJSONSchema(); with zod 3 the zod-to-json-schema package does the conversion. Either way, keep the zod schema as the single source of truth.`,
            `Return a discriminated result such as { ok: true, content } or { ok: false, content } rather than a bare string. The loop can then set is_error correctly, count failures for its metrics, and trace validation failures separately from handler failures, which point to different fixes: the first to the tool's description, the second to the tool itself.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'A generic tool wrapper: the handler is typed from the zod schema and only ever receives validated arguments.',
            source: `import { z } from 'zod';

type ToolResult = { ok: true; content: string } | { ok: false; content: string };

export function defineTool<S extends z.ZodTypeAny>(name: string, schema: S, handler: (args: z.infer<S>) => Promise<string>) {
  let invalidInARow = 0;
  return {
    name,
    async execute(raw: unknown): Promise<ToolResult> {
      const parsed = schema.safeParse(raw);
      if (!parsed.success) {
        invalidInARow++;
        if (invalidInARow >= 3) return { ok: false, content: \`Error: \${invalidInARow} invalid calls to \${name} in a row. Stop calling it and tell the user what is missing.\` };
        const issues = parsed.error.issues.map((i) => \`- \${i.path.join('.') || '(arguments)'}: \${i.message}\`);
        return { ok: false, content: \`Error: invalid arguments for \${name}:\\n\${issues.join('\\n')}\` };
      }
      invalidInARow = 0;
      try {
        return { ok: true, content: await handler(parsed.data as z.infer<S>) };
      } catch (err) {
        return { ok: false, content: \`Error: \${name} failed: \${err instanceof Error ? err.message : String(err)}\` };
      }
    },
  };
}

const getStock = defineTool('get_stock', z.object({ sku: z.string().regex(/^[A-Z]{3}-\\d{4}$/, 'must look like ABC-1234') }).strict(),
  async ({ sku }) => \`\${sku}: 14 in stock\`); // sku is typed as string here

getStock.execute({ sku: 'abc1234' }).then(console.log);
getStock.execute({ sku: 'ABC-1234' }).then(console.log);
`,
          },
        },
      ],
      keyTakeaways: [
        'Validate every tool call against a zod schema before the handler runs; .strict() also catches keys that belong to a different tool.',
        'Return validation failures as error tool results that name each field, what was wrong and how to fix it, all in one message.',
        'Transient failures (timeouts, 429, 502, 503, 504) are retried by the runtime with jittered exponential backoff; argument errors go back to the model.',
        'Cap consecutive invalid calls per tool at two or three, then tell the model to stop and explain or escalate.',
        'Keep the zod schema as the single source of truth and derive the JSON Schema sent to the model from it.',
      ],
      questions: [
        {
          prompt: 'What does .strict() add to a zod object schema for tool arguments?',
          correct: 'It rejects undeclared keys instead of silently stripping them.',
          distractors: [
            'It makes every optional field in the schema a required one.',
            'It coerces strings such as "42" into numbers before validation.',
            'It makes the provider constrain its decoding to the schema.',
          ],
          explanation:
            'By default z.object strips unknown keys; .strict() reports them, which often reveals that the model confused two tools.',
        },
        {
          prompt: 'Which validation error message best helps the model recover?',
          correct: '"order_id: must look like ord_8KX2PQ (use search_orders to find the id)"',
          distractors: [
            '"Invalid input. Please try the call again with the correct arguments."',
            '"ZodError: validation failed at Object.parse (node_modules/zod/lib/types.js)"',
            '"400 Bad Request was returned by the order service for this call"',
          ],
          explanation:
            'A recoverable message names the field, the expected format and where to get a valid value; stack traces and generic errors give the model nothing to act on.',
        },
        {
          prompt: 'A tool call fails with HTTP 503. Who should retry it and how?',
          correct: 'The runtime, with jittered exponential backoff, without the model.',
          distractors: [
            'The model, after being told to change the arguments of the call.',
            'Nobody; 503 is a permanent error and retrying only wastes budget.',
            'The runtime, immediately and in a tight loop until it succeeds.',
          ],
          explanation:
            '503 is transient: the arguments were fine. Backoff with jitter avoids hammering the service; the model does not need to spend a step on it.',
        },
        {
          prompt: 'The model has made three invalid calls to the same tool in a row. What should happen next?',
          correct: 'Stop offering corrections; tell the model to explain or to escalate.',
          distractors: [
            'Keep returning the validation errors until the step budget runs out.',
            'Loosen the schema so that the next call is accepted exactly as it is.',
            'Silently fill the invalid fields with default values and run the tool.',
          ],
          explanation:
            'A consecutive-failure cap prevents the agent from spending its whole budget on variations of one misunderstanding.',
        },
        {
          prompt: 'Why should a tool wrapper return { ok, content } rather than a bare string?',
          correct: 'The loop can set is_error and count the two failure kinds separately.',
          distractors: [
            'Providers reject tool results that are plain strings without an ok field.',
            'It makes the tool result shorter, which saves tokens on every step.',
            'It lets the handler skip validation whenever ok is already true.',
          ],
          explanation:
            'A discriminated result carries the error status explicitly, which the loop needs for is_error, metrics and tracing.',
        },
      ],
      exercise: {
        title: 'A validated create_invoice tool',
        challenge:
          'Implement defineTool, a wrapper that validates raw model arguments with a zod schema before calling a typed handler, and use it to build a create_invoice tool. Validation failures must come back as one message listing every invalid field with a fix, repeated failures must be capped, and handler exceptions must never escape.',
        requirements: [
          'execute(raw) validates with schema.safeParse before calling the handler and never throws.',
          "A validation failure returns { ok: false } whose content lists every issue as '- path: message' and ends with an instruction to fix the fields and call the tool again.",
          'The create_invoice schema is strict and its messages say how to fix each field: customer_id like cus_ plus at least 8 letters or digits (from find_customer), amount_cents a positive integer of at most 1,000,000, currency usd or eur, due_date in YYYY-MM-DD.',
          'After maxConsecutiveInvalid invalid calls in a row the content tells the model to stop calling the tool; a valid call resets the count.',
          'Handler exceptions become { ok: false } results that include the tool name and the error message.',
        ],
        starterCode: `import { z } from 'zod';

export type ToolResult = { ok: true; content: string } | { ok: false; content: string };

export function formatIssues(error: z.ZodError): string {
  // TODO: one line per issue: '- path: message' (use '(arguments)' for an empty path)
  return '';
}

export function defineTool<S extends z.ZodTypeAny>(
  name: string,
  schema: S,
  handler: (args: z.infer<S>) => Promise<string>,
  maxConsecutiveInvalid = 3,
) {
  return {
    name,
    async execute(raw: unknown): Promise<ToolResult> {
      // TODO: safeParse, consecutive-invalid counter, handler call inside try/catch
      return { ok: false, content: 'not implemented' };
    },
  };
}

// TODO: customer_id, amount_cents, currency, due_date with fix-it messages; reject unknown keys
export const CreateInvoice = z.object({});

export const createInvoice = defineTool('create_invoice', CreateInvoice, async () => {
  return 'TODO: return the created invoice id';
});

async function main(): Promise<void> {
  console.log(await createInvoice.execute({ customer_id: '77', amount_cents: 19.99, currency: 'gbp', due_date: '5/3/2025' }));
  console.log(await createInvoice.execute({ customer_id: 'cus_4Fj2K9aQ', amount_cents: 1999, currency: 'usd', due_date: '2025-06-01' }));
}

main();
`,
        solution: `import { z } from 'zod';

export type ToolResult = { ok: true; content: string } | { ok: false; content: string };

export function formatIssues(error: z.ZodError): string {
  return error.issues.map((issue) => \`- \${issue.path.join('.') || '(arguments)'}: \${issue.message}\`).join('\\n');
}

export function defineTool<S extends z.ZodTypeAny>(
  name: string,
  schema: S,
  handler: (args: z.infer<S>) => Promise<string>,
  maxConsecutiveInvalid = 3,
) {
  let invalidInARow = 0;
  return {
    name,
    async execute(raw: unknown): Promise<ToolResult> {
      const parsed = schema.safeParse(raw);
      if (!parsed.success) {
        invalidInARow++;
        if (invalidInARow >= maxConsecutiveInvalid) {
          return {
            ok: false,
            content: \`Error: \${invalidInARow} invalid calls to \${name} in a row. Stop calling \${name}; tell the user which information is missing or escalate.\`,
          };
        }
        return {
          ok: false,
          content: \`Error: invalid arguments for \${name}:\\n\${formatIssues(parsed.error)}\\nFix these fields and call \${name} again.\`,
        };
      }
      invalidInARow = 0;
      try {
        return { ok: true, content: await handler(parsed.data as z.infer<S>) };
      } catch (err) {
        return { ok: false, content: \`Error: \${name} failed: \${err instanceof Error ? err.message : String(err)}\` };
      }
    },
  };
}

export const CreateInvoice = z
  .object({
    customer_id: z
      .string()
      .regex(/^cus_[A-Za-z0-9]{8,}$/, 'must be cus_ followed by at least 8 letters or digits; get it from find_customer'),
    amount_cents: z
      .number()
      .int('must be a whole number of cents, e.g. 1999 for $19.99')
      .positive('must be greater than 0')
      .max(1_000_000, 'must be at most 1000000 cents ($10,000); larger invoices need approval'),
    currency: z.enum(['usd', 'eur']),
    due_date: z.string().regex(/^\\d{4}-\\d{2}-\\d{2}$/, 'must be a date in YYYY-MM-DD format, e.g. 2025-06-01'),
  })
  .strict();

let nextId = 1;
export const createInvoice = defineTool('create_invoice', CreateInvoice, async (args) => {
  return \`Created invoice inv_\${String(nextId++).padStart(4, '0')} for \${args.customer_id}: \${args.amount_cents} \${args.currency} due \${args.due_date}.\`;
});

async function main(): Promise<void> {
  console.log(await createInvoice.execute({ customer_id: '77', amount_cents: 19.99, currency: 'gbp', due_date: '5/3/2025' }));
  console.log(await createInvoice.execute({ customer_id: 'cus_4Fj2K9aQ', amount_cents: 1999, currency: 'usd', due_date: '2025-06-01' }));
}

main();
`,
        hints: [
          'z.number().int(message) and .regex(pattern, message) take custom messages; put the fix in the message.',
          'Keep the invalid-call counter in the closure created by defineTool, so each tool counts separately.',
          'parsed.data is typed from the schema; cast it to z.infer<S> when TypeScript cannot narrow a generic schema.',
        ],
      },
    },
    // ------------------------------------------------------------------------------------------
    {
      id: 'http-tools-and-payments',
      title: 'Paid HTTP Tools and x402 Payments',
      preview:
        'Teaches agents to call paid HTTP APIs with the x402 protocol: read a 402 Payment Required quote, pay with a signed Solana transfer, and enforce per-call and total budgets without ever paying twice for one call.',
      estimatedMinutes: 25,
      objectives: [
        'Decode a PAYMENT-REQUIRED header and read scheme, network, amount, asset and payTo from it',
        'Walk through the x402 flow from the 402 response to the PAYMENT-SIGNATURE retry and the PAYMENT-RESPONSE receipt',
        'Enforce a per-call price cap and a total budget before signing any payment',
        'Prevent paying twice for one logical call across retries, timeouts and crashes',
      ],
      sections: [
        {
          heading: 'HTTP 402 and the x402 flow',
          body: [
            `HTTP has reserved status 402 Payment Required since the 1990s without defining how to pay. x402 fills that gap for machine clients, which makes it a natural fit for agents: an API can charge per call, in a stablecoin, with no account, API key or invoice. In version 2 of the protocol all payment data travels in three headers, each carrying base64-encoded JSON.`,
            `The flow has four steps. First, the client sends an ordinary request. Second, the server answers 402 with a PAYMENT-REQUIRED header holding a PaymentRequired object: x402Version 2, the resource being sold, and an accepts array listing one or more payment requirements. Third, the client picks a requirement it can pay, builds and signs the payment, and retries the same request with a PAYMENT-SIGNATURE header holding a PaymentPayload: the chosen requirement under accepted, plus the scheme-specific signed payment under payload. Fourth, the server verifies and settles the payment, often through a facilitator service with /verify and /settle endpoints, and answers 200 with the resource and a PAYMENT-RESPONSE header holding the settlement: success, the on-chain transaction signature, the network and the payer.`,
            `If verification or settlement fails, the server answers 402 again, with a PAYMENT-RESPONSE whose success is false and whose errorReason explains why, such as insufficient_funds. Version 1 of x402 used X-PAYMENT and X-PAYMENT-RESPONSE headers and put the requirements in the response body.`,
          ].join('\n\n'),
          code: {
            language: 'json',
            caption: 'A decoded PAYMENT-REQUIRED header: one requirement to pay 0.01 USDC on Solana devnet.',
            source: `{
  "x402Version": 2,
  "error": "PAYMENT-SIGNATURE header is required",
  "resource": {
    "url": "https://api.example.com/v1/companies/acme",
    "description": "Company profile lookup",
    "mimeType": "application/json"
  },
  "accepts": [
    {
      "scheme": "exact",
      "network": "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
      "amount": "10000",
      "asset": "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU",
      "payTo": "3F1uSVjcUPvzsXfRHt35wCYev4rpf5j1zKgjGFV6gjVt",
      "maxTimeoutSeconds": 60,
      "extra": { "feePayer": "8t5TGd5nvvJUFemDRWRrMRMs9zERBGH4FX1XY6bavKvx" }
    }
  ]
}
`,
          },
        },
        {
          heading: 'Reading the payment requirements',
          body: [
            `Each entry in accepts is a complete offer. scheme names the payment method; "exact" means pay exactly the stated amount. network is a CAIP-2 chain id of the form namespace:reference. For Solana the reference is the first 32 characters of the cluster's genesis hash: solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1 is devnet and solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp is mainnet. asset is the token's mint address; USDC is 4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU on devnet and EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v on mainnet. payTo is the recipient's address, maxTimeoutSeconds bounds how long the server may take to respond, and extra carries scheme-specific data; for the Solana exact scheme it includes feePayer, the facilitator address that pays the transaction fee.`,
            `amount is a string of atomic units, the token's smallest indivisible unit. USDC has 6 decimals, so "10000" is 0.01 USDC and "1000000" is 1 USDC. Parse it with BigInt and compare in atomic units; never convert to a floating-point number, where amounts lose precision and 0.1 + 0.2 is not 0.3.`,
            `Validate the whole header before acting on it. A server can list several offers, and a malicious or buggy one can quote a different network, an unfamiliar token or an absurd amount. Accept only networks and assets on your allowlist, and treat anything unexpected as "no acceptable offer".`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'Decoding and validating a PAYMENT-REQUIRED header, then choosing an offer on an allowlisted network and asset.',
            source: `import { z } from 'zod';

const SOLANA_DEVNET = 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1';
const USDC_DEVNET = '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU';

const Requirement = z.object({
  scheme: z.string(),
  network: z.string().regex(/^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$/, 'must be a CAIP-2 chain id'),
  amount: z.string().regex(/^\\d+$/, 'must be an integer string of atomic units'),
  asset: z.string(),
  payTo: z.string(),
  maxTimeoutSeconds: z.number().int().positive(),
  extra: z.record(z.unknown()).optional(),
});
const PaymentRequired = z.object({ x402Version: z.literal(2), resource: z.object({ url: z.string() }).passthrough(), accepts: z.array(Requirement).min(1) });
export type Requirement = z.infer<typeof Requirement>;

export const decodePaymentRequired = (header: string) =>
  PaymentRequired.parse(JSON.parse(Buffer.from(header, 'base64').toString('utf8')));

export const chooseOffer = (accepts: Requirement[]) =>
  accepts.find((r) => r.scheme === 'exact' && r.network === SOLANA_DEVNET && r.asset === USDC_DEVNET);

export const formatUsdc = (atomic: bigint) => \`\${atomic / 1_000_000n}.\${(atomic % 1_000_000n).toString().padStart(6, '0')} USDC\`;

const header = Buffer.from(JSON.stringify({
  x402Version: 2,
  resource: { url: 'https://api.example.com/v1/companies/acme' },
  accepts: [{ scheme: 'exact', network: SOLANA_DEVNET, amount: '10000', asset: USDC_DEVNET,
    payTo: '3F1uSVjcUPvzsXfRHt35wCYev4rpf5j1zKgjGFV6gjVt', maxTimeoutSeconds: 60 }],
})).toString('base64');

const offer = chooseOffer(decodePaymentRequired(header).accepts);
console.log(offer ? \`pay \${formatUsdc(BigInt(offer.amount))} to \${offer.payTo}\` : 'no acceptable offer'); // pay 0.010000 USDC
`,
          },
        },
        {
          heading: 'Paying with a signed Solana transfer',
          body: [
            `For the exact scheme on Solana, the payment is a transaction the client builds and partially signs. It contains an SPL Token TransferChecked instruction that moves amount units of the asset mint from the client's token account to the associated token account of payTo, with the facilitator's feePayer set as the fee payer. The client signs only as the owner of the source tokens, serialises the partially signed transaction, base64-encodes it, and sends it as payload.transaction inside the PaymentPayload. The facilitator checks that the transaction matches the requirement exactly, adds its fee-payer signature, and submits it to the network.`,
            `The transaction signature, a base58 string of 64 bytes, is the receipt. The server returns it in PAYMENT-RESPONSE as transaction, and anyone can look it up on a Solana explorer to confirm the transfer. Store it with the call it paid for.`,
            `Timing matters. A Solana transaction references a recent blockhash and is only valid for about 150 blocks, roughly a minute or two. Build and sign the payment immediately before the retry, never cache a signed payment for later, and keep signing inside a component that holds the key. The model should see a price and a budget, never a private key.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'The client side of x402: request, decode the 402 quote, check the cap, sign, retry with PAYMENT-SIGNATURE, read the receipt.',
            source: `type Requirement = { scheme: string; network: string; amount: string; asset: string; payTo: string; maxTimeoutSeconds: number; extra?: Record<string, unknown> };
type PaymentRequired = { x402Version: 2; resource: { url: string }; accepts: Requirement[] };
type Settlement = { success: boolean; transaction?: string; network?: string; errorReason?: string };
/** Builds the TransferChecked transaction with extra.feePayer as fee payer, signs as token owner, returns base64. */
export type SignTransfer = (requirement: Requirement) => Promise<string>;

const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64');
const decode = <T>(header: string | null): T => JSON.parse(Buffer.from(header ?? '', 'base64').toString('utf8')) as T;

export async function paidGet(url: string, signTransfer: SignTransfer, maxAtomic: bigint, fetchImpl: typeof fetch = fetch) {
  const first = await fetchImpl(url);
  if (first.status !== 402) return { body: await first.text(), paid: 0n };

  const quote = decode<PaymentRequired>(first.headers.get('PAYMENT-REQUIRED'));
  const offer = quote.accepts.find((r) => r.scheme === 'exact' && r.network.startsWith('solana:'));
  if (!offer) throw new Error('no payment option this client supports');
  if (BigInt(offer.amount) > maxAtomic) throw new Error(\`price \${offer.amount} exceeds the cap of \${maxAtomic} atomic units\`);

  const transaction = await signTransfer(offer); // sign right before sending: the blockhash expires in about a minute
  const payload = { x402Version: 2, resource: quote.resource, accepted: offer, payload: { transaction } };
  const paid = await fetchImpl(url, { headers: { 'PAYMENT-SIGNATURE': encode(payload) } });
  const receipt = decode<Settlement>(paid.headers.get('PAYMENT-RESPONSE'));
  if (!paid.ok || !receipt.success) throw new Error(\`payment not settled: HTTP \${paid.status} \${receipt.errorReason ?? ''}\`);
  return { body: await paid.text(), paid: BigInt(offer.amount), transaction: receipt.transaction };
}

const fakeApi: typeof fetch = async (_input, init) => {
  const sig = new Headers(init?.headers).get('PAYMENT-SIGNATURE');
  if (!sig) return new Response('{}', { status: 402, headers: { 'PAYMENT-REQUIRED': encode({ x402Version: 2, resource: { url: '/acme' },
    accepts: [{ scheme: 'exact', network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1', amount: '10000', asset: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU', payTo: '3F1uSVjcUPvzsXfRHt35wCYev4rpf5j1zKgjGFV6gjVt', maxTimeoutSeconds: 60 }] }) } });
  return new Response('{"name":"Acme"}', { headers: { 'PAYMENT-RESPONSE': encode({ success: true, transaction: '5GTRQUomRzcgvCzbQKCQ965KwVAc7B7pQf7NdVNLy4v4bkgp5azCtM6DKcQELHekQa2SmBndcT13mujhKQF9aoU8' }) } });
};
paidGet('https://api.example.com/acme', async () => 'AQAB...base64 transaction', 50_000n, fakeApi).then(console.log);
`,
          },
        },
        {
          heading: 'Budgets and never paying twice',
          body: [
            `An agent that can pay needs two limits enforced in code. A per-call cap, say 50,000 atomic units or $0.05, stops a single mispriced or malicious quote. A total budget per run or per day, say $5, stops a loop from draining the wallet one cent at a time. Check both before signing, against money already spent plus money reserved for payments whose outcome is not known yet.`,
            `Model the payment for each logical call as a small state machine keyed by a call id: reserved before signing, settled when a PAYMENT-RESPONSE reports success, released only when the server reports definitively that it did not settle. The dangerous case is the one in between: you sent PAYMENT-SIGNATURE and the connection timed out. The payment may well have settled. Keep the amount reserved, mark the call as unknown, and never sign a new payment for it automatically.`,
            `Resending the identical signed transaction is safe where a new one is not. Solana processes a given transaction signature at most once, and the transaction becomes invalid once its blockhash expires, so the same bytes cannot move money twice; a freshly built transaction is a second payment. Resolve unknown outcomes by reconciling: look the signature up on chain or ask the server, then settle or release.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'A spend ledger keyed by call id: reserve before signing, settle on a receipt, release only on a definite failure.',
            source: `type PaymentState =
  | { status: 'reserved' | 'unknown'; amount: bigint }
  | { status: 'settled'; amount: bigint; transaction: string };

export class SpendLedger {
  private readonly calls = new Map<string, PaymentState>();
  constructor(private readonly perCallMax: bigint, private readonly totalMax: bigint) {}

  /** Money settled plus money whose outcome is not known yet. */
  committed(): bigint {
    let sum = 0n;
    for (const p of this.calls.values()) sum += p.amount;
    return sum;
  }

  reserve(callId: string, amount: bigint): void {
    const existing = this.calls.get(callId);
    if (existing) throw new Error(\`call \${callId} already has a payment (\${existing.status}); do not sign another\`);
    if (amount > this.perCallMax) throw new Error(\`price \${amount} exceeds the per-call cap \${this.perCallMax}\`);
    if (this.committed() + amount > this.totalMax) throw new Error(\`budget: \${this.committed()} + \${amount} > \${this.totalMax}\`);
    this.calls.set(callId, { status: 'reserved', amount });
  }

  settle(callId: string, transaction: string): void {
    const p = this.calls.get(callId);
    if (p) this.calls.set(callId, { status: 'settled', amount: p.amount, transaction });
  }
  /** The server said the payment did not settle (402 with success: false). */
  release(callId: string): void { this.calls.delete(callId); }
  /** Timeout or lost response after PAYMENT-SIGNATURE was sent: keep the money reserved and reconcile. */
  markUnknown(callId: string): void {
    const p = this.calls.get(callId);
    if (p) this.calls.set(callId, { status: 'unknown', amount: p.amount });
  }
}

const ledger = new SpendLedger(50_000n, 5_000_000n); // $0.05 per call, $5 in total
ledger.reserve('lookup-acme', 10_000n);
ledger.markUnknown('lookup-acme'); // the retry timed out
try { ledger.reserve('lookup-acme', 10_000n); } catch (e) { console.log((e as Error).message); } // refused: no second payment
`,
          },
        },
      ],
      keyTakeaways: [
        'x402 v2 uses three base64 JSON headers: PAYMENT-REQUIRED on the 402 response, PAYMENT-SIGNATURE on the paid retry, PAYMENT-RESPONSE with the settlement.',
        'A requirement gives scheme, a CAIP-2 network such as solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1, amount in atomic units, asset mint, payTo and maxTimeoutSeconds.',
        'USDC has 6 decimals, so an amount of "10000" is 0.01 USDC; parse amounts with BigInt, never floats.',
        'On Solana the payment is a partially signed TransferChecked transaction, and the transaction signature returned in PAYMENT-RESPONSE is the receipt.',
        'Check the per-call cap and total budget before signing, and never sign a second payment for a call whose outcome is unknown.',
      ],
      questions: [
        {
          prompt: 'In x402 version 2, where does the server put its payment requirements?',
          correct: 'In a PAYMENT-REQUIRED header on the 402 response, as base64 JSON.',
          distractors: [
            'In an X-PAYMENT header on the 200 response, as plain JSON in the header.',
            'In a WWW-Authenticate header on a 401 response, as a bearer challenge.',
            "In the query string of a 302 redirect to the payment provider's page.",
          ],
          explanation:
            'Version 2 carries all protocol data in headers: PAYMENT-REQUIRED (server to client), PAYMENT-SIGNATURE (client to server) and PAYMENT-RESPONSE (settlement).',
        },
        {
          prompt: 'A requirement says amount "10000" with asset USDC. How much is that?',
          correct: '0.01 USDC: USDC has 6 decimals and amounts are atomic units.',
          distractors: [
            '10,000 USDC, because amounts are always given in whole tokens.',
            '100 USDC, because amounts are given in cents of one token.',
            '0.0001 USDC, because amounts are given with 8 decimal places.',
          ],
          explanation: 'Atomic units divide by 10 to the power of the decimals: 10,000 / 1,000,000 = 0.01.',
        },
        {
          prompt: 'What does the network value solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1 identify?',
          correct: 'Solana devnet, as a CAIP-2 id built from its genesis hash.',
          distractors: [
            'The USDC token mint address that the payment must be made in.',
            'The wallet address of the server that receives the payment on chain.',
            'The facilitator account that pays the transaction fee for the client.',
          ],
          explanation:
            'CAIP-2 ids are namespace:reference; for Solana the reference is the first 32 characters of the genesis hash, here devnet. The mint is asset, the recipient payTo, the fee payer extra.feePayer.',
        },
        {
          prompt: 'The client sent PAYMENT-SIGNATURE and the request timed out. What should it do?',
          correct: 'Keep the amount reserved, mark it unknown, and reconcile before paying.',
          distractors: [
            'Build and sign a fresh transaction immediately and retry the request.',
            'Release the reserved amount, since no response means no payment was made.',
            'Ask the model whether it wants to pay again for the same logical call.',
          ],
          explanation:
            'The payment may have settled. A new transaction would be a second payment; resending the identical bytes or checking the signature on chain resolves it safely.',
        },
        {
          prompt: 'When should an agent check its per-call cap and total budget?',
          correct: 'Before signing, counting settled spend and payments of unknown outcome.',
          distractors: [
            'After settlement, by reading the amount in the PAYMENT-RESPONSE header.',
            'Once a day, by comparing the wallet balance with the expected balance.',
            'Only when the quoted amount is larger than the previous quote was.',
          ],
          explanation:
            'Once a payment is signed and sent it may settle; limits only protect the wallet if they are enforced before signing, counting reservations too.',
        },
      ],
      exercise: {
        title: 'A budgeted x402 client',
        challenge:
          'Implement PaidHttpClient.get, which fetches a URL for a given logical call id and pays with x402 when the server answers 402. It must decode and check the quote, enforce a per-call cap and a total budget before signing, send the PaymentPayload in PAYMENT-SIGNATURE, record the transaction signature from PAYMENT-RESPONSE, and make sure one call id is never paid twice. A fake paid API and a fake signer are provided so the code runs without a network or wallet.',
        requirements: [
          'On a 402, decode the base64 JSON in PAYMENT-REQUIRED and pick the first requirement with scheme exact, network solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1 and the devnet USDC asset; throw if there is none.',
          'Parse the amount with BigInt and throw before signing if it exceeds perCallMax or if spent plus pending plus the amount exceeds totalMax.',
          'Retry with PAYMENT-SIGNATURE set to base64 JSON { x402Version: 2, resource, accepted, payload: { transaction } }.',
          'On 2xx with a successful PAYMENT-RESPONSE, record the transaction signature and count the amount as spent; on a response whose PAYMENT-RESPONSE reports success: false, release the reservation.',
          'A call id with a settled payment returns the recorded result without any request; a call id with a pending or unknown payment throws instead of signing again.',
        ],
        starterCode: `const SOLANA_DEVNET = 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1';
const USDC_DEVNET = '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU';

export interface Requirement {
  scheme: string;
  network: string;
  amount: string;
  asset: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra?: Record<string, unknown>;
}
interface PaymentRequired { x402Version: number; resource: { url: string }; accepts: Requirement[] }
interface Settlement { success: boolean; transaction?: string; errorReason?: string }
export interface PaidResult { body: string; paid: bigint; transaction?: string }
export type FetchLike = (url: string, init?: { headers?: Record<string, string> }) => Promise<Response>;
export type Signer = (requirement: Requirement) => Promise<string>; // base64 partially signed transaction

const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64');
const decode = <T>(header: string): T => JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as T;

export class PaidHttpClient {
  private spent = 0n;
  private pending = 0n;
  private readonly journal = new Map<string, { status: 'pending' } | { status: 'settled'; result: PaidResult }>();

  constructor(
    private readonly fetchImpl: FetchLike,
    private readonly sign: Signer,
    private readonly limits: { perCallMax: bigint; totalMax: bigint },
  ) {}

  async get(url: string, callId: string): Promise<PaidResult> {
    // TODO: journal check (settled -> return the result, pending -> throw)
    // TODO: first request; non-402 -> { body, paid: 0n }
    // TODO: decode PAYMENT-REQUIRED, choose the devnet USDC exact offer, check limits with BigInt
    // TODO: reserve, sign, retry with PAYMENT-SIGNATURE
    // TODO: success -> record spent + transaction; success: false -> release; anything else -> stay pending
    throw new Error('not implemented');
  }
}

// A fake paid API: 402 with a quote, then 200 with a settlement receipt. Counts settlements.
let settlements = 0;
const fakeApi: FetchLike = async (url, init) => {
  if (!init?.headers?.['PAYMENT-SIGNATURE']) {
    const quote: PaymentRequired = { x402Version: 2, resource: { url }, accepts: [{ scheme: 'exact', network: SOLANA_DEVNET, amount: '10000',
      asset: USDC_DEVNET, payTo: '3F1uSVjcUPvzsXfRHt35wCYev4rpf5j1zKgjGFV6gjVt', maxTimeoutSeconds: 60, extra: { feePayer: '8t5TGd5nvvJUFemDRWRrMRMs9zERBGH4FX1XY6bavKvx' } }] };
    return new Response('{}', { status: 402, headers: { 'PAYMENT-REQUIRED': encode(quote) } });
  }
  settlements++;
  const receipt: Settlement = { success: true, transaction: \`5GTRQUomRzcgvCzbQKCQ965KwVAc7B7pQf7NdVNLy4v4bkgp5azCtM6DKcQELHekQa2SmBndcT13mujhKQF9aoU\${settlements}\` };
  return new Response('{"company":"Acme","employees":120}', { status: 200, headers: { 'PAYMENT-RESPONSE': encode(receipt) } });
};
const fakeSigner: Signer = async (req) => encode({ transferChecked: req.amount, to: req.payTo }); // stands in for a real wallet

async function main(): Promise<void> {
  const client = new PaidHttpClient(fakeApi, fakeSigner, { perCallMax: 50_000n, totalMax: 15_000n });
  console.log(await client.get('https://api.example.com/v1/companies/acme', 'lookup-acme'));
  console.log(await client.get('https://api.example.com/v1/companies/acme', 'lookup-acme')); // no second payment
  await client.get('https://api.example.com/v1/companies/globex', 'lookup-globex').catch((e: Error) => console.log(e.message));
  console.log('settlements:', settlements); // 1
}

main();
`,
        solution: `const SOLANA_DEVNET = 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1';
const USDC_DEVNET = '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU';

export interface Requirement {
  scheme: string;
  network: string;
  amount: string;
  asset: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra?: Record<string, unknown>;
}
interface PaymentRequired { x402Version: number; resource: { url: string }; accepts: Requirement[] }
interface Settlement { success: boolean; transaction?: string; errorReason?: string }
export interface PaidResult { body: string; paid: bigint; transaction?: string }
export type FetchLike = (url: string, init?: { headers?: Record<string, string> }) => Promise<Response>;
export type Signer = (requirement: Requirement) => Promise<string>; // base64 partially signed transaction

const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64');
const decode = <T>(header: string): T => JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as T;

export class PaidHttpClient {
  private spent = 0n;
  private pending = 0n;
  private readonly journal = new Map<string, { status: 'pending' } | { status: 'settled'; result: PaidResult }>();

  constructor(
    private readonly fetchImpl: FetchLike,
    private readonly sign: Signer,
    private readonly limits: { perCallMax: bigint; totalMax: bigint },
  ) {}

  async get(url: string, callId: string): Promise<PaidResult> {
    const entry = this.journal.get(callId);
    if (entry?.status === 'settled') return entry.result;
    if (entry?.status === 'pending') throw new Error(\`payment for \${callId} has an unknown outcome; reconcile it before retrying\`);

    const first = await this.fetchImpl(url);
    if (first.status !== 402) return { body: await first.text(), paid: 0n };
    const header = first.headers.get('PAYMENT-REQUIRED');
    if (!header) throw new Error('402 response without a PAYMENT-REQUIRED header');
    const quote = decode<PaymentRequired>(header);
    const offer = quote.accepts.find((r) => r.scheme === 'exact' && r.network === SOLANA_DEVNET && r.asset === USDC_DEVNET);
    if (!offer) throw new Error('no exact USDC offer on Solana devnet');
    if (!/^\\d+$/.test(offer.amount)) throw new Error(\`invalid amount \${offer.amount}\`);
    const amount = BigInt(offer.amount);
    if (amount > this.limits.perCallMax) throw new Error(\`price \${amount} exceeds the per-call cap \${this.limits.perCallMax}\`);
    if (this.spent + this.pending + amount > this.limits.totalMax) {
      throw new Error(\`budget exceeded: \${this.spent} spent + \${this.pending} pending + \${amount} > \${this.limits.totalMax}\`);
    }

    this.journal.set(callId, { status: 'pending' });
    this.pending += amount;
    const transaction = await this.sign(offer).catch((err: Error) => {
      this.journal.delete(callId); // nothing was signed, so nothing can settle
      this.pending -= amount;
      throw err;
    });
    const payload = { x402Version: 2, resource: quote.resource, accepted: offer, payload: { transaction } };
    const paid = await this.fetchImpl(url, { headers: { 'PAYMENT-SIGNATURE': encode(payload) } }); // a throw leaves it pending
    const receiptHeader = paid.headers.get('PAYMENT-RESPONSE');
    const receipt = receiptHeader ? decode<Settlement>(receiptHeader) : undefined;

    if (paid.ok && receipt?.success) {
      this.pending -= amount;
      this.spent += amount;
      const result: PaidResult = { body: await paid.text(), paid: amount, transaction: receipt.transaction };
      this.journal.set(callId, { status: 'settled', result });
      return result;
    }
    if (receipt && !receipt.success) {
      this.pending -= amount; // the server says it did not settle: release the reservation
      this.journal.delete(callId);
      throw new Error(\`payment rejected: \${receipt.errorReason ?? \`HTTP \${paid.status}\`}\`);
    }
    throw new Error(\`payment outcome unknown for \${callId} (HTTP \${paid.status}); amount stays reserved\`);
  }
}

// A fake paid API: 402 with a quote, then 200 with a settlement receipt. Counts settlements.
let settlements = 0;
const fakeApi: FetchLike = async (url, init) => {
  if (!init?.headers?.['PAYMENT-SIGNATURE']) {
    const quote: PaymentRequired = { x402Version: 2, resource: { url }, accepts: [{ scheme: 'exact', network: SOLANA_DEVNET, amount: '10000',
      asset: USDC_DEVNET, payTo: '3F1uSVjcUPvzsXfRHt35wCYev4rpf5j1zKgjGFV6gjVt', maxTimeoutSeconds: 60, extra: { feePayer: '8t5TGd5nvvJUFemDRWRrMRMs9zERBGH4FX1XY6bavKvx' } }] };
    return new Response('{}', { status: 402, headers: { 'PAYMENT-REQUIRED': encode(quote) } });
  }
  settlements++;
  const receipt: Settlement = { success: true, transaction: \`5GTRQUomRzcgvCzbQKCQ965KwVAc7B7pQf7NdVNLy4v4bkgp5azCtM6DKcQELHekQa2SmBndcT13mujhKQF9aoU\${settlements}\` };
  return new Response('{"company":"Acme","employees":120}', { status: 200, headers: { 'PAYMENT-RESPONSE': encode(receipt) } });
};
const fakeSigner: Signer = async (req) => encode({ transferChecked: req.amount, to: req.payTo }); // stands in for a real wallet

async function main(): Promise<void> {
  const client = new PaidHttpClient(fakeApi, fakeSigner, { perCallMax: 50_000n, totalMax: 15_000n });
  console.log(await client.get('https://api.example.com/v1/companies/acme', 'lookup-acme'));
  console.log(await client.get('https://api.example.com/v1/companies/acme', 'lookup-acme')); // no second payment
  await client.get('https://api.example.com/v1/companies/globex', 'lookup-globex').catch((e: Error) => console.log(e.message));
  // budget exceeded: 10000 spent + 0 pending + 10000 > 15000
  console.log('settlements:', settlements); // 1
}

main();
`,
        hints: [
          'Write the journal entry and add to pending before calling the signer; that is what makes a crash or timeout after signing safe.',
          'Only three outcomes are definite: a 2xx with success true, an explicit success false, and a signer failure. Everything else stays pending.',
          'Compare amounts as bigint throughout: 10_000n + 10_000n > 15_000n, with no floating point anywhere.',
        ],
      },
    },
    // ------------------------------------------------------------------------------------------
    {
      id: 'tool-safety',
      title: 'Tool Safety',
      preview:
        'Covers the controls that keep an agent and its tools contained: allowlists, sandboxing, human confirmation for irreversible actions, rate limits and timeouts.',
      estimatedMinutes: 25,
      objectives: [
        'Restrict tools, hosts and file paths with allowlists checked in code',
        'Choose a sandboxing level for model-written code and shell commands',
        'Require bound, expiring human confirmation for irreversible or high-value actions',
        'Apply rate limits and timeouts to every tool call',
      ],
      sections: [
        {
          heading: 'Allowlists, not blocklists',
          body: [
            `Assume that at some point your agent will try to do something it should not, because a model made a mistake or because a web page, email or tool result injected instructions. Prompts cannot prevent that reliably; permissions can. Grant capabilities explicitly and deny everything else. A blocklist of bad hosts or commands is always one entry short.`,
            `Apply allowlists at three levels. Tools: each agent gets only the tools its task needs, so a summarisation agent has no send_email. Arguments: an HTTP tool accepts only https URLs whose hostname exactly matches an allowed host; compare with ===, because a suffix check for "github.com" also accepts evilgithub.com. This also blocks server-side request forgery against internal addresses such as 127.0.0.1, 10.0.0.0/8 or the cloud metadata endpoint 169.254.169.254. A file tool resolves every path against a workspace root and rejects anything that lands outside it, which defeats ../ traversal. Credentials: give tools the narrowest keys available, such as a read-only database role or a token scoped to one repository.`,
            `Parse before you check. Compare the hostname from new URL(), not a substring of the raw string, and the result of path.resolve(), not the string the model sent. Symbolic links can still escape a directory, so resolve them with fs.realpath before trusting a path.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'Exact-match host allowlisting and workspace path containment, checked on parsed values.',
            source: `import { resolve, sep } from 'node:path';

const ALLOWED_HOSTS = new Set(['api.github.com', 'api.stripe.com']);
const WORKSPACE = resolve('/srv/agent-workspace');

export function checkUrl(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return \`not a valid URL: \${raw}\`;
  }
  if (url.protocol !== 'https:') return \`only https is allowed, got \${url.protocol}\`;
  if (url.username || url.password) return 'credentials in URLs are not allowed';
  if (!ALLOWED_HOSTS.has(url.hostname)) return \`host \${url.hostname} is not on the allowlist\`;
  return null; // allowed
}

export function checkPath(requested: string): string | null {
  const full = resolve(WORKSPACE, requested); // normalises ../ segments
  if (full !== WORKSPACE && !full.startsWith(WORKSPACE + sep)) return \`path escapes the workspace: \${requested}\`;
  return null;
}

for (const u of ['https://api.github.com/repos/acme/app', 'http://169.254.169.254/latest/meta-data', 'https://api.github.com.evil.io/x']) {
  console.log(u, '->', checkUrl(u) ?? 'allowed');
}
for (const p of ['src/index.ts', '../../etc/passwd', '/srv/agent-workspace-old/secrets.env']) {
  console.log(p, '->', checkPath(p) ?? 'allowed');
}
`,
          },
        },
        {
          heading: 'Sandboxing code and commands',
          body: [
            `Agents that write and run code, or run shell commands, need a sandbox: an environment where the worst the code can do is bounded. Never evaluate model-written code in your own process with eval or new Function, which hands it your memory, environment variables and credentials. Node's vm module is not a sandbox either; its documentation states plainly that it is not a security mechanism.`,
            `Pick the isolation level by how much you trust the code and what is at stake. A separate process with a stripped environment, a temporary working directory, a timeout and an output cap is the minimum. Node 20's permission model, enabled with --experimental-permission and opened up with flags such as --allow-fs-read, restricts file-system access, child processes and worker threads, but not the network. A container adds network isolation, a read-only root file system, a non-root user and CPU and memory limits. For untrusted multi-tenant code, use a stronger boundary such as gVisor or Firecracker microVMs.`,
            `Whatever the level, make sandboxes ephemeral: create one per task, destroy it afterwards, and never mount secrets into it. If the code needs an API, give the sandbox a proxy that holds the credentials and enforces the host allowlist, rather than the credentials themselves.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'Running model-written JavaScript in a separate Node 20 process with restricted file access, no inherited environment, a timeout and an output cap.',
            source: `import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export async function runUntrusted(code: string): Promise<{ ok: boolean; output: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'sandbox-'));
  const file = join(dir, 'main.mjs');
  await writeFile(file, code, 'utf8');
  // Node 20 flags; Node 22.13+ and 23.5+ call the stable flag --permission.
  const args = ['--experimental-permission', \`--allow-fs-read=\${dir}\`, file];
  try {
    return await new Promise((done) => {
      execFile(process.execPath, args, { cwd: dir, env: {}, timeout: 5_000, maxBuffer: 1024 * 1024 }, (error, stdout, stderr) => {
        if (!error) return done({ ok: true, output: stdout });
        const reason = error.killed ? 'killed after 5 s' : \`exit code \${error.code}\`;
        done({ ok: false, output: \`\${reason}: \${stderr.split('\\n').find((l) => l.startsWith('Error')) ?? ''}\` });
      });
    });
  } finally {
    await rm(dir, { recursive: true, force: true }); // ephemeral: nothing survives the task
  }
}

async function demo(): Promise<void> {
  console.log(await runUntrusted('console.log([3, 1, 2].sort().join(","))'));
  console.log(await runUntrusted("import { readFileSync } from 'node:fs'; console.log(readFileSync('/etc/passwd', 'utf8'))"));
  console.log(await runUntrusted('for (;;) {}'));
}

demo();
`,
          },
        },
        {
          heading: 'Confirmation for irreversible actions',
          body: [
            `Classify every tool by the damage a wrong call can do. Read-only tools, such as searches and lookups, run freely. Reversible writes, such as editing a draft or adding a label, run freely but are logged. Irreversible or high-value actions, such as sending an email, transferring funds, deleting data, deploying or paying above a threshold, wait for a human. Unknown tools default to the strictest class.`,
            `A confirmation is only as good as what the human sees and how the approval is bound. Show the exact tool and arguments, such as the recipient address, the amount in full units and the repository name, rather than the model's summary, because the summary is exactly what a confused or manipulated model gets wrong. Bind the approval to a hash of those exact arguments, make it single use, and let it expire after a few minutes, so an approval for $20 to one address cannot be reused for $2,000 to another.`,
            `Approvals must arrive out of band, through a button in your UI or a signed callback, never as text in the conversation, where the model or an injected document could simply write "approved". Where possible, offer a dry run first: a preview of the email or the diff lets the human approve the effect and not just the intent.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'A confirmation gate: irreversible calls need an approval bound to a hash of the exact arguments, single use and expiring.',
            source: `import { createHash } from 'node:crypto';

type Risk = 'read' | 'write' | 'irreversible';
const RISK: Record<string, Risk> = { get_balance: 'read', update_draft: 'write', send_payment: 'irreversible' };

function canonical(value: unknown): string {
  if (Array.isArray(value)) return \`[\${value.map(canonical).join(',')}]\`;
  if (value && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    return \`{\${Object.keys(obj).sort().map((k) => \`\${JSON.stringify(k)}:\${canonical(obj[k])}\`).join(',')}}\`;
  }
  return JSON.stringify(value);
}
const actionHash = (tool: string, args: unknown) => createHash('sha256').update(\`\${tool}:\${canonical(args)}\`).digest('hex');

export class ConfirmationGate {
  private readonly approvals = new Map<string, number>(); // action hash -> expiry time

  /** Called by your UI when a human clicks Approve; never reachable by the model. */
  approve(tool: string, args: unknown, ttlMs = 5 * 60_000): void {
    this.approvals.set(actionHash(tool, args), Date.now() + ttlMs);
  }

  check(tool: string, args: unknown): 'allowed' | 'needs_approval' {
    if ((RISK[tool] ?? 'irreversible') !== 'irreversible') return 'allowed'; // unknown tools are treated as irreversible
    const hash = actionHash(tool, args);
    const expiry = this.approvals.get(hash);
    this.approvals.delete(hash); // single use
    return expiry !== undefined && expiry > Date.now() ? 'allowed' : 'needs_approval';
  }
}

const gate = new ConfirmationGate();
gate.approve('send_payment', { to: '3F1uSVjcUPvzsXfRHt35wCYev4rpf5j1zKgjGFV6gjVt', usd: '20.00' });
console.log(gate.check('send_payment', { usd: '20.00', to: '3F1uSVjcUPvzsXfRHt35wCYev4rpf5j1zKgjGFV6gjVt' })); // allowed
console.log(gate.check('send_payment', { usd: '20.00', to: '3F1uSVjcUPvzsXfRHt35wCYev4rpf5j1zKgjGFV6gjVt' })); // needs_approval: used
console.log(gate.check('send_payment', { usd: '2000.00', to: '8t5TGd5nvvJUFemDRWRrMRMs9zERBGH4FX1XY6bavKvx' })); // needs_approval
`,
          },
        },
        {
          heading: 'Rate limits and timeouts',
          body: [
            `Every tool call needs a timeout. A tool that hangs stalls the whole agent loop, holds connections and keeps a user waiting for an answer that will never come. Create an AbortController per call, abort it after a deadline that fits the tool (around 10 seconds for an HTTP API, 30 to 60 seconds for code execution), and pass its signal to fetch and any other cancellable operation, so the work actually stops instead of finishing unobserved in the background. Report a timeout to the model as an error result it can act on.`,
            `Rate limits protect in two directions. They keep the agent within the quotas of the services it calls, and they cap the damage of a runaway loop: an agent limited to 5 send_email calls per minute cannot send 2,000 emails before anyone notices. Limit per tool with a sliding window or token bucket, and put an overall cap on tool calls per run in addition to the step budget.`,
            `Add a circuit breaker for flaky dependencies: after, say, 5 consecutive failures of a tool, stop calling it for a cool-down period and tell the model it is unavailable. That stops the agent from burning budget on a service that is down, and it stops the agent from adding load to a service that is struggling.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'A sliding-window rate limiter per tool and a timeout wrapper that aborts the underlying work.',
            source: `export class SlidingWindowLimiter {
  private readonly calls = new Map<string, number[]>();
  constructor(private readonly maxPerWindow: number, private readonly windowMs = 60_000, private readonly now = () => Date.now()) {}

  tryAcquire(tool: string): boolean {
    const t = this.now();
    const recent = (this.calls.get(tool) ?? []).filter((ts) => t - ts < this.windowMs);
    const allowed = recent.length < this.maxPerWindow;
    if (allowed) recent.push(t);
    this.calls.set(tool, recent);
    return allowed;
  }
}

export async function withTimeout<T>(ms: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(\`timed out after \${ms} ms\`)), ms);
  const aborted = new Promise<never>((_, reject) => controller.signal.addEventListener('abort', () => reject(controller.signal.reason)));
  try {
    return await Promise.race([work(controller.signal), aborted]);
  } finally {
    clearTimeout(timer);
  }
}

const limiter = new SlidingWindowLimiter(5);
console.log(Array.from({ length: 7 }, () => limiter.tryAcquire('send_email'))); // five true, then false, false

const slowTool = (signal: AbortSignal) =>
  new Promise<string>((resolve) => {
    const t = setTimeout(() => resolve('done'), 5_000);
    signal.addEventListener('abort', () => clearTimeout(t)); // the work really stops
  });
withTimeout(200, slowTool).catch((err: Error) => console.log(\`Error: \${err.message}\`)); // Error: timed out after 200 ms
`,
          },
        },
      ],
      keyTakeaways: [
        'Permissions, not prompts, contain a misbehaving or injected agent: allowlist tools, hosts, paths and credential scopes, and deny everything else.',
        'Check allowlists on parsed values: exact hostname from new URL() and resolved paths inside the workspace root.',
        'Run model-written code in a separate, ephemeral sandbox with no secrets; Node\'s vm module and eval are not security boundaries.',
        'Irreversible actions need human approval shown with the exact arguments, bound to their hash, single use and expiring, delivered out of band.',
        'Every tool call gets a timeout that aborts the work, and every tool gets a rate limit that caps the damage of a runaway loop.',
      ],
      questions: [
        {
          prompt: 'An HTTP tool allows hosts by checking hostname.endsWith("github.com"). What is wrong with that?',
          correct: 'It also accepts evilgithub.com; compare parsed hostnames for equality.',
          distractors: [
            'It is too strict, because it rejects api.github.com and other subdomains.',
            'endsWith is slower than a regular expression for checking hostnames.',
            'Hostnames are case-sensitive, so the check fails for GitHub.com.',
          ],
          explanation: 'Suffix checks match any host ending in the string; exact matching against an allowlist of hostnames does not.',
        },
        {
          prompt: "Why is Node's vm module not enough to run model-written code safely?",
          correct: 'Its own documentation says it is not a security mechanism.',
          distractors: [
            'It cannot run asynchronous code, so most generated programs fail in it.',
            'It only supports CommonJS modules and not ECMAScript modules.',
            'It runs code more slowly than a container, which triggers timeouts.',
          ],
          explanation:
            'vm contexts share the host process; use a separate process, container or microVM as the isolation boundary.',
        },
        {
          prompt: 'Which confirmation design for send_payment is safe?',
          correct: 'Approval of the exact arguments in the UI, bound to their hash, single use.',
          distractors: [
            "The model summarises the payment and the human replies 'approved' in the chat.",
            'The model confirms the payment with itself in a second call before sending it.',
            'A human approves once per session, and later payments reuse that approval.',
          ],
          explanation:
            'Approvals must show the real arguments, be bound to them and arrive out of band; chat text can be forged by the model or an injected document.',
        },
        {
          prompt: 'Why pass an AbortSignal to the work when a tool call times out, instead of only racing a timer?',
          correct: 'So the work actually stops instead of running on in the background.',
          distractors: [
            'Because Promise.race does not work with promises that call fetch.',
            'Because the provider requires an AbortSignal for every tool result.',
            'So the tool can keep running and deliver its result on the next step.',
          ],
          explanation:
            'A timer alone only stops waiting; aborting the signal cancels fetches and other cancellable operations the tool started.',
        },
        {
          prompt: 'How does a per-tool rate limit such as 5 send_email calls per minute help beyond protecting quotas?',
          correct: 'It caps the damage of a runaway or manipulated loop before anyone notices.',
          distractors: [
            'It improves the quality of the emails because the model has more time to think.',
            'It removes the need for human confirmation of irreversible actions.',
            'It guarantees that each email is delivered exactly once.',
          ],
          explanation:
            'Rate limits bound how much harm a misbehaving agent can do per unit time, which buys time for alerts and humans to react.',
        },
      ],
      exercise: {
        title: 'A guarded tool executor',
        challenge:
          'Implement GuardedExecutor.call, which sits between the agent loop and the tools and enforces the safety policy: a tool allowlist, an https host allowlist for url arguments, human confirmation for selected tools, a per-tool rate limit, and a timeout that aborts the tool. Blocked calls must return messages the model can read rather than throwing.',
        requirements: [
          "Return 'Blocked: ...' for tools missing from allowedTools or from the registry, and for a string url argument that is not https or whose hostname is not exactly in allowedHosts.",
          "Allow at most callsPerMinute calls per tool in any 60-second sliding window (using the injected clock); further calls return 'Blocked: rate limit ...'.",
          "For tools in requireConfirmation, await confirm(tool, args) before running; a refusal returns 'Blocked: ...' and the tool does not run.",
          "Pass an AbortSignal to the tool, abort it after timeoutMs and return 'Error: timed out after <timeoutMs> ms'; a tool that throws returns 'Error: <message>'.",
        ],
        starterCode: `export interface GuardPolicy {
  allowedTools: string[];
  allowedHosts: string[];
  requireConfirmation: string[];
  callsPerMinute: number;
  timeoutMs: number;
}
export type ToolFn = (args: Record<string, unknown>, signal: AbortSignal) => Promise<string>;
export type Confirm = (tool: string, args: Record<string, unknown>) => Promise<boolean>;

export class GuardedExecutor {
  private readonly history = new Map<string, number[]>();

  constructor(
    private readonly tools: Record<string, ToolFn>,
    private readonly policy: GuardPolicy,
    private readonly confirm: Confirm,
    private readonly now: () => number = Date.now,
  ) {}

  async call(tool: string, args: Record<string, unknown>): Promise<string> {
    // TODO: tool allowlist (use Object.hasOwn on this.tools)
    // TODO: url argument: parse with new URL, require https: and an exact allowed hostname
    // TODO: sliding-window rate limit per tool using this.now()
    // TODO: confirmation for tools in requireConfirmation
    // TODO: run with an AbortController and a timeout; map errors to 'Error: ...'
    return 'Error: not implemented';
  }
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(t); reject(new Error('aborted')); });
  });

const executor = new GuardedExecutor(
  {
    fetch_url: async (args, signal) => { await sleep(10, signal); return \`fetched \${String(args.url)}\`; },
    send_email: async (args) => \`sent to \${String(args.to)}\`,
    slow_report: async (_args, signal) => { await sleep(5_000, signal); return 'report'; },
  },
  { allowedTools: ['fetch_url', 'send_email', 'slow_report'], allowedHosts: ['api.github.com'], requireConfirmation: ['send_email'], callsPerMinute: 2, timeoutMs: 200 },
  async (_tool, args) => String(args.to).endsWith('@acme.com'),
);

async function main(): Promise<void> {
  console.log(await executor.call('fetch_url', { url: 'https://api.github.com/repos/acme/app' }));
  console.log(await executor.call('fetch_url', { url: 'https://api.github.com.evil.io/' }));
  console.log(await executor.call('delete_repo', {}));
  console.log(await executor.call('send_email', { to: 'attacker@evil.io' }));
  console.log(await executor.call('slow_report', {}));
  console.log(await executor.call('fetch_url', { url: 'https://api.github.com/a' }));
  console.log(await executor.call('fetch_url', { url: 'https://api.github.com/b' }));
}

main();
`,
        solution: `export interface GuardPolicy {
  allowedTools: string[];
  allowedHosts: string[];
  requireConfirmation: string[];
  callsPerMinute: number;
  timeoutMs: number;
}
export type ToolFn = (args: Record<string, unknown>, signal: AbortSignal) => Promise<string>;
export type Confirm = (tool: string, args: Record<string, unknown>) => Promise<boolean>;

export class GuardedExecutor {
  private readonly history = new Map<string, number[]>();

  constructor(
    private readonly tools: Record<string, ToolFn>,
    private readonly policy: GuardPolicy,
    private readonly confirm: Confirm,
    private readonly now: () => number = Date.now,
  ) {}

  async call(tool: string, args: Record<string, unknown>): Promise<string> {
    const fn = Object.hasOwn(this.tools, tool) ? this.tools[tool] : undefined;
    if (!fn || !this.policy.allowedTools.includes(tool)) {
      return \`Blocked: tool \${tool} is not allowed for this agent\`;
    }
    if (typeof args.url === 'string') {
      const problem = this.checkUrl(args.url);
      if (problem) return \`Blocked: \${problem}\`;
    }
    if (!this.takeSlot(tool)) {
      return \`Blocked: rate limit of \${this.policy.callsPerMinute} calls per minute for \${tool} reached; try again later\`;
    }
    if (this.policy.requireConfirmation.includes(tool) && !(await this.confirm(tool, args))) {
      return \`Blocked: a human declined this \${tool} call\`;
    }
    return this.runWithTimeout(fn, args);
  }

  private checkUrl(raw: string): string | null {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return \`invalid URL \${raw}\`;
    }
    if (url.protocol !== 'https:') return \`only https URLs are allowed, got \${url.protocol}\`;
    if (!this.policy.allowedHosts.includes(url.hostname)) return \`host \${url.hostname} is not on the allowlist\`;
    return null;
  }

  private takeSlot(tool: string): boolean {
    const t = this.now();
    const recent = (this.history.get(tool) ?? []).filter((ts) => t - ts < 60_000);
    const allowed = recent.length < this.policy.callsPerMinute;
    if (allowed) recent.push(t);
    this.history.set(tool, recent);
    return allowed;
  }

  private async runWithTimeout(fn: ToolFn, args: Record<string, unknown>): Promise<string> {
    const ms = this.policy.timeoutMs;
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<string>((resolve) => {
      timer = setTimeout(() => {
        controller.abort();
        resolve(\`Error: timed out after \${ms} ms\`);
      }, ms);
    });
    try {
      return await Promise.race([fn(args, controller.signal), timeout]);
    } catch (err) {
      if (controller.signal.aborted) return \`Error: timed out after \${ms} ms\`;
      return \`Error: \${err instanceof Error ? err.message : String(err)}\`;
    } finally {
      clearTimeout(timer);
    }
  }
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(t); reject(new Error('aborted')); });
  });

const executor = new GuardedExecutor(
  {
    fetch_url: async (args, signal) => { await sleep(10, signal); return \`fetched \${String(args.url)}\`; },
    send_email: async (args) => \`sent to \${String(args.to)}\`,
    slow_report: async (_args, signal) => { await sleep(5_000, signal); return 'report'; },
  },
  { allowedTools: ['fetch_url', 'send_email', 'slow_report'], allowedHosts: ['api.github.com'], requireConfirmation: ['send_email'], callsPerMinute: 2, timeoutMs: 200 },
  async (_tool, args) => String(args.to).endsWith('@acme.com'),
);

async function main(): Promise<void> {
  console.log(await executor.call('fetch_url', { url: 'https://api.github.com/repos/acme/app' })); // fetched
  console.log(await executor.call('fetch_url', { url: 'https://api.github.com.evil.io/' })); // Blocked: host
  console.log(await executor.call('delete_repo', {})); // Blocked: tool
  console.log(await executor.call('send_email', { to: 'attacker@evil.io' })); // Blocked: declined
  console.log(await executor.call('slow_report', {})); // Error: timed out after 200 ms
  console.log(await executor.call('fetch_url', { url: 'https://api.github.com/a' })); // fetched (2nd in window)
  console.log(await executor.call('fetch_url', { url: 'https://api.github.com/b' })); // Blocked: rate limit
}

main();
`,
        hints: [
          'Object.hasOwn(this.tools, tool) avoids treating inherited names such as "constructor" as tools.',
          'Only a call that was allowed should be recorded in the sliding window; filter out timestamps older than 60 seconds first.',
          'Race the tool against a promise that resolves with the timeout message, and abort the controller in the same timer callback.',
        ],
      },
    },
  ],
};
