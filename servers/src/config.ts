import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Caip2Network, DEFAULT_PORTS, SOLANA_DEVNET, SolanaAddress, USDC_DEVNET } from '@agent-economy/contracts';
import { z } from 'zod';

const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');


/** education -> EDUCATION, btc-metrics -> BTC_METRICS: the prefix of a service's environment variables. */
export const envPrefix = (id: string) => id.toUpperCase().replace(/-/g, '_');

const Port = z.coerce.number().int().min(0).max(65535);

const Env = z.object({
  HOST: z.string().min(1).default('127.0.0.1'),
  DATA_DIR: z.string().min(1).default(resolve(repoRoot, '.data')),
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL').optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  SOLANA_NETWORK: Caip2Network.default(SOLANA_DEVNET),
  STABLECOIN_MINT: SolanaAddress.default(USDC_DEVNET),
  PAYMENT_TIMEOUT_SECONDS: z.coerce.number().int().min(10).max(600).default(60),
  LLM_BASE_URL: z.string().url().optional(),
  LLM_MODEL: z.string().min(1).optional(),
  LLM_API_KEY: z.string().optional(),
});

export type Config = z.infer<typeof Env> & {
  services: Record<string, { port: number; publicUrl: string; walletSecret?: string }>;
};

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Reads and checks the environment once, at start; every bad value is named with what is wrong. */
export function loadConfig(ids: readonly string[], environment: NodeJS.ProcessEnv = process.env): Config {
  // An empty variable (FOO= in an env file) means unset, as most tools read it.
  const env = Object.fromEntries(Object.entries(environment).filter(([, value]) => value !== '')) as NodeJS.ProcessEnv;
  const problems: string[] = [];
  const base = Env.safeParse(env);
  if (!base.success) for (const issue of base.error.issues) problems.push(`${issue.path.join('.')}: ${issue.message}`);
  if (env.LLM_BASE_URL && !env.LLM_MODEL) problems.push('LLM_MODEL: required when LLM_BASE_URL is set');

  const services: Config['services'] = {};
  for (const id of ids) {
    const prefix = envPrefix(id);
    const port = Port.safeParse(env[`${prefix}_PORT`] ?? DEFAULT_PORTS[id as keyof typeof DEFAULT_PORTS]);
    if (!port.success) {
      problems.push(`${prefix}_PORT: must be a port number 0-65535`);
      continue;
    }
    const host = base.success ? base.data.HOST : '127.0.0.1';
    const publicUrl = env[`${prefix}_PUBLIC_URL`] ?? `http://${host}:${port.data}`;
    if (!z.string().url().safeParse(publicUrl).success) problems.push(`${prefix}_PUBLIC_URL: must be an absolute URL`);
    const walletSecret = env[`${prefix}_WALLET_SECRET`];
    services[id] = { port: port.data, publicUrl, ...(walletSecret ? { walletSecret } : {}) };
  }
  if (problems.length || !base.success) {
    throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  return { ...base.data, services };
}
