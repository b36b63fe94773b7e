import { z } from 'zod';
import { ErrorEnvelope } from '../core/errors';
import { Timestamp } from '../core/chain';

// Schemas several services share. A service's own schemas live in its own file.

/** Which engine produced an AI output: the built-in rules engine or an LLM behind an OpenAI-compatible API. */
export interface Generator {
  engine: 'builtin' | 'llm';
  model: string;
}
export const Generator: z.ZodType<Generator> = z
  .object({ engine: z.enum(['builtin', 'llm']), model: z.string() })
  .describe('which engine produced this output');

/** The three places a data service's numbers can come from. */
export type DataMode = 'chain' | 'live' | 'simulated';
export const DataMode = z
  .enum(['chain', 'live', 'simulated'])
  .describe('chain: read from the Solana RPC (local ledger or a cluster); live: a named third-party provider (asOf says when it was read); simulated: the seeded market model, not observed data');

/** Where a data service's answer came from, so simulated data is never mistaken for live data. */
export interface DataSource {
  /**
   * chain: read from the deployment's Solana RPC (the local ledger or a real cluster); live: a named third-party
   * provider, read now or from its cache (asOf says when); simulated: the seeded market model, never observed data.
   */
  mode: DataMode;
  providers: string[];
  asOf: string;
  /** Why some fields of the answer are null (a source this deployment does not read), when any are. */
  note?: string;
}
export const DataSource: z.ZodType<DataSource> = z
  .object({
    mode: DataMode,
    providers: z.array(z.string()).describe('the upstream sources read, e.g. "coingecko" or "local-ledger"'),
    asOf: Timestamp.describe('when the data was read'),
    note: z.string().optional().describe('why some fields of the answer are null: a source this deployment does not read'),
  })
  .describe('where the data came from');

/** Query of every list that can grow: `limit` (1 to 100, default 20) and an opaque `cursor` from `nextCursor`. */
export const PageQuery = {
  limit: z.coerce.number().int().min(1).max(100).default(20).describe('items per page, 1 to 100'),
  cursor: z.string().min(1).max(200).optional().describe('the nextCursor of the previous page'),
};

/** A page of items; `nextCursor` is null on the last page. */
export function page<T extends z.ZodTypeAny>(item: T) {
  return z.object({ items: z.array(item), nextCursor: z.string().nullable() });
}

/** Responses of a route that only an identified caller may use (SIGN-IN-WITH-X): 401 bad or missing proof, 403 not yours. */
export const authErrors = {
  401: ErrorEnvelope,
  403: ErrorEnvelope,
} as const;

/** A provider a data service reads, as its health route reports it. */
export interface UpstreamStatus {
  name: string;
  status: 'ok' | 'failing' | 'unknown';
  lastSuccessAt: string | null;
}

/** The health body of a data service whose contract declares its own health route. */
export interface DataServiceHealth {
  status: 'ok' | 'degraded';
  service: string;
  version: string;
  uptimeSeconds: number;
  database: 'ok';
  upstream: { mode: DataMode; providers: UpstreamStatus[] };
}

export const DataServiceHealth: z.ZodType<DataServiceHealth> = z.object({
  status: z.enum(['ok', 'degraded']).describe('degraded when an upstream provider is failing'),
  service: z.string(),
  version: z.string(),
  uptimeSeconds: z.number().int().min(0),
  database: z.literal('ok'),
  upstream: z.object({
    mode: DataMode,
    providers: z.array(
      z.object({
        name: z.string(),
        status: z.enum(['ok', 'failing', 'unknown']).describe('from the last call to the provider; unknown before the first'),
        lastSuccessAt: Timestamp.nullable(),
      }),
    ),
  }),
});
