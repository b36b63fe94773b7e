import { z } from 'zod';
import { ErrorEnvelope } from '../core/errors';
import { Timestamp } from '../core/chain';
import { named } from '../core/names';

// Schemas several services share. A service's own schemas live in its own file.

/** Which engine produced an AI output: the built-in rules engine or an LLM behind an OpenAI-compatible API. */
export interface Generator {
  engine: 'builtin' | 'llm';
  model: string;
}
export const Generator: z.ZodType<Generator> = named(
  'Generator',
  z.object({ engine: z.enum(['builtin', 'llm']), model: z.string() }).describe('which engine produced this output'),
);

/** The three places a data service's numbers can come from. */
export type DataMode = 'chain' | 'live' | 'simulated';
export const DataMode = z
  .enum(['chain', 'live', 'simulated'])
  .describe(
    'chain: read from the Solana RPC (local ledger or a cluster); live: a named third-party provider (asOf says when it was read); simulated: the seeded market model, not observed data',
  );

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
export const DataSource: z.ZodType<DataSource> = named(
  'DataSource',
  z
    .object({
      mode: DataMode,
      providers: z.array(z.string()).describe('the upstream sources read, e.g. "coingecko" or "local-ledger"'),
      asOf: Timestamp.describe('when the data was read'),
      note: z
        .string()
        .optional()
        .describe('why some fields of the answer are null: a source this deployment does not read'),
    })
    .describe('where the data came from'),
);

/** Query of every list that can grow: `limit` (1 to 100, default 20) and an opaque `cursor` from `nextCursor`. */
export const PageQuery = {
  limit: z.coerce.number().int().min(1).max(100).default(20).describe('items per page, 1 to 100'),
  cursor: z.string().min(1).max(200).optional().describe('the nextCursor of the previous page'),
};

/** A page of items; `nextCursor` is null on the last page. */
export function page<T extends z.ZodTypeAny>(item: T) {
  return z.object({ items: z.array(item), nextCursor: z.string().nullable() });
}

/**
 * Responses of a route that only an identified caller may use (SIGN-IN-WITH-X): 401 bad or missing proof, 403 not
 * yours.
 */
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

/** A dependency as a health route reports it: whether it answered its last check, and how fast. */
export interface DependencyHealth {
  status: 'ok' | 'down' | 'unknown';
  /** Duration of the last check (or, for an upstream provider, of the last call to it); null before the first. */
  latencyMs: number | null;
}

/** An upstream provider a service reads (the chain's RPC, a market data API), by name. */
export interface UpstreamHealth extends DependencyHealth {
  name: string;
  lastSuccessAt: string | null;
}

/**
 * The one health body of every service (`GET /health`, `GET /health/ready`, and a data service's own health
 * route): overall status, version, uptime, and each dependency with its status and latency. `database` and
 * `upstream` are kept from earlier versions of the body.
 */
export interface ServiceHealth {
  status: 'ok' | 'degraded' | 'down';
  service: string;
  version: string;
  uptimeSeconds: number;
  dependencies: {
    database: DependencyHealth;
    /** The x402 facilitator that settles this service's payments (services that take payments). */
    facilitator?: DependencyHealth;
    /** The chain's JSON-RPC, where the service cannot work without it (the facilitator). */
    chain?: DependencyHealth;
    upstreams: UpstreamHealth[];
  };
  /** 'ok' while the database answers (kept from earlier versions; see dependencies.database). */
  database: 'ok' | 'down';
  /** A data service's providers as its answers' `source` names them (kept from earlier versions). */
  upstream?: { mode: DataMode; providers: UpstreamStatus[] };
  /** Why the service is down (with HTTP 503), as in the error envelope. */
  error?: { code: string; message: string };
}

/** The health body of a data service: the one health body, with its `upstream` block always present. */
export interface DataServiceHealth extends ServiceHealth {
  upstream: { mode: DataMode; providers: UpstreamStatus[] };
}

const DependencyHealthSchema = z.object({
  status: z.enum(['ok', 'down', 'unknown']).describe('from the last check; unknown before the first'),
  latencyMs: z
    .number()
    .min(0)
    .nullable()
    .describe('duration of the last check or call, milliseconds; null before the first'),
});
const UpstreamBlock = z.object({
  mode: DataMode,
  providers: z.array(
    z.object({
      name: z.string(),
      status: z
        .enum(['ok', 'failing', 'unknown'])
        .describe('from the last call to the provider; unknown before the first'),
      lastSuccessAt: Timestamp.nullable(),
    }),
  ),
});
const serviceHealthShape = {
  status: z
    .enum(['ok', 'degraded', 'down'])
    .describe(
      'down (HTTP 503): the database, the facilitator or the chain does not answer; degraded: an upstream provider is failing',
    ),
  service: z.string().describe('the service id'),
  version: z.string(),
  uptimeSeconds: z.number().int().min(0),
  dependencies: z.object({
    database: DependencyHealthSchema,
    facilitator: DependencyHealthSchema.optional().describe("the x402 facilitator settling this service's payments"),
    chain: DependencyHealthSchema.optional().describe(
      "the chain's JSON-RPC, where the service needs it to work (the facilitator)",
    ),
    upstreams: z
      .array(DependencyHealthSchema.extend({ name: z.string(), lastSuccessAt: Timestamp.nullable() }))
      .describe('providers the service reads; failing ones make it degraded'),
  }),
  database: z.enum(['ok', 'down']).describe('kept from earlier versions: dependencies.database.status'),
  error: z
    .object({ code: z.string(), message: z.string() })
    .optional()
    .describe('with status down: database_unavailable or dependency_unavailable'),
};

export const ServiceHealth: z.ZodType<ServiceHealth> = named(
  'ServiceHealth',
  z.object({
    ...serviceHealthShape,
    upstream: UpstreamBlock.optional().describe(
      "a data service's providers (kept from earlier versions: dependencies.upstreams)",
    ),
  }),
);

/** The one health body as a data service's own health route declares it: `upstream` always present. */
export const DataServiceHealth: z.ZodType<DataServiceHealth> = named(
  'DataServiceHealth',
  z.object({ ...serviceHealthShape, upstream: UpstreamBlock }),
);
