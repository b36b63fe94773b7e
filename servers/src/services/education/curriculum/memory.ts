import type { CourseMaterial } from './types';

// Course: Agent Memory. Code sources are template literals; any backslash inside them is doubled
// so that the emitted code contains a single one.

export const memory: CourseMaterial = {
  id: 'memory',
  title: 'Agent Memory',
  description:
    'How agents remember: the four kinds of memory, fitting history into a token budget, retrieval with embeddings and vector indexes, compressing and forgetting, and persisting memory safely per user.',
  difficulty: 'intermediate',
  prerequisites: ['foundations'],
  lessons: [
    // ---------------------------------------------------------------------------------------------
    {
      id: 'memory-types',
      title: 'Working, Episodic, Semantic and Procedural Memory',
      preview:
        'An agent has no memory except what you put in its context window. This lesson separates the four kinds of memory an agent needs and shows what each one is for.',
      estimatedMinutes: 15,
      objectives: [
        'Distinguish working, episodic, semantic and procedural memory',
        'Choose the right memory type for a given piece of information',
        'Model memory records as a typed, validated discriminated union',
        'Explain how episodic memories are consolidated into semantic facts',
      ],
      sections: [
        {
          heading: 'Four kinds of agent memory',
          body: [
            "A language model is stateless: each API call sees only the tokens you send with it. Everything an agent 'remembers' is therefore something your code stored and chose to put back into the prompt. The useful question is not whether to add memory but which kind, because different information has different lifetimes, access patterns and failure modes.",
            "The taxonomy most agent designs use comes from cognitive psychology, and the CoALA paper (Cognitive Architectures for Language Agents, Sumers et al., 2023) applied it to LLM agents. Working memory is the context window of the current call. The three long-term stores sit outside the model: episodic memory records what happened (events with timestamps), semantic memory holds facts that stay true regardless of when they were learned, and procedural memory holds how to act: instructions, tool definitions and reusable skills.",
            "Keeping the kinds separate pays off in retrieval. You look up episodes by time and similarity ('what happened last time we deployed?'), facts by subject or key ('which cloud region does this user use?') and procedures by name or task type. One undifferentiated pile of text chunks makes every lookup a fuzzy similarity search and lets a stale event outrank a current fact. Give each record an explicit kind field and validate it at the boundary.",
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'A zod discriminated union that gives every stored memory an explicit kind and kind-specific fields.',
            source: `import { z } from 'zod';

const base = {
  id: z.string().uuid(),
  createdAt: z.string().datetime(),
};

export const MemoryRecord = z.discriminatedUnion('kind', [
  z.object({ ...base, kind: z.literal('episodic'), occurredAt: z.string().datetime(), event: z.string().min(1) }),
  z.object({
    ...base,
    kind: z.literal('semantic'),
    subject: z.string().min(1),
    fact: z.string().min(1),
    confidence: z.number().min(0).max(1),
  }),
  z.object({
    ...base,
    kind: z.literal('procedural'),
    name: z.string().min(1),
    instructions: z.string().min(1),
    version: z.number().int().positive(),
  }),
]);
export type MemoryRecord = z.infer<typeof MemoryRecord>;

const record = MemoryRecord.parse({
  id: '7f9c2a4e-1b3d-4c5e-9f8a-2b7d6e4c1a90',
  createdAt: '2025-03-04T10:15:00Z',
  kind: 'semantic',
  subject: 'user',
  fact: 'Deploys to AWS eu-west-1 and prefers Terraform over CDK.',
  confidence: 0.9,
});

if (record.kind === 'semantic') console.log(record.subject, '->', record.fact);
`,
          },
        },
        {
          heading: 'Working memory is the context window',
          body: [
            "Working memory is whatever is in the prompt for this call: the system prompt, tool definitions, retrieved long-term memories, the recent conversation and any scratchpad of intermediate reasoning or tool results. It is the only memory the model can actually use. If a fact sits in your database but not in the context, the model does not know it.",
            "Because the API is stateless, working memory is rebuilt and re-sent on every turn. A 20,000-token context in a 30-step agent loop costs 600,000 input tokens, so what goes into working memory is a cost decision as much as a quality one. Working memory is also bounded by the model's context window, and quality falls before the hard limit: models use information at the start and end of a long prompt more reliably than information in the middle.",
            "Treat context assembly as an explicit function. It takes the current task, queries each long-term store, and returns the exact system prompt and message list for the next call. Making that function pure and testable lets you log precisely what the model saw when it made a bad decision, which is the first thing you need when debugging memory problems.",
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'Assembling working memory for one turn from the three long-term stores plus the live conversation.',
            source: `interface Turn {
  role: 'user' | 'assistant';
  content: string;
}

interface WorkingMemoryInput {
  procedures: string[]; // procedural: standing instructions for this task type
  facts: string[]; // semantic: facts retrieved for this user and task
  episodes: { at: string; event: string }[]; // episodic: relevant past events
  recentTurns: Turn[]; // the live conversation, newest last
}

export function buildContext(input: WorkingMemoryInput): { system: string; messages: Turn[] } {
  const blocks = [
    '# Instructions\\n' + input.procedures.join('\\n'),
    '# Known facts\\n' + input.facts.map((f) => '- ' + f).join('\\n'),
    '# Relevant past events\\n' + input.episodes.map((e) => '- [' + e.at + '] ' + e.event).join('\\n'),
  ];
  return { system: blocks.join('\\n\\n'), messages: input.recentTurns };
}

const ctx = buildContext({
  procedures: ['Always run terraform plan before apply.'],
  facts: ['User deploys to eu-west-1.', 'State is stored in S3 with DynamoDB locking.'],
  episodes: [{ at: '2025-02-11', event: 'Apply failed: state lock held by a crashed CI job.' }],
  recentTurns: [{ role: 'user', content: 'Deploy the new VPC module.' }],
});
console.log(ctx.system);
`,
          },
        },
        {
          heading: 'Episodic and semantic memory',
          body: [
            "Episodic memory stores events: a conversation turn, a tool call and its result, the outcome of a task. Each episode needs an occurrence timestamp and enough context to be understood on its own ('deploy of api-v2 to staging failed because the migration timed out after 300 s'), not a fragment like 'it failed again'. Agents use episodes to avoid repeating mistakes, to reuse past successful trajectories as few-shot examples and to answer questions about history.",
            "Semantic memory stores facts detached from the moment they were learned: 'the user's team uses Postgres 16', 'the billing API rate limit is 100 requests per minute'. Facts are keyed by a subject so they can be looked up directly, and a newer fact about the same key supersedes an older one. Keep the old value with a validity interval instead of overwriting it, so you can explain later why the agent acted on it.",
            "Consolidation turns episodes into facts. After a session, a reflection step (usually an LLM call) reads recent episodes and extracts durable facts and preferences, each linked back to its source episodes. Consolidation is lossy and can hallucinate, so store a confidence value and the provenance, and prefer facts the user stated explicitly over facts the model inferred.",
          ].join('\n\n'),
        },
        {
          heading: 'Procedural memory: how to act',
          body: [
            "Procedural memory is knowledge of how to do things. In most agents it is the system prompt, the tool definitions and task-specific playbooks ('when a deploy fails, fetch the last 200 log lines before retrying'). More ambitious agents learn procedures: Voyager (Wang et al., 2023) stored working JavaScript programs for Minecraft tasks in a skill library and retrieved them by description for new tasks.",
            "Procedural memory differs from the other long-term stores in blast radius. A wrong episodic memory misleads one retrieval; a wrong procedure changes behaviour on every future task that loads it. Version every procedure, record who or what changed it, run it through evaluation before activation and keep the ability to roll back. If the agent can edit its own instructions, treat each edit as a proposed change that needs review or automated tests, not as a direct write.",
            "A practical rule for placing information: if it describes an event, it is episodic; if it would still be true tomorrow without reference to when you learned it, it is semantic; if it tells the agent how to behave or which steps to follow, it is procedural; if it matters only for the current call, it belongs in working memory and nowhere else.",
          ].join('\n\n'),
        },
      ],
      keyTakeaways: [
        'A model only knows what is in its context window for the current call; every other memory must be retrieved and inserted by your code.',
        'Episodic memory stores time-stamped events, semantic memory stores facts keyed by subject, and procedural memory stores instructions and skills.',
        'Working memory is re-sent on every call, so its size multiplies across the steps of an agent loop.',
        'Consolidation extracts semantic facts from episodes and should keep provenance and a confidence value.',
        'Procedural memory affects every future task, so it must be versioned, reviewed and reversible.',
      ],
      questions: [
        {
          prompt: "An agent learns that a user 'prefers metric units in every report'. Which memory store should hold this?",
          correct: 'Semantic memory, as a fact keyed by the user',
          distractors: [
            'Episodic memory, as a time-stamped event',
            'Procedural memory, as a versioned skill',
            'Working memory, inside the current prompt only',
          ],
          explanation:
            'The preference stays true regardless of when it was learned, so it is a semantic fact. Storing it only in working memory would lose it after the call.',
        },
        {
          prompt: 'Why does the size of working memory matter for cost in an agent loop?',
          correct: 'The whole context is re-sent as input tokens on every call of the loop',
          distractors: [
            'The provider stores the context and bills monthly storage fees',
            'Working memory is written to the vector store after each call',
            'Output tokens grow in proportion to the system prompt length',
          ],
          explanation:
            'LLM APIs are stateless, so a 20,000-token context over 30 steps costs 600,000 input tokens.',
        },
        {
          prompt: 'What is consolidation in agent memory?',
          correct: 'Extracting durable facts from recent episodes into semantic memory',
          distractors: [
            'Merging all memory kinds into a single vector collection',
            'Compressing the system prompt so that it uses fewer tokens',
            'Copying working memory verbatim into a database table',
          ],
          explanation:
            'Consolidation is a reflection step that turns events into facts, ideally with provenance back to the source episodes.',
        },
        {
          prompt: 'Why should procedural memory be versioned and reviewed before activation?',
          correct: 'A wrong procedure changes behaviour on every future task that loads it',
          distractors: [
            'Procedures are usually too large to fit into the context window',
            'Procedures cannot be retrieved from storage without a version number',
            'Embedding models reject instruction text that has no version field',
          ],
          explanation:
            'A bad episode misleads one retrieval, but a bad procedure has a global blast radius, so changes need review and rollback.',
        },
        {
          prompt: 'Which field is essential on an episodic memory record?',
          correct: 'The time at which the event occurred',
          distractors: [
            'A version number for the instructions',
            'The subject key that the fact describes',
            'The name of the tool definition it replaces',
          ],
          explanation:
            'Episodes are events; they are retrieved and ordered by when they happened, so an occurrence timestamp is required.',
        },
      ],
      exercise: {
        title: 'A typed memory bank',
        challenge:
          'Implement a MemoryBank that accepts untrusted input, validates it against a discriminated union of episodic, semantic and procedural records, and answers the three lookups each kind is designed for: episodes by time, facts by key (newest wins) and procedures by name (highest version wins).',
        requirements: [
          'add(raw) validates input with the Memory schema, throws on invalid data and stores the parsed record',
          'fact(key) returns the value of the semantic record with the latest learnedAt for that key, or undefined',
          'episodesSince(iso) returns episodic records with at >= iso, sorted oldest first',
          'procedure(name) returns the procedural record with the highest version for that name, or undefined',
        ],
        starterCode: `import { z } from 'zod';

export const Memory = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('episodic'), at: z.string().datetime(), event: z.string().min(1) }),
  z.object({ kind: z.literal('semantic'), key: z.string().min(1), value: z.string(), learnedAt: z.string().datetime() }),
  z.object({
    kind: z.literal('procedural'),
    name: z.string().min(1),
    instructions: z.string().min(1),
    version: z.number().int().positive(),
  }),
]);
export type Memory = z.infer<typeof Memory>;
type Episodic = Extract<Memory, { kind: 'episodic' }>;
type Procedural = Extract<Memory, { kind: 'procedural' }>;

export class MemoryBank {
  private records: Memory[] = [];

  add(raw: unknown): Memory {
    // TODO: validate raw with Memory (throw on invalid input), store and return the parsed record
    throw new Error('not implemented');
  }

  fact(key: string): string | undefined {
    // TODO: value of the semantic record for key with the latest learnedAt
    throw new Error('not implemented');
  }

  episodesSince(iso: string): Episodic[] {
    // TODO: episodic records with at >= iso, oldest first
    throw new Error('not implemented');
  }

  procedure(name: string): Procedural | undefined {
    // TODO: highest version of the named procedure
    throw new Error('not implemented');
  }
}
`,
        solution: `import { z } from 'zod';

export const Memory = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('episodic'), at: z.string().datetime(), event: z.string().min(1) }),
  z.object({ kind: z.literal('semantic'), key: z.string().min(1), value: z.string(), learnedAt: z.string().datetime() }),
  z.object({
    kind: z.literal('procedural'),
    name: z.string().min(1),
    instructions: z.string().min(1),
    version: z.number().int().positive(),
  }),
]);
export type Memory = z.infer<typeof Memory>;
type Episodic = Extract<Memory, { kind: 'episodic' }>;
type Semantic = Extract<Memory, { kind: 'semantic' }>;
type Procedural = Extract<Memory, { kind: 'procedural' }>;

export class MemoryBank {
  private records: Memory[] = [];

  add(raw: unknown): Memory {
    const record = Memory.parse(raw); // throws a ZodError on invalid input
    this.records.push(record);
    return record;
  }

  fact(key: string): string | undefined {
    let latest: Semantic | undefined;
    for (const r of this.records) {
      if (r.kind !== 'semantic' || r.key !== key) continue;
      if (!latest || Date.parse(r.learnedAt) > Date.parse(latest.learnedAt)) latest = r;
    }
    return latest?.value;
  }

  episodesSince(iso: string): Episodic[] {
    const since = Date.parse(iso);
    return this.records
      .filter((r): r is Episodic => r.kind === 'episodic' && Date.parse(r.at) >= since)
      .sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
  }

  procedure(name: string): Procedural | undefined {
    let best: Procedural | undefined;
    for (const r of this.records) {
      if (r.kind === 'procedural' && r.name === name && (!best || r.version > best.version)) best = r;
    }
    return best;
  }
}

const bank = new MemoryBank();
bank.add({ kind: 'semantic', key: 'db', value: 'Postgres 15', learnedAt: '2025-01-10T09:00:00Z' });
bank.add({ kind: 'semantic', key: 'db', value: 'Postgres 16', learnedAt: '2025-03-02T09:00:00Z' });
bank.add({ kind: 'episodic', at: '2025-03-03T12:00:00Z', event: 'Migration 042 timed out after 300 s' });
bank.add({ kind: 'procedural', name: 'deploy', instructions: 'Run plan, then apply.', version: 2 });
console.log(bank.fact('db'), bank.episodesSince('2025-03-01T00:00:00Z').length, bank.procedure('deploy')?.version);
`,
        hints: [
          'Memory.parse throws a ZodError for invalid input, which satisfies the validation requirement without extra code.',
          'Compare timestamps with Date.parse rather than string comparison so that different valid ISO forms order correctly.',
          'A type predicate such as (r): r is Episodic => r.kind === "episodic" lets filter return the narrowed type.',
        ],
      },
    },
    // ---------------------------------------------------------------------------------------------
    {
      id: 'context-windows',
      title: 'Context Windows and Token Budgets',
      preview:
        'Long conversations and large tool outputs overflow the context window. This lesson covers token budgets, truncation strategies, rolling summaries, and which content must survive verbatim.',
      estimatedMinutes: 20,
      objectives: [
        'Allocate a token budget across instructions, tools, memory, history and output',
        'Truncate history without orphaning tool results or losing the task statement',
        'Summarize older turns with a threshold that avoids re-summarizing every turn',
        'Identify content that must be kept verbatim rather than paraphrased',
      ],
      sections: [
        {
          heading: 'Token budgets',
          body: [
            "A context window is measured in tokens, not characters. For English prose with current tokenizers a token averages about 4 characters, or roughly three quarters of a word; source code, JSON, non-Latin scripts and long numbers tokenize more densely. Use the 4-character rule for planning and the provider's tokenizer or token-counting endpoint when you need exact numbers, and keep a safety margin of around 5% for estimator error.",
            "Many APIs count the requested maximum output against the same window, so a 128,000-token model asked for up to 4,096 output tokens has about 124,000 tokens of input space. Divide that input space explicitly: the system prompt and tool definitions are fixed per agent, retrieved memory gets a slice, and conversation history gets the rest. Tool definitions are easy to forget: 30 tools with detailed JSON schemas can consume several thousand tokens on every call.",
            "Order matters as well as size. Providers that cache prompt prefixes bill cached input tokens at a steep discount and serve them faster, but only for an identical prefix. Put stable content (system prompt, tool definitions, pinned facts) first and volatile content (retrieved memories, latest turns) last, so that trimming history does not invalidate the cache for everything after it.",
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'Planning a per-call token budget with an output reserve and a safety margin.',
            source: `// About 4 characters per token for English prose; use the provider's tokenizer for exact counts.
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

export interface BudgetPlan {
  system: number;
  tools: number;
  memory: number;
  history: number;
  output: number;
}

export function planBudget(windowTokens: number, system: string, toolsJson: string, maxOutput: number): BudgetPlan {
  const safety = Math.floor(windowTokens * 0.05);
  const fixedSystem = estimateTokens(system);
  const fixedTools = estimateTokens(toolsJson);
  const remaining = windowTokens - safety - maxOutput - fixedSystem - fixedTools;
  if (remaining <= 0) throw new Error('Instructions, tools and output reserve already exceed the window');
  const memory = Math.floor(remaining * 0.3); // 30% retrieved memory, 70% conversation history
  return { system: fixedSystem, tools: fixedTools, memory, history: remaining - memory, output: maxOutput };
}

const tools = Array.from({ length: 30 }, (_, i) => ({
  name: 'tool_' + i,
  description: 'Queries the deployment API. '.repeat(10),
  parameters: { type: 'object', properties: { id: { type: 'string' } } },
}));
console.log(planBudget(128_000, 'You are a careful deployment assistant. '.repeat(50), JSON.stringify(tools), 4_096));
`,
          },
        },
        {
          heading: 'Truncation strategies',
          body: [
            "The simplest strategy is a sliding window: keep the newest messages that fit and drop the rest. It is cheap and predictable but forgets the user's original request, which is usually the most important message in the conversation. A better default pins the system prompt and the first user message (the task statement), then fills the remaining budget with the newest messages, walking backwards and stopping at the first message that does not fit so the kept history stays contiguous.",
            "Tool traffic needs special handling. A tool result must stay together with the assistant message that requested it: provider APIs reject a tool result whose call is missing, and the model cannot interpret a result without knowing what it asked for. Group each call with its results into one unit and keep or drop the unit as a whole. Tool outputs are also the usual budget hogs, so truncate an individual oversized output (keep its head and tail, note how many characters were cut) before dropping whole turns.",
            "Position affects recall. Liu et al. (2023, 'Lost in the Middle') showed that models answer more accurately when relevant information sits at the start or the end of a long context than in the middle. Put pinned instructions at the start, the newest turns at the end, and insert a short marker such as '[14 earlier messages omitted]' where history was cut so the model knows the gap exists.",
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'A sliding window that keeps system messages and pinned messages and never separates a tool result from its call.',
            source: `interface Msg { role: 'system' | 'user' | 'assistant' | 'tool'; content: string; pinned?: boolean }

const tokens = (m: Msg): number => Math.ceil(m.content.length / 4) + 4; // +4 for role and formatting overhead

export function slidingWindow(messages: Msg[], budget: number): Msg[] {
  const units: Msg[][] = []; // each tool result joins the unit of the message that requested it
  for (const m of messages) {
    const last = units[units.length - 1];
    if (m.role === 'tool' && last) last.push(m);
    else units.push([m]);
  }
  const cost = (u: Msg[]) => u.reduce((n, m) => n + tokens(m), 0);
  const keep = new Set<number>();
  let used = 0;
  for (const [i, u] of units.entries()) {
    if (!u.some((m) => m.pinned || m.role === 'system')) continue;
    keep.add(i);
    used += cost(u);
  }
  for (let i = units.length - 1; i >= 0; i--) {
    if (keep.has(i)) continue;
    const c = cost(units[i]!);
    if (used + c > budget) break; // stop at the first gap so kept history stays contiguous
    keep.add(i);
    used += c;
  }
  return units.filter((_, i) => keep.has(i)).flat();
}

const history: Msg[] = [
  { role: 'system', content: 'You manage Kubernetes deployments.' },
  { role: 'user', content: 'Roll out api v2.3.1 to staging, then production.', pinned: true },
  { role: 'assistant', content: 'Calling kubectl rollout status.' },
  { role: 'tool', content: 'x'.repeat(2_000) },
  { role: 'assistant', content: 'Staging is healthy.' },
  { role: 'user', content: 'Go ahead with production.' },
];
console.log(slidingWindow(history, 100).map((m) => m.role));
`,
          },
        },
        {
          heading: 'Summarizing older turns',
          body: [
            "Truncation throws information away; summarization compresses it. The usual design is a rolling summary: keep the last few turns verbatim and fold everything older into a running summary message that sits after the system prompt. When history grows past a trigger threshold, the oldest turns plus the previous summary are sent to a model with instructions to produce an updated summary, and those turns are removed.",
            "Use two thresholds, not one. If you summarize whenever history exceeds the budget, you pay for a summarization call on nearly every turn once the conversation is long. Trigger at a high-water mark (for example 75% of the history budget) and compress down to a low-water mark (for example 40%), so each summarization buys many turns of headroom. Summarization calls can use a smaller, cheaper model than the agent itself.",
            "The summarization prompt decides what survives. Ask for a structured summary with fixed headings: the goal, decisions made and why, open tasks, facts learned about the user and environment, and failed approaches to avoid. Free-form 'summarize this conversation' output drifts toward narrative and drops exactly the details the agent needs. Summaries are lossy and can introduce errors, so summaries of summaries degrade over time; archive the raw turns to episodic storage so they can still be retrieved on demand.",
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'A rolling summary with high- and low-water marks; the summarizer is injected so it can be any model call.',
            source: `interface Turn {
  role: 'user' | 'assistant';
  content: string;
}
type Summarize = (previousSummary: string, turns: Turn[]) => Promise<string>;

const estimate = (t: Turn[]) => t.reduce((n, x) => n + Math.ceil(x.content.length / 4), 0);

export class RollingHistory {
  summary = '';
  turns: Turn[] = [];

  constructor(
    private readonly summarize: Summarize,
    private readonly highWater = 6_000,
    private readonly lowWater = 3_000,
  ) {}

  async add(turn: Turn): Promise<void> {
    this.turns.push(turn);
    if (estimate(this.turns) < this.highWater) return;
    let cut = 0; // fold the oldest turns until the verbatim tail is under the low-water mark
    while (cut < this.turns.length - 2 && estimate(this.turns.slice(cut)) > this.lowWater) cut++;
    const folded = this.turns.slice(0, cut);
    this.turns = this.turns.slice(cut);
    this.summary = await this.summarize(this.summary, folded);
  }
}

const fakeSummarizer: Summarize = async (prev, turns) => prev + ' [' + turns.length + ' turns summarized]';
const h = new RollingHistory(fakeSummarizer, 200, 100);
for (let i = 0; i < 12; i++) await h.add({ role: i % 2 ? 'assistant' : 'user', content: 'message ' + i + ' '.repeat(60) });
console.log(h.summary, h.turns.length);
`,
          },
        },
        {
          heading: 'What to keep verbatim',
          body: [
            "Some content must never be paraphrased. Instructions and constraints ('never run migrations on production without approval') lose force when summarized into 'be careful with production'. The original task statement defines success and should stay pinned. Exact identifiers are the most common casualty: resource IDs, file paths, URLs, commit hashes, version numbers, amounts and error codes are easily altered by a summarizer, and a slightly wrong ID is worse than a missing one because the agent will act on it.",
            "Keep verbatim as well the tool result the agent is currently acting on and the most recent error message, since the next step depends on their exact content. Code that the agent is editing should be included exactly or not at all. A workable rule: summaries may describe what happened, but any token the agent might copy into a tool argument must come from a verbatim source.",
            "When something important does not fit, page it out instead of compressing it. MemGPT (Packer et al., 2023) treats the context window like RAM and external storage like disk: the agent gets tools to search and reload archived messages, and the context holds only a note that they exist. That keeps the window small while preserving exact content for when it is needed.",
          ].join('\n\n'),
        },
      ],
      keyTakeaways: [
        'English prose averages about 4 characters per token, and the output reserve often counts against the same context window.',
        'Pin the system prompt and the original task statement, and fill the rest of the window with the newest contiguous history.',
        'A tool result must be kept or dropped together with the assistant message that called the tool.',
        'Summarize at a high-water mark down to a low-water mark so each summarization call buys many turns.',
        'Constraints, identifiers, the current tool result and the latest error must stay verbatim because the agent acts on their exact content.',
      ],
      questions: [
        {
          prompt: 'Why must a tool result be dropped together with the assistant message that requested it?',
          correct: 'Without its call, the result is rejected by the API and meaningless to the model',
          distractors: [
            'Tool results are cached by the provider and must match the cached call',
            'Tool results are always shorter than the calls that produce them',
            'Dropping only the result would reset the provider prompt cache',
          ],
          explanation:
            'Providers validate that every tool result has a preceding call, and the call carries the arguments that give the result its meaning.',
        },
        {
          prompt: 'To benefit from prompt-prefix caching, where should the system prompt and tool definitions go?',
          correct: 'At the start of the prompt, before retrieved memories and recent turns',
          distractors: [
            'At the end of the prompt, after the newest user message',
            'In the middle of the prompt, between old and new turns',
            'In a separate call that runs before the main request',
          ],
          explanation:
            'Caches match an identical prefix, so stable content must come first and volatile content last.',
        },
        {
          prompt: 'What does the "Lost in the Middle" result imply for context assembly?',
          correct: 'Put critical content at the start or end, not in the middle',
          distractors: [
            'Split every long context into two separate model calls',
            'Put the newest turns in the middle to balance attention',
            'Repeat every instruction three times across the context',
          ],
          explanation:
            'Models retrieve information placed at the beginning or end of long contexts more reliably than information in the middle.',
        },
        {
          prompt: 'Why use separate high-water and low-water marks for summarization?',
          correct: 'So each summarization call frees room for many later turns',
          distractors: [
            'So the summarizer model can use a larger context window',
            'So the summary is always longer than the turns it replaces',
            'So that tool results are summarized before user messages',
          ],
          explanation:
            'Triggering at one threshold and compressing to a lower one creates headroom; a single threshold causes a summarization call nearly every turn.',
        },
        {
          prompt: 'Which content should never be replaced by a summary?',
          correct: 'Exact identifiers such as resource IDs, file paths and version numbers',
          distractors: [
            'Small talk and greetings from early in the conversation history',
            'Narrative descriptions of earlier steps that already succeeded',
            'Explanations that the assistant gave in its earlier answers',
          ],
          explanation:
            'Summarizers easily alter identifiers, and the agent copies them into tool arguments, so a slightly wrong ID causes wrong actions.',
        },
      ],
      exercise: {
        title: 'Fit a conversation into a token budget',
        challenge:
          'Write fitToBudget, which trims a message list to a token budget the way a production agent should: system messages and the original task stay, the newest history fills the remaining space, tool results are never separated from their calls, and the model is told how many messages were omitted.',
        requirements: [
          'Always keep every system message and the first user message; throw an Error if these alone exceed the budget',
          'Treat a tool message as part of the unit of the message before it, and keep or drop units whole',
          'Fill the remaining budget with the newest units, walking backwards and stopping at the first unit that does not fit',
          'If anything was dropped, insert a system message "[N earlier messages omitted]" before the kept recent units and count its tokens against the budget',
          'Return the pinned messages, then the note, then the kept units, each group in its original order',
        ],
        starterCode: `export interface Message {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
}

export function estimateTokens(m: Message): number {
  return Math.ceil(m.content.length / 4) + 4;
}

export function fitToBudget(messages: Message[], budget: number): Message[] {
  // TODO: find the pinned messages (system messages and the first user message)
  // TODO: group the remaining messages into units (a tool message joins the previous unit)
  // TODO: reserve tokens for the omission note, then add the newest units that fit
  // TODO: assemble pinned messages, the note (if needed) and kept units in original order
  throw new Error('not implemented');
}
`,
        solution: `export interface Message {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
}

export function estimateTokens(m: Message): number {
  return Math.ceil(m.content.length / 4) + 4;
}

const note = (n: number): Message => ({ role: 'system', content: '[' + n + ' earlier messages omitted]' });

export function fitToBudget(messages: Message[], budget: number): Message[] {
  const firstUser = messages.findIndex((m) => m.role === 'user');
  const pinned = messages.filter((m, i) => m.role === 'system' || i === firstUser);
  let used = pinned.reduce((n, m) => n + estimateTokens(m), 0);
  if (used > budget) throw new Error('Pinned messages alone exceed the budget of ' + budget + ' tokens');

  const units: Message[][] = [];
  messages.forEach((m, i) => {
    if (m.role === 'system' || i === firstUser) return;
    const last = units[units.length - 1];
    if (m.role === 'tool' && last) last.push(m);
    else units.push([m]);
  });
  const cost = (u: Message[]) => u.reduce((n, m) => n + estimateTokens(m), 0);
  const total = units.reduce((n, u) => n + cost(u), 0);
  if (used + total <= budget) return messages;

  used += estimateTokens(note(messages.length)); // reserve space for the note (upper bound on N)
  const kept: Message[][] = [];
  for (let i = units.length - 1; i >= 0; i--) {
    const unit = units[i]!;
    if (used + cost(unit) > budget) break;
    kept.unshift(unit);
    used += cost(unit);
  }
  const keptMessages = kept.flat();
  const omitted = messages.length - pinned.length - keptMessages.length;
  return [...pinned, note(omitted), ...keptMessages];
}

const convo: Message[] = [
  { role: 'system', content: 'You are a release assistant.' },
  { role: 'user', content: 'Ship release 4.2.0 to all regions.' },
  { role: 'assistant', content: 'Checking CI status.' },
  { role: 'tool', content: 'ci: '.repeat(200) },
  { role: 'assistant', content: 'CI is green. Deploying to eu-west-1.' },
  { role: 'tool', content: 'deployed eu-west-1' },
  { role: 'user', content: 'Continue with us-east-1.' },
];
console.log(fitToBudget(convo, 80).map((m) => m.role + ': ' + m.content.slice(0, 40)));
`,
        hints: [
          'Compute the index of the first user message once with findIndex, then filter the pinned messages by role or index.',
          'Build units in a single forward pass: a tool message is pushed onto the last unit instead of starting a new one.',
          'Walk the units from the end with a for loop and break on the first one that does not fit; unshift kept units to preserve order.',
        ],
      },
    },
    // ---------------------------------------------------------------------------------------------
    {
      id: 'embeddings-and-vector-stores',
      title: 'Embeddings and Vector Stores',
      preview:
        'Semantic retrieval turns text into vectors and finds the nearest ones. This lesson covers embeddings, cosine similarity, approximate nearest neighbour indexes such as HNSW, and filtering by metadata.',
      estimatedMinutes: 25,
      objectives: [
        'Explain what an embedding is and why vectors from different models cannot be mixed',
        'Compute cosine similarity and run an exact top-k search',
        'Tune HNSW and IVFFlat parameters and measure recall against exact search',
        'Combine vector search with metadata filters without losing results',
      ],
      sections: [
        {
          heading: 'What an embedding is',
          body: [
            "An embedding model maps a piece of text to a fixed-length vector of floats. It is trained so that texts with related meaning land close together: 'I can't log in' and 'reset my password' end up near each other even though they share no words. Common sizes are 384 dimensions (all-MiniLM-L6-v2), 1,536 (OpenAI text-embedding-3-small) and 3,072 (text-embedding-3-large). The text-embedding-3 models also accept a dimensions parameter that returns shortened vectors, trading a little accuracy for storage.",
            "Storage adds up. A float32 is 4 bytes, so one 1,536-dimensional vector takes about 6 KB and a million of them about 6.1 GB before any index overhead. Vectors from different models, or from different versions of one model, live in unrelated spaces: comparing them produces numbers with no meaning. Store the model identifier next to every vector and plan to re-embed the whole corpus when you change models.",
            "Embed units that carry one idea. A single memory record or a chunk of a few hundred tokens retrieves well; a whole long document averages its topics into one blurry vector. Some models are asymmetric and expect different prefixes for queries and documents (the E5 family uses 'query: ' and 'passage: '); follow the model card, because skipping the prefix quietly lowers retrieval quality.",
          ].join('\n\n'),
        },
        {
          heading: 'Cosine similarity and exact search',
          body: [
            "Cosine similarity measures the angle between two vectors: the dot product divided by the product of their lengths. It ranges from -1 to 1 and ignores vector length, which is what you want when length mostly reflects text length rather than meaning. If you normalize every vector to unit length when you store it, cosine similarity becomes a plain dot product, which is cheaper. Vector databases often express it as cosine distance, 1 minus the similarity; pgvector's <=> operator returns that distance.",
            "Absolute scores are model-specific. With one model unrelated sentences score around 0.1; with another almost everything scores above 0.7. A threshold such as 'similarity above 0.8 means relevant' must be calibrated per model on labelled pairs, and re-calibrated whenever the model changes. Ranking by top-k with a calibrated minimum score is more robust than a bare threshold.",
            "Exact (brute-force) search compares the query with every stored vector: N times d multiply-adds. For 1 million vectors of 1,536 dimensions that is about 1.5 billion operations per query, which takes a few hundred milliseconds to a second on one CPU core. Below roughly 100,000 vectors, exact search is usually fast enough, needs no index, and has perfect recall.",
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'Normalizing vectors at write time so cosine similarity becomes a dot product, then exact top-k search.',
            source: `export function normalize(v: number[]): number[] {
  const norm = Math.hypot(...v);
  if (norm === 0) throw new Error('Cannot normalize a zero vector');
  return v.map((x) => x / norm);
}

export function dot(a: number[], b: number[]): number {
  if (a.length !== b.length) throw new Error('Dimension mismatch: ' + a.length + ' vs ' + b.length);
  return a.reduce((sum, x, i) => sum + x * b[i]!, 0);
}

export function cosine(a: number[], b: number[]): number {
  return dot(normalize(a), normalize(b));
}

export function exactTopK(query: number[], items: Map<string, number[]>, k: number) {
  const q = normalize(query);
  return [...items] // items hold unit vectors, so the dot product is the cosine similarity
    .map(([id, v]) => ({ id, score: dot(q, v) }))
    .sort((a, b) => b.score - a.score)
    .slice(0, k);
}

const items = new Map<string, number[]>([
  ['password-reset', normalize([0.9, 0.1, 0.0])],
  ['login-failure', normalize([0.8, 0.3, 0.1])],
  ['invoice-pdf', normalize([0.0, 0.2, 0.95])],
]);
console.log(cosine([1, 0], [2, 0]), cosine([1, 0], [0, 1])); // 1 and 0: length is ignored
console.log(exactTopK([0.85, 0.2, 0.05], items, 2));
`,
          },
        },
        {
          heading: 'Approximate nearest neighbour indexes: HNSW and IVFFlat',
          body: [
            "Approximate nearest neighbour (ANN) indexes give up a little recall for large speedups. HNSW (Hierarchical Navigable Small World, Malkov and Yashunin) builds a layered proximity graph: upper layers are sparse with long links, the bottom layer contains every vector. A query enters at the top, greedily walks toward the query vector, and descends layer by layer, visiting a few thousand nodes instead of millions.",
            "HNSW has three knobs. M is the number of links per node (pgvector default 16): more links mean better recall, more memory and slower builds. ef_construction is the candidate list size while building (pgvector default 64). ef_search is the candidate list size at query time (pgvector default 40): raising it increases recall and latency, and it must be at least the number of results you ask for. HNSW indexes handle inserts incrementally but use a lot of memory and build slowly.",
            "IVFFlat partitions vectors into lists around k-means centroids and searches only the probes lists nearest the query. It builds faster and uses less memory, but the centroids are trained on the rows present at build time, so build it after loading data and rebuild when the distribution drifts. pgvector suggests lists of rows/1000 up to a million rows and sqrt(rows) beyond, with probes starting near sqrt(lists). For either index, measure recall@k against exact search on a sample of real queries; 0.95 or better is a common target.",
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'A toy IVF index over clustered synthetic vectors, measuring recall@10 against exact search as probes grow.',
            source: `const DIM = 32, N = 20_000, K = 10, CLUSTERS = 200, LISTS = 100;
const rand = () => Math.random() * 2 - 1;
const normalize = (v: number[]) => { const n = Math.hypot(...v); return v.map((x) => x / n); };
const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0);

// Clustered synthetic data behaves like embeddings of topical text.
const centers = Array.from({ length: CLUSTERS }, () => Array.from({ length: DIM }, rand));
const sample = () => normalize(centers[Math.floor(Math.random() * CLUSTERS)]!.map((c) => c + 0.4 * rand()));
const data = Array.from({ length: N }, sample);

const nearest = (v: number[], cs: number[][], n: number) =>
  cs.map((c, i) => ({ i, s: dot(v, c) })).sort((a, b) => b.s - a.s).slice(0, n).map((x) => x.i);
const centroids = data.slice(0, LISTS); // real IVF trains these with k-means
const lists: number[][] = centroids.map(() => []);
data.forEach((v, id) => lists[nearest(v, centroids, 1)[0]!]!.push(id));

const search = (q: number[], ids: Iterable<number>) =>
  [...ids].map((id) => ({ id, s: dot(q, data[id]!) })).sort((a, b) => b.s - a.s).slice(0, K).map((x) => x.id);

const queries = Array.from({ length: 50 }, sample);
for (const probes of [1, 4, 16]) {
  let hits = 0;
  let scanned = 0;
  for (const q of queries) {
    const exact = new Set(search(q, data.keys()));
    const candidates = nearest(q, centroids, probes).flatMap((l) => lists[l]!);
    scanned += candidates.length;
    hits += search(q, candidates).filter((id) => exact.has(id)).length;
  }
  const recall = hits / (queries.length * K);
  console.log('probes=' + probes + ' recall@10=' + recall.toFixed(3) + ' scanned=' + Math.round(scanned / queries.length));
}
`,
          },
        },
        {
          heading: 'Metadata filters and hybrid search',
          body: [
            "Agent memory queries almost always carry filters: this user's memories, only episodic records, only the last 30 days. How the filter combines with the ANN index matters. Post-filtering asks the index for the top k and then drops rows that fail the filter; with a selective filter this returns fewer than k results or none. If a user owns 1% of the rows and ef_search is 40, the index scan sees on average 0.4 of that user's rows. Pre-filtering restricts the candidates first and then ranks them, which is exact but needs a way to find the candidates quickly.",
            "Practical fixes: pgvector 0.8 added iterative index scans (hnsw.iterative_scan) that keep walking the graph until enough rows pass the WHERE clause; per-tenant partitions or partial indexes keep each user's vectors in a small index; dedicated engines such as Qdrant apply payload filters during graph traversal. For small candidate sets, an exact scan over the filtered rows is often fastest and has perfect recall.",
            "Dense vectors are weak at exact tokens: error codes, order numbers, function names. Hybrid search runs a keyword query (BM25 or Postgres full-text search) alongside the vector query and merges the ranked lists, commonly with reciprocal rank fusion, which scores each document as the sum over lists of 1 / (60 + rank). Rank fusion avoids comparing raw scores from two incompatible scales.",
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'Postgres with pgvector: an HNSW index plus a tenant-filtered query that uses iterative scans so LIMIT rows are returned.',
            source: `export const ddl = [
  'CREATE EXTENSION IF NOT EXISTS vector',
  'CREATE TABLE IF NOT EXISTS memories (id bigserial PRIMARY KEY, user_id uuid NOT NULL, kind text NOT NULL, ' +
    'content text NOT NULL, embedding vector(1536) NOT NULL, created_at timestamptz NOT NULL DEFAULT now())',
  'CREATE INDEX IF NOT EXISTS memories_embedding_hnsw ON memories ' +
    'USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)',
  'CREATE INDEX IF NOT EXISTS memories_user_kind ON memories (user_id, kind, created_at)',
];

// Run inside the search transaction (pgvector 0.8+): keep scanning the graph until
// enough rows pass the WHERE clause instead of returning fewer than LIMIT rows.
export const searchSettings = ['SET LOCAL hnsw.ef_search = 100', 'SET LOCAL hnsw.iterative_scan = strict_order'];

export function searchQuery(embedding: number[], userId: string, kind: string, limit = 10) {
  if (embedding.length !== 1536) throw new Error('Expected a 1536-dimensional embedding');
  return {
    text:
      'SELECT id, content, 1 - (embedding <=> $1::vector) AS similarity FROM memories ' +
      'WHERE user_id = $2 AND kind = $3 ORDER BY embedding <=> $1::vector LIMIT $4',
    values: ['[' + embedding.join(',') + ']', userId, kind, limit] as const,
  };
}

const q = searchQuery(new Array(1536).fill(0.01), '3f6c1f8e-2a4b-4d7e-9c1a-5b8e7d6f4a21', 'episodic');
console.log(q.text, q.values.slice(1));
`,
          },
        },
      ],
      keyTakeaways: [
        'Vectors from different embedding models are not comparable, so store the model id with each vector and re-embed on model change.',
        'For unit-length vectors, cosine similarity equals the dot product; cosine distance is 1 minus the similarity.',
        'One million 1,536-dimensional float32 vectors take about 6 GB before index overhead.',
        "HNSW's ef_search trades latency for recall at query time; measure recall@k against exact search.",
        'Post-filtering ANN results can return fewer than k rows; use pre-filtering, iterative scans or per-tenant indexes.',
      ],
      questions: [
        {
          prompt: 'You switch from one embedding model to another. What must happen to the stored vectors?',
          correct: 'Re-embed everything, since vectors from different models are not comparable',
          distractors: [
            'Nothing, because cosine similarity is independent of the model used',
            'Normalize the old vectors again so they match the new model scale',
            'Pad or truncate the old vectors to the new model dimension count',
          ],
          explanation:
            'Each model defines its own vector space; comparing a query from one model with documents from another produces meaningless scores.',
        },
        {
          prompt: 'When is cosine similarity equal to the dot product?',
          correct: 'When both vectors have been normalized to unit length',
          distractors: [
            'When both vectors have more than 1,000 dimensions',
            'When the vectors come from the same embedding model',
            'When the similarity between the vectors is positive',
          ],
          explanation:
            'Cosine similarity divides the dot product by the product of the lengths; with unit vectors that divisor is 1.',
        },
        {
          prompt: 'What is the effect of raising hnsw.ef_search?',
          correct: 'Higher recall at the cost of higher query latency',
          distractors: [
            'Faster index builds at the cost of more memory',
            'Lower memory use at the cost of lower recall',
            'More links per node at the cost of slower inserts',
          ],
          explanation:
            'ef_search is the size of the candidate list at query time; larger lists explore more of the graph, finding more true neighbours but taking longer.',
        },
        {
          prompt: 'A filter matches 1% of rows and the ANN results are filtered afterwards. What typically happens?',
          correct: 'The query returns fewer than k results, often none',
          distractors: [
            'The query returns k results but with lower similarity scores',
            'The index automatically switches to an exact scan of all rows',
            'The query returns k results from other users instead',
          ],
          explanation:
            'Post-filtering removes most of the ANN candidates; iterative scans, pre-filtering or per-tenant indexes avoid the shortfall.',
        },
        {
          prompt: 'Roughly how much raw storage do one million 1,536-dimensional float32 vectors need?',
          correct: 'About 6 GB',
          distractors: ['About 600 MB', 'About 60 GB', 'About 1.5 GB'],
          explanation: '1,536 dimensions times 4 bytes is about 6 KB per vector; a million vectors is about 6.1 GB.',
        },
      ],
      exercise: {
        title: 'An in-memory vector store with metadata filters',
        challenge:
          'Build a small vector store of the kind you would use for a single agent or in tests: it validates dimensions, normalizes vectors at write time, and answers top-k cosine queries with exact-match metadata filters applied before ranking, so a selective filter never starves the result list.',
        requirements: [
          'upsert(id, vector, metadata) throws on a wrong dimension or a zero vector, stores a unit-normalized copy, and replaces an existing id',
          'query(vector, k, options) scores every candidate by cosine similarity (dot product of unit vectors)',
          'options.filter is applied before ranking: every filter key must equal the stored metadata value',
          'Results are sorted by score descending, limited to k, and exclude scores below options.minScore when given',
          'delete(id) removes an item and returns whether it existed',
        ],
        starterCode: `export type Metadata = Record<string, string | number | boolean>;
export interface Hit {
  id: string;
  score: number;
  metadata: Metadata;
}
export interface QueryOptions {
  filter?: Metadata;
  minScore?: number;
}

export class VectorStore {
  private items = new Map<string, { vector: number[]; metadata: Metadata }>();

  constructor(readonly dimensions: number) {}

  upsert(id: string, vector: number[], metadata: Metadata = {}): void {
    // TODO: validate dimension and non-zero length, normalize, store (replacing any existing id)
    throw new Error('not implemented');
  }

  query(vector: number[], k: number, options: QueryOptions = {}): Hit[] {
    // TODO: normalize the query, pre-filter by metadata, score, apply minScore, sort and take k
    throw new Error('not implemented');
  }

  delete(id: string): boolean {
    // TODO
    throw new Error('not implemented');
  }
}
`,
        solution: `export type Metadata = Record<string, string | number | boolean>;
export interface Hit {
  id: string;
  score: number;
  metadata: Metadata;
}
export interface QueryOptions {
  filter?: Metadata;
  minScore?: number;
}

export class VectorStore {
  private items = new Map<string, { vector: number[]; metadata: Metadata }>();

  constructor(readonly dimensions: number) {}

  private unit(vector: number[]): number[] {
    if (vector.length !== this.dimensions) {
      throw new Error('Expected ' + this.dimensions + ' dimensions, got ' + vector.length);
    }
    const norm = Math.hypot(...vector);
    if (norm === 0) throw new Error('Zero vector has no direction');
    return vector.map((x) => x / norm);
  }

  upsert(id: string, vector: number[], metadata: Metadata = {}): void {
    this.items.set(id, { vector: this.unit(vector), metadata: { ...metadata } });
  }

  query(vector: number[], k: number, options: QueryOptions = {}): Hit[] {
    const q = this.unit(vector);
    const filter = Object.entries(options.filter ?? {});
    const hits: Hit[] = [];
    for (const [id, item] of this.items) {
      if (!filter.every(([key, value]) => item.metadata[key] === value)) continue; // pre-filter
      const score = item.vector.reduce((s, x, i) => s + x * q[i]!, 0);
      if (options.minScore !== undefined && score < options.minScore) continue;
      hits.push({ id, score, metadata: item.metadata });
    }
    return hits.sort((a, b) => b.score - a.score).slice(0, k);
  }

  delete(id: string): boolean {
    return this.items.delete(id);
  }
}

const store = new VectorStore(3);
store.upsert('m1', [0.9, 0.1, 0], { userId: 'u1', kind: 'episodic' });
store.upsert('m2', [0.8, 0.3, 0.1], { userId: 'u2', kind: 'episodic' });
store.upsert('m3', [0.1, 0.2, 0.9], { userId: 'u1', kind: 'semantic' });
console.log(store.query([1, 0.2, 0], 5, { filter: { userId: 'u1' }, minScore: 0.2 }));
console.log(store.delete('m2'), store.delete('m2'));
`,
        hints: [
          'Share one private helper that validates and normalizes, and use it for both stored vectors and query vectors.',
          'Object.entries(filter).every(...) expresses "all keys must match" and is true for an empty filter.',
          'Filter before scoring rather than after slicing to k; that is the difference between pre-filtering and post-filtering.',
        ],
      },
    },
    // ---------------------------------------------------------------------------------------------
    {
      id: 'memory-compression',
      title: 'Compressing and Forgetting',
      preview:
        'Memory that only grows gets slower, costlier and noisier. This lesson covers importance scoring, recency decay, deduplication and the forgetting policies that keep long-term memory useful.',
      estimatedMinutes: 20,
      objectives: [
        'Score memories by importance and combine importance, recency and relevance at retrieval time',
        'Apply exponential recency decay with a chosen half-life and reinforcement on access',
        'Detect and merge near-duplicate memories while superseding contradictory facts',
        'Design a forgetting policy with capacity limits, TTLs and summarize-then-forget',
      ],
      sections: [
        {
          heading: 'Why memory has to shrink',
          body: [
            "An agent that stores 50 episodes a day per user accumulates over 18,000 per user per year. Storage is cheap; the damage is elsewhere. Retrieval quality falls because near-duplicates crowd the top-k: ten paraphrases of 'user asked for deploy status' fill all ten slots and push out the one record that mattered. Stale records about superseded facts compete with current ones. Each record also costs embedding calls, index memory and, once retrieved, context tokens.",
            "Memory compression is a set of maintenance operations: score each memory's importance when it is written, decay scores as memories age without being used, merge near-duplicates, and forget (delete or fold into a summary) whatever falls below the bar. These run as background jobs, after a session ends or nightly, not on the request path, so their cost does not add latency to the agent's answers.",
            "Forgetting is a design goal, not a failure. Human memory discards most detail and keeps what was important or frequently used, and an agent benefits from the same bias. The engineering task is to make forgetting deliberate, explainable and reversible for a grace period, rather than the accidental result of a vector index silently returning the wrong neighbours.",
          ].join('\n\n'),
        },
        {
          heading: 'Importance scoring',
          body: [
            "Importance estimates how much a memory should matter later, independent of any particular query. Generative Agents (Park et al., 2023) asked the model to rate each memory from 1 to 10, where 1 is mundane (brushing teeth) and 10 is extremely poignant (a break-up, a college acceptance). For task agents, cheap heuristics work well alongside or instead of an LLM rating: explicit requests to remember, user corrections, failures and their causes, decisions and their reasons, and anything touching money, credentials or production systems score high; acknowledgements and small talk score low.",
            "Score once at write time and store the value; re-rating on every retrieval is slow and unstable. Track access as well: how often a memory was retrieved and actually used is a strong, free signal of importance.",
            "At retrieval time, combine relevance (cosine similarity to the query), importance and recency into one score. Generative Agents min-max normalized each component to the range 0 to 1 across the candidates and summed them with equal weights. Normalization matters because the components live on different scales: similarities may all fall between 0.7 and 0.9 while importance spans 1 to 10, so an unnormalized sum would let importance dominate. Tune the weights on real queries rather than guessing.",
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'Heuristic importance at write time and a normalized weighted retrieval score at read time.',
            source: `export function heuristicImportance(text: string): number {
  const t = text.toLowerCase();
  let score = 3;
  if (/remember|always|never|from now on/.test(t)) score += 4; // explicit instruction or preference
  if (/wrong|actually|correction|not what i/.test(t)) score += 3; // user correction
  if (/error|failed|timeout|rollback/.test(t)) score += 2; // failures worth learning from
  if (/payment|invoice|password|api key|production/.test(t)) score += 2; // high-stakes domains
  if (/^(ok|thanks|thank you|great|sure)[.!]?$/.test(t.trim())) score = 1;
  return Math.min(10, score);
}

interface Candidate {
  id: string;
  similarity: number;
  importance: number;
  recency: number;
}

const minMax = (xs: number[]) => {
  const lo = Math.min(...xs), hi = Math.max(...xs);
  return xs.map((x) => (hi === lo ? 1 : (x - lo) / (hi - lo)));
};

export function rank(cands: Candidate[], w = { similarity: 1, importance: 1, recency: 1 }) {
  const [s, i, r] = [minMax(cands.map((c) => c.similarity)), minMax(cands.map((c) => c.importance)), minMax(cands.map((c) => c.recency))];
  return cands
    .map((c, k) => ({ id: c.id, score: w.similarity * s[k]! + w.importance * i[k]! + w.recency * r[k]! }))
    .sort((a, b) => b.score - a.score);
}

console.log(heuristicImportance('Remember: never deploy to production on Fridays'), heuristicImportance('thanks!'));
console.log(rank([
  { id: 'a', similarity: 0.82, importance: 9, recency: 0.2 },
  { id: 'b', similarity: 0.88, importance: 2, recency: 0.9 },
  { id: 'c', similarity: 0.71, importance: 5, recency: 0.5 },
]));
`,
          },
        },
        {
          heading: 'Recency decay',
          body: [
            "Recency is usually modelled as exponential decay: weight = 0.5 ^ (age / halfLife). With a half-life of 7 days, a memory untouched for 7 days keeps weight 0.5 and one untouched for 14 days keeps 0.25. Generative Agents multiplied by a decay factor of 0.995 per hour, which corresponds to a half-life of ln(0.5) / ln(0.995), about 138 hours or 5.8 days. Express the parameter as a half-life in configuration; it is far easier to reason about than a per-hour factor.",
            "Measure age from the last access, not from creation. When a memory is retrieved and used, reset its clock (and optionally increment an access count). Frequently useful memories then stay fresh while unused ones fade, much like spaced repetition counters the forgetting curve Ebbinghaus described. Only count an access when the memory was actually placed in the context, not merely returned by the index.",
            "Use different half-lives per memory kind. Conversational episodes can fade over days or weeks. Semantic facts should decay slowly or not at all, because a fact does not become less true with age; it becomes wrong when superseded, which is handled by replacement, not decay. Procedural memory should not decay at all; it changes through versioned edits.",
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'Exponential decay measured from last access, with per-kind half-lives and reinforcement when a memory is used.',
            source: `const HOUR = 3_600_000;
type Kind = 'episodic' | 'semantic';
const HALF_LIFE_HOURS: Record<Kind, number> = { episodic: 7 * 24, semantic: 180 * 24 };

interface Memory {
  id: string;
  kind: Kind;
  lastAccessedAt: number; // epoch milliseconds
  accessCount: number;
}

export function recency(m: Memory, now: number): number {
  const ageHours = Math.max(0, now - m.lastAccessedAt) / HOUR;
  return Math.pow(0.5, ageHours / HALF_LIFE_HOURS[m.kind]);
}

export function reinforce(m: Memory, now: number): Memory {
  return { ...m, lastAccessedAt: now, accessCount: m.accessCount + 1 };
}

export const halfLifeFromFactor = (factorPerHour: number) => Math.log(0.5) / Math.log(factorPerHour);

const now = Date.now();
const episode: Memory = { id: 'e1', kind: 'episodic', lastAccessedAt: now - 14 * 24 * HOUR, accessCount: 0 };
console.log(recency(episode, now).toFixed(3)); // two half-lives: 0.250
console.log(recency(reinforce(episode, now), now)); // 1 after use
console.log(halfLifeFromFactor(0.995).toFixed(1) + ' hours'); // 138.3
`,
          },
        },
        {
          heading: 'Deduplication and forgetting policies',
          body: [
            "Near-duplicates are found by embedding similarity: two memories above a high cosine threshold (0.95 is a common starting point, calibrated per model) are candidates for merging. A merge keeps one record, typically the newer wording, with the maximum importance of the pair, the sum of their access counts and the union of their source references, so no provenance is lost. Exact duplicates can be caught earlier and more cheaply with a hash of normalized text.",
            "Contradictions are not duplicates. 'User's database is Postgres 15' and 'User's database is Postgres 16' may score as near-duplicates, but merging them blends two different facts. For semantic memory, newer supersedes older: mark the old fact with a valid-until timestamp and exclude it from retrieval instead of averaging the two.",
            "A forgetting policy combines several rules. A TTL per kind removes raw episodes after, for example, 90 days. A capacity cap per user evicts the memories with the lowest retention score, such as importance times recency. A threshold prune removes anything whose retention has decayed below a floor. Summarize-then-forget folds a cluster of old related episodes into one summary episode before deleting them, keeping the gist at a fraction of the size. Pinned memories and anything under a legal hold are exempt, and deletions should be logged and soft-deleted for a short grace period so a bad policy can be reversed.",
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'Greedy near-duplicate merging by cosine similarity that preserves importance, access counts and provenance.',
            source: `interface Mem {
  id: string;
  text: string;
  vector: number[]; // unit length
  importance: number;
  accessCount: number;
  createdAt: number;
  sources: string[];
}

const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0);

export function mergeNearDuplicates(mems: Mem[], threshold = 0.95): Mem[] {
  const kept: Mem[] = [];
  // Newest first, so the surviving text is the most recent wording.
  for (const m of [...mems].sort((a, b) => b.createdAt - a.createdAt)) {
    const twin = kept.find((k) => dot(k.vector, m.vector) >= threshold);
    if (!twin) {
      kept.push({ ...m, sources: [...m.sources] });
      continue;
    }
    twin.importance = Math.max(twin.importance, m.importance);
    twin.accessCount += m.accessCount;
    twin.sources = [...new Set([...twin.sources, ...m.sources])];
  }
  return kept;
}

const v = (x: number, y: number) => { const n = Math.hypot(x, y); return [x / n, y / n]; };
const merged = mergeNearDuplicates([
  { id: 'a', text: 'User asked for deploy status', vector: v(1, 0.05), importance: 2, accessCount: 1, createdAt: 1, sources: ['s1'] },
  { id: 'b', text: 'User asked about the deploy status', vector: v(1, 0.06), importance: 4, accessCount: 2, createdAt: 2, sources: ['s2'] },
  { id: 'c', text: 'Invoice 8841 was paid late', vector: v(0.1, 1), importance: 6, accessCount: 0, createdAt: 3, sources: ['s3'] },
]);
console.log(merged.map((m) => m.id + ' imp=' + m.importance + ' acc=' + m.accessCount + ' src=' + m.sources.join('+')));
`,
          },
        },
      ],
      keyTakeaways: [
        'Near-duplicates crowding the top-k, not storage cost, is usually the first symptom of unbounded memory growth.',
        'Normalize relevance, importance and recency to a common range before combining them into a retrieval score.',
        'Recency decay of 0.5 ^ (age / halfLife), measured from last access, lets useful memories stay fresh while unused ones fade.',
        'A decay factor of 0.995 per hour equals a half-life of about 138 hours.',
        'Merge near-duplicates but supersede contradictory facts, and make forgetting logged and reversible for a grace period.',
      ],
      questions: [
        {
          prompt: 'With a 7-day half-life, what recency weight does a memory last accessed 14 days ago have?',
          correct: '0.25',
          distractors: ['0.5', '0.125', '0.0'],
          explanation: 'Fourteen days is two half-lives, so the weight is 0.5 squared, which is 0.25.',
        },
        {
          prompt: 'Why should relevance, importance and recency be min-max normalized before they are summed?',
          correct: 'They use different scales, so the widest-ranging one would dominate',
          distractors: [
            'Normalization makes the retrieval score independent of the query',
            'Vector indexes can only sort by values between 0 and 1',
            'Normalized scores remove the need for importance ratings',
          ],
          explanation:
            'Similarities may cluster between 0.7 and 0.9 while importance spans 1 to 10; normalization puts each component on a 0 to 1 range so weights mean what they say.',
        },
        {
          prompt: 'Two semantic records say the user runs Postgres 15 and Postgres 16. What should compression do?',
          correct: 'Keep the newer fact and mark the older one as superseded',
          distractors: [
            'Merge them into one record that keeps both values as a list',
            'Delete both, because contradictory facts cannot be trusted',
            'Keep whichever has the higher cosine similarity to the user profile',
          ],
          explanation:
            'Contradictions are not duplicates; newer facts supersede older ones, and keeping the old value with a validity interval preserves the history.',
        },
        {
          prompt: 'Why measure recency from the last access rather than from creation?',
          correct: 'Memories that keep being used stay fresh, while unused ones fade',
          distractors: [
            'Creation timestamps are not available from embedding models',
            'It guarantees that old memories are deleted on a fixed schedule',
            'It makes the decay independent of the chosen half-life',
          ],
          explanation:
            'Resetting the clock on use reinforces useful memories, similar to spaced repetition.',
        },
        {
          prompt: 'What does summarize-then-forget achieve?',
          correct: 'It keeps the gist of old episodes in one summary, then deletes them',
          distractors: [
            'It deletes a memory only after the user confirms in a summary screen',
            'It re-embeds old episodes with a smaller model to save storage',
            'It moves old episodes from the vector index into working memory',
          ],
          explanation:
            'Folding related old episodes into a single summary record preserves what mattered at a fraction of the size.',
        },
      ],
      exercise: {
        title: 'A compaction job for long-term memory',
        challenge:
          'Write compact(), the nightly job for one user\'s memories. It merges near-duplicates, computes a retention score from importance and recency, enforces a capacity cap, and never touches pinned memories. It returns what it kept and the ids it forgot so the run can be logged.',
        requirements: [
          'retention(m, now, halfLifeMs) returns (importance / 10) * 0.5 ^ ((now - lastAccessedAt) / halfLifeMs)',
          'Near-duplicates (dot product of unit vectors >= threshold) are merged into the newer memory, keeping the maximum importance and the summed accessCount; a memory is merged only if neither is pinned',
          'Pinned memories are always kept and count toward the capacity',
          'If more than capacity memories remain, forget the unpinned ones with the lowest retention until the cap is met',
          'Return { kept, forgotten }, where forgotten lists the ids of merged-away and evicted memories',
        ],
        starterCode: `export interface Memory {
  id: string;
  vector: number[]; // unit length
  importance: number; // 1..10
  accessCount: number;
  createdAt: number; // epoch ms
  lastAccessedAt: number; // epoch ms
  pinned?: boolean;
}

export interface CompactOptions {
  now: number;
  halfLifeMs: number;
  capacity: number;
  threshold: number;
}

export function retention(m: Memory, now: number, halfLifeMs: number): number {
  // TODO
  throw new Error('not implemented');
}

export function compact(memories: Memory[], opts: CompactOptions): { kept: Memory[]; forgotten: string[] } {
  // TODO: 1) merge near-duplicates (newest survives, skip pinned)
  // TODO: 2) evict the lowest-retention unpinned memories until within capacity
  throw new Error('not implemented');
}
`,
        solution: `export interface Memory {
  id: string;
  vector: number[]; // unit length
  importance: number; // 1..10
  accessCount: number;
  createdAt: number; // epoch ms
  lastAccessedAt: number; // epoch ms
  pinned?: boolean;
}

export interface CompactOptions {
  now: number;
  halfLifeMs: number;
  capacity: number;
  threshold: number;
}

export function retention(m: Memory, now: number, halfLifeMs: number): number {
  const age = Math.max(0, now - m.lastAccessedAt);
  return (m.importance / 10) * Math.pow(0.5, age / halfLifeMs);
}

const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0);

export function compact(memories: Memory[], opts: CompactOptions): { kept: Memory[]; forgotten: string[] } {
  const forgotten: string[] = [];
  const kept: Memory[] = [];
  for (const m of [...memories].sort((a, b) => b.createdAt - a.createdAt)) {
    const twin = m.pinned ? undefined : kept.find((k) => !k.pinned && dot(k.vector, m.vector) >= opts.threshold);
    if (!twin) {
      kept.push({ ...m });
      continue;
    }
    twin.importance = Math.max(twin.importance, m.importance);
    twin.accessCount += m.accessCount;
    twin.lastAccessedAt = Math.max(twin.lastAccessedAt, m.lastAccessedAt);
    forgotten.push(m.id);
  }

  const evictable = kept
    .filter((m) => !m.pinned)
    .sort((a, b) => retention(a, opts.now, opts.halfLifeMs) - retention(b, opts.now, opts.halfLifeMs));
  const evicted = new Set<string>();
  while (kept.length - evicted.size > opts.capacity && evicted.size < evictable.length) {
    const victim = evictable[evicted.size]!;
    evicted.add(victim.id);
    forgotten.push(victim.id);
  }
  return { kept: kept.filter((m) => !evicted.has(m.id)), forgotten };
}

const DAY = 86_400_000;
const now = Date.now();
const unit = (x: number, y: number) => { const n = Math.hypot(x, y); return [x / n, y / n]; };
const result = compact(
  [
    { id: 'rule', vector: unit(0, 1), importance: 9, accessCount: 5, createdAt: now - 90 * DAY, lastAccessedAt: now - 60 * DAY, pinned: true },
    { id: 'old-status', vector: unit(1, 0.05), importance: 2, accessCount: 1, createdAt: now - 20 * DAY, lastAccessedAt: now - 20 * DAY },
    { id: 'new-status', vector: unit(1, 0.06), importance: 3, accessCount: 0, createdAt: now - 2 * DAY, lastAccessedAt: now - 2 * DAY },
    { id: 'invoice', vector: unit(0.6, 0.8), importance: 6, accessCount: 2, createdAt: now - 10 * DAY, lastAccessedAt: now - DAY },
    { id: 'chitchat', vector: unit(0.8, 0.6), importance: 1, accessCount: 0, createdAt: now - 30 * DAY, lastAccessedAt: now - 30 * DAY },
  ],
  { now, halfLifeMs: 7 * DAY, capacity: 3, threshold: 0.95 },
);
console.log(result.kept.map((m) => m.id), result.forgotten);
`,
        hints: [
          'Sort a copy newest first; the first memory in a duplicate group then becomes the survivor automatically.',
          'Collect the evictable (unpinned) memories, sort them by ascending retention, and evict from the front until kept.length minus evictions is within capacity.',
          'Copy memories before mutating merged fields so the caller\'s input array is left unchanged.',
        ],
      },
    },
    // ---------------------------------------------------------------------------------------------
    {
      id: 'persistent-memory',
      title: 'Persistent Memory: Storage, Isolation and Privacy',
      preview:
        'Memory that outlives a process needs a database, a schema, strict per-user isolation and a plan for retention and deletion. This lesson builds that layer.',
      estimatedMinutes: 25,
      objectives: [
        'Choose a storage layout for agent memory and design its schema',
        'Enforce per-user isolation in application code and with Postgres row-level security',
        'Minimize and redact personal data before it is stored or embedded',
        'Implement retention expiry and complete user erasure across derived data',
      ],
      sections: [
        {
          heading: 'Choosing a store',
          body: [
            "For most agents, Postgres with the pgvector extension is the right default for long-term memory. Memories live next to the users, sessions and permissions they belong to, so you get transactions, foreign keys with ON DELETE CASCADE, joins, row-level security, point-in-time backups and one system to operate. pgvector's HNSW index comfortably serves millions of vectors on ordinary hardware.",
            "Dedicated vector databases (Qdrant, Weaviate, Pinecone, Milvus) earn their place at tens or hundreds of millions of vectors, with heavy filtered-search workloads, or when you need features such as built-in quantization and sharding. If you adopt one, keep the relational row as the source of truth and treat the vector collection as a derived index that can be rebuilt from it. Embeddings are regenerable; the content, provenance and consent records are not.",
            "Short-lived working state (the current session's scratchpad, in-flight tool results, a rolling summary) fits a key-value store such as Redis with a TTL, so abandoned sessions expire on their own. Whatever the mix, every store that holds memory content or anything derived from it must appear in your data inventory, because retention and deletion have to reach all of them.",
          ].join('\n\n'),
        },
        {
          heading: 'Designing the memory schema',
          body: [
            "A memory row needs more than text and a vector. Give it an owner (user_id, plus tenant_id in multi-tenant products), a kind (episodic, semantic, procedural), the content, the embedding and the embedding model that produced it, an importance score, provenance (which session, tool or document it came from and whether the source was trusted), timestamps for creation and last access, and an expires_at for retention.",
            "Index for the queries you run. A B-tree index on (user_id, kind, created_at) serves 'this user's recent episodes'; an HNSW index serves similarity search; a partial index on expires_at WHERE expires_at IS NOT NULL lets the purge job find expired rows cheaply. Record the embedding model per row so a model migration can proceed incrementally and queries never compare vectors from two models.",
            "Validate rows at the application boundary as well as in the database. A zod schema for the row type catches a missing owner or an invalid kind before the insert and documents the contract for everyone writing memory, including the agent's own memory-writing tools.",
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'Postgres DDL for a memory table with ownership, provenance, model tracking and retention, plus the matching zod row schema.',
            source: `import { z } from 'zod';

export const memoryDdl = [
  'CREATE EXTENSION IF NOT EXISTS vector',
  'CREATE TABLE IF NOT EXISTS memories (' +
    'id uuid PRIMARY KEY DEFAULT gen_random_uuid(), ' +
    'user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE, ' +
    "kind text NOT NULL CHECK (kind IN ('episodic', 'semantic', 'procedural')), " +
    'content text NOT NULL, embedding vector(1536), embedding_model text NOT NULL, ' +
    'importance smallint NOT NULL CHECK (importance BETWEEN 1 AND 10), ' +
    'source text NOT NULL, source_trusted boolean NOT NULL DEFAULT false, ' +
    'created_at timestamptz NOT NULL DEFAULT now(), last_accessed_at timestamptz NOT NULL DEFAULT now(), ' +
    'expires_at timestamptz)',
  'CREATE INDEX IF NOT EXISTS memories_owner ON memories (user_id, kind, created_at DESC)',
  'CREATE INDEX IF NOT EXISTS memories_expiry ON memories (expires_at) WHERE expires_at IS NOT NULL',
  'CREATE INDEX IF NOT EXISTS memories_hnsw ON memories USING hnsw (embedding vector_cosine_ops)',
];

export const MemoryRow = z.object({
  id: z.string().uuid(),
  userId: z.string().uuid(),
  kind: z.enum(['episodic', 'semantic', 'procedural']),
  content: z.string().min(1).max(8_000),
  embeddingModel: z.string().min(1),
  importance: z.number().int().min(1).max(10),
  source: z.string().min(1),
  sourceTrusted: z.boolean(),
  createdAt: z.coerce.date(),
  expiresAt: z.coerce.date().nullable(),
});
export type MemoryRow = z.infer<typeof MemoryRow>;

console.log(memoryDdl.length + ' statements; kinds = ' + MemoryRow.shape.kind.options.join(', '));
`,
          },
        },
        {
          heading: 'Per-user isolation',
          body: [
            "Cross-user leakage is the most serious memory bug an agent can have: one customer's data surfacing in another customer's answer. The first rule is that the owner id comes from the authenticated session, never from model output or tool arguments. If a memory-search tool accepts a userId parameter, a prompt injection can ask for someone else's memories. Bind the user when you construct the tool, so the model can only choose what to search for, not whose memory to search.",
            "Add defense in depth in the database. Postgres row-level security (RLS) attaches a policy to the table, for example USING (user_id = current_setting('app.user_id')::uuid), and the application sets that variable per transaction with set_config('app.user_id', $1, true). Table owners bypass RLS unless you also run ALTER TABLE ... FORCE ROW LEVEL SECURITY, and superusers and roles with BYPASSRLS always bypass it, so the application must connect as a dedicated non-owner role. With a connection pool, set the variable inside the transaction (the third argument true makes it transaction-local) so it cannot leak to the next request that reuses the connection.",
            "Isolation also covers caches keyed by query text, shared summaries and logs. And it covers memory poisoning: content from untrusted sources (web pages, inbound email, other agents) written into memory can carry instructions that fire later. Store provenance and a trusted flag, and present untrusted memories to the model as quoted data rather than as instructions.",
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'A user-scoped memory handle that sets the RLS variable transaction-locally and never accepts a user id from the model.',
            source: `export const rlsSetup = [
  'ALTER TABLE memories ENABLE ROW LEVEL SECURITY',
  'ALTER TABLE memories FORCE ROW LEVEL SECURITY',
  "CREATE POLICY memories_owner ON memories USING (user_id = current_setting('app.user_id')::uuid) " +
    "WITH CHECK (user_id = current_setting('app.user_id')::uuid)",
];

interface Client {
  query(text: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
  release(): void;
}
interface Pool { connect(): Promise<Client> }

// userId comes from the verified session. The model-facing tool only receives the query text.
export function memoryFor(pool: Pool, userId: string) {
  async function tx<T>(fn: (c: Client) => Promise<T>): Promise<T> {
    const c = await pool.connect();
    try {
      await c.query('BEGIN');
      await c.query("SELECT set_config('app.user_id', $1, true)", [userId]); // transaction-local
      const result = await fn(c);
      await c.query('COMMIT');
      return result;
    } catch (err) {
      await c.query('ROLLBACK');
      throw err;
    } finally {
      c.release();
    }
  }
  return {
    recent: (limit: number) =>
      tx((c) => c.query('SELECT id, content FROM memories WHERE user_id = $1 ORDER BY created_at DESC LIMIT $2', [userId, limit])),
  };
}

const fakeClient: Client = { query: async (text) => { console.log('SQL:', text); return { rows: [] }; }, release: () => {} };
await memoryFor({ connect: async () => fakeClient }, '3f6c1f8e-2a4b-4d7e-9c1a-5b8e7d6f4a21').recent(5);
`,
          },
        },
        {
          heading: 'Privacy, retention and deletion',
          body: [
            "Store less. Data minimization (GDPR Article 5(1)(c)) means keeping only what the agent needs: drop secrets, passwords, API keys and full card numbers before writing, and redact personal identifiers that carry no value for the task. Redact before embedding too. Embeddings are personal data, not anonymized data: Morris et al. (2023, 'Text Embeddings Reveal (Almost) As Much As Text') reconstructed 92% of 32-token inputs exactly from their embeddings.",
            "Set retention per kind and enforce it mechanically: an expires_at on each row and a scheduled purge job that deletes expired rows and their vectors. Raw episodes might live 90 days, consolidated facts until the user deletes them or closes the account. Tell users what the agent remembers and let them view, correct and delete individual memories; besides being required in many jurisdictions, it catches wrong memories early.",
            "Erasure must follow the data into every derived copy. Under GDPR Article 17 a user can request deletion, and Article 12(3) requires a response within one month. Deleting the memories table rows is not enough: summaries and consolidated facts built from them, vector collections in other systems, caches, search indexes, analytics exports and logs may all contain the content. Backups are usually handled by letting them expire on a fixed rotation, or by crypto-shredding: encrypting each user's content with a per-user key and deleting the key. Record an erasure receipt (who, when, which stores, how many rows) without any of the deleted content.",
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'User erasure across every store that holds memory or derived data, producing a content-free receipt.',
            source: `interface ErasableStore {
  name: string;
  deleteUser(userId: string): Promise<number>; // returns rows or items removed
}

interface ErasureReceipt {
  userId: string;
  requestedAt: string;
  completedAt: string;
  results: { store: string; removed?: number; error?: string }[];
}

export async function eraseUser(userId: string, stores: ErasableStore[], requestedAt: Date): Promise<ErasureReceipt> {
  const settled = await Promise.allSettled(stores.map((s) => s.deleteUser(userId)));
  const results = settled.map((r, i) => {
    const store = stores[i]!.name;
    return r.status === 'fulfilled' ? { store, removed: r.value } : { store, error: String(r.reason) };
  });
  const receipt = { userId, requestedAt: requestedAt.toISOString(), completedAt: new Date().toISOString(), results };
  if (results.some((r) => r.error)) console.error('Erasure incomplete; schedule a retry', receipt);
  return receipt;
}

const memories = new Map([['m1', 'u1'], ['m2', 'u2'], ['m3', 'u1']]);
const summaries = new Map([['u1', ['Week 12 summary']], ['u2', ['Week 12 summary']]]);
const stores: ErasableStore[] = [
  { name: 'memories', deleteUser: async (u) => [...memories].filter(([id, owner]) => owner === u && memories.delete(id)).length },
  { name: 'summaries', deleteUser: async (u) => { const n = summaries.get(u)?.length ?? 0; summaries.delete(u); return n; } },
  { name: 'vector-index', deleteUser: async () => { throw new Error('vector service unavailable'); } },
];
console.log(JSON.stringify(await eraseUser('u1', stores, new Date()), null, 2));
`,
          },
        },
      ],
      keyTakeaways: [
        'Keep the relational row as the source of truth and treat vector collections as derived indexes that can be rebuilt.',
        'The owner id must come from the authenticated session, never from model output or tool arguments.',
        'Postgres RLS is bypassed by table owners unless FORCE ROW LEVEL SECURITY is set, and always by superusers and BYPASSRLS roles.',
        'Embeddings can be inverted to recover much of the original text, so they are personal data and need the same protection and deletion.',
        'Erasure must reach summaries, other vector stores, caches, logs and backups, and should leave a content-free receipt.',
      ],
      questions: [
        {
          prompt: 'Where should a memory-search tool get the user id it searches for?',
          correct: 'From the authenticated session, bound when the tool is constructed',
          distractors: [
            'From a userId argument that the model fills in for each call',
            'From the most recent user message in the conversation history',
            'From the metadata of the top result returned by the vector index',
          ],
          explanation:
            'If the model can supply the user id, a prompt injection can request another user\'s memories; binding it from the session removes that path.',
        },
        {
          prompt: 'The application connects to Postgres as the owner of the memories table, which has RLS enabled. What happens?',
          correct: 'The policies are bypassed unless FORCE ROW LEVEL SECURITY is also set',
          distractors: [
            'The policies apply normally because RLS is enabled on the table',
            'Every query fails until a policy is added for the owner role',
            'Only INSERT statements are checked against the policies',
          ],
          explanation:
            'Table owners bypass RLS by default; FORCE ROW LEVEL SECURITY applies policies to the owner, and a dedicated non-owner role is safer still.',
        },
        {
          prompt: 'Why must embeddings be treated as personal data?',
          correct: 'Inversion attacks can reconstruct much of the original text from them',
          distractors: [
            'Embeddings contain the raw text in their metadata fields',
            'Embedding models store every input they receive permanently',
            'Vectors are always linked to the user by the index structure',
          ],
          explanation:
            'Morris et al. (2023) reconstructed 92% of 32-token inputs exactly from their embeddings, so vectors can leak content.',
        },
        {
          prompt: 'A user requests erasure. Which set of actions is complete?',
          correct: 'Delete rows, derived summaries, other indexes and caches; expire or crypto-shred backups',
          distractors: [
            'Delete the rows in the memories table and rely on foreign-key cascades for the rest',
            'Set a deleted flag on the user account so the agent stops retrieving their memories',
            'Remove the user\'s vectors from every index but keep the raw text for later auditing',
          ],
          explanation:
            'Derived copies such as summaries, external indexes, caches and backups still contain the data; all of them must be covered.',
        },
        {
          prompt: 'Why store the embedding model name on every memory row?',
          correct: 'So vectors from different models are never compared, and re-embedding can be incremental',
          distractors: [
            'So the database can pick different HNSW index parameters for each row',
            'So the model provider can bill each embedding call to the right customer',
            'So cosine similarities can be converted between the scales of two models',
          ],
          explanation:
            'Vectors from different models are incomparable; tracking the model per row makes mixed states visible and migrations safe.',
        },
      ],
      exercise: {
        title: 'A user-scoped repository with redaction and retention',
        challenge:
          'Implement an in-memory memory repository with the same guarantees you would build on Postgres: all reads and writes go through a handle bound to one user, content is redacted before storage, rows expire according to a per-row TTL, and erasing a user removes both their memories and the summaries derived from them.',
        requirements: [
          'redact(text) replaces email addresses with [email] and runs of 13 to 19 digits with [number]',
          'forUser(userId) returns a handle with add(kind, content, ttlDays?), list() and search(term); the handle never reads or writes another user\'s rows',
          'list() and search() exclude expired rows; search is a case-insensitive substring match on the redacted content',
          'purgeExpired() deletes every expired row and returns how many it removed',
          'eraseUser(userId) deletes the user\'s memories and summaries and returns { memories, summaries } counts',
        ],
        starterCode: `import { randomUUID } from 'node:crypto';

export type Kind = 'episodic' | 'semantic';
export interface MemoryRow {
  id: string;
  userId: string;
  kind: Kind;
  content: string;
  createdAt: Date;
  expiresAt: Date | null;
}

export function redact(text: string): string {
  // TODO: replace emails with [email] and 13-19 digit runs with [number]
  throw new Error('not implemented');
}

export class MemoryRepository {
  private rows = new Map<string, MemoryRow>();
  private summaries = new Map<string, string[]>(); // userId -> derived summaries

  constructor(private readonly clock: () => Date = () => new Date()) {}

  addSummary(userId: string, summary: string): void {
    this.summaries.set(userId, [...(this.summaries.get(userId) ?? []), summary]);
  }

  forUser(userId: string) {
    // TODO: return { add, list, search } bound to userId
    return {
      add: (kind: Kind, content: string, ttlDays?: number): MemoryRow => {
        throw new Error('not implemented');
      },
      list: (): MemoryRow[] => {
        throw new Error('not implemented');
      },
      search: (term: string): MemoryRow[] => {
        throw new Error('not implemented');
      },
    };
  }

  purgeExpired(): number {
    // TODO
    throw new Error('not implemented');
  }

  eraseUser(userId: string): { memories: number; summaries: number } {
    // TODO
    throw new Error('not implemented');
  }
}
`,
        solution: `import { randomUUID } from 'node:crypto';

export type Kind = 'episodic' | 'semantic';
export interface MemoryRow {
  id: string;
  userId: string;
  kind: Kind;
  content: string;
  createdAt: Date;
  expiresAt: Date | null;
}

const EMAIL = /[^\\s@]+@[^\\s@]+\\.[^\\s@]+/g;
const LONG_NUMBER = /\\b\\d{13,19}\\b/g;

export function redact(text: string): string {
  return text.replace(EMAIL, '[email]').replace(LONG_NUMBER, '[number]');
}

export class MemoryRepository {
  private rows = new Map<string, MemoryRow>();
  private summaries = new Map<string, string[]>(); // userId -> derived summaries

  constructor(private readonly clock: () => Date = () => new Date()) {}

  addSummary(userId: string, summary: string): void {
    this.summaries.set(userId, [...(this.summaries.get(userId) ?? []), summary]);
  }

  private live(row: MemoryRow): boolean {
    return row.expiresAt === null || row.expiresAt.getTime() > this.clock().getTime();
  }

  forUser(userId: string) {
    const own = () => [...this.rows.values()].filter((r) => r.userId === userId && this.live(r));
    return {
      add: (kind: Kind, content: string, ttlDays?: number): MemoryRow => {
        const now = this.clock();
        const expiresAt = ttlDays === undefined ? null : new Date(now.getTime() + ttlDays * 86_400_000);
        const row: MemoryRow = { id: randomUUID(), userId, kind, content: redact(content), createdAt: now, expiresAt };
        this.rows.set(row.id, row);
        return row;
      },
      list: (): MemoryRow[] => own(),
      search: (term: string): MemoryRow[] => own().filter((r) => r.content.toLowerCase().includes(term.toLowerCase())),
    };
  }

  purgeExpired(): number {
    let removed = 0;
    for (const [id, row] of this.rows) {
      if (!this.live(row)) {
        this.rows.delete(id);
        removed++;
      }
    }
    return removed;
  }

  eraseUser(userId: string): { memories: number; summaries: number } {
    let memories = 0;
    for (const [id, row] of this.rows) {
      if (row.userId === userId) {
        this.rows.delete(id);
        memories++;
      }
    }
    const summaries = this.summaries.get(userId)?.length ?? 0;
    this.summaries.delete(userId);
    return { memories, summaries };
  }
}

let now = new Date('2025-06-01T00:00:00Z');
const repo = new MemoryRepository(() => now);
const alice = repo.forUser('alice');
alice.add('semantic', 'Contact: alice@example.com, card 4111111111111111');
alice.add('episodic', 'Asked about invoice 8841', 30);
repo.forUser('bob').add('semantic', 'Prefers invoices in EUR');
repo.addSummary('alice', 'Alice handles billing questions');
console.log(alice.list().map((r) => r.content), repo.forUser('bob').search('invoice').length);
now = new Date('2025-08-01T00:00:00Z');
console.log(repo.purgeExpired(), repo.eraseUser('alice'), repo.forUser('bob').list().length);
`,
        hints: [
          'Use a global regular expression with String.replace for each redaction; apply redaction inside add so nothing unredacted is ever stored.',
          'Build the handle as a closure over userId, and route list and search through one private helper that filters by owner and expiry.',
          'Deleting from a Map while iterating it with for...of is safe in JavaScript; already-visited entries are not revisited.',
        ],
      },
    },
  ],
};
