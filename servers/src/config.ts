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
  envPrefix,
  listRoutes,
  type PaymentMeta,
  type ServiceDefinition,
} from '@agent-economy/contracts';
import { z } from 'zod';

const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');

const Port = z.coerce.number().int().min(0).max(65535);

/** A comma-separated list, each item checked by `item`; empty when unset. */
const listOf = (item: z.ZodTypeAny) =>
  z
    .string()
    .optional()
    .transform((text, ctx) => {
      const items = (text ?? '').split(',').map((s) => s.trim()).filter(Boolean);
      for (const value of items) {
        const checked = item.safeParse(value);
        if (!checked.success) ctx.addIssue({ code: z.ZodIssueCode.custom, message: `"${value}" ${checked.error.issues[0]?.message ?? 'is not valid'}` });
      }
      return items;
    });

const Env = z.object({
  HOST: z.string().min(1).default('127.0.0.1'),
  DATA_DIR: z.string().min(1).default(resolve(repoRoot, '.data')),
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL').optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  SOLANA_NETWORK: Caip2Network.default(SOLANA_DEVNET),
  STABLECOIN_MINT: SolanaAddress.default(USDC_DEVNET),
  PAYMENT_TIMEOUT_SECONDS: z.coerce.number().int().min(10).max(600).default(60),
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
  // Unset: `npm start` runs the local ledger on LEDGER_PORT and every service settles through the local facilitator.
  SOLANA_RPC_URL: z.string().url().optional(),
  LEDGER_PORT: Port.default(DEFAULT_PORTS.ledger),
  // Web origins allowed to call the local ledger's RPC and faucet from a browser; none by default.
  LEDGER_CORS_ORIGINS: listOf(z.string().url()),
  // What one faucet request may grant.
  LEDGER_FAUCET_MAX_USD: z.string().regex(/^\d{1,12}(\.\d{1,6})?$/, 'must be a decimal USD amount such as "1000"').default('1000'),
  LEDGER_FAUCET_MAX_SOL: z.string().regex(/^(100(\.0{1,9})?|\d{1,2}(\.\d{1,9})?)$/, 'must be a decimal SOL amount of at most 100, such as "10"').default('10'),
  FACILITATOR_URL: z.string().url().optional(),
  DEMO_WALLET_SECRET: z.string().min(1).optional(),
  LLM_BASE_URL: z.string().url().optional(),
  LLM_MODEL: z.string().min(1).optional(),
  LLM_API_KEY: z.string().optional(),
  // Market data services read the seeded market model (simulated), or the public providers (live). `embedded` is the
  // earlier name of `simulated`, still accepted.
  MARKET_DATA: z.preprocess((v) => (v === 'embedded' ? 'simulated' : v), z.enum(['simulated', 'live']).default('simulated')),
  // Replicas with one seed simulate one market, minute by minute.
  MARKET_SEED: z.string().min(1).max(200).default('agent-economy'),
  BTC_METRICS_COINMETRICS_URL: z.string().url().optional(),
  BTC_METRICS_BGEOMETRICS_URL: z.string().url().optional(),
  // DIDs whose vouching makes an identity's trust chain verified (e.g. known auditors).
  IDENTITY_TRUST_ANCHORS: listOf(AgentDid),
  // Wallets whose reputation reports count as verified: the escrow and gateway of other processes.
  REPUTATION_TRUSTED_REPORTERS: listOf(SolanaAddress),
  // Wallets that may open negotiations for other buyers and pay with their agreements: the gateways of other processes.
  NEGOTIATION_BROKERS: listOf(SolanaAddress),
});

export interface ServiceSettings {
  port: number;
  publicUrl: string;
  walletSecret?: string;
  prices?: Record<string, PaymentMeta>;
}

export type Config = z.infer<typeof Env> & {
  services: Record<string, ServiceSettings>;
  /** Where every service of the deployment answers, mounted here or not: `<ID>_PUBLIC_URL`, else its default port on HOST. */
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
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return [`${name}: must be a JSON object of route key to price`];
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
    else problems.push(`${name}: "${key}": ${parsed.error.issues.map((i) => `${i.path.join('.') || 'price'} ${i.message}`).join('; ')}`);
  }
  return problems.length ? problems : prices;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Reads and checks the environment once, at start; every bad value is named with what is wrong. */
export function loadConfig(mounted: readonly ServiceDefinition[], environment: NodeJS.ProcessEnv = process.env): Config {
  // An empty variable (FOO= in an env file) means unset, as most tools read it.
  const env = Object.fromEntries(Object.entries(environment).filter(([, value]) => value !== '')) as NodeJS.ProcessEnv;
  const problems: string[] = [];
  const base = Env.safeParse(env);
  if (!base.success) for (const issue of base.error.issues) problems.push(`${issue.path.join('.')}: ${issue.message}`);
  if (env.LLM_BASE_URL && !env.LLM_MODEL) problems.push('LLM_MODEL: required when LLM_BASE_URL is set');

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
    if (!own && named && !z.string().url().safeParse(named).success) problems.push(`${envPrefix(id)}_PUBLIC_URL: must be an absolute URL`);
    serviceUrls[id] = (own ?? named ?? `http://${host}:${port}`).replace(/\/+$/, '');
  }
  if (problems.length || !base.success) {
    throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  return { ...base.data, services, serviceUrls };
}
