import { readFileSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { atomicToUsd, routeMeta, usdToAtomic } from '@agent-economy/contracts';
import { fileSpendStore, type PaymentReceipt } from '../index';
import { defaultDeploymentSource, knownServices, loadDeploymentFile, contractOf, type Deployment } from './deployment';
import { CliFailure, EXIT, UsageError, classify } from './failure';
import { deploymentPayments, invokeRoute, needsWallet } from './invoke';
import { colorEnabled, style, table, withSpinner, type Style } from './output';
import { describePrice, findRoute, parseJsonFlag, priceOf, routesOf, validateInput } from './routes';
import { readSpendLog, spendLogPath } from './spend-log';
import { fundFromFaucet, readBalance, resolveWallet, writeNewKeyFile } from './wallet';

const EXIT_CODES = `Exit codes:
  0  ok
  1  usage: bad flags or arguments, unknown service or route, no deployment or wallet
  2  validation: the input breaks the route's contract (checked before any request), or the service answered 400
  3  payment: the price is over --max-usd or a budget, no wallet or funds to pay, or the service refused the payment
  4  service: the service answered with an error (404, 409, 422, 429, 5xx, ...)
  5  connection: a service, the ledger's RPC or its faucet did not answer
  6  payment outcome unknown: a payment was sent but not confirmed; check the chain before paying again`;

const DEPLOYMENT_HELP = `  --deployment <path|url>  services.json of the deployment (default: $AGENT_ECONOMY_DEPLOYMENT, else
                           $DATA_DIR/services.json, else ./.data/services.json, which npm start writes)`;
const WALLET_HELP = `  --wallet <file>          solana-keygen key file that pays (default: $AGENT_ECONOMY_WALLET, a key or a key
                           file, else the deployment's demo wallet)`;

const HELP: Record<string, string> = {
  main: `agent-economy: call and pay the services of an Agent Economy deployment from the command line

Usage: agent-economy <command> [options]

Commands:
  services                    the deployment's services: id, url, wallet and health
  routes <service>            a service's routes with method, path and price
  call <service>.<route>      call a route, paying its price within --max-usd
  wallet new|balance|fund     make a key file, read SOL and stablecoin balances, top up from the local faucet
  spend                       receipts of what this command and its MCP server paid
  mcp                         an MCP server over stdio: every route of the deployment as a tool

Options everywhere:
  --json                      machine-readable output on stdout (errors too: {"error": {...}})
  -h, --help                  help for a command, e.g. agent-economy call --help
${DEPLOYMENT_HELP}

Colours only on a terminal and never with NO_COLOR set.

${EXIT_CODES}`,
  services: `Usage: agent-economy services [--deployment <path|url>] [--json]

Lists the deployment's services: id, url, the wallet it is paid to, and its /health. Exits 4 when any
service is not healthy.

${DEPLOYMENT_HELP}`,
  routes: `Usage: agent-economy routes <service> [--json]

Lists a service's routes from its contract: the name to call it by, method, path, price in USD and summary.
Example: agent-economy routes education`,
  call: `Usage: agent-economy call <service>.<route> [--body <json>] [--params <json>] [--query <json>] [--max-usd <usd>]

Calls one route. The input is checked against the route's contract before any request; a priced route is
paid from the wallet when its quote is within --max-usd, and refused before paying when it is not.
Prints the result on stdout and the receipt (amount, payTo, transaction) on stderr; with --json, one
object {"result", "receipt"} on stdout.

  --body <json|@file>      JSON request body
  --params <json|a=b>      path parameters, JSON or a=1&b=2
  --query <json|a=b>       query parameters, JSON or a=1&b=2
  --max-usd <usd>          the most this call may cost (default $AGENT_ECONOMY_MAX_USD_PER_CALL, else 1)
  --timeout <seconds>      per attempt (default 60)
${WALLET_HELP}
${DEPLOYMENT_HELP}

Payments are recorded in the SDK's spend log $AGENT_ECONOMY_SPEND_LOG (default ~/.agent-economy/spend.jsonl),
which one process at a time may write: a running \`agent-economy mcp\` holds it.
Example: agent-economy call education.lesson --body '{"courseId":"rag","lessonId":"chunking"}' --max-usd 0.1

${EXIT_CODES}`,
  wallet: `Usage: agent-economy wallet <new|balance|fund> [options]

  wallet new [--out <file>]                  writes a new solana-keygen key file (default ~/.agent-economy/wallet.json;
                                             never over an existing file)
  wallet balance [<address>]                 SOL and stablecoin of the wallet (or address) on the deployment's chain
  wallet fund [<address>] [--usd <usd>] [--sol <sol>]
                                             tops it up from the local ledger's faucet (default --usd 10)
${WALLET_HELP}
${DEPLOYMENT_HELP}`,
  spend: `Usage: agent-economy spend [--service <id>] [--json]

Lists the receipts of the payments this command and its MCP server made, oldest first, with totals per
service, and any payment whose outcome is unknown. Read from the spend log $AGENT_ECONOMY_SPEND_LOG
(default ~/.agent-economy/spend.jsonl).`,
  mcp: `Usage: agent-economy mcp [--max-usd-per-call <usd>] [--max-usd-per-service <usd>] [--max-usd-total <usd>] [--services <ids>]

Runs an MCP server over stdio. Every route of every service in the deployment is a tool named
<service>_<route> (e.g. education_lesson) taking {params, query, body} as the contract defines them;
priced routes are paid from the wallet within the budgets, and a price over a budget is a tool error that
names the budget, never a payment. Tools balance and spend report the wallet and what was paid.
Budgets count everything in the spend log $AGENT_ECONOMY_SPEND_LOG (default ~/.agent-economy/spend.jsonl),
earlier runs included; the server holds that log while it runs.

  --max-usd-per-call <usd>     default $AGENT_ECONOMY_MAX_USD_PER_CALL, else 1
  --max-usd-per-service <usd>  default $AGENT_ECONOMY_MAX_USD_PER_SERVICE, else no cap
  --max-usd-total <usd>        default $AGENT_ECONOMY_MAX_USD_TOTAL, else no cap
  (and at most $AGENT_ECONOMY_MAX_USD_PER_DAY, default 5 USD, in any rolling 24 hours)
  --services <id,id>           only these services' tools (default: all in the deployment)
${WALLET_HELP}
${DEPLOYMENT_HELP}`,
};

interface Io {
  json: boolean;
  out: (text: string) => void;
  err: (text: string) => void;
  /** Styles for stdout and stderr, each on only when that stream is a colour terminal. */
  so: Style;
  se: Style;
}

const COMMON = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  deployment: { type: 'string' },
} as const satisfies ParseArgsConfig['options'];

function parse<const O extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: O) {
  try {
    return parseArgs({ args, options: { ...COMMON, ...options }, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function usd(flag: string, value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  try {
    usdToAtomic(value);
  } catch {
    throw new UsageError(`${flag} must be a USD amount with at most 6 decimals, e.g. 0.1 (got "${value}")`);
  }
  return value;
}

const readFlagFile = (path: string) => {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${path}: ${(error as { code?: string }).code ?? (error as Error).message}`);
  }
};

async function health(url: string): Promise<string> {
  try {
    const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(5_000) });
    if (response.ok) return 'ok';
    const body = (await response.json().catch(() => undefined)) as { error?: { code?: string } } | undefined;
    return `${response.status}${body?.error?.code ? ` ${body.error.code}` : ''}`;
  } catch {
    return 'down';
  }
}

async function servicesCommand(args: string[], io: Io): Promise<number> {
  const { values } = parse(args, {});
  if (values.help) return help('services', io);
  const deployment = await loadDeploymentFile(values.deployment ?? defaultDeploymentSource());
  const rows = await Promise.all(
    deployment.services.map(async (s) => ({
      id: s.id,
      title: s.title ?? contractOf(s.id)?.title ?? '',
      url: s.url,
      wallet: s.wallet ?? '',
      health: await health(s.url),
    })),
  );
  if (io.json) {
    io.out(JSON.stringify({ deployment: deployment.source, chain: deployment.chain, services: rows }, null, 2));
  } else {
    const paint = (h: string) => (h === 'ok' ? io.so.green(h) : io.so.red(h));
    io.out(
      table(
        ['id', 'url', 'wallet', 'health'],
        rows.map((r) => [io.so.cyan(r.id), r.url, r.wallet, paint(r.health)]),
        io.so,
      ),
    );
    io.out(
      io.so.dim(
        `${rows.length} service(s) from ${deployment.source}; chain ${deployment.chain.network} at ${deployment.chain.rpcUrl}`,
      ),
    );
  }
  return rows.every((r) => r.health === 'ok') ? EXIT.ok : EXIT.service;
}

async function routesCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parse(args, {});
  if (values.help) return help('routes', io);
  const [id, ...rest] = positionals;
  if (!id || rest.length)
    throw new UsageError('name one service: agent-economy routes <service>, e.g. agent-economy routes education');
  const service = contractOf(id);
  if (!service) throw new UsageError(`no contract for a service "${id}"`);
  const rows = routesOf(service).map(({ key, route }) => {
    const meta = routeMeta(route);
    return {
      route: key,
      name: `${id}.${key}`,
      method: route.method,
      path: route.path,
      price: describePrice(meta.payment),
      payment: meta.payment,
      auth: meta.auth ?? 'none',
      summary: route.summary ?? '',
    };
  });
  if (io.json) {
    io.out(JSON.stringify({ service: id, routes: rows }, null, 2));
    return EXIT.ok;
  }
  io.out(
    table(
      ['route', 'method', 'path', 'price USD', 'summary'],
      rows.map((r) => [
        io.so.cyan(r.route),
        r.method,
        r.path,
        r.payment.kind === 'free' ? io.so.green(r.price) : io.so.yellow(r.price),
        `${r.summary}${r.auth === 'siwx' ? ' [signs in with the wallet]' : ''}`,
      ]),
      io.so,
    ),
  );
  io.out(io.so.dim(`Call one with: agent-economy call ${id}.<route> --body '{...}' --max-usd <usd>`));
  return EXIT.ok;
}

function printReceipt(receipt: PaymentReceipt, io: Io) {
  io.err(
    `${io.se.green('Paid')} ${io.se.bold(`${receipt.amountUsd} USD`)} (${receipt.amount} atomic units) to ${receipt.payTo}`,
  );
  io.err(`  transaction ${receipt.transaction}`);
  if (receipt.refund) io.err(`  refunded ${receipt.refund.amountAtomic} atomic units in ${receipt.refund.transaction}`);
}

async function callCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parse(args, {
    body: { type: 'string' },
    params: { type: 'string' },
    query: { type: 'string' },
    'max-usd': { type: 'string' },
    timeout: { type: 'string' },
    wallet: { type: 'string' },
  });
  if (values.help) return help('call', io);
  const [target, ...rest] = positionals;
  if (!target || rest.length)
    throw new UsageError('name one route: agent-economy call <service>.<route>, e.g. education.lesson');
  const maxUsd =
    usd('--max-usd', values['max-usd']) ??
    usd('AGENT_ECONOMY_MAX_USD_PER_CALL', process.env.AGENT_ECONOMY_MAX_USD_PER_CALL) ??
    '1';
  const timeout = values.timeout === undefined ? undefined : Number(values.timeout);
  if (timeout !== undefined && !(timeout > 0))
    throw new UsageError(`--timeout must be a number of seconds (got "${values.timeout}")`);
  const deployment = await loadDeploymentFile(values.deployment ?? defaultDeploymentSource());
  const known = knownServices(deployment);
  const entry = findRoute(
    target,
    known.map((k) => k.contract),
  );
  const deployed = known.find((k) => k.contract.id === entry.service.id)!.deployed;
  // Checked before the wallet is read or anything is sent: a bad input costs nothing.
  const input = validateInput(entry.route, {
    params: parseJsonFlag('--params', values.params, { pairs: true, readFile: readFlagFile }) as
      Record<string, unknown> | undefined,
    query: parseJsonFlag('--query', values.query, { pairs: true, readFile: readFlagFile }) as
      Record<string, unknown> | undefined,
    body: parseJsonFlag('--body', values.body, { readFile: readFlagFile }),
  });
  let wallet;
  try {
    wallet = (await resolveWallet(values.wallet, deployment)).wallet;
  } catch (error) {
    // A free route that does not sign in works without a wallet.
    if (needsWallet(entry) || values.wallet) throw error;
  }
  // The SDK's spend log in a file, so `spend` lists this payment; opened only for a route that may pay,
  // since it is one process's at a time (a running MCP server holds it).
  const store = wallet && needsWallet(entry) ? fileSpendStore(spendLogPath()) : undefined;
  const payments = deploymentPayments(deployment, { maxPerCallUsd: maxUsd, ...(store ? { store } : {}) });
  const label = `${entry.route.method} ${deployed.url}${entry.route.path}`;
  let response;
  try {
    response = await withSpinner(
      label,
      invokeRoute(deployment, deployed, entry, input, {
        payments,
        ...(wallet ? { wallet } : {}),
        ...(timeout ? { timeoutMs: timeout * 1000 } : {}),
      }),
    );
  } finally {
    await store?.close();
  }
  if (io.json) {
    io.out(JSON.stringify({ result: response.data, receipt: response.payment ?? null }, null, 2));
  } else {
    io.out(typeof response.data === 'string' ? response.data : JSON.stringify(response.data, null, 2));
    if (response.payment) printReceipt(response.payment, io);
    else io.err(io.se.dim(`No payment (${describePrice(priceOf(entry.route))}).`));
  }
  return EXIT.ok;
}

async function walletCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parse(args, {
    out: { type: 'string' },
    usd: { type: 'string' },
    sol: { type: 'string' },
    wallet: { type: 'string' },
  });
  const [action, address, ...rest] = positionals;
  if (values.help || !action) return help('wallet', io, values.help ? EXIT.ok : EXIT.usage);
  if (rest.length) throw new UsageError(`unexpected arguments: ${rest.join(' ')}`);
  if (action === 'new') {
    if (address) throw new UsageError('wallet new takes no address; use --out <file>');
    const made = await writeNewKeyFile(values.out ?? '~/.agent-economy/wallet.json');
    if (io.json) io.out(JSON.stringify(made, null, 2));
    else {
      io.out(`${io.so.green('New wallet')} ${io.so.bold(made.address)}`);
      io.out(
        `Key file ${made.keyFile} (keep it secret). Use it with --wallet ${made.keyFile} or AGENT_ECONOMY_WALLET=${made.keyFile}`,
      );
    }
    return EXIT.ok;
  }
  if (action !== 'balance' && action !== 'fund')
    throw new UsageError(`unknown wallet action "${action}": new, balance or fund`);
  const deployment = await loadDeploymentFile(values.deployment ?? defaultDeploymentSource());
  const owner = address ?? (await resolveWallet(values.wallet, deployment)).wallet.address;
  if (action === 'balance') {
    const balance = await readBalance(deployment, owner);
    if (io.json) io.out(JSON.stringify(balance, null, 2));
    else io.out(table(['address', 'SOL', 'USD'], [[balance.address, balance.sol, io.so.bold(balance.usd)]], io.so));
    return EXIT.ok;
  }
  const amounts = { ...(values.sol ? { sol: values.sol } : {}), usd: values.usd ?? (values.sol ? undefined : '10') };
  if (amounts.usd === undefined) delete amounts.usd;
  const funded = await withSpinner(
    'faucet',
    fundFromFaucet(deployment, owner, amounts as { usd?: string; sol?: string }),
  );
  if (io.json) io.out(JSON.stringify({ address: owner, ...funded }, null, 2));
  else
    io.out(
      `${io.so.green('Funded')} ${owner}: now ${io.so.bold(`${funded.usd} USD`)} and ${funded.sol} SOL (${funded.signatures.length} transaction(s))`,
    );
  return EXIT.ok;
}

async function spendCommand(args: string[], io: Io): Promise<number> {
  const { values } = parse(args, { service: { type: 'string' } });
  if (values.help) return help('spend', io);
  const path = spendLogPath();
  const log = readSpendLog(path);
  const receipts = log.receipts.filter((r) => !values.service || r.service === values.service);
  const pending = log.pending.filter((p) => !values.service || p.service === values.service);
  const spent = (r: PaymentReceipt) => BigInt(r.amount) - (r.refund ? BigInt(r.refund.amountAtomic) : 0n);
  const byService = new Map<string, bigint>();
  for (const r of receipts) byService.set(r.service, (byService.get(r.service) ?? 0n) + spent(r));
  const total = [...byService.values()].reduce((a, b) => a + b, 0n);
  if (io.json) {
    io.out(
      JSON.stringify(
        {
          log: path,
          receipts,
          pending,
          totalUsd: atomicToUsd(total),
          byService: Object.fromEntries([...byService].map(([id, amount]) => [id, atomicToUsd(amount)])),
        },
        null,
        2,
      ),
    );
    return EXIT.ok;
  }
  for (const p of pending) {
    io.err(
      io.se.yellow(
        `Pending: ${p.route} of ${p.service}, ${p.requirements.amount} atomic units to ${p.requirements.payTo}, outcome unknown (payer signature ${p.payerSignature})`,
      ),
    );
  }
  if (!receipts.length) {
    io.out(`No payments recorded in ${path}.`);
    return EXIT.ok;
  }
  io.out(
    table(
      ['at', 'service', 'route', 'USD', 'payTo', 'transaction'],
      receipts.map((r) => [
        r.at,
        io.so.cyan(r.service),
        r.route,
        `${r.amountUsd}${r.refund ? ' (refunded)' : ''}`,
        r.payTo,
        r.transaction,
      ]),
      io.so,
    ),
  );
  io.out(
    `${io.so.bold(`${atomicToUsd(total)} USD`)} in ${receipts.length} payment(s): ${[...byService].map(([id, a]) => `${id} ${atomicToUsd(a)}`).join(', ')}`,
  );
  return EXIT.ok;
}

async function mcpCommand(args: string[], io: Io): Promise<number> {
  const { values } = parse(args, {
    'max-usd-per-call': { type: 'string' },
    'max-usd-per-service': { type: 'string' },
    'max-usd-total': { type: 'string' },
    services: { type: 'string' },
    wallet: { type: 'string' },
  });
  if (values.help) return help('mcp', io);
  const env = process.env;
  const { runMcpServer } = await import('../mcp/server');
  await runMcpServer({
    deploymentSource: values.deployment ?? defaultDeploymentSource(),
    ...(values.wallet ? { walletFile: values.wallet } : {}),
    budgets: {
      perCallUsd:
        usd('--max-usd-per-call', values['max-usd-per-call']) ??
        usd('AGENT_ECONOMY_MAX_USD_PER_CALL', env.AGENT_ECONOMY_MAX_USD_PER_CALL) ??
        '1',
      perServiceUsd:
        usd('--max-usd-per-service', values['max-usd-per-service']) ??
        usd('AGENT_ECONOMY_MAX_USD_PER_SERVICE', env.AGENT_ECONOMY_MAX_USD_PER_SERVICE),
      totalUsd:
        usd('--max-usd-total', values['max-usd-total']) ??
        usd('AGENT_ECONOMY_MAX_USD_TOTAL', env.AGENT_ECONOMY_MAX_USD_TOTAL),
    },
    ...(values.services
      ? {
          services: values.services
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
        }
      : {}),
  });
  return EXIT.ok;
}

function help(topic: string, io: Io, code: number = EXIT.ok): number {
  (code === EXIT.ok ? io.out : io.err)(HELP[topic] ?? HELP.main!);
  return code;
}

const COMMANDS: Record<string, (args: string[], io: Io) => Promise<number>> = {
  services: servicesCommand,
  routes: routesCommand,
  call: callCommand,
  wallet: walletCommand,
  spend: spendCommand,
  mcp: mcpCommand,
};

/** Runs the command line; resolves to the exit code. */
export async function run(argv: string[]): Promise<number> {
  // Output piped into a reader that stopped (`| head`) ends the command quietly, as for any Unix tool.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(EXIT.ok);
    throw error;
  });
  const json = argv.includes('--json');
  const io: Io = {
    json,
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
    so: style(colorEnabled(process.stdout)),
    se: style(colorEnabled(process.stderr)),
  };
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    const topic = command === 'help' ? rest[0] : undefined;
    return help(topic && HELP[topic] ? topic : 'main', io, command ? EXIT.ok : EXIT.usage);
  }
  const handler = COMMANDS[command];
  try {
    if (!handler) throw new UsageError(`unknown command "${command}"; run agent-economy --help`);
    return await handler(rest, io);
  } catch (error) {
    const failure = classify(error);
    if (json) {
      io.out(
        JSON.stringify(
          {
            error: {
              code: failure.code,
              exitCode: failure.exitCode,
              message: failure.message,
              ...(failure.details !== undefined ? { details: failure.details } : {}),
            },
          },
          null,
          2,
        ),
      );
    } else {
      io.err(`${io.se.red('error')} ${failure.message}`);
      const fields = (failure.details as { fields?: { field: string; message: string }[] } | undefined)?.fields;
      if (fields?.length && !(failure instanceof CliFailure && failure.code === 'invalid_input')) {
        for (const f of fields) io.err(`  ${f.field}: ${f.message}`);
      }
    }
    return failure.exitCode;
  }
}
