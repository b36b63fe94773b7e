import { sql, type Kysely, type Migration } from 'kysely';
import type { GatewayOnboarding, TradeExecution, TradePlan } from '@agent-economy/contracts';
import type { SentPayment } from '@agent-economy/sdk';
import type { SharedDb } from '../../db';

export const migrations: Record<string, Migration> = {
  '001_gateway': {
    async up(db) {
      // The registry onboarding fills: what search and recommendations read about agents.
      await db.schema
        .createTable('gateway_agents')
        .addColumn('wallet', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('capabilities', 'jsonb', (c) => c.notNull())
        .addColumn('interests', 'jsonb', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('registered_at', 'timestamptz', (c) => c.notNull())
        .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
        .execute();
      // Reputation scores read (and paid for) from the reputation service, kept an hour.
      await db.schema
        .createTable('gateway_reputation_cache')
        .addColumn('wallet', 'text', (c) => c.primaryKey())
        .addColumn('score', 'double precision', (c) => c.notNull())
        .addColumn('trade_count', 'integer', (c) => c.notNull())
        .addColumn('fetched_at', 'timestamptz', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('gateway_plans')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('buyer', 'text', (c) => c.notNull())
        .addColumn('plan', 'jsonb', (c) => c.notNull())
        .addColumn('created_at', 'timestamptz', (c) => c.notNull())
        .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
        .execute();
      // One execution per plan and per settled payment: both keys unique, across replicas.
      await db.schema
        .createTable('gateway_trades')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('plan_id', 'text', (c) => c.notNull().unique())
        .addColumn('payment_key', 'text', (c) => c.notNull().unique())
        .addColumn('buyer', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('module_id', 'text', (c) => c.notNull())
        .addColumn('price', 'int8', (c) => c.notNull())
        .addColumn('fee', 'int8', (c) => c.notNull())
        // The market purchase, noted as soon as it is made: a resumed execution reads it instead of buying again.
        .addColumn('purchase_id', 'text')
        .addColumn('purchase_transaction', 'text')
        .addColumn('purchase_network', 'text')
        .addColumn('execution', 'jsonb')
        .addColumn('created_at', 'timestamptz', (c) => c.notNull())
        .addColumn('completed_at', 'timestamptz')
        .execute();
      // Trade reports the reputation service did not take yet: retried on every prober tick.
      await db.schema
        .createTable('gateway_reports')
        .addColumn('trade_id', 'text', (c) => c.primaryKey())
        .addColumn('body', 'jsonb', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('report_id', 'text')
        .addColumn('last_error', 'text')
        .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
        .execute();
      // One probe per service per 30-second slot, whichever replica claims it first.
      await db.schema
        .createTable('gateway_probes')
        .addColumn('service', 'text', (c) => c.notNull())
        .addColumn('slot', 'int8', (c) => c.notNull())
        .addColumn('checked_at', 'timestamptz', (c) => c.notNull())
        .addColumn('done', 'boolean', (c) => c.notNull())
        .addColumn('ok', 'boolean')
        .addColumn('response_ms', 'double precision')
        .addColumn('uptime_seconds', 'integer')
        .addColumn('error', 'text')
        .addPrimaryKeyConstraint('gateway_probes_pk', ['service', 'slot'])
        .execute();
      await db.schema.createIndex('gateway_probes_checked_idx').on('gateway_probes').column('checked_at').execute();
    },
  },
  '002_gateway_purchase_payment': {
    async up(db) {
      // The payment the gateway signed for the market purchase, recorded before it leaves: a trade resumed after a
      // crash presents that same payment again (the market answers from it) instead of paying a second time.
      await db.schema.alterTable('gateway_trades').addColumn('purchase_payment', 'jsonb').execute();
    },
  },
};

interface AgentRow {
  wallet: string;
  name: string;
  role: 'buyer' | 'seller' | 'both';
  capabilities: string[];
  interests: string[];
  description: string | null;
  registered_at: Date;
  updated_at: Date;
}
interface ReputationRow {
  wallet: string;
  score: number;
  trade_count: number;
  fetched_at: Date;
}
interface PlanRow {
  id: string;
  buyer: string;
  plan: TradePlan;
  created_at: Date;
  expires_at: Date;
}
interface TradeRow {
  id: string;
  plan_id: string;
  payment_key: string;
  buyer: string;
  status: 'running' | 'completed' | 'failed';
  module_id: string;
  price: bigint;
  fee: bigint;
  purchase_id: string | null;
  purchase_transaction: string | null;
  purchase_network: string | null;
  purchase_payment: SentPayment | null;
  execution: TradeExecution | null;
  created_at: Date;
  completed_at: Date | null;
}
interface ReportRow {
  trade_id: string;
  body: unknown;
  status: 'queued' | 'reported';
  attempts: number;
  report_id: string | null;
  last_error: string | null;
  updated_at: Date;
}
interface ProbeRow {
  service: string;
  slot: bigint;
  checked_at: Date;
  done: boolean;
  ok: boolean | null;
  response_ms: number | null;
  uptime_seconds: number | null;
  error: string | null;
}
interface Tables {
  gateway_agents: AgentRow;
  gateway_reputation_cache: ReputationRow;
  gateway_plans: PlanRow;
  gateway_trades: TradeRow;
  gateway_reports: ReportRow;
  gateway_probes: ProbeRow;
}

export type AgentProfile = GatewayOnboarding['agent'];
export interface RegisteredAgent extends Omit<AgentProfile, 'newlyRegistered'> {
  reputationScore: number | null;
  tradeCount: number | null;
}
export interface Probe {
  service: string;
  checkedAt: Date;
  ok: boolean;
  responseMs: number | null;
  uptimeSeconds: number | null;
  error: string | null;
}
export interface TradeRecord {
  id: string;
  planId: string;
  paymentKey: string;
  buyer: string;
  status: 'running' | 'completed' | 'failed';
  moduleId: string;
  /** The module price this trade's payment was charged for (the fee apart), atomic units. */
  price: bigint;
  purchaseId: string | null;
  purchaseTransaction: string | null;
  purchaseNetwork: string | null;
  /** The market purchase's payment, signed and recorded before it was sent (it may have settled). */
  purchasePayment: SentPayment | null;
  execution: TradeExecution | null;
  /** When the trade was claimed (gateway clock): a market payment settled that long ago and still unanswered fails. */
  createdAt: Date;
}

const json = (value: unknown) => sql`${JSON.stringify(value)}::jsonb`;
const isUniqueViolation = (error: unknown) => (error as { code?: string }).code === '23505';

export function gatewayStore(database: SharedDb) {
  const db = database as Kysely<Tables>;
  const toTrade = (r: TradeRow): TradeRecord => ({
    id: r.id,
    planId: r.plan_id,
    paymentKey: r.payment_key,
    buyer: r.buyer,
    status: r.status,
    moduleId: r.module_id,
    price: BigInt(r.price),
    purchaseId: r.purchase_id,
    purchaseTransaction: r.purchase_transaction,
    purchaseNetwork: r.purchase_network,
    purchasePayment: r.purchase_payment,
    execution: r.execution,
    createdAt: new Date(r.created_at),
  });

  return {
    /** Records or updates an agent; true when it was new. */
    async upsertAgent(
      agent: Omit<AgentProfile, 'newlyRegistered' | 'registeredAt'>,
      at: Date,
    ): Promise<{ newlyRegistered: boolean; registeredAt: Date }> {
      const row = await db
        .insertInto('gateway_agents')
        .values({
          wallet: agent.wallet,
          name: agent.name,
          role: agent.role,
          capabilities: json(agent.capabilities) as never,
          interests: json(agent.interests) as never,
          description: agent.description,
          registered_at: at,
          updated_at: at,
        })
        .onConflict((oc) =>
          oc.column('wallet').doUpdateSet({
            name: agent.name,
            role: agent.role,
            capabilities: json(agent.capabilities) as never,
            interests: json(agent.interests) as never,
            description: agent.description,
            updated_at: at,
          }),
        )
        // xmax = 0 only on a fresh insert (PostgreSQL and PGlite alike).
        .returning(['registered_at', sql<boolean>`(xmax = 0)`.as('inserted')])
        .executeTakeFirstOrThrow();
      return { newlyRegistered: row.inserted, registeredAt: new Date(row.registered_at) };
    },

    async agents(): Promise<RegisteredAgent[]> {
      const rows = await db
        .selectFrom('gateway_agents as a')
        .leftJoin('gateway_reputation_cache as r', 'r.wallet', 'a.wallet')
        .select([
          'a.wallet',
          'a.name',
          'a.role',
          'a.capabilities',
          'a.interests',
          'a.description',
          'a.registered_at',
          'r.score',
          'r.trade_count',
        ])
        .orderBy('a.registered_at')
        .execute();
      return rows.map((r) => ({
        wallet: r.wallet,
        name: r.name,
        role: r.role,
        capabilities: r.capabilities,
        interests: r.interests,
        description: r.description,
        registeredAt: new Date(r.registered_at).toISOString(),
        reputationScore: r.score ?? null,
        tradeCount: r.trade_count ?? null,
      }));
    },

    async countAgents(): Promise<number> {
      const row = await db
        .selectFrom('gateway_agents')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },

    /** Cached scores younger than `since`, by wallet. */
    async reputations(wallets: string[], since: Date): Promise<Map<string, { score: number; tradeCount: number }>> {
      if (!wallets.length) return new Map();
      const rows = await db
        .selectFrom('gateway_reputation_cache')
        .selectAll()
        .where('wallet', 'in', wallets)
        .where('fetched_at', '>=', since)
        .execute();
      return new Map(rows.map((r) => [r.wallet, { score: r.score, tradeCount: r.trade_count }]));
    },

    async cacheReputation(wallet: string, score: number, tradeCount: number, at: Date): Promise<void> {
      await db
        .insertInto('gateway_reputation_cache')
        .values({ wallet, score, trade_count: tradeCount, fetched_at: at })
        .onConflict((oc) => oc.column('wallet').doUpdateSet({ score, trade_count: tradeCount, fetched_at: at }))
        .execute();
    },

    async insertPlan(plan: TradePlan): Promise<void> {
      await db
        .insertInto('gateway_plans')
        .values({
          id: plan.id,
          buyer: plan.buyer,
          plan: json(plan) as never,
          created_at: new Date(plan.createdAt),
          expires_at: new Date(plan.expiresAt),
        })
        .execute();
    },

    async plan(id: string): Promise<TradePlan | undefined> {
      const row = await db.selectFrom('gateway_plans').select('plan').where('id', '=', id).executeTakeFirst();
      return row?.plan;
    },

    async tradeOfPlan(planId: string): Promise<TradeRecord | undefined> {
      const row = await db.selectFrom('gateway_trades').selectAll().where('plan_id', '=', planId).executeTakeFirst();
      return row && toTrade(row);
    },

    async tradeOfPayment(paymentKey: string): Promise<TradeRecord | undefined> {
      const row = await db
        .selectFrom('gateway_trades')
        .selectAll()
        .where('payment_key', '=', paymentKey)
        .executeTakeFirst();
      return row && toTrade(row);
    },

    /**
     * Claims the plan for one execution paid by `paymentKey`: false when another payment already holds it (the unique
     * keys decide between replicas racing).
     */
    async claimTrade(claim: {
      id: string;
      planId: string;
      paymentKey: string;
      buyer: string;
      moduleId: string;
      price: bigint;
      fee: bigint;
      at: Date;
    }): Promise<boolean> {
      try {
        const result = await db
          .insertInto('gateway_trades')
          .values({
            id: claim.id,
            plan_id: claim.planId,
            payment_key: claim.paymentKey,
            buyer: claim.buyer,
            status: 'running',
            module_id: claim.moduleId,
            price: claim.price,
            fee: claim.fee,
            purchase_id: null,
            purchase_transaction: null,
            purchase_network: null,
            purchase_payment: null,
            execution: null,
            created_at: claim.at,
            completed_at: null,
          })
          .onConflict((oc) => oc.doNothing())
          .executeTakeFirst();
        return !!result.numInsertedOrUpdatedRows;
      } catch (error) {
        if (isUniqueViolation(error)) return false;
        throw error;
      }
    },

    /** A failed execution gives the plan back (the buyer was refunded): it may be executed again. */
    async releaseTrade(id: string): Promise<void> {
      // A purchase already made stays on record in the logs; the plan is free again.
      await db.deleteFrom('gateway_trades').where('id', '=', id).where('status', '=', 'running').execute();
    },

    /**
     * A running trade whose market payment settled and whose purchase the market never delivered: failed for good, its
     * report against the payee queued in the same transaction. False when it was failed before (reported once).
     */
    async failTrade(id: string, report: unknown, at: Date): Promise<boolean> {
      return await db.transaction().execute(async (tx) => {
        const failed = await tx
          .updateTable('gateway_trades')
          .set({ status: 'failed', completed_at: at })
          .where('id', '=', id)
          .where('status', '=', 'running')
          .executeTakeFirst();
        if (!failed.numUpdatedRows) return false;
        await tx
          .insertInto('gateway_reports')
          .values({
            trade_id: id,
            body: json(report) as never,
            status: 'queued',
            attempts: 0,
            report_id: null,
            last_error: null,
            updated_at: at,
          })
          .onConflict((oc) => oc.doNothing())
          .execute();
        return true;
      });
    },

    /** Durably, before the payment leaves: the payment the gateway is about to send the market for this trade. */
    async notePurchasePayment(id: string, payment: SentPayment): Promise<void> {
      await db
        .updateTable('gateway_trades')
        .set({ purchase_payment: json(payment) as never })
        .where('id', '=', id)
        .execute();
    },

    async notePurchase(
      id: string,
      purchase: { purchaseId: string; transaction: string; network: string },
    ): Promise<void> {
      await db
        .updateTable('gateway_trades')
        .set({
          purchase_id: purchase.purchaseId,
          purchase_transaction: purchase.transaction,
          purchase_network: purchase.network,
        })
        .where('id', '=', id)
        .execute();
    },

    /** The execution and its reputation report, in one transaction. */
    async completeTrade(
      execution: TradeExecution,
      report: { body: unknown; status: 'queued' | 'reported'; reportId: string | null; error: string | null },
      at: Date,
    ): Promise<void> {
      await db.transaction().execute(async (tx) => {
        await tx
          .updateTable('gateway_trades')
          .set({
            status: 'completed',
            execution: json(execution) as never,
            purchase_id: execution.purchase.purchaseId,
            completed_at: at,
          })
          .where('id', '=', execution.id)
          .execute();
        await tx
          .insertInto('gateway_reports')
          .values({
            trade_id: execution.id,
            body: json(report.body) as never,
            status: report.status,
            attempts: 1,
            report_id: report.reportId,
            last_error: report.error,
            updated_at: at,
          })
          .onConflict((oc) => oc.doNothing())
          .execute();
      });
    },

    async tradeTotals(): Promise<{ trades: number; volume: bigint }> {
      const row = await db
        .selectFrom('gateway_trades')
        .select([(eb) => eb.fn.countAll<string>().as('n'), sql<string>`coalesce(sum(price), 0)`.as('volume')])
        .where('status', '=', 'completed')
        .executeTakeFirstOrThrow();
      return { trades: Number(row.n), volume: BigInt(row.volume) };
    },

    async queuedReports(limit: number): Promise<{ tradeId: string; body: unknown; attempts: number }[]> {
      const rows = await db
        .selectFrom('gateway_reports')
        .select(['trade_id', 'body', 'attempts'])
        .where('status', '=', 'queued')
        .orderBy('updated_at')
        .limit(limit)
        .execute();
      return rows.map((r) => ({ tradeId: r.trade_id, body: r.body, attempts: r.attempts }));
    },

    /** Marks a queued report filed (once: a concurrent retry that lost does nothing). */
    async reportFiled(tradeId: string, reportId: string | null, at: Date): Promise<boolean> {
      const result = await db
        .updateTable('gateway_reports')
        .set({ status: 'reported', report_id: reportId, updated_at: at, last_error: null })
        .where('trade_id', '=', tradeId)
        .where('status', '=', 'queued')
        .executeTakeFirst();
      if (result.numUpdatedRows) {
        // The stored execution tells the buyer what happened to its report.
        await db
          .updateTable('gateway_trades')
          .set({
            execution:
              sql`jsonb_set(execution, '{reputation}', ${JSON.stringify({ status: 'reported', reportId, detail: 'Filed with the reputation service on a retry' })}::jsonb)` as never,
          })
          .where('id', '=', tradeId)
          .execute();
      }
      return !!result.numUpdatedRows;
    },

    async reportFailed(tradeId: string, error: string, at: Date): Promise<void> {
      await db
        .updateTable('gateway_reports')
        .set((eb) => ({ attempts: eb('attempts', '+', 1), last_error: error, updated_at: at }))
        .where('trade_id', '=', tradeId)
        .execute();
    },

    /** Claims the probe of `service` in `slot`; false when another replica (or an earlier tick) has it. */
    async claimProbe(service: string, slot: bigint, at: Date): Promise<boolean> {
      const result = await db
        .insertInto('gateway_probes')
        .values({
          service,
          slot,
          checked_at: at,
          done: false,
          ok: null,
          response_ms: null,
          uptime_seconds: null,
          error: null,
        })
        .onConflict((oc) => oc.doNothing())
        .executeTakeFirst();
      return !!result.numInsertedOrUpdatedRows;
    },

    async recordProbe(
      service: string,
      slot: bigint,
      probe: { ok: boolean; responseMs: number | null; uptimeSeconds: number | null; error: string | null },
    ): Promise<void> {
      await db
        .updateTable('gateway_probes')
        .set({
          done: true,
          ok: probe.ok,
          response_ms: probe.responseMs,
          uptime_seconds: probe.uptimeSeconds,
          error: probe.error,
        })
        .where('service', '=', service)
        .where('slot', '=', slot)
        .execute();
    },

    /** Finished probes after `since` (the window excludes its start), oldest first. */
    async probes(since: Date): Promise<Probe[]> {
      const rows = await db
        .selectFrom('gateway_probes')
        .selectAll()
        .where('done', '=', true)
        .where('checked_at', '>', since)
        .orderBy('checked_at')
        .execute();
      return rows.map((r) => ({
        service: r.service,
        checkedAt: new Date(r.checked_at),
        ok: !!r.ok,
        responseMs: r.response_ms,
        uptimeSeconds: r.uptime_seconds,
        error: r.error,
      }));
    },

    async pruneProbes(before: Date): Promise<void> {
      await db.deleteFrom('gateway_probes').where('checked_at', '<=', before).execute();
    },
  };
}

export type GatewayStore = ReturnType<typeof gatewayStore>;
