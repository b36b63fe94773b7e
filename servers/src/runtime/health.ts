import type {
  DataMode,
  DataServiceHealth,
  DependencyHealth,
  ServiceHealth,
  UpstreamStatus,
} from '@agent-economy/contracts';
import type { Response } from 'express';
import { sql, type Kysely } from 'kysely';
import type { Probe } from './reachability';

// The one health body of every service (contracts: ServiceHealth), built here once. Services contribute
// their dependencies: the facilitator (any service that takes payments), probes of their own (the
// facilitator's chain) and the upstream providers they read (an UpstreamTracker).
//
// down (HTTP 503): the database, the facilitator or a named probe does not answer, so requests would fail or
// could not be paid for; /health/ready says the same to a load balancer. degraded (200): an upstream provider's
// last call failed; the service still answers what does not need it.

/** The upstream providers a service reads, as an UpstreamTracker reports them. */
export interface UpstreamReport {
  readonly mode: DataMode;
  providers(): (UpstreamStatus & { latencyMs: number | null })[];
}

export interface HealthOptions {
  serviceId: string;
  version?: string;
  /** The database, only asked `select 1`: health reads no table. */
  db: Kysely<unknown>;
  /** Dependencies the service cannot work without, by name: `facilitator`, `chain`, or others. */
  probes: Record<string, Probe>;
  upstream?: UpstreamReport;
}

export interface HealthReply {
  status: 200 | 503;
  body: ServiceHealth;
}

const DATABASE_TIMEOUT_MS = 3_000;
const DATABASE_CACHE_MS = 1_000;

const round = (ms: number) => Math.round(ms * 10) / 10;

async function checkDatabase(db: Kysely<unknown>): Promise<DependencyHealth> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      sql`select 1`.execute(db),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timed out')), DATABASE_TIMEOUT_MS);
      }),
    ]);
    return { status: 'ok', latencyMs: round(performance.now() - started) };
  } catch {
    return { status: 'down', latencyMs: round(performance.now() - started) };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Builds a service's health reports: `report()` for /health (and a contract's own health route), the same for
 * /health/ready.
 */
export function healthReporter(options: HealthOptions) {
  const started = Date.now();
  const version = options.version ?? '1.0.0';

  // The database's answer is reused for DATABASE_CACHE_MS (and shared while in flight): a /health polled hard must
  // not cost a query each time. Down is never cached, so recovery shows at the next poll.
  let databaseCheck: { at: number; result: Promise<DependencyHealth> } | undefined;
  const databaseOnce = (): Promise<DependencyHealth> => {
    const now = performance.now();
    if (!databaseCheck || now - databaseCheck.at > DATABASE_CACHE_MS) {
      const result = checkDatabase(options.db);
      databaseCheck = { at: now, result };
      void result.then((r) => {
        if (r.status !== 'ok' && databaseCheck?.result === result) databaseCheck = undefined;
      });
    }
    return databaseCheck.result;
  };

  async function report(): Promise<HealthReply> {
    const [database, probed] = await Promise.all([
      databaseOnce(),
      Promise.all(
        Object.entries(options.probes).map(async ([name, p]) => {
          const state = await p.state();
          return [
            name,
            { status: state === 'ok' ? 'ok' : 'down', latencyMs: p.latencyMs() ?? null } satisfies DependencyHealth,
          ] as const;
        }),
      ),
    ]);
    const providers = options.upstream?.providers() ?? [];
    const upstreams = providers.map((p) => ({
      name: p.name,
      status: p.status === 'failing' ? ('down' as const) : p.status,
      latencyMs: p.latencyMs,
      lastSuccessAt: p.lastSuccessAt,
    }));
    const probes = Object.fromEntries(probed);
    const unreachable = probed.filter(([, d]) => d.status !== 'ok').map(([name]) => name);
    const down = database.status !== 'ok' || unreachable.length > 0;
    const body: ServiceHealth = {
      status: down ? 'down' : upstreams.some((u) => u.status === 'down') ? 'degraded' : 'ok',
      service: options.serviceId,
      version,
      uptimeSeconds: Math.round((Date.now() - started) / 1000),
      dependencies: { database, ...probes, upstreams },
      database: database.status === 'ok' ? 'ok' : 'down',
      ...(options.upstream
        ? {
            upstream: {
              mode: options.upstream.mode,
              providers: providers.map(({ name, status, lastSuccessAt }) => ({ name, status, lastSuccessAt })),
            },
          }
        : {}),
    };
    if (database.status !== 'ok')
      body.error = { code: 'database_unavailable', message: 'The database does not answer' };
    else if (down) body.error = { code: 'dependency_unavailable', message: `Unreachable: ${unreachable.join(', ')}` };
    return { status: down ? 503 : 200, body };
  }

  return { report };
}

export type HealthReporter = ReturnType<typeof healthReporter>;

const REPORTER = 'healthReporter';

/**
 * Sends a health reply (503 with Retry-After, as every unavailable answer). Never cached, so it carries no ETag:
 * written straight out, without Express's content-type parsing and body hashing that a load balancer's polls would pay.
 */
export function sendHealth(res: Response, reply: HealthReply): void {
  res.setHeader('cache-control', 'no-store');
  if (reply.status === 503) res.setHeader('retry-after', '5');
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.statusCode = reply.status;
  res.end(JSON.stringify(reply.body));
}

/** Makes `reporter` the app's, for contract health routes (healthReply). */
export function useHealthReporter(locals: Record<string, unknown>, reporter: HealthReporter): void {
  locals[REPORTER] = reporter;
}

/**
 * The runtime's health reply, for a service whose contract declares its own health route with the one health
 * body (gas, conviction, wallet-history): `health: async ({ res }) => healthReply(res)`. The runtime answers
 * such a route itself before the handler is reached; this keeps the handler truthful should it be.
 */
export async function healthReply(res: Response): Promise<{ status: 200; body: DataServiceHealth }> {
  const reporter = res.app.locals[REPORTER] as HealthReporter | undefined;
  if (!reporter) throw new Error('healthReply() used outside an app made by createServiceApp');
  const reply = await reporter.report();
  if (reply.status === 503) res.setHeader('retry-after', '5');
  // Typed as the route's 200: a 503 carries the same body (ServiceHealth), status down.
  return reply as unknown as { status: 200; body: DataServiceHealth };
}
