import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  AgentDid,
  Caip2Network,
  DEFAULT_PORTS,
  PaymentMetaSchema,
  SOLANA_DEVNET,
  SolanaAddress,
  USDC_DEVNET,
  UsdAmount,
  envPrefix,
  listRoutes,
  type PaymentMeta,
  type ServiceDefinition,
  usdToAtomic,
} from '@agent-economy/contracts';
import { z } from 'zod';
import { PAYWALL_FAULTS } from './runtime/paywall';

const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');

const Port = z.coerce.number().int().min(0).max(65535);

/** A comma-separated list, each item checked by `item`; empty when unset. */
const listOf = (item: z.ZodTypeAny) =>
  z
    .string()
    .optional()
    .transform((text, ctx) => {
      const items = (text ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      for (const value of items) {
        const checked = item.safeParse(value);
        if (!checked.success)
          ctx.addIssue({
            code: z.ZodIssueCode.custom,
            message: `"${value}" ${checked.error.issues[0]?.message ?? 'is not valid'}`,
          });
      }
      return items;
    });

const Env = z.object({
  HOST: z.string().min(1).default('127.0.0.1'),
  DATA_DIR: z.string().min(1).default(resolve(repoRoot, '.data')),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  SOLANA_NETWORK: Caip2Network.default(SOLANA_DEVNET),
  STABLECOIN_MINT: SolanaAddress.default(USDC_DEVNET),
  PAYMENT_TIMEOUT_SECONDS: z.coerce.number().int().min(10).max(600).default(60),
  // Test-only fault injection on the paid path (runtime/paywall.ts PAYWALL_FAULTS): the chaos tests stop a service at
  // one step.
  PAYWALL_FAULT: z.enum(PAYWALL_FAULTS).optional(),
  // Paid routes also accept payment sessions (vouchers; runtime/paywall-session.ts), closing one idle this long.
  PAYWALL_SESSIONS: z.enum(['on', 'off']).default('on'),
  PAYWALL_SESSION_IDLE_SECONDS: z.coerce.number().int().min(5).max(86_400).default(300),
  // A buyer's session close at the facilitator waits this long for the seller to forward the vouchers it holds.
  SESSION_CLOSE_GRACE_SECONDS: z.coerce.number().int().min(0).max(600).default(15),
  // The facilitator pays every settlement's fees: caps per minute bound what one burst can cost it.
  FACILITATOR_SETTLE_CAP: z.coerce.number().int().min(1).default(600),
  FACILITATOR_SELLER_SETTLE_CAP: z.coerce.number().int().min(1).default(120),
  FACILITATOR_PAYER_SETTLE_CAP: z.coerce.number().int().min(1).default(60),
  // Highest priority fee the fee payer pays, microlamports per compute unit (x402 clients send 1).
  FACILITATOR_MAX_COMPUTE_UNIT_PRICE: z.coerce.number().int().min(0).max(5_000_000).default(50_000),
  // Whom the fee payer settles for, beyond this process's own services: sellers' payTo wallets, and resource
  // servers' wallets that sign their /verify and /settle calls (any payTo then, e.g. a marketplace's sellers).
  FACILITATOR_SELLERS: listOf(SolanaAddress),
  FACILITATOR_RESOURCE_SERVERS: listOf(SolanaAddress),
  // How long a settlement waits for the ad network's recommendation at most (the spec's 2 s); 0 turns sponsored access
  // off.
  FACILITATOR_ADS_TIMEOUT_MS: z.coerce.number().int().min(0).max(10_000).default(2_000),
  // Facilitator wallets the ad network trusts to report settlements, beyond the deployment's own facilitator.
  ADS_TRUSTED_FACILITATORS: listOf(SolanaAddress),
  // Unset: `npm start` runs the local ledger on LEDGER_PORT and every service settles through the local facilitator.
  SOLANA_RPC_URL: z.string().url().optional(),
  LEDGER_PORT: Port.default(DEFAULT_PORTS.ledger),
  // The web console (servers/src/console): served by a full `npm start`, or by a SERVICES process when set.
  CONSOLE_PORT: Port.default(4000),
  // Web origins allowed to call the local ledger's RPC and faucet from a browser; none by default.
  LEDGER_CORS_ORIGINS: listOf(z.string().url()),
  // What one faucet request may grant.
  LEDGER_FAUCET_MAX_USD: z
    .string()
    .regex(/^\d{1,12}(\.\d{1,6})?$/, 'must be a decimal USD amount such as "1000"')
    .default('1000'),
  LEDGER_FAUCET_MAX_SOL: z
    .string()
    .regex(/^(100(\.0{1,9})?|\d{1,2}(\.\d{1,9})?)$/, 'must be a decimal SOL amount of at most 100, such as "10"')
    .default('10'),
  FACILITATOR_URL: z.string().url().optional(),
  DEMO_WALLET_SECRET: z.string().min(1).optional(),
  LLM_BASE_URL: z.string().url().optional(),
  LLM_MODEL: z.string().min(1).optional(),
  LLM_API_KEY: z.string().optional(),
  // Market data services read the seeded market model (simulated), or the public providers (live). `embedded` is the
  // earlier name of `simulated`, still accepted.
  MARKET_DATA: z.preprocess(
    (v) => (v === 'embedded' ? 'simulated' : v),
    z.enum(['simulated', 'live']).default('simulated'),
  ),
  // Replicas with one seed simulate one market, minute by minute.
  MARKET_SEED: z.string().min(1).max(200).default('agent-economy'),
  BTC_METRICS_COINMETRICS_URL: z.string().url().optional(),
  BTC_METRICS_BGEOMETRICS_URL: z.string().url().optional(),
  // The exchange-flow monitor's providers with MARKET_DATA=live (Coin Metrics community, CoinGecko; a CoinGecko demo
  // key is optional).
  EXCHANGE_FLOWS_COINMETRICS_URL: z.string().url().optional(),
  EXCHANGE_FLOWS_COINGECKO_URL: z.string().url().optional(),
  COINGECKO_API_KEY: z.string().min(1).optional(),
  // The conviction index's live spot providers (MARKET_DATA=live), where they differ from the public APIs.
  CONVICTION_BINANCE_URL: z.string().url().optional(),
  CONVICTION_OKX_URL: z.string().url().optional(),
  CONVICTION_COINGECKO_URL: z.string().url().optional(),
  // DIDs whose vouching makes an identity's trust chain verified (e.g. known auditors).
  IDENTITY_TRUST_ANCHORS: listOf(AgentDid),
  // Wallets whose reputation reports count as verified: the escrow and gateway of other processes.
  REPUTATION_TRUSTED_REPORTERS: listOf(SolanaAddress),
  // `npm start` also runs `npm run simulate` in the background with this many agents (local ledger only).
  SIMULATE_AGENTS: z.coerce.number().int().min(2).max(50).optional(),
  // A fresh local economy has no history for the chain services (intel, tokens, pricing, gas) to read: at each start
  // on the local ledger, four simulated agents take this many steps first (0: none).
  SIMULATE_WARMUP_STEPS: z.coerce.number().int().min(0).max(10_000).default(60),
  // Escrow timers when a create body leaves them out: the buyer's review period (72 h) and the seller's delivery
  // timeout (336 h); and how often the escrow scheduler fires due timers.
  ESCROW_REVIEW_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(720 * 3600)
    .default(72 * 3600),
  ESCROW_TIMEOUT_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(2160 * 3600)
    .default(336 * 3600),
  ESCROW_TICK_SECONDS: z.coerce.number().int().min(1).max(3600).default(5),
  // Wallets that may open negotiations for other buyers and pay with their agreements: the gateways of other processes.
  NEGOTIATION_BROKERS: listOf(SolanaAddress),
  // Wallets besides the parties that may read a negotiation's agreement: the knowledge markets of other processes.
  NEGOTIATION_TRUSTED_READERS: listOf(SolanaAddress),
  // The chat wager service (spec 002): stake limits in USD, the house's share of each pot, how long a challenge waits,
  // how long an accepted wager waits for its flip before it is void (both stakes refunded), and the chain its stakes
  // move on (default: the deployment's, SOLANA_RPC_URL or the local ledger).
  MIN_WAGER_USD: UsdAmount.refine((v) => !/^0(\.0*)?$/.test(v), 'must be more than 0').default('1'),
  MAX_WAGER_USD: UsdAmount.default('25'),
  // Held as basis points (5 % = 500) so that the cut is integer arithmetic.
  HOUSE_CUT_PERCENT: z
    .string()
    .regex(/^\d{1,2}(\.\d{1,2})?$/, 'must be a percentage from 0 to below 100, at most 2 decimals, e.g. "5" or "2.5"')
    .default('5')
    .transform((v) => Math.round(Number(v) * 100)),
  WAGER_CHALLENGE_TTL_SECONDS: z.coerce.number().int().min(30).max(86_400).default(600),
  WAGER_VOID_HOURS: z.coerce.number().int().min(1).max(8_760).default(24),
  CHAIN_RPC_URL: z.string().url().optional(),
});

export interface ServiceSettings {
  port: number;
  publicUrl: string;
  walletSecret?: string;
  prices?: Record<string, PaymentMeta>;
}

export type Config = z.infer<typeof Env> & {
  services: Record<string, ServiceSettings>;
  /**
   * Where every service of the deployment answers, mounted here or not: `<ID>_PUBLIC_URL`, else its default port on
   * HOST.
   */
  serviceUrls: Record<string, string>;
};

/**
 * `<ID>_PRICES`: a JSON object from route key to a USD string (a fixed price) or full payment metadata,
 * e.g. {"lesson":"0.04","quiz":{"kind":"tiered","tiers":[…]}}. Returns the prices or the problems found.
 */
function parsePrices(name: string, text: string, service: ServiceDefinition): Record<string, PaymentMeta> | string[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return [`${name}: must be a JSON object of route key to price`];
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw))
    return [`${name}: must be a JSON object of route key to price`];
  const keys = new Set(listRoutes(service.router).map((r) => r.key));
  const problems: string[] = [];
  const prices: Record<string, PaymentMeta> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (!keys.has(key)) {
      problems.push(`${name}: "${key}" is not a route of ${service.id} (routes: ${[...keys].join(', ')})`);
      continue;
    }
    const parsed = PaymentMetaSchema.safeParse(typeof value === 'string' ? { kind: 'fixed', usd: value } : value);
    if (parsed.success) prices[key] = parsed.data;
    else
      problems.push(
        `${name}: "${key}": ${parsed.error.issues.map((i) => `${i.path.join('.') || 'price'} ${i.message}`).join('; ')}`,
      );
  }
  return problems.length ? problems : prices;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Reads and checks the environment once, at start; every bad value is named with what is wrong. */
export function loadConfig(
  mounted: readonly ServiceDefinition[],
  environment: NodeJS.ProcessEnv = process.env,
): Config {
  // An empty variable (FOO= in an env file) means unset, as most tools read it.
  const env = Object.fromEntries(Object.entries(environment).filter(([, value]) => value !== '')) as NodeJS.ProcessEnv;
  const problems: string[] = [];
  const base = Env.safeParse(env);
  if (!base.success) for (const issue of base.error.issues) problems.push(`${issue.path.join('.')}: ${issue.message}`);
  if (env.LLM_BASE_URL && !env.LLM_MODEL) problems.push('LLM_MODEL: required when LLM_BASE_URL is set');
  if (base.success && usdToAtomic(base.data.MIN_WAGER_USD) > usdToAtomic(base.data.MAX_WAGER_USD))
    problems.push('MIN_WAGER_USD: must not be above MAX_WAGER_USD');

  const services: Config['services'] = {};
  for (const service of mounted) {
    const id = service.id;
    const prefix = envPrefix(id);
    const port = Port.safeParse(env[`${prefix}_PORT`] ?? DEFAULT_PORTS[id as keyof typeof DEFAULT_PORTS]);
    if (!port.success) problems.push(`${prefix}_PORT: must be a port number 0-65535`);
    const host = base.success ? base.data.HOST : '127.0.0.1';
    const publicUrl = env[`${prefix}_PUBLIC_URL`] ?? `http://${host}:${port.data ?? 0}`;
    if (!z.string().url().safeParse(publicUrl).success) problems.push(`${prefix}_PUBLIC_URL: must be an absolute URL`);
    const walletSecret = env[`${prefix}_WALLET_SECRET`];
    const pricesText = env[`${prefix}_PRICES`];
    const prices = pricesText ? parsePrices(`${prefix}_PRICES`, pricesText, service) : undefined;
    if (Array.isArray(prices)) problems.push(...prices);
    services[id] = {
      port: port.data ?? 0,
      publicUrl,
      ...(walletSecret ? { walletSecret } : {}),
      ...(prices && !Array.isArray(prices) ? { prices } : {}),
    };
  }
  const serviceUrls: Record<string, string> = {};
  const host = base.success ? base.data.HOST : '127.0.0.1';
  for (const [id, port] of Object.entries(DEFAULT_PORTS)) {
    const own = services[id]?.publicUrl;
    const named = env[`${envPrefix(id)}_PUBLIC_URL`];
    if (!own && named && !z.string().url().safeParse(named).success)
      problems.push(`${envPrefix(id)}_PUBLIC_URL: must be an absolute URL`);
    serviceUrls[id] = (own ?? named ?? `http://${host}:${port}`).replace(/\/+$/, '');
  }
  if (problems.length || !base.success) {
    throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  return { ...base.data, services, serviceUrls };
}
