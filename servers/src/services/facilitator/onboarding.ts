import type {
  DelegationRole,
  SmartWalletConfirmation,
  SmartWalletConfirmRequest,
  SmartWalletOnboardRequest,
  SmartWalletOnboarding,
  SmartWalletStatus,
  SmartWalletStatusQuery,
  FacilitatorCluster,
} from '@agent-economy/contracts';
import { isOffCurveAddress, type Address, type Signature } from '@solana/kit';
import type { Logger } from 'pino';
import { toBase64 } from '../../solana/wire';
import { HttpError, conflict, notFound, unavailable, unprocessable } from '../../runtime/errors';
import type { Wallet } from '../../solana/keys';
import { CHAIN_ID, servedCluster } from './charge';
import type { DelegationBackend, DelegationState } from './delegation';
import { randomId } from './session-domain';
import type { OnboardingTxRow, RoleRow, SessionStore } from './session-store';
import { spentRole, walletMismatch } from './sessions';
import { stringify, type Facilitator } from './settlement';
import { buildTransaction, coSign, hasValidSignature, readTransaction, type ReadTransaction } from './transaction';

// Onboarding (spec 002; research/mpp.md §2.2, §3): the facilitator hands the buyer the transactions that
// give them a wallet and grant the facilitator's delegate a scoped role (see delegation.ts), with itself as
// fee payer; confirm takes them back signed, checks each is byte for byte one it issued to this wallet,
// co-signs, simulates, sends and confirms them in order, then records the role.

/**
 * Onboarding calls a wallet may make per hour, and wallets the facilitator creates per hour in all: it pays their fees
 * and rent, and new buyer keys cost nothing to make, so only an overall cap bounds what it lays out in an hour.
 */
export interface OnboardingLimits {
  callsPerHour: number;
  walletsPerHour: number;
  /** Onboarding transactions of every kind the fee payer signs per hour in all (each costs it a fee). */
  transactionsPerHour: number;
}
export const DEFAULT_ONBOARDING_LIMITS: OnboardingLimits = {
  callsPerHour: 30,
  walletsPerHour: 200,
  transactionsPerHour: 1000,
};

export interface OnboardingDeskOptions {
  facilitator: Facilitator;
  store: SessionStore;
  backend: () => Promise<DelegationBackend>;
  feePayer: Wallet;
  delegate: Wallet;
  asset: string;
  limits: OnboardingLimits;
  logger: Logger;
}

const SLOT_MS = 400;

/** The chain not answering is, on these routes, 503 temporarily_unavailable (Retry-After). */
async function tolerant<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof HttpError && error.code === 'chain_unavailable')
      throw unavailable('temporarily_unavailable', error.message, 5);
    throw error;
  }
}

const invalidTransaction = (index: number, reason: string, message: string) =>
  unprocessable('invalid_transaction', `transaction ${index}: ${message}`, { index, reason });

export function createOnboardingDesk({
  facilitator,
  store,
  backend,
  feePayer,
  delegate,
  asset,
  limits,
  logger,
}: OnboardingDeskOptions) {
  const { now, network, rpc } = facilitator;

  async function rateLimit(wallet: string): Promise<void> {
    const at = now();
    const { count, oldest } = await store.countOnboardingCall(wallet, new Date(at.getTime() - 3_600_000), at);
    if (count >= limits.callsPerHour) {
      const retry = Math.max(1, Math.ceil(((oldest ?? at).getTime() + 3_600_000 - at.getTime()) / 1000));
      throw new HttpError(
        429,
        'rate_limited',
        `${wallet} made ${count} onboarding calls in the last hour, the limit; try again later`,
        { limit: limits.callsPerHour },
        { 'retry-after': String(retry) },
      );
    }
  }

  /** The role the buyer holds, as the routes show it, with what remains of it after open sessions' deposits. */
  async function roleView(role: RoleRow, state: DelegationState): Promise<DelegationRole> {
    const { reserved } = await store.reserved(role.wallet, network);
    const free = state.delegate === delegate.address ? state.remaining - reserved : 0n;
    return {
      roleId: role.role_id,
      delegate: delegate.address,
      asset,
      spendLimitAtomic: role.spend_limit.toString(),
      spendLimitRemaining: (free > 0n ? free : 0n).toString(),
      ttlSeconds: role.ttl_seconds,
      expiresAt: role.expires_at.toISOString(),
      programs: (await backend()).programs,
    };
  }

  function pendingRole(spendLimit: bigint, ttlSeconds: number, programs: string[]): DelegationRole {
    return {
      roleId: null,
      delegate: delegate.address,
      asset,
      spendLimitAtomic: spendLimit.toString(),
      spendLimitRemaining: null,
      ttlSeconds,
      expiresAt: null,
      programs,
    };
  }

  /** The role, when it holds now: recorded, not expired, and still the delegation on chain. */
  const active = (role: RoleRow | undefined, state: DelegationState, at: Date): RoleRow | null =>
    role && role.expires_at.getTime() > at.getTime() && state.delegate === delegate.address ? role : null;

  function required(
    wallet: string,
    cluster: FacilitatorCluster,
    state: DelegationState,
    rows: OnboardingTxRow[],
    programs: string[],
  ): SmartWalletOnboarding {
    const first = rows[0]!;
    return {
      status: 'transactions_required',
      buyerWallet: wallet,
      network: cluster,
      chainId: network,
      smartWallet: state.smartWallet,
      role: pendingRole(first.spend_limit, first.ttl_seconds, programs),
      transactions: rows.map((r) => ({ type: r.type, transaction: r.transaction, description: r.description })),
      transactionsExpireAt: first.expires_at.toISOString(),
      nextStep: `Sign ${rows.length === 1 ? 'the transaction' : `the ${rows.length} transactions`} with ${wallet} and send them, in this order, to POST /api/sessions/onboard/confirm before ${first.expires_at.toISOString()}.`,
    };
  }

  async function ready(
    wallet: string,
    cluster: FacilitatorCluster,
    role: RoleRow,
    state: DelegationState,
  ): Promise<SmartWalletOnboarding> {
    return {
      status: 'ready',
      buyerWallet: wallet,
      network: cluster,
      chainId: network,
      smartWallet: state.smartWallet,
      role: await roleView(role, state),
      transactions: [],
      transactionsExpireAt: null,
      nextStep: `Open payment sessions with POST /mpp/session/open (role ${role.role_id}, until ${role.expires_at.toISOString()}).`,
    };
  }

  async function onboard(request: SmartWalletOnboardRequest, caller: string): Promise<SmartWalletOnboarding> {
    if (request.buyerWallet !== caller) throw walletMismatch(request.buyerWallet, caller);
    const cluster = servedCluster(network, request.network);
    const wallet = request.buyerWallet;
    if (wallet === feePayer.address || wallet === delegate.address) {
      throw unprocessable('not_eligible', 'the facilitator’s own keys cannot be buyers', { reason: 'facilitator_key' });
    }
    // A program-derived address has no private key: it could never sign the transactions.
    if (isOffCurveAddress(wallet as Address))
      throw unprocessable('not_eligible', `${wallet} is not a wallet key (it is off the Ed25519 curve)`, {
        reason: 'not_a_wallet',
      });
    await rateLimit(wallet);
    return tolerant(async () => {
      const delegation = await backend();
      const at = now();
      const [role, state] = await Promise.all([store.role(wallet, network), delegation.read(wallet)]);
      if (state.frozen)
        throw unprocessable('not_eligible', `the wallet ${state.smartWallet} is frozen by the stablecoin's issuer`, {
          reason: 'frozen',
        });
      const spendLimit = BigInt(request.spendLimitAtomic);
      const current = active(role, state, at);
      // The same terms again: ready while the role can still move at least half its limit and has at least half its
      // lifetime left. Past either, the grant is made afresh (the full limit, a new lifetime) for the buyer to sign:
      // asking again is how a buyer renews a spent or expiring role (opens are refused in its last minute).
      if (
        current &&
        current.spend_limit === spendLimit &&
        current.ttl_seconds === request.ttlSeconds &&
        state.remaining * 2n >= spendLimit &&
        (current.expires_at.getTime() - at.getTime()) * 2 >= current.ttl_seconds * 1000
      )
        return ready(wallet, cluster, current, state);

      const round = randomId('onb', 16);
      const expiresAt = new Date(at.getTime() + request.ttlSeconds * 1000);
      const steps = delegation.onboarding(wallet, state, { spendLimit, expiresAt, round });
      const [{ value: lifetime }, height] = await Promise.all([
        rpc.getLatestBlockhash({ commitment: 'confirmed' }).send(),
        rpc.getBlockHeight({ commitment: 'confirmed' }).send(),
      ]);
      const txExpiresAt = new Date(
        at.getTime() + Math.max(0, Number(lifetime.lastValidBlockHeight - height)) * SLOT_MS,
      );
      const rows: OnboardingTxRow[] = steps.map((step, position) => {
        const tx = buildTransaction(feePayer.address, lifetime, step.instructions);
        return {
          key: tx.key,
          wallet,
          network,
          round,
          position,
          type: step.type,
          description: step.description,
          message: toBase64(tx.messageBytes),
          transaction: toBase64(tx.wire),
          blockhash: tx.blockhash,
          spend_limit: spendLimit,
          ttl_seconds: request.ttlSeconds,
          status: 'issued',
          signature: null,
          issued_at: at,
          expires_at: txExpiresAt,
          confirmed_at: null,
        };
      });
      await store.issueRound(rows);
      return required(wallet, cluster, state, rows, delegation.programs);
    });
  }

  /** 429 onboarding_capacity when the facilitator has created walletsPerHour wallets in the last hour. */
  async function walletCapacity(type: OnboardingTxRow['type']): Promise<void> {
    const at = now();
    const since = new Date(at.getTime() - 3_600_000);
    const checks = [
      {
        what: 'onboarding transactions',
        limit: limits.transactionsPerHour,
        ...(await store.onboardingTxsConfirmedSince(since)),
      },
      ...(type === 'create_wallet'
        ? [{ what: 'wallets', limit: limits.walletsPerHour, ...(await store.walletsCreatedSince(since)) }]
        : []),
    ];
    for (const { what, limit, count, oldest } of checks) {
      if (count < limit) continue;
      const retry = Math.max(1, Math.ceil(((oldest ?? at).getTime() + 3_600_000 - at.getTime()) / 1000));
      throw new HttpError(
        429,
        'onboarding_capacity',
        `this facilitator signed ${count} ${what} in the last hour, its limit; try again later`,
        { limit },
        { 'retry-after': String(retry) },
      );
    }
  }

  /** Co-signs, simulates, sends and confirms one issued transaction; its signature. */
  async function land(index: number, tx: ReadTransaction, row: OnboardingTxRow): Promise<string> {
    const { wire, signature } = coSign(tx, feePayer);
    // Landed already (a retry after a timeout): recognised, not sent again.
    const { value } = await rpc
      .getSignatureStatuses([signature as Signature], { searchTransactionHistory: true })
      .send();
    const seen = value[0];
    if (seen && !seen.err && seen.confirmationStatus !== 'processed') {
      await store.confirmOnboardingTx(row.key, signature, now());
      return signature;
    }
    await walletCapacity(row.type);
    const rejection = await facilitator.simulate(tx);
    if (rejection) {
      if (rejection.err === 'BlockhashNotFound') throw expired();
      throw unprocessable(
        'simulation_failed',
        `transaction ${index} fails in simulation: ${stringify(rejection.err)}`,
        {
          index,
          error: JSON.parse(stringify(rejection.err)),
          logs: [...rejection.logs],
        },
      );
    }
    const sent = await facilitator.broadcast(wire, signature);
    if (sent.state === 'unreachable')
      throw unavailable(
        'temporarily_unavailable',
        'the Solana RPC endpoint does not answer; nothing was sent: send the same transactions again',
        5,
      );
    if (sent.state === 'refused')
      throw unprocessable('simulation_failed', `transaction ${index}: ${sent.message}`, {
        index,
        error: sent.message,
        logs: [],
      });
    const outcome = sent.state === 'sent' ? await facilitator.confirm(signature) : { state: 'unseen' as const };
    if (outcome.state === 'failed') {
      throw unprocessable('simulation_failed', `transaction ${index} failed on chain: ${stringify(outcome.err)}`, {
        index,
        error: JSON.parse(stringify(outcome.err)),
        signature,
        logs: [],
      });
    }
    if (outcome.state === 'unseen') {
      throw new HttpError(
        503,
        'temporarily_unavailable',
        `transaction ${index} was sent but its confirmation was not seen yet; send the same transactions again`,
        { index, signature },
        { 'retry-after': '5' },
      );
    }
    await store.confirmOnboardingTx(row.key, signature, now());
    logger.info({ wallet: row.wallet, type: row.type, signature }, 'onboarding transaction confirmed');
    return signature;
  }

  const expired = () =>
    conflict(
      'blockhash_expired',
      'the onboarding transactions’ blockhash has expired; call POST /api/sessions/onboard again for fresh ones',
    );

  async function confirm(request: SmartWalletConfirmRequest, caller: string): Promise<SmartWalletConfirmation> {
    if (request.buyerWallet !== caller) throw walletMismatch(request.buyerWallet, caller);
    const cluster = servedCluster(network, request.network);
    const wallet = request.buyerWallet;
    await rateLimit(wallet);

    // Every transaction must be one issued to this wallet on this network, unaltered and signed by the buyer.
    const checked = await Promise.all(
      request.signedTransactions.map(async (encoded, index) => {
        let tx: ReadTransaction;
        try {
          tx = readTransaction(encoded);
        } catch (error) {
          throw invalidTransaction(
            index,
            'invalid_transaction_encoding',
            `does not decode (${(error as Error).message})`,
          );
        }
        const row = await store.onboardingTx(tx.key);
        if (!row || row.wallet !== wallet || row.network !== network || toBase64(tx.messageBytes) !== row.message) {
          throw invalidTransaction(
            index,
            'not_issued',
            `is not a transaction this facilitator issued to ${wallet} (its message bytes must be unchanged)`,
          );
        }
        if (row.status === 'superseded')
          throw invalidTransaction(
            index,
            'superseded',
            'belongs to an earlier onboarding round; sign the latest transactions',
          );
        for (let i = 1; i < tx.numRequiredSignatures; i++) {
          if (!hasValidSignature(tx, i))
            throw invalidTransaction(
              index,
              'not_signed',
              `the signature of ${tx.accounts[i]} is missing or does not verify`,
            );
        }
        return { tx, row };
      }),
    ).catch(async (error: unknown) => {
      // Nothing pending and nothing recognisable: there is no onboarding to confirm.
      if (
        error instanceof HttpError &&
        error.code === 'invalid_transaction' &&
        (await store.pendingOnboarding(wallet, network)).length === 0
      ) {
        throw notFound(
          'onboarding_not_found',
          `no pending onboarding for ${wallet} on ${cluster}; call POST /api/sessions/onboard first`,
        );
      }
      throw error;
    });

    return tolerant(async () => {
      const toSend = checked.filter((c) => c.row.status === 'issued');
      if (toSend.length > 0) {
        const { value: valid } = await rpc
          .isBlockhashValid(toSend[0]!.tx.blockhash as never, { commitment: 'confirmed' })
          .send();
        if (!valid) throw expired();
      }
      const signatures: string[] = [];
      for (const [index, { tx, row }] of checked.entries()) {
        signatures.push(row.status === 'confirmed' && row.signature ? row.signature : await land(index, tx, row));
      }
      // A round whose transactions have all landed grants its role (once, however many confirmations race).
      const rounds = [...new Set(checked.map((c) => c.row.round))];
      for (const round of rounds) {
        const rows = await store.roundOf(round);
        const grant = rows.find((r) => r.type === 'grant_role');
        if (grant && rows.every((r) => r.status === 'confirmed')) {
          await store.grantRole({
            wallet,
            network,
            smart_wallet: (await backend()).smartWalletOf(wallet),
            delegate: delegate.address,
            spend_limit: grant.spend_limit,
            ttl_seconds: grant.ttl_seconds,
            granted_at: grant.confirmed_at ?? now(),
            // What the buyer signed: the memo of the grant names this expiry.
            expires_at: new Date(grant.issued_at.getTime() + grant.ttl_seconds * 1000),
            round,
          });
        }
      }
      const delegation = await backend();
      const [role, state, pending] = await Promise.all([
        store.role(wallet, network),
        delegation.read(wallet),
        store.pendingOnboarding(wallet, network),
      ]);
      if (pending.length > 0) return { ...required(wallet, cluster, state, pending, delegation.programs), signatures };
      const current = active(role, state, now());
      if (current) return { ...(await ready(wallet, cluster, current, state)), signatures };
      throw unprocessable(
        'invalid_transaction',
        'these transactions did not complete an onboarding; call POST /api/sessions/onboard for the next ones',
        {
          index: 0,
          reason: 'incomplete',
        },
      );
    });
  }

  async function status(query: SmartWalletStatusQuery, caller: string): Promise<SmartWalletStatus> {
    if (query.wallet !== caller) throw walletMismatch(query.wallet, caller);
    const cluster = servedCluster(network, query.network);
    return tolerant(async () => {
      const delegation = await backend();
      const at = now();
      const [role, state, pending, { open }] = await Promise.all([
        store.role(query.wallet, network),
        delegation.read(query.wallet),
        store.pendingOnboarding(query.wallet, network),
        store.reserved(query.wallet, network),
      ]);
      const base = { wallet: query.wallet, network: cluster, chainId: CHAIN_ID[cluster], openSessions: open };
      const current = active(role, state, at);
      if (current) {
        const view = await roleView(current, state);
        return {
          ...base,
          status: 'active',
          smartWallet: state.smartWallet,
          roleId: current.role_id,
          spendLimitAtomic: view.spendLimitAtomic,
          spendLimitRemaining: view.spendLimitRemaining,
          roleExpiresAt: view.expiresAt,
        };
      }
      const live = pending.filter((r) => r.expires_at.getTime() > at.getTime());
      if (live.length > 0) {
        return {
          ...base,
          status: 'pending',
          smartWallet: state.smartWallet,
          roleId: null,
          spendLimitAtomic: live[0]!.spend_limit.toString(),
          spendLimitRemaining: null,
          roleExpiresAt: null,
        };
      }
      if (!role)
        return {
          ...base,
          status: 'not_onboarded',
          smartWallet: null,
          roleId: null,
          spendLimitAtomic: null,
          spendLimitRemaining: null,
          roleExpiresAt: null,
        };
      const past = role.expires_at.getTime() <= at.getTime();
      const spent = await spentRole(store, role, state, network, at);
      return {
        ...base,
        status: past ? 'expired' : spent ? 'active' : 'revoked',
        smartWallet: state.smartWallet,
        roleId: role.role_id,
        spendLimitAtomic: role.spend_limit.toString(),
        spendLimitRemaining: '0',
        roleExpiresAt: role.expires_at.toISOString(),
      };
    });
  }

  return { onboard, confirm, status };
}

export type OnboardingDesk = ReturnType<typeof createOnboardingDesk>;
