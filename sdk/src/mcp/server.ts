import { createHash } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { routeMeta } from '@agent-economy/contracts';
import { fileSpendStore, type Payments, type Signer } from '../index';
import { knownServices, loadDeploymentFile, type DeployedService, type Deployment } from '../cli/deployment';
import { UsageError, classify } from '../cli/failure';
import { deploymentPayments, invokeRoute, needsWallet } from '../cli/invoke';
import {
  describePrice,
  inputJsonSchema,
  routesOf,
  validateInput,
  type RouteEntry,
  type RouteInput,
} from '../cli/routes';
import { spendLogPath } from '../cli/spend-log';
import { readBalance, resolveWallet } from '../cli/wallet';

export interface McpBudgets {
  /** The most one tool call may pay, USD. */
  perCallUsd: string;
  /** The most the session pays one service, USD; undefined: no cap. */
  perServiceUsd?: string | undefined;
  /** The most the session pays in all, USD; undefined: no cap. */
  totalUsd?: string | undefined;
}

export interface McpServerOptions {
  deploymentSource: string;
  walletFile?: string;
  budgets: McpBudgets;
  /** Only these services' tools; default every service of the deployment the contracts know. */
  services?: string[];
}

interface RouteTool {
  tool: Tool;
  deployed: DeployedService;
  entry: RouteEntry;
}

/** MCP tool names allow [A-Za-z0-9_-], at most 64 characters. */
export function toolName(serviceId: string, routeKey: string, taken: ReadonlySet<string> = new Set()): string {
  const name = `${serviceId}_${routeKey}`.replace(/[^A-Za-z0-9_-]/g, '_');
  if (name.length <= 64 && !taken.has(name)) return name;
  // Too long, or two routes sanitised to one name: keep a prefix and make it unique with a short hash.
  const hash = createHash('sha256').update(`${serviceId}.${routeKey}`).digest('hex').slice(0, 8);
  return `${name.slice(0, 55)}_${hash}`;
}

function describeRoute(entry: RouteEntry): string {
  const { route, service } = entry;
  const meta = routeMeta(route);
  const price =
    meta.payment.kind === 'free'
      ? 'Free.'
      : `Price: ${describePrice(meta.payment)} USD, paid automatically from the wallet within the budgets.`;
  const parts = [
    `${service.title}: ${route.summary ?? `${route.method} ${route.path}`}.`,
    price,
    route.description ?? '',
    meta.auth === 'siwx' ? 'Signs in with the wallet (SIGN-IN-WITH-X).' : '',
    `${route.method} ${route.path}; arguments: {params, query, body} as the route takes them.`,
  ];
  const text = parts.filter(Boolean).join(' ');
  return text.length > 1500 ? `${text.slice(0, 1497)}...` : text;
}

/** One tool per route of every service of the deployment (filtered by `only`), in the deployment's order. */
export function routeTools(deployment: Deployment, only?: readonly string[]): RouteTool[] {
  const taken = new Set<string>(['balance', 'spend']);
  const selected = knownServices(deployment).filter(({ contract }) => !only || only.includes(contract.id));
  if (only) {
    const missing = only.filter((id) => !selected.some((s) => s.contract.id === id));
    if (missing.length) throw new UsageError(`--services names services not in the deployment: ${missing.join(', ')}`);
  }
  return selected.flatMap(({ deployed, contract }) =>
    routesOf(contract).map((entry) => {
      const name = toolName(contract.id, entry.key, taken);
      taken.add(name);
      const meta = routeMeta(entry.route);
      const tool: Tool = {
        name,
        title: `${contract.id} ${entry.key}`,
        description: describeRoute(entry),
        inputSchema: inputJsonSchema(entry.route) as Tool['inputSchema'],
        annotations: {
          title: `${contract.title}: ${entry.route.summary ?? entry.key}`,
          readOnlyHint: entry.route.method === 'GET' && meta.payment.kind === 'free',
          openWorldHint: true,
        },
      };
      return { tool, deployed, entry };
    }),
  );
}

const text = (value: unknown): CallToolResult['content'] => [
  { type: 'text', text: typeof value === 'string' ? value : JSON.stringify(value, null, 2) },
];

function failure(error: unknown): CallToolResult {
  const f = classify(error);
  const refusedBeforePaying = f.code === 'budget_exceeded' ? 'Refused before paying: ' : '';
  return {
    isError: true,
    content: text(`${refusedBeforePaying}${f.message}`).concat(
      text({ error: { code: f.code, message: f.message, ...(f.details !== undefined ? { details: f.details } : {}) } }),
    ),
  };
}

/** The MCP server itself, without a transport: tools of the deployment's routes, plus balance and spend. */
export function createMcpServer(
  deployment: Deployment,
  options: { wallet?: Signer; payments: Payments; budgets: McpBudgets; services?: string[]; version?: string },
): Server {
  const tools = routeTools(deployment, options.services);
  const byName = new Map(tools.map((t) => [t.tool.name, t]));
  const { wallet, payments, budgets } = options;
  const budgetSummary = () => ({
    perCallUsd: budgets.perCallUsd,
    ...(budgets.perServiceUsd ? { perServiceUsd: budgets.perServiceUsd } : {}),
    ...(budgets.totalUsd ? { totalUsd: budgets.totalUsd } : {}),
    spentUsd: payments.spentUsd(),
    ...(payments.remainingUsd() !== undefined ? { remainingTotalUsd: payments.remainingUsd() } : {}),
  });
  const extra: Tool[] = [
    {
      name: 'balance',
      title: 'Wallet balance',
      description:
        "The paying wallet's address, its SOL and USD stablecoin balances read from the chain, and the session's budgets: what was spent and what they still allow. With `address`, that wallet's balances instead.",
      inputSchema: {
        type: 'object',
        properties: { address: { type: 'string', description: 'a Solana address; default the paying wallet' } },
        additionalProperties: false,
      },
      annotations: { readOnlyHint: true },
    },
    {
      name: 'spend',
      title: 'Spend log',
      description:
        'Receipts of every payment in the spend log (service, route, amount, payTo, transaction), totals per service and what the budgets still allow. With `service`, that service only.',
      inputSchema: {
        type: 'object',
        properties: { service: { type: 'string', description: 'a service id, e.g. education' } },
        additionalProperties: false,
      },
      annotations: { readOnlyHint: true },
    },
  ];

  const server = new Server(
    { name: 'agent-economy', version: options.version ?? '0.1.0' },
    { capabilities: { tools: {} } },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [...tools.map((t) => t.tool), ...extra] }));
  server.setRequestHandler(CallToolRequestSchema, async (request, { signal }): Promise<CallToolResult> => {
    const { name } = request.params;
    const args = (request.params.arguments ?? {}) as Record<string, unknown>;
    try {
      if (name === 'balance') {
        const address = typeof args.address === 'string' && args.address ? args.address : wallet?.address;
        if (!address) throw new UsageError('no wallet is configured: give an address');
        return { content: text({ ...(await readBalance(deployment, address)), budgets: budgetSummary() }) };
      }
      if (name === 'spend') {
        const service = typeof args.service === 'string' ? args.service : undefined;
        const receipts = payments.receipts.filter((r) => !service || r.service === service);
        return {
          content: text({
            receipts,
            spentUsd: service ? payments.spentUsd(service) : payments.spentUsd(),
            byService: payments.spentUsdByService(),
            ...(service && payments.remainingUsd(service) !== undefined
              ? { remainingUsd: payments.remainingUsd(service) }
              : {}),
            budgets: budgetSummary(),
          }),
        };
      }
      const found = byName.get(name);
      if (!found) return { isError: true, content: text(`no tool named ${name}`) };
      const unknown = Object.keys(args).filter((key) => !['params', 'query', 'body'].includes(key));
      if (unknown.length)
        throw new UsageError(`unknown argument(s) ${unknown.join(', ')}: a route tool takes params, query and body`);
      const input = validateInput(found.entry.route, args as RouteInput);
      if (!wallet && needsWallet(found.entry)) {
        throw new UsageError(
          `${name} costs ${describePrice(routeMeta(found.entry.route).payment)} USD or signs in, and no wallet is configured (--wallet or AGENT_ECONOMY_WALLET)`,
        );
      }
      const response = await invokeRoute(deployment, found.deployed, found.entry, input, {
        payments,
        ...(wallet ? { wallet } : {}),
        signal,
      });
      return { content: text({ result: response.data, ...(response.payment ? { payment: response.payment } : {}) }) };
    } catch (error) {
      return failure(error);
    }
  });
  return server;
}

/** `agent-economy mcp`: reads the deployment and wallet, then serves MCP on stdin/stdout until stdin closes. */
export async function runMcpServer(options: McpServerOptions): Promise<void> {
  const deployment = await loadDeploymentFile(options.deploymentSource);
  let wallet: Signer | undefined;
  try {
    wallet = (await resolveWallet(options.walletFile, deployment)).wallet;
  } catch (error) {
    if (options.walletFile) throw error;
    // Free tools still work; paid ones say that no wallet is configured.
    process.stderr.write(
      `agent-economy mcp: no wallet (${(error as Error).message}); only free routes can be called\n`,
    );
  }
  // The SDK's spend log in a file: budgets count what earlier runs spent, and `agent-economy spend` lists it.
  const spendLog = spendLogPath();
  const store = fileSpendStore(spendLog);
  const { perCallUsd, perServiceUsd, totalUsd } = options.budgets;
  const payments = deploymentPayments(deployment, {
    maxPerCallUsd: perCallUsd,
    ...(perServiceUsd ? { maxPerServiceUsd: perServiceUsd } : {}),
    ...(totalUsd ? { maxTotalUsd: totalUsd } : {}),
    // A language model decides what to call: whatever the other caps, it spends at most this much in a rolling day
    // unless the operator says otherwise (AGENT_ECONOMY_MAX_USD_PER_DAY).
    maxPerDayUsd: process.env.AGENT_ECONOMY_MAX_USD_PER_DAY || '5',
    store,
  });
  // Load it (and take its lock) now: a log another process holds is a startup error, not a failed tool call.
  await payments.ready();
  const server = createMcpServer(deployment, {
    ...(wallet ? { wallet } : {}),
    payments,
    budgets: options.budgets,
    ...(options.services ? { services: options.services } : {}),
  });
  await server.connect(new StdioServerTransport());
  // The client closing stdin ends the session: release the spend log once its last record is written.
  process.stdin.once('end', () => void store.close());
  process.stderr.write(
    `agent-economy mcp: ${deployment.services.length} service(s) from ${deployment.source}, wallet ${wallet?.address ?? 'none'}, at most ${perCallUsd} USD a call` +
      `${perServiceUsd ? `, ${perServiceUsd} per service` : ''}${totalUsd ? `, ${totalUsd} in all` : ''}; spend log ${spendLog} (${payments.spentUsd()} USD spent)\n`,
  );
}
