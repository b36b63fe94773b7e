import {
  SOLANA_DEVNET,
  SOLANA_MAINNET,
  SOLANA_TESTNET,
  type FacilitatorCluster,
  type MppChargeRequest,
  type MppChargeSettlement,
  type MppOutcomeCounter,
  type MppPreparedCharge,
  type MppPrepareRequest,
  type MppSettlementRecord,
  type MppSettlementStats,
} from '@agent-economy/contracts';
import type { Address } from '@solana/kit';
import type { Logger } from 'pino';
import { decodeMint, decodeTokenAccount, associatedTokenAddress } from '../../solana/programs';
import { HttpError, conflict, unavailable, unprocessable } from '../../runtime/errors';
import { ChargeRejected, checkCharge, type ChargePolicy, type CheckedCharge } from './charge-policy';
import { settleCaps, type PayeeGate, type SettleCaps } from './sellers';
import { onChain, stringify, type Facilitator, type SubmitOutcome } from './settlement';
import type { EventKind, EventOutcome, Settlement } from './store';

// The charge routes of the settlement API (spec 002; research/mpp.md §2.1): /mpp/prepare hands out the
// fee payer and a blockhash, /mpp/settle checks a buyer-signed charge against the policy and the chain,
// then settles it through the same pipeline as x402 payments, /mpp/stats reads the records back.

export { DEFAULT_SETTLE_CAPS, type SettleCaps } from './sellers';

export const CHAIN_ID: Record<FacilitatorCluster, string> = {
  'mainnet-beta': SOLANA_MAINNET,
  devnet: SOLANA_DEVNET,
  testnet: SOLANA_TESTNET,
};
const CLUSTER_OF = new Map(Object.entries(CHAIN_ID).map(([cluster, id]) => [id, cluster as FacilitatorCluster]));

/**
 * The network a request names must be the one this deployment (CAIP-2 `network`) settles on: 422 unsupported_network.
 */
export function servedCluster(network: string, requested: FacilitatorCluster | undefined): FacilitatorCluster {
  const cluster = CLUSTER_OF.get(network);
  if (cluster && (requested === undefined || requested === cluster)) return cluster;
  throw unprocessable(
    'unsupported_network',
    cluster
      ? `this facilitator settles on ${cluster} (${network}), not ${requested}`
      : `this facilitator settles on ${network}, which has no Solana cluster name`,
    { supported: cluster ? [cluster] : [], network },
  );
}

const RECENT = 20;

export interface ChargeDeskOptions {
  facilitator: Facilitator;
  policy: ChargePolicy;
  caps: SettleCaps;
  /** Whom the fee payer settles for (sellers.ts). */
  payees: PayeeGate;
  logger: Logger;
  /** Payment sessions open now, opened and closed since `today` (sessions.ts). */
  sessionCounts?: (today: Date) => Promise<{ open: number; openedToday: number; closedToday: number }>;
}

/** A refusal of the policy: 422 invalid_transaction, the rule in details.reason. */
function invalidTransaction(reason: string, message: string, details: Record<string, unknown> = {}): HttpError {
  return unprocessable('invalid_transaction', message, { reason, ...details });
}

export function createChargeDesk({ facilitator, policy, caps, payees, logger, sessionCounts }: ChargeDeskOptions) {
  const { rpc, store, now } = facilitator;
  const capped = settleCaps(store, caps, now);
  const network = facilitator.network;
  let mintInfo: { tokenProgram: string; decimals: number } | undefined;

  const served = (requested: FacilitatorCluster | undefined) => servedCluster(network, requested);

  async function accountData(address: string): Promise<{ owner: string; data: Uint8Array } | null> {
    const { value } = await onChain('getAccountInfo', () =>
      rpc.getAccountInfo(address as Address, { encoding: 'base64', commitment: 'confirmed' }).send(),
    );
    if (!value) return null;
    return { owner: value.owner, data: new Uint8Array(Buffer.from(value.data[0], 'base64')) };
  }

  /** The stablecoin's token program and decimals, read from its mint account once. */
  async function stablecoin(): Promise<{ tokenProgram: string; decimals: number }> {
    if (mintInfo) return mintInfo;
    const account = await accountData(policy.asset);
    const mint = account ? decodeMint(account.owner, account.data) : null;
    if (!account || !mint)
      throw unavailable(
        'chain_unavailable',
        `the stablecoin mint ${policy.asset} is not on the chain this facilitator reads`,
        30,
      );
    mintInfo = { tokenProgram: account.owner, decimals: mint.decimals };
    return mintInfo;
  }

  const day = () => {
    const start = now();
    start.setUTCHours(0, 0, 0, 0);
    return start;
  };

  async function record(kind: EventKind, outcome: EventOutcome): Promise<void> {
    try {
      await store.recordEvent(kind, outcome, now());
    } catch (error) {
      // A statistic lost is no reason to fail the call it counts.
      logger.warn({ err: error, kind, outcome }, 'event not recorded');
    }
  }

  /**
   * The seller a transfer pays: the request's recipient (already matched), else the owner of the destination account.
   */
  async function recipientOf(charge: CheckedCharge, named: string | undefined): Promise<string> {
    if (named) return named;
    const account = await accountData(charge.destination);
    const state = account ? decodeTokenAccount(account.owner, account.data) : null;
    if (!state || state.mint !== charge.mint) {
      throw invalidTransaction(
        'recipient_mismatch',
        `the transfer pays ${charge.destination}, which is not an open token account of ${charge.mint}`,
        {
          destination: charge.destination,
        },
      );
    }
    const expected = associatedTokenAddress(state.owner, charge.mint, charge.tokenProgram);
    if (expected !== charge.destination) {
      throw invalidTransaction(
        'recipient_mismatch',
        `the transfer pays ${charge.destination}, not the associated token account of its owner ${state.owner}`,
        {
          destination: charge.destination,
          expected,
        },
      );
    }
    return state.owner;
  }

  async function checkBalance(charge: CheckedCharge): Promise<void> {
    const account = await accountData(charge.source);
    const state = account ? decodeTokenAccount(account.owner, account.data) : null;
    const available = state && state.mint === charge.mint ? state.amount : 0n;
    if (available < charge.amount) {
      throw unprocessable(
        'insufficient_balance',
        `the payer's token account ${charge.source} holds ${available} atomic units, the transfer needs ${charge.amount}`,
        {
          required: charge.amount.toString(),
          available: available.toString(),
        },
      );
    }
  }

  /** The chain's refusal in simulation, in the charge's terms. */
  function simulationRefusal(err: unknown, logs: readonly string[], charge: CheckedCharge): HttpError {
    if (err === 'BlockhashNotFound') {
      return conflict(
        'blockhash_expired',
        'the transaction’s blockhash is no longer valid; rebuild it with a fresh blockhash from /mpp/prepare',
        {
          blockhash: charge.tx.blockhash,
        },
      );
    }
    if (err === 'AlreadyProcessed')
      return invalidTransaction('duplicate_settlement', 'this transaction has already been processed on chain');
    const instruction = (err as { InstructionError?: [number, unknown] })?.InstructionError;
    // Token program error 1 in the transfer is InsufficientFunds (kit reads the node's integers as bigint).
    if (
      instruction &&
      Number(instruction[0]) === charge.transferIndex &&
      Number((instruction[1] as { Custom?: number | bigint })?.Custom) === 1
    ) {
      return unprocessable('insufficient_balance', 'the payer’s token account holds less than the transfer', {
        required: charge.amount.toString(),
      });
    }
    return unprocessable('simulation_failed', `the transaction fails in simulation: ${stringify(err)}`, {
      error: JSON.parse(stringify(err)),
      logs: [...logs],
    });
  }

  const pending = (signature: string, message: string) =>
    new HttpError(
      503,
      'settlement_pending',
      `${message}; send the same transaction again to learn its outcome`,
      { signature },
      { 'retry-after': '5' },
    );

  function success(
    row: Pick<Settlement, 'payer' | 'payTo' | 'amount' | 'asset'>,
    signature: string,
    slot: number,
    at: Date,
  ): MppChargeSettlement {
    const amount = row.amount.toString();
    return {
      success: true,
      ok: true,
      signature,
      payer: row.payer,
      network,
      recipient: row.payTo,
      amount,
      asset: row.asset,
      settlement: { recipient: row.payTo, amount, asset: row.asset, feePayer: facilitator.feePayer },
      slot,
      confirmedAt: at.toISOString(),
    };
  }

  /** The pipeline's outcome as the charge route answers it. */
  async function answer(
    outcome: SubmitOutcome,
    row: Pick<Settlement, 'key' | 'payer' | 'payTo' | 'amount' | 'asset'>,
  ): Promise<MppChargeSettlement> {
    switch (outcome.state) {
      case 'confirmed':
        return success(row, outcome.transaction, outcome.slot, outcome.at);
      case 'failed':
        throw unprocessable(
          'transaction_failed',
          `the transaction was broadcast and failed on chain: ${outcome.error}; nothing moved`,
          {
            signature: outcome.transaction,
            error: outcome.error,
          },
        );
      case 'pending':
        throw pending(outcome.transaction, outcome.message);
      case 'refused':
        throw unprocessable('simulation_failed', outcome.message, { error: outcome.message, logs: [] });
      case 'taken': {
        const other = await store.get(row.key);
        throw pending(other?.transaction ?? '', 'this transaction is being settled by another request');
      }
    }
  }

  /** A transaction the facilitator has seen before: it is never settled, or reported settled, twice. */
  async function again(existing: Settlement): Promise<MppChargeSettlement> {
    if (existing.status === 'settled') {
      throw invalidTransaction(
        'duplicate_settlement',
        `this transaction was already settled (signature ${existing.transaction})`,
        { signature: existing.transaction },
      );
    }
    if (existing.status === 'failed') {
      throw unprocessable(
        'transaction_failed',
        `this transaction was tried and failed (${existing.error}); nothing moved`,
        {
          signature: existing.transaction,
          error: existing.error,
        },
      );
    }
    if (now().getTime() - existing.createdAt.getTime() <= facilitator.confirmTimeoutMs) {
      throw pending(existing.transaction, 'this transaction is being settled by another request');
    }
    // Left pending (confirmation not seen in time): it was sent once; look for it, never send it again.
    return answer(await facilitator.follow(existing.key, existing.transaction), existing);
  }

  async function settle(request: MppChargeRequest, resourceServer: string | undefined): Promise<MppChargeSettlement> {
    served(request.network);
    let charge: CheckedCharge;
    try {
      charge = checkCharge(request.transaction, request, policy);
    } catch (error) {
      if (error instanceof ChargeRejected) throw invalidTransaction(error.reason, error.message, error.details);
      throw error;
    }
    const existing = await store.get(charge.tx.key);
    if (existing) return again(existing);

    const recipient = await recipientOf(charge, request.recipient);
    payees.admit(recipient, resourceServer);
    await capped.check('charge', charge.payer, recipient);
    await checkBalance(charge);
    const row = {
      key: charge.tx.key,
      payer: charge.payer,
      payTo: recipient,
      amount: charge.amount,
      asset: charge.mint,
    };
    const outcome = await facilitator.submit({
      tx: charge.tx,
      kind: 'charge',
      scheme: 'charge',
      network,
      payer: charge.payer,
      payTo: recipient,
      amount: charge.amount,
      asset: charge.mint,
      resource: request.resource?.url ?? null,
      description: request.resource?.description ?? null,
      // The node simulates it before sending: one simulation and one round trip fewer than simulating here first.
      preflight: true,
    });
    if (outcome.state === 'refused' && outcome.rejection)
      throw simulationRefusal(outcome.rejection.err, outcome.rejection.logs, charge);
    return answer(outcome, row);
  }

  return {
    async prepare(request: MppPrepareRequest): Promise<MppPreparedCharge> {
      const name = served(request.network);
      const { value } = await onChain('getLatestBlockhash', () =>
        rpc.getLatestBlockhash({ commitment: 'confirmed' }).send(),
      );
      const { tokenProgram, decimals } = await stablecoin();
      await record('prepare', 'ok');
      return {
        feePayer: facilitator.feePayer,
        recentBlockhash: value.blockhash,
        blockhash: value.blockhash,
        lastValidBlockHeight: Number(value.lastValidBlockHeight),
        network,
        cluster: name,
        splToken: policy.asset,
        decimals,
        tokenProgram,
      };
    },

    /**
     * Settles a charge and counts its outcome, whatever it is; `resourceServer`: the registered server that signed the
     * call.
     */
    async settle(request: MppChargeRequest, resourceServer?: string): Promise<MppChargeSettlement> {
      try {
        const settled = await settle(request, resourceServer);
        await record('charge', 'success');
        return settled;
      } catch (error) {
        await record('charge', error instanceof HttpError && error.code === 'settlement_pending' ? 'pending' : 'fail');
        throw error;
      }
    },

    record,
    stablecoin,

    async stats(): Promise<MppSettlementStats> {
      const today = day();
      const [events, volume, recent, sessions] = await Promise.all([
        store.eventCounts(today),
        store.settledVolume(today),
        store.recentSettled(RECENT),
        sessionCounts ? sessionCounts(today) : { open: 0, openedToday: 0, closedToday: 0 },
      ]);
      const count = (kind: EventKind, outcome?: EventOutcome) => {
        const rows = events.filter((e) => e.kind === kind && (outcome === undefined || e.outcome === outcome));
        return { total: rows.reduce((n, r) => n + r.total, 0), today: rows.reduce((n, r) => n + r.today, 0) };
      };
      const outcomes = (kind: EventKind): MppOutcomeCounter => {
        const success = count(kind, 'success').total;
        const fail = count(kind, 'fail').total;
        return { ...count(kind), success, fail, successRate: success + fail === 0 ? null : success / (success + fail) };
      };
      let volumeAtomic = 0n;
      let volumeTodayAtomic = 0n;
      for (const v of volume.values()) {
        volumeAtomic += v.total;
        volumeTodayAtomic += v.today;
      }
      const records: MppSettlementRecord[] = recent.map((s) => ({
        signature: s.transaction,
        kind: s.kind,
        payer: s.payer,
        recipient: s.payTo,
        amount: s.amount.toString(),
        asset: s.asset,
        network: s.network,
        at: (s.settledAt ?? s.createdAt).toISOString(),
      }));
      return {
        asOf: now().toISOString(),
        networks: [network],
        prepare: count('prepare'),
        settle: outcomes('charge'),
        x402: {
          verify: {
            ...count('x402_verify'),
            valid: count('x402_verify', 'valid').total,
            invalid: count('x402_verify', 'invalid').total,
          },
          settle: outcomes('x402_settle'),
        },
        // Session settlements are the rows of kind 'session' (one per close that moved funds).
        sessions: { ...sessions, settledAtomic: (volume.get('session')?.total ?? 0n).toString() },
        volumeAtomic: volumeAtomic.toString(),
        volumeTodayAtomic: volumeTodayAtomic.toString(),
        recentSettlements: records,
        lastSettlement: records[0] ?? null,
      };
    },
  };
}

export type ChargeDesk = ReturnType<typeof createChargeDesk>;
