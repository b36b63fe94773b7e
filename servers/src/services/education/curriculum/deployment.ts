import type { CourseMaterial } from './types';

// Course 6: running agents unattended, for real users, without surprises.
export const deployment: CourseMaterial = {
  id: 'deployment',
  title: 'Deploying Agents to Production',
  description:
    'Turning an agent that works on a laptop into a service that runs unattended: HTTP APIs with OpenAPI contracts, health checks and validated configuration, structured logs, Prometheus metrics and traces, timeouts, retries and idempotency keys, stateless replicas with state in PostgreSQL and work queues, and the secrets handling, rate limits and spending limits an agent holding keys and money needs.',
  difficulty: 'advanced',
  prerequisites: ['foundations', 'tool-use'],
  lessons: [
    // ------------------------------------------------------------------------------------------
    {
      id: 'packaging-agents-as-services',
      title: 'Packaging Agents as Services',
      preview:
        'How to wrap an agent in an HTTP API with a documented OpenAPI contract, health endpoints an orchestrator can rely on, and configuration read from the environment and validated at startup.',
      estimatedMinutes: 20,
      objectives: [
        'Design an HTTP API for long-running agent tasks with 202 Accepted and polling',
        'Describe the API as an OpenAPI contract and tell breaking from compatible changes',
        'Implement separate liveness and readiness checks',
        'Load configuration from environment variables and fail fast when it is invalid',
      ],
      sections: [
        {
          heading: 'An agent behind an HTTP API',
          body: [
            `An agent that runs as a script on a laptop has one user and no contract. Putting it behind an HTTP API lets programs in any language call it, lets you scale and deploy it independently of its callers, and gives you one place to enforce authentication, quotas and spending limits. Design the API around resources: POST /v1/tasks creates a task from a goal, GET /v1/tasks/{id} reads its status and result. Put the major version in the path so a breaking change can ship as /v2 without stranding existing clients.`,
            `Agent work is slow and variable: one LLM call takes seconds, a multi-step task with tools can take minutes. Holding an HTTP request open that long fails in practice, because proxies and load balancers cut idle connections (the AWS Application Load Balancer's default idle timeout is 60 seconds) and clients time out and retry. For anything that may exceed a few seconds, answer 202 Accepted with the task id and a Location header, run the work in the background, and let clients poll, subscribe to server-sent events, or receive a webhook.`,
            `Return errors in one consistent shape. RFC 9457 Problem Details (content type application/problem+json with type, title, status and detail fields) is the standard choice, and a machine-readable list of validation errors saves every client from parsing prose.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'A task API on node:http: validated POST returning 202 with a Location header, and a status endpoint.',
            source: `import { createServer, type IncomingMessage } from 'node:http';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';

const CreateTask = z.object({ goal: z.string().min(1).max(4000), maxSteps: z.number().int().min(1).max(50).default(10) });
type Task = { id: string; status: 'queued' | 'running' | 'succeeded' | 'failed'; goal: string; maxSteps: number };
const tasks = new Map<string, Task>(); // demo only: real task state lives in a database

async function readJson(req: IncomingMessage): Promise<unknown> {
  let raw = '';
  for await (const chunk of req) {
    raw += chunk;
    if (raw.length > 65_536) return undefined; // cap the body size
  }
  try { return JSON.parse(raw); } catch { return undefined; }
}

createServer(async (req, res) => {
  const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
    const type = status >= 400 ? 'application/problem+json' : 'application/json';
    res.writeHead(status, { 'content-type': type, ...headers }).end(JSON.stringify(body));
  };
  if (req.method === 'POST' && req.url === '/v1/tasks') {
    const parsed = CreateTask.safeParse(await readJson(req));
    if (!parsed.success) return send(400, { title: 'Invalid request body', status: 400, errors: parsed.error.issues });
    const task: Task = { id: randomUUID(), status: 'queued', ...parsed.data };
    tasks.set(task.id, task); // a worker picks it up; the client polls the Location
    return send(202, task, { location: \`/v1/tasks/\${task.id}\` });
  }
  const id = req.method === 'GET' ? /^\\/v1\\/tasks\\/([\\w-]+)$/.exec(req.url ?? '')?.[1] : undefined;
  const task = id ? tasks.get(id) : undefined;
  if (task) return send(200, task);
  send(404, { title: 'Not found', status: 404 });
}).listen(Number(process.env.PORT ?? 3000));
`,
          },
        },
        {
          heading: 'Contracts with OpenAPI',
          body: [
            `An OpenAPI document (3.1 is the current version, and its schemas are JSON Schema 2020-12) describes every path, method, request body, response status and schema, plus the authentication scheme. From that single file you get reference documentation, generated clients in other languages, mock servers, and contract tests that fail CI when the implementation drifts from the document.`,
            `Keep one source of truth. Either write the OpenAPI document and generate TypeScript types from it, or define the schemas in code (for example with zod) and generate the document; what fails is maintaining both by hand. Include examples, document every error status, including 401, 409, 422 and 429, and mark which fields are required.`,
            `The contract also defines what counts as a breaking change. Removing or renaming a field, changing a type, adding a required request field or tightening validation breaks existing clients. Adding an endpoint, an optional request field or a new response field does not, provided clients ignore fields they do not know, which you should state in the documentation and practise in your own SDK. Run a diff tool such as oasdiff in CI to catch breaking changes before they ship.`,
          ].join('\n\n'),
          code: {
            language: 'json',
            caption: 'An OpenAPI 3.1 fragment for the task endpoint, including its 202 and problem-details responses.',
            source: `{
  "openapi": "3.1.0",
  "info": { "title": "Research Agent API", "version": "1.2.0" },
  "paths": {
    "/v1/tasks": {
      "post": {
        "operationId": "createTask",
        "requestBody": {
          "required": true,
          "content": { "application/json": { "schema": { "$ref": "#/components/schemas/CreateTask" } } }
        },
        "responses": {
          "202": {
            "description": "Task accepted; poll the Location header for its status",
            "headers": { "Location": { "schema": { "type": "string" } } },
            "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Task" } } }
          },
          "400": { "$ref": "#/components/responses/Problem" },
          "429": { "$ref": "#/components/responses/Problem" }
        }
      }
    }
  },
  "components": {
    "schemas": {
      "CreateTask": {
        "type": "object",
        "required": ["goal"],
        "properties": {
          "goal": { "type": "string", "minLength": 1, "maxLength": 4000 },
          "maxSteps": { "type": "integer", "minimum": 1, "maximum": 50, "default": 10 }
        }
      },
      "Task": { "type": "object", "required": ["id", "status"], "properties": { "id": { "type": "string", "format": "uuid" }, "status": { "enum": ["queued", "running", "succeeded", "failed"] } } }
    },
    "responses": { "Problem": { "description": "RFC 9457 problem details", "content": { "application/problem+json": { "schema": { "type": "object" } } } } }
  }
}
`,
          },
        },
        {
          heading: 'Health checks: liveness and readiness',
          body: [
            `Orchestrators such as Kubernetes ask two different questions. Liveness: is this process healthy enough to keep, or should it be restarted? Readiness: should it receive traffic right now? Expose them separately, conventionally as /healthz and /readyz; Kubernetes also offers a startup probe for slow boots.`,
            `The liveness check should verify only the process itself: the event loop answers. Do not check the database there. If the database goes down, every replica fails liveness, the orchestrator restarts all of them, and you have added a restart storm and cold caches to an outage that restarting cannot fix. Readiness is where dependencies belong: database reachable, configuration loaded, warm-up done, not shutting down. A failing readiness check removes the replica from the load balancer without killing it, and traffic returns when the check passes again.`,
            `Keep probes cheap, because they run every few seconds on every replica. Check dependencies in the background and have the endpoint report the cached result and its age. Never call the LLM provider from a probe: it costs money, uses rate limit, and a provider hiccup would pull every replica out of rotation at once, when serving degraded answers would have been better.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'Liveness that checks only the process, and readiness that reports a cached dependency check.',
            source: `import { createServer } from 'node:http';

const state = { shuttingDown: false, dbHealthy: false, lastDbCheck: 0 };

async function checkDatabase(): Promise<boolean> {
  return true; // replace with "SELECT 1" on the pool, bounded by a 1-second timeout
}

// Probes read a cached result; the dependency check runs in the background every 5 seconds.
async function refresh() {
  state.dbHealthy = await checkDatabase().catch(() => false);
  state.lastDbCheck = Date.now();
}
void refresh();
setInterval(refresh, 5_000).unref();

createServer((req, res) => {
  if (req.url === '/healthz') {
    // Liveness: the process answers. No dependencies, or a database outage restarts every replica.
    res.writeHead(200).end('ok');
  } else if (req.url === '/readyz') {
    const fresh = Date.now() - state.lastDbCheck < 15_000;
    const ready = !state.shuttingDown && state.dbHealthy && fresh;
    res
      .writeHead(ready ? 200 : 503, { 'content-type': 'application/json' })
      .end(JSON.stringify({ ready, db: state.dbHealthy, fresh, shuttingDown: state.shuttingDown }));
  } else {
    res.writeHead(404).end();
  }
}).listen(8080);
`,
          },
        },
        {
          heading: 'Configuration from the environment, validated at start',
          body: [
            `Following the twelve-factor convention, read configuration from environment variables, so that the same built artifact runs in development, staging and production with different settings. Read process.env in exactly one module, at startup, and export a typed, frozen config object. Scattered process.env.X reads with inline defaults are how a typo in a variable name turns into a silent fallback.`,
            `Validate everything before the server listens. Environment variables are strings, so coerce numbers and booleans explicitly, apply defaults, check ranges and formats, and collect every problem rather than stopping at the first. If anything is wrong, print the variable names with their problems and exit with a non-zero code. The deploy fails immediately, the orchestrator keeps the old version running, and nobody discovers at 3 a.m. that LLM_TIMEOUT_MS was set to "60s" and parsed as NaN.`,
            `Log the effective configuration at startup, because it answers many "why is it doing that" questions, but redact secrets, including those embedded in other values such as the password inside DATABASE_URL. Messages about invalid configuration should name the variable and never echo its value.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'Parsing and validating environment configuration once at startup with zod, failing fast with every problem listed.',
            source: `import { z } from 'zod';

const ConfigSchema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  PORT: z.coerce.number().int().min(1).max(65535).default(3000),
  DATABASE_URL: z.string().url(),
  LLM_API_KEY: z.string().min(20, 'must be at least 20 characters'),
  LLM_MODEL: z.string().min(1),
  LLM_TIMEOUT_MS: z.coerce.number().int().positive().default(60_000),
  MAX_AGENT_STEPS: z.coerce.number().int().min(1).max(100).default(20),
});
export type Config = z.infer<typeof ConfigSchema>;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Readonly<Config> {
  const result = ConfigSchema.safeParse(env);
  if (!result.success) {
    // Report every problem at once; name the variable, never print its value.
    const problems = result.error.issues.map((i) => \`  \${i.path.join('.')}: \${i.message}\`);
    console.error(\`Invalid configuration:\\n\${problems.join('\\n')}\`);
    process.exit(1);
  }
  const redacted = { ...result.data, LLM_API_KEY: '[redacted]', DATABASE_URL: '[redacted]' };
  console.log(JSON.stringify({ level: 'info', msg: 'configuration loaded', config: redacted }));
  return Object.freeze(result.data);
}

export const config = loadConfig();
`,
          },
        },
      ],
      keyTakeaways: [
        'Long-running agent tasks should return 202 Accepted with a task id and be polled or streamed, because proxies and load balancers cut long requests (the AWS ALB idle timeout defaults to 60 seconds).',
        'One OpenAPI document is the contract: adding optional fields and endpoints is compatible, while removing fields or adding required ones is breaking.',
        'Liveness checks only the process; readiness checks dependencies, and failing it removes the replica from rotation without restarting it.',
        'Configuration is read from environment variables in one place, validated at startup with every error reported, and the process exits non-zero when it is invalid.',
        'Logged configuration and configuration errors name variables but never print secret values.',
      ],
      questions: [
        {
          prompt: 'Why should a liveness probe not check the database?',
          correct: 'A database outage would make every replica fail and be restarted, which cannot fix the database.',
          distractors: [
            'Kubernetes does not allow liveness probes to open network connections.',
            'Database checks always take longer than the probe timeout allows.',
            'The load balancer already checks the database before routing each request.',
          ],
          explanation:
            'Liveness failures trigger restarts. Tying them to a shared dependency turns its outage into a restart storm; dependencies belong in the readiness check.',
        },
        {
          prompt: 'An agent task typically takes three minutes. How should POST /v1/tasks respond?',
          correct: 'With 202 Accepted, a task id and a Location header, while the work runs in the background.',
          distractors: [
            'With 200 OK once the task completes, holding the connection open for three minutes.',
            'With 201 Created and the finished result embedded in the response body.',
            'With 303 See Other, redirecting the client to the result once it is ready.',
          ],
          explanation:
            'Requests held open for minutes are cut by proxies and load balancers and retried by clients. 202 plus polling, events or a webhook decouples the request from the work.',
        },
        {
          prompt: "What happens when a replica's readiness check starts failing?",
          correct: 'It stops receiving new traffic from the load balancer but is not restarted.',
          distractors: [
            'The orchestrator restarts the container immediately.',
            'It keeps receiving traffic, but its logs are marked as degraded.',
            'All replicas of the service are removed from rotation together.',
          ],
          explanation:
            'Readiness controls routing only. Restarting is the consequence of failing liveness, which is why the two checks are kept separate.',
        },
        {
          prompt: 'Which API change is backward compatible for clients that ignore unknown fields?',
          correct: 'Adding a new optional field to a response body.',
          distractors: [
            'Adding a new required field to the request body.',
            'Renaming a response field to match a new naming convention.',
            'Changing an id field from a number to a string.',
          ],
          explanation:
            'Existing clients keep working when they receive a field they ignore. Required request fields, renames and type changes break requests or parsing.',
        },
        {
          prompt: "LLM_TIMEOUT_MS is set to '60s' in production. What does validating configuration at startup achieve?",
          correct: 'The process exits at start with an error naming the variable, so the bad deploy never takes traffic.',
          distractors: [
            'The value is read as 60 seconds automatically, so no error is raised.',
            'The service starts and silently falls back to the default timeout.',
            'The first task that calls the model fails, and the error is logged there.',
          ],
          explanation:
            "'60s' coerces to NaN, which fails the number check. Failing at startup stops the rollout while the previous version keeps serving.",
        },
      ],
      exercise: {
        title: 'Configuration and health checks for an agent service',
        challenge:
          'Write the two pieces every deployable agent service needs before its first request: loadConfig, which validates environment variables and fails with a single error listing every problem, and probe, which answers the /healthz and /readyz checks from the current service state. Both are pure functions so you can test them without starting a server.',
        requirements: [
          "PORT defaults to 3000 and must be an integer from 1 to 65535; DATABASE_URL must be a URL; LLM_API_KEY is required with at least 20 characters; LOG_LEVEL is one of debug, info, warn, error and defaults to 'info'.",
          'loadConfig throws one ConfigError whose message lists every invalid variable by name and never contains the value of LLM_API_KEY or DATABASE_URL.',
          '/healthz returns 200 whenever the process runs, regardless of dependencies.',
          '/readyz returns 503 while shutting down, when the last database check failed, or when it is older than 15 seconds, and 200 otherwise; other paths return 404.',
        ],
        starterCode: `import { z } from 'zod';

// TODO: describe PORT, DATABASE_URL, LLM_API_KEY and LOG_LEVEL
const Schema = z.object({});

export interface Config {
  PORT: number;
  DATABASE_URL: string;
  LLM_API_KEY: string;
  LOG_LEVEL: 'debug' | 'info' | 'warn' | 'error';
}

export class ConfigError extends Error {}

export function loadConfig(env: Record<string, string | undefined>): Readonly<Config> {
  // TODO: safeParse env; on failure throw a ConfigError listing every problem by variable name
  throw new ConfigError('TODO');
}

export interface HealthState {
  shuttingDown: boolean;
  dbHealthy: boolean;
  lastDbCheckAt: number; // epoch milliseconds
}

export function probe(path: string, state: HealthState, now: number): { status: number; body: string } {
  // TODO: /healthz, /readyz, 404 otherwise
  return { status: 500, body: 'TODO' };
}
`,
        solution: `import { z } from 'zod';

const Schema = z.object({
  PORT: z.coerce.number().int().min(1).max(65535).default(3000),
  DATABASE_URL: z.string({ required_error: 'is required' }).url('must be a URL'),
  LLM_API_KEY: z.string({ required_error: 'is required' }).min(20, 'must be at least 20 characters'),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
});

export type Config = z.infer<typeof Schema>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function loadConfig(env: Record<string, string | undefined>): Readonly<Config> {
  const result = Schema.safeParse(env);
  if (result.success) return Object.freeze(result.data);
  const lines = result.error.issues.map((issue) => {
    const reason = issue.code === 'invalid_enum_value' ? \`must be one of \${issue.options.join(', ')}\` : issue.message;
    return \`\${issue.path.join('.')}: \${reason}\`;
  });
  throw new ConfigError(\`invalid configuration:\\n\${lines.join('\\n')}\`);
}

export interface HealthState {
  shuttingDown: boolean;
  dbHealthy: boolean;
  lastDbCheckAt: number;
}

export function probe(path: string, state: HealthState, now: number): { status: number; body: string } {
  if (path === '/healthz') return { status: 200, body: 'ok' };
  if (path === '/readyz') {
    const fresh = now - state.lastDbCheckAt <= 15_000;
    const ready = !state.shuttingDown && state.dbHealthy && fresh;
    const body = JSON.stringify({ ready, shuttingDown: state.shuttingDown, dbHealthy: state.dbHealthy, fresh });
    return { status: ready ? 200 : 503, body };
  }
  return { status: 404, body: 'not found' };
}

console.log(loadConfig({ DATABASE_URL: 'postgres://app:pw@db:5432/app', LLM_API_KEY: 'sk-test-0123456789abcdef' }));
try {
  loadConfig({ PORT: 'eighty', DATABASE_URL: 'not a url with secret-pw', LLM_API_KEY: 'short-secret', LOG_LEVEL: 'verbose' });
} catch (err) {
  console.log(String(err)); // names PORT, DATABASE_URL, LLM_API_KEY and LOG_LEVEL, prints no values
}
const now = Date.now();
console.log(probe('/healthz', { shuttingDown: true, dbHealthy: false, lastDbCheckAt: 0 }, now).status); // 200
console.log(probe('/readyz', { shuttingDown: false, dbHealthy: true, lastDbCheckAt: now - 3_000 }, now).status); // 200
console.log(probe('/readyz', { shuttingDown: false, dbHealthy: true, lastDbCheckAt: now - 60_000 }, now).status); // 503
`,
        hints: [
          'z.coerce.number() turns the string from the environment into a number; a non-numeric string becomes NaN and fails validation.',
          "zod's message for an invalid enum value includes the received value, so build that message yourself from issue.options.",
          'The liveness path must not look at state at all.',
        ],
      },
    },
    // ------------------------------------------------------------------------------------------
    {
      id: 'observability',
      title: 'Observability: Logs, Metrics and Traces',
      preview:
        'How to see what a running agent service is doing: structured JSON logs tied together by request ids, Prometheus metrics with sane labels, distributed traces, and alerts that fire on what users feel.',
      estimatedMinutes: 25,
      objectives: [
        'Emit structured JSON logs that carry a request id through asynchronous code',
        'Choose Prometheus metric types, names and low-cardinality labels',
        'Propagate trace context between services with the traceparent header',
        'Define alerts on symptoms and error-budget burn rates rather than causes',
      ],
      sections: [
        {
          heading: 'Structured logs with request ids',
          body: [
            `Write logs as JSON, one object per line, to stdout, and let the platform collect them. Structured fields can be filtered and aggregated, for example all errors on route /v1/tasks with durationMs above 10,000, in a way free-text lines cannot. Every line needs time in ISO 8601, level, a short constant message and context fields. For agents, add the fields that explain behaviour and cost: task id, step number, model, input and output tokens, tool name and outcome.`,
            `A request id ties together the lines of one request. Accept the caller's X-Request-Id when it is present and well formed, otherwise generate one with crypto.randomUUID(); return it in the response header so a user can quote it in a bug report, and pass it on to downstream calls. In Node, AsyncLocalStorage carries it across awaits and callbacks, so a log call deep inside a tool handler picks it up without a parameter threaded through every function.`,
            `Be deliberate about what not to log. Prompts and tool results can contain personal data and secrets, so by default log their sizes and ids, and full content only where policy allows. Never log authorization headers or keys. At high volume, sample debug logs but keep every error.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'JSON logging with a request id carried through async code by AsyncLocalStorage.',
            source: `import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

const requestContext = new AsyncLocalStorage<{ requestId: string }>();

type Level = 'debug' | 'info' | 'warn' | 'error';
function log(level: Level, msg: string, fields: Record<string, unknown> = {}) {
  const requestId = requestContext.getStore()?.requestId;
  process.stdout.write(JSON.stringify({ time: new Date().toISOString(), level, msg, requestId, ...fields }) + '\\n');
}

const VALID_ID = /^[\\w-]{8,64}$/; // accept a caller's id only if it looks sane

async function runAgentStep(): Promise<void> {
  log('info', 'tool call', { tool: 'search_docs', durationMs: 120 }); // requestId arrives implicitly
}

createServer((req, res) => {
  const incoming = req.headers['x-request-id'];
  const requestId = typeof incoming === 'string' && VALID_ID.test(incoming) ? incoming : randomUUID();
  res.setHeader('x-request-id', requestId);
  const start = performance.now();
  requestContext.run({ requestId }, async () => {
    log('info', 'request started', { method: req.method, path: req.url });
    await runAgentStep();
    res.writeHead(200).end('done');
    log('info', 'request finished', { status: 200, durationMs: Math.round(performance.now() - start) });
  });
}).listen(3000);
`,
          },
        },
        {
          heading: 'Metrics with Prometheus',
          body: [
            `Logs describe individual events; metrics are cheap numeric aggregates over time and the right tool for dashboards and alerts. Prometheus pulls them: your service exposes GET /metrics in a text format and the server scrapes it periodically (the default interval is one minute; 15 seconds is common). There are three core types. A counter only goes up, such as http_requests_total, and you query its rate. A gauge goes up and down, such as tasks_in_progress or queue_depth. A histogram counts observations into cumulative buckets plus a sum and a count, such as llm_request_duration_seconds, from which percentiles are estimated.`,
            `Follow the naming conventions: snake_case, base units such as seconds and bytes in the name, _total on counters. Keep label cardinality low. Every distinct combination of label values is a separate time series held in memory, so label by route template (/v1/tasks/:id), method, status and model, never by raw URL, user id or request id; one user-id label can turn ten series into a million.`,
            `For every service, track the RED signals: rate, errors and duration. For agents, add tokens by model and direction, tool calls by tool and outcome, cost in the smallest currency unit, steps per task, and upstream 429s. Choose histogram buckets for your latencies: the common default buckets stop at 10 seconds, which is too low for LLM calls.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'A counter and a histogram rendered in the Prometheus text exposition format.',
            source: `// Hand-rolled for clarity; in production use prom-client, which emits the same format.
const requestCounts = new Map<string, number>(); // key: rendered label set
const buckets = [0.5, 1, 2.5, 5, 10, 30, 60, 120]; // seconds: LLM calls need high buckets
const llm = { counts: buckets.map(() => 0), sum: 0, count: 0 };

function countRequest(method: string, route: string, status: number) {
  const labels = \`method="\${method}",route="\${route}",status="\${status}"\`; // route template, not raw URL
  requestCounts.set(labels, (requestCounts.get(labels) ?? 0) + 1);
}

function observeLlmSeconds(seconds: number) {
  buckets.forEach((le, i) => {
    if (seconds <= le) llm.counts[i] = (llm.counts[i] ?? 0) + 1; // buckets are cumulative
  });
  llm.sum += seconds;
  llm.count++;
}

function renderMetrics(): string {
  const out = ['# HELP http_requests_total HTTP requests handled.', '# TYPE http_requests_total counter'];
  for (const [labels, n] of requestCounts) out.push(\`http_requests_total{\${labels}} \${n}\`);
  out.push('# HELP llm_request_duration_seconds Latency of LLM calls.', '# TYPE llm_request_duration_seconds histogram');
  buckets.forEach((le, i) => out.push(\`llm_request_duration_seconds_bucket{le="\${le}"} \${llm.counts[i]}\`));
  out.push(\`llm_request_duration_seconds_bucket{le="+Inf"} \${llm.count}\`);
  out.push(\`llm_request_duration_seconds_sum \${llm.sum}\`, \`llm_request_duration_seconds_count \${llm.count}\`);
  return out.join('\\n') + '\\n';
}

countRequest('POST', '/v1/tasks', 202);
countRequest('GET', '/v1/tasks/:id', 200);
observeLlmSeconds(3.2);
observeLlmSeconds(41);
console.log(renderMetrics());
`,
          },
        },
        {
          heading: 'Traces',
          body: [
            `A trace records one request's path through the system as a tree of spans. Each span has a name, a start time, a duration, attributes and the id of its parent, and all spans of a request share one trace id. For an agent, a task's trace shows every LLM call, tool call, retrieval and database query as a span, so the question "why did this task take 40 seconds?" has a visual answer: six sequential model calls, or one tool that sat 30 seconds in a timeout.`,
            `Context crosses process boundaries in the W3C Trace Context header traceparent, formatted version-traceid-parentid-flags: a 32-hex-digit trace id, the 16-hex-digit id of the calling span, and flags whose lowest bit means sampled. A service that receives it continues the trace; one that does not starts a new one. OpenTelemetry is the vendor-neutral standard for the SDKs and for the OTLP export protocol, with automatic instrumentation for HTTP servers and clients and common database drivers.`,
            `Tracing every request in full is expensive, so sample. Head sampling decides at the first span, keeping for example 1-10% of traces: cheap, but blind to how the request ends. Tail sampling decides after the trace completes and can keep every error and every slow request. Put the trace id into every log line as well, so you can jump from a log entry to its trace and back.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'Continuing or starting a trace from an incoming traceparent header and producing the outgoing one.',
            source: `import { randomBytes } from 'node:crypto';

// W3C Trace Context: traceparent = version-traceid-parentid-flags
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

interface SpanContext {
  traceId: string;
  spanId: string;
  sampled: boolean;
}

function startServerSpan(header: string | undefined): { parentSpanId?: string; ctx: SpanContext } {
  const spanId = randomBytes(8).toString('hex');
  const m = header ? TRACEPARENT.exec(header) : null;
  const [, traceId, parentSpanId, flags] = m ?? [];
  if (!traceId || !parentSpanId || !flags || /^0+$/.test(traceId)) {
    // No valid parent (all-zero ids are invalid): start a new trace and make the head sampling decision.
    return { ctx: { traceId: randomBytes(16).toString('hex'), spanId, sampled: Math.random() < 0.1 } };
  }
  return { parentSpanId, ctx: { traceId, spanId, sampled: (parseInt(flags, 16) & 1) === 1 } };
}

const toTraceparent = (c: SpanContext) => \`00-\${c.traceId}-\${c.spanId}-\${c.sampled ? '01' : '00'}\`;

const { parentSpanId, ctx } = startServerSpan('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
console.log({ parentSpanId, traceId: ctx.traceId, sampled: ctx.sampled });
console.log('traceparent for outgoing calls:', toTraceparent(ctx)); // same trace id, this span as parent
`,
          },
        },
        {
          heading: 'What to alert on',
          body: [
            `Page people for symptoms users feel, not for causes. "The task error rate is above the objective" and "p95 latency is above the objective" are symptoms; "CPU at 80%" is a cause that may or may not matter. Every page must be actionable: if the right response can wait until tomorrow, make it a ticket; if there is none, delete the alert.`,
            `Service level objectives make this precise. Suppose 99% of tasks should succeed over 30 days; the remaining 1% is the error budget. The burn rate is how fast you consume it: a burn rate of 1 spends exactly the budget in 30 days. The Google SRE Workbook recommends paging when a burn rate of 14.4 is sustained for an hour, which spends 2% of the monthly budget in that hour (0.02 x 720 hours = 14.4), confirmed over a short window such as 5 minutes to avoid paging on a blip, and opening a ticket for slow burns such as a rate of 1 over three days.`,
            `Agents need a few alerts of their own. Spend per hour above a limit catches loops that call a paid model or API thousands of times. Tool failure rate per tool catches a broken integration the model is silently working around. Rising upstream 429s predict failures. For queues, alert on the age of the oldest job rather than on depth: a deep queue that drains quickly is fine, a short one stuck for an hour is not.`,
          ].join('\n\n'),
        },
      ],
      keyTakeaways: [
        'Log one JSON object per line with a request id taken from X-Request-Id or generated, returned in the response, and carried through async code with AsyncLocalStorage.',
        'Prometheus scrapes counters, gauges and histograms from /metrics; label by route template and status, never by user id or request id, because every label combination is a time series.',
        'The traceparent header carries a 32-hex-digit trace id and the calling span id, so spans from every service join one trace.',
        'Alert on user-facing symptoms measured against an SLO; a burn rate of 14.4 sustained for an hour spends 2% of a 30-day error budget and warrants a page.',
        'Agent-specific alerts cover spend per hour, tool failure rates, upstream 429s and the age of the oldest queued job.',
      ],
      questions: [
        {
          prompt: 'Why must user ids not be used as a Prometheus label?',
          correct: 'Every distinct label value creates a separate time series, so cardinality and memory explode.',
          distractors: [
            'Prometheus label values may only contain digits, letters and underscores.',
            'Label values are returned to API clients and would leak the user ids.',
            'Counters that carry labels cannot be queried with the rate() function.',
          ],
          explanation:
            'Each unique label combination is stored as its own series. Unbounded values such as user or request ids multiply the series count without limit.',
        },
        {
          prompt: 'Which metric type fits the number of tasks currently waiting in a queue?',
          correct: 'A gauge, because the value goes up and down over time.',
          distractors: [
            'A counter, because tasks are counted as they arrive.',
            'A histogram, because queue sizes need percentile estimates.',
            'A summary, because it is computed on the client side.',
          ],
          explanation: 'Counters only increase. A current level that rises and falls, like queue depth or in-flight tasks, is a gauge.',
        },
        {
          prompt: 'What does AsyncLocalStorage provide for logging in a Node service?',
          correct: "The current request's id is available to every log call in its async chain without passing it as a parameter.",
          distractors: [
            'Log lines are buffered in local storage and flushed to disk at shutdown.',
            'Each request runs in a separate thread with its own logger instance.',
            'Log calls become asynchronous so they never block the event loop.',
          ],
          explanation:
            'AsyncLocalStorage keeps a store per asynchronous execution context; code running inside context.run(...) reads it with getStore(), across awaits and callbacks.',
        },
        {
          prompt: 'Which condition is the best candidate for paging the on-call engineer?',
          correct: 'The task error budget has been burning at 14.4 times the sustainable rate for an hour.',
          distractors: [
            'CPU usage on one replica has been above 80% for ten minutes.',
            'The queue holds more jobs than it did yesterday at the same time.',
            'A single LLM call took longer than the p99 latency of the day.',
          ],
          explanation:
            'A 14.4x burn for an hour is a user-facing symptom that spends 2% of a 30-day budget; the others are causes or single events that may not affect users.',
        },
        {
          prompt: 'What does the traceparent header carry to a downstream service?',
          correct: 'The trace id and the id of the calling span, so its spans join the same trace.',
          distractors: [
            'The full list of spans recorded so far in the request.',
            'The request id and the user id of the original caller.',
            'The sampling rate and the address of the trace collector.',
          ],
          explanation:
            'traceparent is version-traceid-parentid-flags. Spans are exported separately by each service; only the ids and the sampled flag travel with the request.',
        },
      ],
      exercise: {
        title: 'Instrument an agent endpoint',
        challenge:
          'Write createObservability, which returns an instrument function that wraps any request handler with request ids, one structured log line per request and a request counter, and a renderMetrics function that prints the counter in Prometheus text format. The handler type is a plain async function so you can test the wrapper without an HTTP server.',
        requirements: [
          'Reuse an incoming x-request-id header when it matches /^[\\w-]{8,64}$/, otherwise generate one with crypto.randomUUID(); set it as the x-request-id response header.',
          "Write exactly one JSON log line per request with time, level, msg, requestId, method, route, status and durationMs; level is 'error' for status 500 and above.",
          'A handler that throws produces a 500 response and an error log line instead of a rejected promise.',
          'Count requests in http_requests_total labelled by method, route and status, and render it with HELP and TYPE lines.',
        ],
        starterCode: `import { randomUUID } from 'node:crypto';

export interface Req {
  method: string;
  route: string; // route template, e.g. /v1/tasks/:id
  headers: Record<string, string | undefined>;
}
export interface Res {
  status: number;
  headers: Record<string, string>;
  body: string;
}
export type Handler = (req: Req) => Promise<Res>;

export function createObservability(
  write: (line: string) => void = (line) => process.stdout.write(line + '\\n'),
  now: () => number = () => performance.now(),
) {
  const requests = new Map<string, number>();

  function instrument(handler: Handler): Handler {
    return async (req) => {
      // TODO: request id (reuse or randomUUID), timing, call handler, turn throws into 500
      // TODO: count the request, write one JSON log line, set x-request-id on the response
      return handler(req);
    };
  }

  function renderMetrics(): string {
    // TODO: HELP and TYPE lines, then one line per label set
    return '';
  }

  return { instrument, renderMetrics };
}
`,
        solution: `import { randomUUID } from 'node:crypto';

export interface Req {
  method: string;
  route: string;
  headers: Record<string, string | undefined>;
}
export interface Res {
  status: number;
  headers: Record<string, string>;
  body: string;
}
export type Handler = (req: Req) => Promise<Res>;

const VALID_ID = /^[\\w-]{8,64}$/;

export function createObservability(
  write: (line: string) => void = (line) => process.stdout.write(line + '\\n'),
  now: () => number = () => performance.now(),
) {
  const requests = new Map<string, number>();

  function instrument(handler: Handler): Handler {
    return async (req) => {
      const incoming = req.headers['x-request-id'];
      const requestId = incoming !== undefined && VALID_ID.test(incoming) ? incoming : randomUUID();
      const start = now();
      let res: Res;
      let error: string | undefined;
      try {
        res = await handler(req);
      } catch (err) {
        error = err instanceof Error ? err.message : String(err);
        res = { status: 500, headers: { 'content-type': 'text/plain' }, body: 'internal error' };
      }
      res = { ...res, headers: { ...res.headers, 'x-request-id': requestId } };
      const labels = \`method="\${req.method}",route="\${req.route}",status="\${res.status}"\`;
      requests.set(labels, (requests.get(labels) ?? 0) + 1);
      write(
        JSON.stringify({
          time: new Date().toISOString(),
          level: res.status >= 500 ? 'error' : 'info',
          msg: 'request completed',
          requestId,
          method: req.method,
          route: req.route,
          status: res.status,
          durationMs: Math.round(now() - start),
          ...(error === undefined ? {} : { error }),
        }),
      );
      return res;
    };
  }

  function renderMetrics(): string {
    const lines = ['# HELP http_requests_total HTTP requests handled.', '# TYPE http_requests_total counter'];
    for (const [labels, value] of requests) lines.push(\`http_requests_total{\${labels}} \${value}\`);
    return lines.join('\\n') + '\\n';
  }

  return { instrument, renderMetrics };
}

const obs = createObservability();
const getTask = obs.instrument(async (req) => {
  if (req.headers['x-fail']) throw new Error('database unavailable');
  return { status: 200, headers: {}, body: '{"status":"running"}' };
});
const ok = await getTask({ method: 'GET', route: '/v1/tasks/:id', headers: { 'x-request-id': 'req-12345678' } });
console.log(ok.headers['x-request-id']); // req-12345678
await getTask({ method: 'GET', route: '/v1/tasks/:id', headers: { 'x-fail': '1' } });
console.log(obs.renderMetrics());
`,
        hints: [
          'Declare let res: Res before the try block and assign it in both branches, so the code after the try has one response to work with.',
          'Build the label string from the route template the caller passes in, never from a raw path containing ids.',
          'Inject now() so tests can control the measured duration.',
        ],
      },
    },
    // ------------------------------------------------------------------------------------------
    {
      id: 'reliability',
      title: 'Reliability: Timeouts, Retries and Shutdown',
      preview:
        'How to keep an agent service correct when its dependencies are slow or failing: timeouts on every call, retries with backoff and jitter that honour Retry-After, idempotency keys, and graceful shutdown.',
      estimatedMinutes: 25,
      objectives: [
        'Bound every outbound call with a timeout and propagate the request deadline',
        'Retry transient failures with capped exponential backoff, full jitter and Retry-After',
        'Make retried side effects safe with idempotency keys',
        'Shut a service down without dropping in-flight work',
      ],
      sections: [
        {
          heading: 'A timeout on every call',
          body: [
            `Every network call can hang: a provider stalls under load, a TCP connection dies silently, a tool server deadlocks. Without a timeout the request waits, holding memory and a connection, and eventually the caller gives up while your work continues uselessly. Node's fetch has no overall timeout by default (undici only applies 300-second header and body timeouts), so pass a signal: AbortSignal.timeout(ms) aborts the request with a TimeoutError.`,
            `Choose timeouts from measurements and from the caller's deadline, not from round numbers. If the p99 latency of a model call is 20 seconds, a 25-second timeout is reasonable and a 5-second one fails healthy calls. For streamed responses, separate time to first token from total time: a stream that produced nothing in 15 seconds is probably stuck, even if a complete answer may legitimately take two minutes.`,
            `Deadlines should propagate. If the client waits 30 seconds, the whole handler has less than that, and every call inside it gets the smaller of its own timeout and the time remaining. AbortSignal.any, available since Node 20.3, combines a per-call timeout with a request-wide deadline. Once retries are added, the same deadline also bounds the total time across attempts.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'Per-call timeouts combined with a request-wide deadline using AbortSignal.timeout and AbortSignal.any.',
            source: `// Every outbound call gets its own timeout, and none may outlive the request's deadline.
async function fetchJson(url: string, init: RequestInit, opts: { timeoutMs: number; deadline: AbortSignal }) {
  const signal = AbortSignal.any([AbortSignal.timeout(opts.timeoutMs), opts.deadline]);
  const res = await fetch(url, { ...init, signal });
  if (!res.ok) throw new Error(\`HTTP \${res.status} from \${url}\`);
  return (await res.json()) as unknown;
}

async function handleTask(): Promise<{ ok: boolean; detail: string }> {
  // The client waits at most 30 s, so the whole handler gets 25 s, leaving time to answer.
  const deadline = AbortSignal.timeout(25_000);
  try {
    const plan = await fetchJson(
      'https://llm.example.com/v1/chat',
      { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' },
      { timeoutMs: 20_000, deadline },
    );
    const results = await fetchJson('https://tools.example.com/search?q=refunds', {}, { timeoutMs: 5_000, deadline });
    return { ok: true, detail: JSON.stringify({ plan, results }) };
  } catch (err) {
    if (err instanceof Error && err.name === 'TimeoutError') return { ok: false, detail: 'timed out' };
    return { ok: false, detail: String(err) };
  }
}

handleTask().then(console.log);
`,
          },
        },
        {
          heading: 'Retries with exponential backoff and jitter',
          body: [
            `Retry only failures that a second attempt can fix: connection errors, timeouts, and the statuses 408, 429, 500, 502, 503 and 504. Do not retry 400, 401, 403, 404 or 422; the same request fails the same way. A POST that may already have taken effect is only safe to retry with an idempotency key, covered in the next section.`,
            `Space attempts with exponential backoff, base x 2^attempt capped at a maximum, for example 0.5, 1, 2 and 4 seconds with a 30-second cap, and add jitter. Without jitter, every client that failed at the same moment retries at the same moment, and those synchronised waves keep an overloaded service down. Full jitter, recommended in AWS's analysis of backoff strategies, sleeps a uniformly random time between 0 and the capped exponential delay. Cap the number of attempts too (3-5 is typical) and bound the total time by the caller's deadline.`,
            `Honour Retry-After. A 429 or 503 may carry it as a number of seconds ("120") or as an HTTP date; wait at least that long, and if the wait would pass your deadline, fail now instead of sleeping into a timeout. Finally, retry at one layer only. If three layers each make 3 attempts, one failing call at the bottom becomes 3 x 3 x 3 = 27 requests, which is how retries turn a partial outage into a full one.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'fetch with retries: retryable statuses only, full-jitter backoff, Retry-After and an overall deadline.',
            source: `const RETRYABLE = new Set([408, 429, 500, 502, 503, 504]);

// Retry-After is either delay-seconds ("120") or an HTTP date.
function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (!header) return undefined;
  if (/^\\d+$/.test(header.trim())) return Number(header) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

// Full jitter: a random wait between 0 and the capped exponential delay.
const backoffMs = (attempt: number, baseMs = 500, capMs = 30_000) => Math.random() * Math.min(capMs, baseMs * 2 ** attempt);

async function fetchWithRetry(url: string, init: RequestInit, maxAttempts = 4, deadlineMs = 60_000): Promise<Response> {
  const giveUpAt = Date.now() + deadlineMs;
  for (let attempt = 0; ; attempt++) {
    let res: Response | undefined;
    try {
      res = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
      if (!RETRYABLE.has(res.status)) return res; // success, or an error a retry cannot fix
    } catch (err) {
      if (attempt + 1 >= maxAttempts) throw err; // network error or timeout on the last attempt
    }
    if (attempt + 1 >= maxAttempts && res) return res; // let the caller see the final status
    const wait = Math.max(backoffMs(attempt), retryAfterMs(res?.headers.get('retry-after') ?? null) ?? 0);
    if (Date.now() + wait > giveUpAt) throw new Error(\`giving up on \${url}: next retry would pass the deadline\`);
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

fetchWithRetry('https://httpbin.org/status/503', {}, 3, 10_000).then(
  (res) => console.log('final status', res.status),
  (err) => console.log(String(err)),
);
`,
          },
        },
        {
          heading: 'Idempotency keys',
          body: [
            `A timeout does not tell you whether the server acted. The payment may have gone through and only the response was lost; retrying a non-idempotent POST then pays twice. In HTTP semantics GET, PUT and DELETE are idempotent and POST is not, and most agent actions, such as sending a message, placing an order or transferring funds, are POSTs.`,
            `The fix is an idempotency key. The client generates a unique value, typically a UUID, once per logical operation and sends it in an Idempotency-Key header on the first attempt and on every retry. The server stores the key with a fingerprint of the request and, once finished, the response; a repeat with the same key gets the stored response without the side effect happening again. The IETF draft that standardises the header suggests 409 Conflict while the original request is still being processed and 422 when a key is reused with a different request body. Stripe keeps keys for 24 hours, a common retention.`,
            `Two details decide whether this works. The key store must be shared by all replicas and keys must be claimed atomically, which in practice means a database table with the key as its primary key (the scaling lesson shows how). And the key must be created before the first attempt and reused, never regenerated inside the retry loop; an agent should derive it from the task and step, so that a restarted worker sends the same key again.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'Server-side idempotency: replay the stored response, reject concurrent or mismatched reuse of a key.',
            source: `import { createHash } from 'node:crypto';

type Result = { status: number; body: string };
type Entry = { fingerprint: string; state: 'in-progress' } | { fingerprint: string; state: 'done'; result: Result };
const store = new Map<string, Entry>(); // demo only: use a shared table with the key as primary key

async function withIdempotency(key: string | undefined, requestBody: string, run: () => Promise<Result>): Promise<Result> {
  if (!key) return { status: 400, body: 'Idempotency-Key header is required' };
  const fingerprint = createHash('sha256').update(requestBody).digest('hex');
  const existing = store.get(key);
  if (existing && existing.fingerprint !== fingerprint) return { status: 422, body: 'key reused with a different request' };
  if (existing?.state === 'in-progress') return { status: 409, body: 'a request with this key is still running' };
  if (existing?.state === 'done') return existing.result; // replay: no second side effect
  store.set(key, { fingerprint, state: 'in-progress' });
  try {
    const result = await run();
    store.set(key, { fingerprint, state: 'done', result });
    return result;
  } catch (err) {
    store.delete(key); // nothing was completed: let the client retry with the same key
    throw err;
  }
}

let payments = 0;
const pay = async (): Promise<Result> => ({ status: 201, body: \`payment \${++payments}\` });
const body = JSON.stringify({ to: 'alice', amountCents: 500 });
const first = await withIdempotency('9b2f6c1e-task-42-step-3', body, pay);
const retry = await withIdempotency('9b2f6c1e-task-42-step-3', body, pay);
console.log(first, retry, { payments }); // both say "payment 1", and payments === 1
`,
          },
        },
        {
          heading: 'Graceful shutdown',
          body: [
            `Deploys, scale-downs and node maintenance stop your processes routinely, so shutdown is a normal path, not an error. Kubernetes sends SIGTERM, waits terminationGracePeriodSeconds (30 by default), then sends SIGKILL. Removing the pod from the load balancer's endpoints happens in parallel with SIGTERM, so for a few seconds new requests can still arrive.`,
            `A graceful sequence: on SIGTERM, fail readiness and keep serving for a few seconds while the endpoint removal propagates; then call server.close() to stop accepting connections and server.closeIdleConnections() so idle keep-alive sockets do not hold the process open; stop pulling jobs from the queue; wait for in-flight requests to finish, bounded so you exit before the grace period ends; finally flush logs and metrics, close the database pool and exit with code 0.`,
            `Agent tasks often run longer than any sensible grace period. Design them to be interrupted: checkpoint state in the database after every step, release or shorten the job's lease on shutdown so another worker resumes it, and make every step idempotent so that repeating one does no harm. A task that can only succeed if its process lives for ten uninterrupted minutes will fail on every deploy.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'A SIGTERM handler that fails readiness, drains connections and waits for in-flight work within the grace period.',
            source: `import { createServer } from 'node:http';

let ready = true;
let inFlight = 0;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const server = createServer(async (req, res) => {
  if (req.url === '/readyz') return void res.writeHead(ready ? 200 : 503).end();
  inFlight++;
  try {
    await sleep(2_000); // stands in for an agent step
    res.writeHead(200).end('done');
  } finally {
    inFlight--;
  }
});
server.listen(3000);

process.once('SIGTERM', async () => {
  ready = false; // 1. fail readiness so the load balancer stops routing here
  await sleep(5_000); // 2. keep serving while endpoint removal propagates
  server.close(); // 3. stop accepting new connections...
  server.closeIdleConnections(); //    ...and drop idle keep-alive sockets that would hold the process open
  const giveUpAt = Date.now() + 20_000; // 4. drain in-flight work, well inside the 30 s grace period
  while (inFlight > 0 && Date.now() < giveUpAt) await sleep(100);
  // 5. requeue unfinished tasks, flush logs and metrics, close the database pool here
  process.exit(inFlight === 0 ? 0 : 1);
});
`,
          },
        },
      ],
      keyTakeaways: [
        'Give every outbound call a timeout with AbortSignal.timeout and combine it with the request deadline using AbortSignal.any.',
        'Retry only transient failures (network errors, timeouts, 408, 429, 500, 502, 503, 504) with capped exponential backoff and full jitter, at one layer only.',
        'A Retry-After header, in seconds or as an HTTP date, sets a minimum wait; if that wait passes the deadline, fail immediately.',
        'An idempotency key created once per operation and stored atomically lets the server replay the stored response to a retry instead of repeating the side effect.',
        'On SIGTERM, fail readiness, stop accepting connections, finish or checkpoint in-flight work, and exit before the 30-second default grace period ends.',
      ],
      questions: [
        {
          prompt: 'Why add jitter to exponential backoff?',
          correct: 'So that clients that failed together do not retry together in synchronised waves.',
          distractors: [
            'So that each retry waits exactly twice as long as the previous one.',
            'So that the server can tell a retry apart from an original request.',
            "So that the total retry time never exceeds the caller's deadline.",
          ],
          explanation:
            'Without randomness, clients that failed at the same moment retry at the same moments, hitting a recovering service with repeated spikes. Jitter spreads them out.',
        },
        {
          prompt: 'Which response should a client not retry?',
          correct: '422 Unprocessable Content, because the same request will fail the same way.',
          distractors: [
            '503 Service Unavailable, because the server is temporarily overloaded.',
            '429 Too Many Requests, because the client exceeded a rate limit.',
            '502 Bad Gateway, because an upstream server returned a bad response.',
          ],
          explanation:
            '422 means the request itself is invalid. 503, 429 and 502 describe transient conditions that a later attempt, with backoff, can succeed past.',
        },
        {
          prompt: "A 429 response carries 'Retry-After: 120' and your deadline is 60 seconds away. What should the client do?",
          correct: 'Fail now, because waiting the required 120 seconds would pass the deadline.',
          distractors: [
            'Retry after its normal backoff delay, since Retry-After is only a hint.',
            'Wait 60 seconds and retry once just before the deadline expires.',
            'Retry immediately with a new idempotency key to bypass the limit.',
          ],
          explanation:
            'Retry-After is the minimum wait the server asks for. Retrying earlier is likely to be rejected again, and sleeping past the deadline wastes the time the caller has left.',
        },
        {
          prompt: 'A client retries a payment POST after a timeout. What prevents a double payment?',
          correct: 'Sending the same Idempotency-Key on the retry, so the server returns the stored result.',
          distractors: [
            'Generating a fresh Idempotency-Key for each attempt so requests never collide.',
            'Switching the retry to a GET request, because GET requests are idempotent.',
            "Waiting longer than the server's own timeout before sending the retry.",
          ],
          explanation:
            'The key identifies the logical operation. Reusing it lets the server recognise the retry and replay the stored response; a new key looks like a new payment.',
        },
        {
          prompt: 'What should a service do first when it receives SIGTERM?',
          correct: 'Fail its readiness check so the load balancer stops sending it new requests.',
          distractors: [
            'Exit immediately so the orchestrator can start the replacement sooner.',
            'Cancel every in-flight request and return 503 to each caller.',
            'Restart itself to flush its connections before the grace period ends.',
          ],
          explanation:
            'Endpoint removal happens in parallel with SIGTERM. Failing readiness while still serving lets traffic drain away; the process then closes connections and finishes in-flight work before exiting.',
        },
      ],
      exercise: {
        title: 'A retrying client with backoff, Retry-After and idempotency',
        challenge:
          'Write callWithRetry, which calls an HTTP operation and retries transient failures the way this lesson describes. The operation is passed in as a function so you can test with a scripted fake server, and sleep, random and now are injectable so tests run instantly and deterministically. Response header names are lowercase.',
        requirements: [
          'Retry thrown errors and the statuses 408, 429, 500, 502, 503 and 504; return any other status immediately.',
          'Before retry n + 1 (n from 0), wait random() * min(capMs, baseMs * 2^n), but at least the Retry-After value when the response has one (seconds or HTTP date).',
          'Send the same Idempotency-Key header on every attempt.',
          'Stop after maxAttempts attempts, or earlier when the next wait would end past the deadline, returning the last response or rethrowing the last error.',
        ],
        starterCode: `export interface HttpResult {
  status: number;
  headers: Record<string, string>; // lowercase names
  body: string;
}

export type Attempt = (headers: Record<string, string>) => Promise<HttpResult>;

export interface RetryOptions {
  maxAttempts: number;
  baseMs: number;
  capMs: number;
  deadlineMs: number;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  now?: () => number;
}

const RETRYABLE = new Set([408, 429, 500, 502, 503, 504]);

export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  // TODO: seconds or HTTP date -> milliseconds to wait
  return undefined;
}

export async function callWithRetry(attempt: Attempt, idempotencyKey: string, opts: RetryOptions): Promise<HttpResult> {
  // TODO: loop over attempts, classify results, compute the wait, respect the deadline
  return attempt({ 'Idempotency-Key': idempotencyKey });
}
`,
        solution: `export interface HttpResult {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export type Attempt = (headers: Record<string, string>) => Promise<HttpResult>;

export interface RetryOptions {
  maxAttempts: number;
  baseMs: number;
  capMs: number;
  deadlineMs: number;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  now?: () => number;
}

const RETRYABLE = new Set([408, 429, 500, 502, 503, 504]);

export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export async function callWithRetry(attempt: Attempt, idempotencyKey: string, opts: RetryOptions): Promise<HttpResult> {
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const random = opts.random ?? Math.random;
  const now = opts.now ?? Date.now;
  const giveUpAt = now() + opts.deadlineMs;
  for (let n = 0; ; n++) {
    let result: HttpResult | undefined;
    let error: unknown;
    try {
      result = await attempt({ 'Idempotency-Key': idempotencyKey });
      if (!RETRYABLE.has(result.status)) return result;
    } catch (err) {
      error = err;
    }
    const finish = (): HttpResult => {
      if (result) return result;
      throw error;
    };
    if (n + 1 >= opts.maxAttempts) return finish();
    const backoff = random() * Math.min(opts.capMs, opts.baseMs * 2 ** n);
    const wait = Math.max(backoff, parseRetryAfter(result?.headers['retry-after'], now()) ?? 0);
    if (now() + wait > giveUpAt) return finish();
    await sleep(wait);
  }
}

// A scripted server: a network error, then 429 with Retry-After: 2, then success.
let clock = 0;
const script: Array<HttpResult | Error> = [
  new Error('ECONNRESET'),
  { status: 429, headers: { 'retry-after': '2' }, body: '' },
  { status: 200, headers: {}, body: 'ok' },
];
const seenKeys: string[] = [];
const waits: number[] = [];
const result = await callWithRetry(
  async (headers) => {
    seenKeys.push(headers['Idempotency-Key'] ?? '');
    const next = script.shift();
    if (!next || next instanceof Error) throw next ?? new Error('script exhausted');
    return next;
  },
  'task-42-step-3',
  {
    maxAttempts: 5,
    baseMs: 500,
    capMs: 30_000,
    deadlineMs: 60_000,
    random: () => 0.5,
    now: () => clock,
    sleep: async (ms) => {
      waits.push(ms);
      clock += ms;
    },
  },
);
console.log(result.status, waits, new Set(seenKeys)); // 200 [ 250, 2000 ] Set(1) { 'task-42-step-3' }
`,
        hints: [
          'Keep the last response and the last error of each attempt in variables declared inside the loop, so the give-up path can return or rethrow the right one.',
          'Date.parse returns NaN for strings that are not dates; treat that as no Retry-After.',
          'Take the maximum of the jittered backoff and the Retry-After value, never the minimum.',
        ],
      },
    },
    // ------------------------------------------------------------------------------------------
    {
      id: 'scaling-and-state',
      title: 'Scaling and State',
      preview:
        'How to run many replicas of an agent service: keep them stateless behind a load balancer, keep state in PostgreSQL, let unique constraints make operations happen once, and move long work onto queues.',
      estimatedMinutes: 25,
      objectives: [
        'Explain what makes a replica stateless and which shared limits scaling out hits',
        'Store agent state in PostgreSQL with optimistic concurrency',
        'Use unique constraints and ON CONFLICT to make an operation happen exactly once',
        'Build a work queue with FOR UPDATE SKIP LOCKED, leases and idempotent handlers',
      ],
      sections: [
        {
          heading: 'Stateless replicas behind a load balancer',
          body: [
            `A stateless service keeps nothing in process memory that it needs after the current request: no sessions, conversation history, task status or idempotency records. Any replica can then serve any request, so you scale by adding replicas behind a load balancer, deploy by replacing them one at a time, and lose nothing when one crashes. The moment a replica holds state you need sticky sessions, load spreads unevenly, and every restart loses work.`,
            `Agent workloads favour particular balancing algorithms. Requests range from milliseconds (status polls) to minutes (task steps), so round robin can pile several long requests onto one replica; least-outstanding-requests or least-connections spread them better. In-process caches are still fine, as long as they are only caches: losing one costs latency, never correctness.`,
            `Count shared resources when you scale out. PostgreSQL's default max_connections is 100, and every connection is a backend process using several megabytes of memory. Ten replicas with a pool of 20 connections each want 200. Either size pools as the limit divided by the number of replicas, leaving headroom for migrations and administration, or put a pooler such as PgBouncer in transaction mode in front. The same arithmetic applies to provider rate limits: a 500-requests-per-minute LLM quota is shared by all replicas, not granted to each.`,
          ].join('\n\n'),
        },
        {
          heading: 'State in PostgreSQL',
          body: [
            `State that must survive restarts and be visible to every replica goes in a database, and PostgreSQL is a good default: transactions, constraints, JSONB for semi-structured agent memory, row-level locking and mature hosting. Typical agent tables are tasks (status, owner, input, result), steps or messages (one row per LLM call or tool call, with tokens and cost), idempotency keys, and a ledger of payments.`,
            `Two replicas can read the same row, modify it and write it back, and the second write silently discards the first: a lost update. Optimistic concurrency prevents it with a version column. Read the row and its version, then UPDATE ... SET version = version + 1 ... WHERE id = $1 AND version = $2. If someone changed the row in between, the update matches zero rows and the caller re-reads and tries again. No lock is held while the agent thinks, which matters when thinking is a 20-second model call.`,
            `Use transactions for changes that must happen together, such as marking a step done and recording its cost, but never hold a transaction open across an LLM or HTTP call: it keeps locks and a pooled connection busy for seconds. Read, call the model outside any transaction, then write in a short transaction guarded by the version check.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'A task table with a version column and an optimistic update that detects concurrent writers.',
            source: `// Minimal database interface: node-postgres's Pool#query has this shape.
interface Db {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<{ rows: T[]; rowCount: number | null }>;
}

export const schema = \`
CREATE TABLE agent_tasks (
  id         uuid PRIMARY KEY,
  owner_id   text NOT NULL,
  status     text NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed')),
  memory     jsonb NOT NULL DEFAULT '{}',
  version    integer NOT NULL DEFAULT 0,
  updated_at timestamptz NOT NULL DEFAULT now()
);\`;

export async function loadTask(db: Db, id: string) {
  const { rows } = await db.query<{ memory: Record<string, unknown>; version: number }>(
    'SELECT memory, version FROM agent_tasks WHERE id = $1',
    [id],
  );
  return rows[0];
}

// Applies only if nobody changed the row since we read it; false means re-read and re-apply.
export async function saveMemory(db: Db, id: string, expectedVersion: number, memory: object): Promise<boolean> {
  const result = await db.query(
    \`UPDATE agent_tasks
        SET memory = $3, version = version + 1, updated_at = now()
      WHERE id = $1 AND version = $2\`,
    [id, expectedVersion, JSON.stringify(memory)],
  );
  return result.rowCount === 1;
}
`,
          },
        },
        {
          heading: 'Unique constraints make an operation happen once',
          body: [
            `The classic bug of a scaled-out service is check-then-act: SELECT to see whether the invoice was paid and, if not, pay and INSERT a record. Two replicas handling the same retried request can both run the SELECT before either INSERT commits, both see nothing, and both pay. Application-level checks cannot close this window; even inside one process the gap spans an await.`,
            `Let the database arbitrate. Put a UNIQUE constraint on the column that identifies the operation (invoice id, idempotency key, external message id) and claim it with INSERT ... ON CONFLICT (invoice_id) DO NOTHING RETURNING id. Exactly one of the concurrent inserts gets a row back and proceeds; the others get no row, and they read the existing record and report its status instead of acting. A plain INSERT that violates the constraint fails with SQLSTATE 23505, unique_violation, which you can catch for the same effect.`,
            `For side effects outside the database, such as an on-chain payment or an email, the pattern is claim, act, record: insert the pending record, perform the action (with the external system's own idempotency key if it has one), then store the result. If the process dies between acting and recording, a reconciliation job finds pending records older than a few minutes and checks the external system before retrying, never blindly repeating the action.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'Claiming a payout with a unique constraint so exactly one of many concurrent callers proceeds.',
            source: `interface Db {
  query<T>(sql: string, params?: unknown[]): Promise<{ rows: T[] }>;
}

export const payoutsTable = \`
CREATE TABLE payouts (
  id           bigserial PRIMARY KEY,
  invoice_id   text NOT NULL UNIQUE,  -- at most one payout per invoice, enforced by the database
  status       text NOT NULL DEFAULT 'pending',
  tx_signature text
);\`;

// Any number of replicas may call this for the same invoice at once; exactly one gets claimed: true.
export async function claimPayout(db: Db, invoiceId: string): Promise<{ claimed: boolean; payoutId: string }> {
  const inserted = await db.query<{ id: string }>(
    \`INSERT INTO payouts (invoice_id) VALUES ($1)
     ON CONFLICT (invoice_id) DO NOTHING
     RETURNING id\`,
    [invoiceId],
  );
  const row = inserted.rows[0];
  if (row) return { claimed: true, payoutId: row.id };
  // Someone else owns this payout: report its state, never pay again.
  const existing = await db.query<{ id: string }>('SELECT id FROM payouts WHERE invoice_id = $1', [invoiceId]);
  const other = existing.rows[0];
  if (!other) throw new Error('payout row disappeared between INSERT and SELECT');
  return { claimed: false, payoutId: other.id };
}
`,
          },
        },
        {
          heading: 'Queues for long-running work',
          body: [
            `A queue separates accepting work from doing it. The API inserts a job and returns 202 within milliseconds; workers pull jobs at the rate they can handle. Bursts wait in the queue instead of overloading the model provider, and workers scale on their own signal, queue age, rather than CPU, since an agent worker waiting on a model is busy but nearly idle.`,
            `Almost every queue delivers at least once. A worker that crashes after doing the work but before acknowledging it will see the job again, so handlers must be idempotent, using the unique-constraint technique above. Retry failed jobs with backoff, and after a maximum number of attempts move them to a dead-letter state for a human to inspect, so a poison job cannot loop forever and burn tokens.`,
            `PostgreSQL can serve as the queue up to some hundreds of jobs per second. SELECT ... FOR UPDATE SKIP LOCKED, available since PostgreSQL 9.5, lets many workers each claim a different row without waiting on rows that others hold. Combine it with a lease column (locked_until) so that a job held by a crashed worker becomes claimable again, and have long tasks extend their lease as they progress. Dedicated brokers such as RabbitMQ, SQS or Kafka add throughput and routing at the price of another system to run.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'A PostgreSQL work queue: claim with SKIP LOCKED and a lease, back off on failure, dead-letter after 5 attempts.',
            source: `interface Db {
  query<T>(sql: string, params?: unknown[]): Promise<{ rows: T[] }>;
}
interface Job {
  id: string;
  kind: string;
  payload: unknown;
  attempts: number;
}

// SKIP LOCKED lets workers poll concurrently; the 5-minute lease frees jobs held by crashed workers.
const CLAIM = \`
UPDATE jobs SET locked_until = now() + interval '5 minutes', attempts = attempts + 1
 WHERE id = (SELECT id FROM jobs
              WHERE done_at IS NULL AND run_after <= now() AND (locked_until IS NULL OR locked_until < now())
              ORDER BY run_after LIMIT 1
              FOR UPDATE SKIP LOCKED)
RETURNING id, kind, payload, attempts\`;

export async function workOnce(db: Db, handle: (job: Job) => Promise<void>): Promise<boolean> {
  const [job] = (await db.query<Job>(CLAIM)).rows;
  if (!job) return false; // nothing due
  try {
    await handle(job); // must be idempotent: an expired lease can hand the job to a second worker
    await db.query('UPDATE jobs SET done_at = now(), locked_until = NULL WHERE id = $1', [job.id]);
  } catch (err) {
    if (job.attempts >= 5) {
      await db.query('UPDATE jobs SET done_at = now(), dead = true, error = $2 WHERE id = $1', [job.id, String(err)]);
    } else {
      const delaySeconds = Math.min(3600, 10 * 2 ** job.attempts);
      await db.query(
        'UPDATE jobs SET locked_until = NULL, run_after = now() + make_interval(secs => $3), error = $2 WHERE id = $1',
        [job.id, String(err), delaySeconds],
      );
    }
  }
  return true;
}
`,
          },
        },
      ],
      keyTakeaways: [
        'Replicas must keep no required state in memory, so any replica can serve any request and none loses work by crashing.',
        "Ten replicas with 20-connection pools exceed PostgreSQL's default max_connections of 100; size pools per replica or use PgBouncer.",
        'Optimistic concurrency updates WHERE id = $1 AND version = $2 and treats zero affected rows as a conflict to re-read and retry.',
        'A UNIQUE constraint with INSERT ... ON CONFLICT DO NOTHING RETURNING lets exactly one of many concurrent callers claim an operation.',
        'Queues deliver at least once, so handlers must be idempotent; FOR UPDATE SKIP LOCKED plus a lease turns a PostgreSQL table into a work queue.',
      ],
      questions: [
        {
          prompt:
            'Twelve replicas each open a pool of 10 connections to a PostgreSQL server that uses the default max_connections. What happens?',
          correct: 'They need 120 connections, more than the default limit of 100, so some connection attempts fail.',
          distractors: [
            'PostgreSQL queues the extra connections until others close, so nothing fails.',
            'The limit applies per database user, so each replica gets its own 100.',
            'They need only 12 connections, because the replicas share one pool.',
          ],
          explanation:
            'Connections beyond max_connections are refused. Size each pool as the limit divided by the replica count, with headroom, or put PgBouncer in front.',
        },
        {
          prompt: "Why does 'SELECT to check, then INSERT' fail to prevent double payouts across replicas?",
          correct: 'Two replicas can both run the SELECT and find no row before either INSERT commits.',
          distractors: [
            'PostgreSQL caches SELECT results per connection, so new rows stay invisible.',
            'INSERT statements from different replicas are applied in random order.',
            "The SELECT takes an exclusive lock that blocks the other replica's INSERT forever.",
          ],
          explanation:
            'The check and the insert are separate steps, and nothing stops another transaction from running between them. A unique constraint makes the database arbitrate.',
        },
        {
          prompt:
            'Two replicas run INSERT ... ON CONFLICT (invoice_id) DO NOTHING RETURNING id for the same invoice at the same time. What does the second one get?',
          correct: 'No row back, which tells it another caller already claimed the invoice.',
          distractors: [
            'The id of the existing row, which it then uses to pay the invoice.',
            'An error with SQLSTATE 23505 that aborts its transaction.',
            'A second row, because ON CONFLICT only checks committed data.',
          ],
          explanation:
            'DO NOTHING suppresses the unique violation and returns no row. Only a plain INSERT raises 23505; RETURNING yields nothing when the insert was skipped.',
        },
        {
          prompt: 'What does FOR UPDATE SKIP LOCKED give a job queue built on PostgreSQL?',
          correct: 'Concurrent workers each claim a different job without waiting on rows locked by others.',
          distractors: [
            'Each job is delivered exactly once, even if the worker crashes midway.',
            'Locked rows are deleted automatically when the transaction commits.',
            'Workers receive jobs in strict first-in, first-out order across the cluster.',
          ],
          explanation:
            'SKIP LOCKED makes a worker pass over rows another transaction has locked instead of blocking. It does not give exactly-once delivery; handlers still need to be idempotent.',
        },
        {
          prompt: 'Why must queue job handlers be idempotent?',
          correct: 'Queues deliver at least once, so a job can run again after a crash before acknowledgement.',
          distractors: [
            'Workers run every job twice on purpose to check that the results match.',
            'Idempotent handlers run faster because the database caches their results.',
            'Queues reject handlers that write to the database more than once per job.',
          ],
          explanation:
            'A worker can finish the work and die before marking the job done, or lose its lease, so the same job reaches a handler again.',
        },
      ],
      exercise: {
        title: 'Pay each invoice exactly once',
        challenge:
          'Several replicas receive the same "pay invoice" request at the same moment. Write the payouts table with the constraint that makes a payout unique, an in-memory store that behaves like INSERT ... ON CONFLICT DO NOTHING, and payInvoiceOnce, which only sends money when its own claim succeeded. Prove it by firing ten concurrent calls for one invoice.',
        requirements: [
          'PAYOUTS_SQL creates a payouts table whose invoice_id column is NOT NULL and UNIQUE.',
          'MemoryPayoutStore.claim behaves like INSERT ... ON CONFLICT DO NOTHING: of many concurrent claims for one invoice, exactly one resolves to true.',
          "payInvoiceOnce calls send only when its claim succeeded, then records the transaction id; other callers return 'already-claimed' with the existing row and never call send.",
          'Ten concurrent payInvoiceOnce calls for the same invoice result in exactly one call to send.',
        ],
        starterCode: `export const PAYOUTS_SQL = \`
-- TODO: CREATE TABLE payouts (...) with a unique invoice_id
\`;

export interface PayoutRow {
  status: 'pending' | 'paid';
  txId?: string;
}

export interface PayoutStore {
  /** Like INSERT ... ON CONFLICT (invoice_id) DO NOTHING RETURNING id: true only for the caller that inserted. */
  claim(invoiceId: string): Promise<boolean>;
  complete(invoiceId: string, txId: string): Promise<void>;
  get(invoiceId: string): Promise<PayoutRow | undefined>;
}

export class MemoryPayoutStore implements PayoutStore {
  private readonly rows = new Map<string, PayoutRow>();

  async claim(invoiceId: string): Promise<boolean> {
    // TODO: check and insert atomically (no await in between)
    return false;
  }

  async complete(invoiceId: string, txId: string): Promise<void> {
    // TODO
  }

  async get(invoiceId: string): Promise<PayoutRow | undefined> {
    return this.rows.get(invoiceId);
  }
}

export type PayoutOutcome =
  | { outcome: 'paid-now'; txId: string }
  | { outcome: 'already-claimed'; row: PayoutRow | undefined };

export async function payInvoiceOnce(
  store: PayoutStore,
  invoiceId: string,
  send: (invoiceId: string) => Promise<string>,
): Promise<PayoutOutcome> {
  // TODO: claim, then send and complete only if the claim succeeded
  return { outcome: 'already-claimed', row: undefined };
}
`,
        solution: `export const PAYOUTS_SQL = \`
CREATE TABLE payouts (
  id         bigserial PRIMARY KEY,
  invoice_id text NOT NULL UNIQUE,
  status     text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'paid')),
  tx_id      text,
  created_at timestamptz NOT NULL DEFAULT now()
);
-- claim: INSERT INTO payouts (invoice_id) VALUES ($1) ON CONFLICT (invoice_id) DO NOTHING RETURNING id;
\`;

export interface PayoutRow {
  status: 'pending' | 'paid';
  txId?: string;
}

export interface PayoutStore {
  claim(invoiceId: string): Promise<boolean>;
  complete(invoiceId: string, txId: string): Promise<void>;
  get(invoiceId: string): Promise<PayoutRow | undefined>;
}

export class MemoryPayoutStore implements PayoutStore {
  private readonly rows = new Map<string, PayoutRow>();

  async claim(invoiceId: string): Promise<boolean> {
    // The check and the insert run with no await in between, so within one process they are atomic,
    // just as the unique constraint makes them atomic across processes.
    if (this.rows.has(invoiceId)) return false;
    this.rows.set(invoiceId, { status: 'pending' });
    return true;
  }

  async complete(invoiceId: string, txId: string): Promise<void> {
    this.rows.set(invoiceId, { status: 'paid', txId });
  }

  async get(invoiceId: string): Promise<PayoutRow | undefined> {
    return this.rows.get(invoiceId);
  }
}

export type PayoutOutcome =
  | { outcome: 'paid-now'; txId: string }
  | { outcome: 'already-claimed'; row: PayoutRow | undefined };

export async function payInvoiceOnce(
  store: PayoutStore,
  invoiceId: string,
  send: (invoiceId: string) => Promise<string>,
): Promise<PayoutOutcome> {
  if (!(await store.claim(invoiceId))) return { outcome: 'already-claimed', row: await store.get(invoiceId) };
  // If send throws, the row stays 'pending' for a reconciliation job to check; nobody else will pay it.
  const txId = await send(invoiceId);
  await store.complete(invoiceId, txId);
  return { outcome: 'paid-now', txId };
}

const store = new MemoryPayoutStore();
let sends = 0;
const send = async (invoiceId: string): Promise<string> => {
  sends++;
  await new Promise((resolve) => setTimeout(resolve, 10)); // the payment takes a while
  return \`tx-\${invoiceId}-\${sends}\`;
};
const outcomes = await Promise.all(Array.from({ length: 10 }, () => payInvoiceOnce(store, 'inv-42', send)));
console.log({ sends, paidNow: outcomes.filter((o) => o.outcome === 'paid-now').length }); // { sends: 1, paidNow: 1 }
console.log(await store.get('inv-42')); // { status: 'paid', txId: 'tx-inv-42-1' }
`,
        hints: [
          'An async function runs synchronously until its first await, so a has() check followed directly by set() cannot interleave with another claim.',
          'Decide whether to pay from the claim result alone; reading the row first and then inserting reintroduces the check-then-act race.',
          'Promise.all over Array.from({ length: 10 }, ...) starts ten calls before any of them finishes.',
        ],
      },
    },
    // ------------------------------------------------------------------------------------------
    {
      id: 'security-and-secrets',
      title: 'Security and Secrets',
      preview:
        'How to protect an agent service and its keys: secrets loaded from files or the environment and kept out of code and logs, least privilege, input validation, rate limiting, and spending limits for agents that hold wallets.',
      estimatedMinutes: 25,
      objectives: [
        'Load secrets from mounted files or environment variables and redact them from logs',
        'Apply least privilege to credentials, tools and outbound network access',
        'Validate requests and model-generated tool arguments, and rate-limit with a token bucket',
        'Enforce per-payment, daily and recipient limits before an agent signs a payment',
      ],
      sections: [
        {
          heading: 'Secrets: from files or the environment, never in code or logs',
          body: [
            `A secret in source code is in every clone, in every CI log that prints the file, and in the git history forever; deleting it in a later commit does not remove it. Once a key has been committed or logged, treat it as leaked and rotate it. Keep secrets out of the repository entirely: .env files in .gitignore, and a secret scanner such as gitleaks in CI and as a pre-commit hook.`,
            `At runtime, load secrets from the environment or from files. Files mounted by the orchestrator (Kubernetes secret volumes, Docker secrets under /run/secrets) are preferable for high-value keys, because environment variables are inherited by every child process, readable in /proc/PID/environ, and often dumped by crash reporters and debug pages. A common convention, used by the official PostgreSQL image among others, is a NAME_FILE variable pointing to the file, with NAME as the fallback. Read each secret once at startup and fail fast if it is missing.`,
            `Logs leak more secrets than code does. Redact by field name (authorization, cookie, api key, password, token, private key, mnemonic) before anything is serialised, and beware of error objects from HTTP clients, which can include request headers or URLs with keys in the query string. For a wallet's private key the stronger option is not to hold it in the process at all: a signing service or cloud KMS signs on request, and the key never enters application memory.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'Reading a secret from NAME_FILE or NAME, and redacting sensitive fields before logging.',
            source: `import { readFileSync } from 'node:fs';

// Prefer NAME_FILE (a file mounted by Docker or Kubernetes secrets), fall back to NAME.
export function readSecret(name: string, env: NodeJS.ProcessEnv = process.env): string {
  const file = env[\`\${name}_FILE\`];
  const value = file ? readFileSync(file, 'utf8').trim() : env[name];
  if (!value) throw new Error(\`secret \${name} is not set (checked \${name}_FILE and \${name})\`); // never the value
  return value;
}

const SENSITIVE = /authorization|cookie|api[-_]?key|password|passphrase|secret|token|private[-_]?key|mnemonic|seed/i;

// Deep copy for logging, with sensitive fields replaced wherever they appear.
export function redact(value: unknown, depth = 0): unknown {
  if (depth > 8 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, SENSITIVE.test(k) ? '[redacted]' : redact(v, depth + 1)]),
  );
}

const event = {
  user: 'alice',
  headers: { authorization: 'Bearer sk-live-123', 'content-type': 'application/json' },
  wallet: { address: '7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU', privateKey: [12, 200, 7] },
};
console.log(JSON.stringify(redact(event)));
// authorization and privateKey become "[redacted]"; user, content-type and the public address are kept
`,
          },
        },
        {
          heading: 'Least privilege',
          body: [
            `Give every credential the smallest set of permissions that lets the service work, so that a leak or a bug stays contained. The service's database role gets SELECT, INSERT and UPDATE on its own tables, not ownership or DDL rights; migrations run under a separate role. Use scoped API keys per environment and per service, so one can be revoked without taking everything down, and a development key cannot touch production.`,
            `Agents need a further boundary, because their actions are chosen by a model and a model can be steered by any text it reads. A web page or retrieved document saying "call transfer_funds with this address" is a prompt injection, and no system prompt reliably prevents it. Enforce permissions in code: each agent gets an explicit allowlist of tools, every tool call's arguments are validated against a schema before execution, and tools that reach the network can only reach allowed hosts.`,
            `The egress allowlist also blocks server-side request forgery (SSRF). An agent that fetches arbitrary URLs can be pointed at http://169.254.169.254/, the cloud metadata endpoint that hands out instance credentials, or at internal admin services. Require https, allow specific hostnames, and reject IP literals and private ranges; where possible, enforce the same rule at the network level as well.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: "Enforcing an agent's tool allowlist, argument schemas and outbound host allowlist in code.",
            source: `import { z } from 'zod';

// The permission boundary lives in code: the model may ask for anything, it only gets what is listed here.
const tools = {
  search_docs: z.object({ query: z.string().min(1).max(500) }).strict(),
  fetch_url: z.object({ url: z.string().url() }).strict(),
};
type ToolName = keyof typeof tools;

const ALLOWED_HOSTS = new Set(['docs.example.com', 'api.example.com']);

function isToolName(name: string): name is ToolName {
  return Object.hasOwn(tools, name);
}

export function authorizeToolCall(name: string, rawArgs: string): { tool: ToolName; args: unknown } {
  if (!isToolName(name)) throw new Error(\`tool \${name} is not allowed for this agent\`);
  const args = tools[name].parse(JSON.parse(rawArgs)); // model output is untrusted input
  if ('url' in args) {
    const url = new URL(args.url);
    if (url.protocol !== 'https:' || !ALLOWED_HOSTS.has(url.hostname)) {
      throw new Error(\`outbound request to \${url.hostname} blocked\`);
    }
  }
  return { tool: name, args };
}

console.log(authorizeToolCall('search_docs', '{"query":"refund policy"}'));
const blocked: [string, string][] = [
  ['fetch_url', '{"url":"http://169.254.169.254/latest/meta-data/"}'],
  ['shell', '{"cmd":"cat /etc/passwd"}'],
];
for (const [tool, args] of blocked) {
  try {
    authorizeToolCall(tool, args);
  } catch (err) {
    console.log(String(err)); // blocked host, then unknown tool
  }
}
`,
          },
        },
        {
          heading: 'Input validation and rate limiting',
          body: [
            `Validate every input at the boundary against a schema: types, required fields, string lengths, numeric ranges, enums. Reject unknown fields (zod's .strict()) rather than passing them deeper, cap the request body size (Express's JSON parser defaults to 100 KB), and cap prompt length explicitly, because every character you accept becomes tokens you pay for. Model output deserves the same treatment: tool-call arguments generated by an LLM are untrusted input and must pass the same schema checks as a request from the internet.`,
            `Rate limiting protects capacity and budget. The token bucket is the usual algorithm: a bucket holds up to capacity tokens, refills at a fixed rate, and each request takes one. Capacity sets the allowed burst and the refill rate the sustained throughput, so a bucket of 20 refilling at 5 per second admits a burst of 20 and then 5 requests per second. Limit per API key rather than per IP address, and reject with 429 Too Many Requests plus a Retry-After header that tells well-behaved clients when to return.`,
            `For agents, count cost, not just requests: one request can start a 50-step task, so charge the bucket by estimated tokens or money. With several replicas, per-process buckets allow N times the intended limit; keep the counters in a shared store such as Redis or PostgreSQL, or divide the limit by the replica count and accept some inaccuracy.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'A per-key token bucket that returns the Retry-After value when a request is rejected.',
            source: `// Capacity allows a burst; refillPerSecond is the sustained rate.
class TokenBucket {
  private tokens: number;
  private last: number;
  private readonly capacity: number;
  private readonly refillPerSecond: number;

  constructor(capacity: number, refillPerSecond: number, now = Date.now()) {
    this.capacity = capacity;
    this.refillPerSecond = refillPerSecond;
    this.tokens = capacity;
    this.last = now;
  }

  /** Takes cost tokens if available; otherwise says how many seconds to wait (the Retry-After value). */
  take(cost = 1, now = Date.now()): { ok: true } | { ok: false; retryAfterSeconds: number } {
    this.tokens = Math.min(this.capacity, this.tokens + ((now - this.last) / 1000) * this.refillPerSecond);
    this.last = now;
    if (this.tokens >= cost) {
      this.tokens -= cost;
      return { ok: true };
    }
    return { ok: false, retryAfterSeconds: Math.ceil((cost - this.tokens) / this.refillPerSecond) };
  }
}

const buckets = new Map<string, TokenBucket>(); // per API key; share the state across replicas in production
function admit(apiKey: string, now: number) {
  let bucket = buckets.get(apiKey);
  if (!bucket) buckets.set(apiKey, (bucket = new TokenBucket(20, 5, now)));
  return bucket.take(1, now);
}

let admitted = 0;
for (let i = 0; i < 30; i++) if (admit('key-1', 0).ok) admitted++;
console.log(admitted, admit('key-1', 0), admit('key-1', 1000)); // 20, then retry after 1 s, then ok
`,
          },
        },
        {
          heading: 'Spending limits for agents that hold wallets',
          body: [
            `An agent that can pay, through a card API or an on-chain wallet paying per call, turns every bug and every successful prompt injection into a financial loss. A loop that retries a paid call once a second pays 86,400 times a day. Limits must therefore live in code that runs before every payment is signed, outside the model's reach; a system prompt saying "never spend more than 10 USDC" is a request, not a control.`,
            `Layer the controls: a maximum per payment, a maximum per rolling 24 hours, an allowlist of recipients, and a threshold above which a human must approve. Check and reserve in one atomic step, so two concurrent payments cannot both pass a check that only one of them fits; in one process that means no await between check and record, across replicas a database transaction or a conditional UPDATE. Represent amounts as integers in the asset's smallest unit, bigint in TypeScript (USDC has 6 decimals, SOL has 9 and is counted in lamports), because binary floating point cannot represent 0.1 exactly and totals drift.`,
            `Limit the blast radius too. Keep the agent's hot wallet funded with only what a day or two of operation needs and top it up from a separate cold wallet; record every payment in an append-only ledger with the task that caused it; and alert on spend rate, new recipients and repeated denials, which are a sign that something is pushing the agent to pay.`,
          ].join('\n\n'),
          code: {
            language: 'typescript',
            caption: 'A spending guard with bigint amounts that checks and reserves in one synchronous step.',
            source: `const USDC = 1_000_000n; // 6 decimals: amounts are integers in the smallest unit

interface Policy {
  perPaymentMax: bigint;
  dailyMax: bigint;
  approvalAbove: bigint;
  allowedRecipients: Set<string>;
}
type Decision = { action: 'pay' } | { action: 'needs-approval' | 'deny'; reason: string };

class SpendingGuard {
  private spent: { at: number; amount: bigint }[] = [];
  constructor(private readonly policy: Policy) {}

  /** Checks and records in one synchronous step, so concurrent payments cannot both pass. */
  authorize(recipient: string, amount: bigint, now = Date.now()): Decision {
    const p = this.policy;
    if (amount <= 0n) return { action: 'deny', reason: 'amount must be positive' };
    if (!p.allowedRecipients.has(recipient)) return { action: 'deny', reason: 'recipient not on allowlist' };
    if (amount > p.perPaymentMax) return { action: 'deny', reason: 'above per-payment limit' };
    this.spent = this.spent.filter((s) => now - s.at < 24 * 3_600_000); // rolling 24 hours
    const total = this.spent.reduce((sum, s) => sum + s.amount, 0n);
    if (total + amount > p.dailyMax) return { action: 'deny', reason: '24-hour limit reached' };
    if (amount > p.approvalAbove) return { action: 'needs-approval', reason: 'above approval threshold' };
    this.spent.push({ at: now, amount });
    return { action: 'pay' };
  }
}

const guard = new SpendingGuard({
  perPaymentMax: 50n * USDC,
  dailyMax: 100n * USDC,
  approvalAbove: 20n * USDC,
  allowedRecipients: new Set(['weather-api.example']),
});
console.log(guard.authorize('weather-api.example', 5n * USDC)); // pay
console.log(guard.authorize('attacker.example', 1n * USDC)); // deny: not on allowlist
console.log(guard.authorize('weather-api.example', 30n * USDC)); // needs-approval
`,
          },
        },
      ],
      keyTakeaways: [
        'A committed or logged secret must be rotated; load secrets at startup from mounted files (NAME_FILE) or environment variables, and redact them from logs by field name.',
        'Prompt injection can steer a model, so permissions live in code: per-agent tool allowlists, schema-validated tool arguments and an outbound host allowlist.',
        'Validate every request and every model-generated tool argument with a schema, reject unknown fields, and cap body and prompt sizes.',
        'A token bucket with capacity 20 refilling 5 per second allows bursts of 20 and 5 requests per second sustained; rejected requests get 429 with Retry-After.',
        'Spending limits (per payment, per rolling 24 hours, recipient allowlist, approval threshold) are enforced atomically before signing, with integer amounts in the smallest unit.',
      ],
      questions: [
        {
          prompt: 'An API key was committed to git and removed in the next commit an hour later. What is the correct response?',
          correct: 'Rotate the key, because it remains readable in the repository history.',
          distractors: [
            'Nothing more, because the commit that removed it deleted it everywhere.',
            'Amend the last commit message so that the key is no longer indexed.',
            'Make the repository private, which invalidates any copies already made.',
          ],
          explanation:
            'Every clone and the history still contain the key. Rotation is the only way to make the leaked value useless.',
        },
        {
          prompt: "Where should an agent's limit of 10 USDC per payment be enforced?",
          correct: 'In code that checks each payment before it is signed, outside the model.',
          distractors: [
            'In the system prompt, stated clearly as a rule the model must follow.',
            'In the tool description, so the model sees the limit when choosing a tool.',
            "In a monthly review of the wallet's transaction history.",
          ],
          explanation:
            'Prompts can be overridden by prompt injection or ignored by a buggy loop, and reviews come too late. Only a check in the signing path is a control.',
        },
        {
          prompt:
            'A token bucket has capacity 20 and refills 5 tokens per second. A client sends 30 requests at once. How many are admitted immediately?',
          correct: '20, the capacity of the bucket; after that about 5 per second.',
          distractors: [
            '5, the refill rate, with the rest rejected until the next second.',
            '25, the capacity plus one second of refill added in advance.',
            '30, because the bucket refills while the requests are processed.',
          ],
          explanation:
            'Capacity is the burst size: a full bucket holds 20 tokens. The refill rate then sets the sustained rate of 5 requests per second.',
        },
        {
          prompt: 'Why should payment amounts be held as bigint in the smallest unit rather than as floating-point numbers?',
          correct: 'Binary floating point cannot represent values like 0.1 exactly, so totals drift.',
          distractors: [
            'Floating-point numbers cannot be serialised to JSON at all.',
            'Blockchains reject transactions whose amounts have a decimal point.',
            'bigint arithmetic is faster than floating-point arithmetic in JavaScript.',
          ],
          explanation:
            '0.1 + 0.2 !== 0.3 in JavaScript. Integer amounts in the smallest unit (micro-USDC, lamports) add and compare exactly.',
        },
        {
          prompt: 'Why must the arguments of a tool call produced by the model be validated before execution?',
          correct: 'Model output is untrusted input and can be steered by prompt injection.',
          distractors: [
            'Validation makes the model produce shorter and cheaper tool calls.',
            'Providers reject tool calls that the client did not validate first.',
            'Unvalidated arguments stop the model from seeing the tool result.',
          ],
          explanation:
            'The model writes whatever its context leads it to, including text planted by an attacker. Schema checks and allowlists in code are the boundary.',
        },
      ],
      exercise: {
        title: 'Enforce spending limits before signing',
        challenge:
          'Write a SpendingGuard that an agent runtime calls before it signs any payment. It enforces a recipient allowlist, a per-payment maximum, a rolling 24-hour maximum and an approval threshold, and it reserves approved amounts immediately so concurrent payments cannot overspend. If a payment later fails, its reservation can be released.',
        requirements: [
          "Amounts are bigint in the asset's smallest unit; non-positive amounts are denied.",
          'Deny recipients not on the allowlist, payments above perPaymentMax, and payments that would take the reserved total of the last 24 hours above dailyMax.',
          "Payments above approvalAbove that pass the other checks return 'needs-approval' and reserve nothing.",
          "An approved payment is reserved synchronously and returns { action: 'pay', reservationId }; release(reservationId) frees it, for example when sending fails.",
        ],
        starterCode: `import { randomUUID } from 'node:crypto';

export interface SpendingPolicy {
  perPaymentMax: bigint;
  dailyMax: bigint;
  approvalAbove: bigint;
  allowedRecipients: ReadonlySet<string>;
}

export type Decision =
  | { action: 'pay'; reservationId: string }
  | { action: 'needs-approval'; reason: string }
  | { action: 'deny'; reason: string };

export class SpendingGuard {
  private readonly policy: SpendingPolicy;
  private readonly reservations = new Map<string, { at: number; amount: bigint }>();

  constructor(policy: SpendingPolicy) {
    this.policy = policy;
  }

  authorize(recipient: string, amount: bigint, now = Date.now()): Decision {
    // TODO: positive amount, allowlist, per-payment max, rolling 24-hour total, approval threshold
    // TODO: reserve with randomUUID() and return the reservation id
    return { action: 'deny', reason: 'not implemented' };
  }

  release(reservationId: string): void {
    // TODO
  }
}
`,
        solution: `import { randomUUID } from 'node:crypto';

export interface SpendingPolicy {
  perPaymentMax: bigint;
  dailyMax: bigint;
  approvalAbove: bigint;
  allowedRecipients: ReadonlySet<string>;
}

export type Decision =
  | { action: 'pay'; reservationId: string }
  | { action: 'needs-approval'; reason: string }
  | { action: 'deny'; reason: string };

const DAY_MS = 24 * 60 * 60 * 1000;

export class SpendingGuard {
  private readonly policy: SpendingPolicy;
  private readonly reservations = new Map<string, { at: number; amount: bigint }>();

  constructor(policy: SpendingPolicy) {
    this.policy = policy;
  }

  private reservedInWindow(now: number): bigint {
    let total = 0n;
    for (const [id, r] of this.reservations) {
      if (now - r.at >= DAY_MS) this.reservations.delete(id);
      else total += r.amount;
    }
    return total;
  }

  authorize(recipient: string, amount: bigint, now = Date.now()): Decision {
    const p = this.policy;
    if (amount <= 0n) return { action: 'deny', reason: 'amount must be positive' };
    if (!p.allowedRecipients.has(recipient)) return { action: 'deny', reason: \`recipient \${recipient} is not allowed\` };
    if (amount > p.perPaymentMax) return { action: 'deny', reason: 'amount exceeds the per-payment limit' };
    if (this.reservedInWindow(now) + amount > p.dailyMax) return { action: 'deny', reason: 'amount would exceed the 24-hour limit' };
    if (amount > p.approvalAbove) return { action: 'needs-approval', reason: 'amount is above the approval threshold' };
    const reservationId = randomUUID(); // no await between the checks and this write
    this.reservations.set(reservationId, { at: now, amount });
    return { action: 'pay', reservationId };
  }

  release(reservationId: string): void {
    this.reservations.delete(reservationId);
  }
}

const USDC = 1_000_000n;
const guard = new SpendingGuard({
  perPaymentMax: 80n * USDC,
  dailyMax: 100n * USDC,
  approvalAbove: 70n * USDC,
  allowedRecipients: new Set(['weather-api.example']),
});
const t0 = Date.now();
const first = guard.authorize('weather-api.example', 60n * USDC, t0);
const second = guard.authorize('weather-api.example', 60n * USDC, t0); // would total 120: denied
console.log(first.action, second);
if (first.action === 'pay') guard.release(first.reservationId); // sending failed: free the reservation
console.log(guard.authorize('weather-api.example', 60n * USDC, t0).action); // pay
console.log(guard.authorize('weather-api.example', 60n * USDC, t0 + DAY_MS).action); // pay: a day later
`,
        hints: [
          'Do all checks and the reservation without any await in between; that is what makes the guard safe against concurrent calls in one process.',
          'Drop reservations older than 24 hours while summing the window, so the map does not grow forever.',
          'Compare bigint values with bigint literals such as 0n; mixing bigint and number in arithmetic throws a TypeError.',
        ],
      },
    },
  ],
};
