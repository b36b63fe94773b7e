import {
  base58Encode,
  voucherRequestMessage,
  type MppClosedSession,
  type MppOpenSessionRequest,
  type MppSession,
  type MppSignedVoucher,
  type MppVoucher,
  type MppVoucherRequest,
} from '@agent-economy/contracts';
import type { Logger } from 'pino';
import { HttpError, conflict, notFound, unavailable, unprocessable } from '../../runtime/errors';
import { signEd25519, type Wallet } from '../../solana/keys';
import { servedCluster } from './charge';
import type { DelegationBackend, DelegationState } from './delegation';
import {
  judgeVoucher,
  randomId,
  sessionDeadline,
  signVoucher,
  verifyBase58Signature,
  voucherSigner,
} from './session-domain';
import type { ClosedBy, RoleRow, SessionRow, SessionStore } from './session-store';
import { onChain, stringify, type Facilitator } from './settlement';
import { buildTransaction } from './transaction';

// Payment sessions (spec 002; research/mpp.md §1.4, §2.2, the "bar tab" model): open reserves part of the
// buyer's delegation role, vouchers raise the cumulative amount consumed (off chain, signed by the
// channel's key), close moves that amount once, on chain, from the buyer's wallet to the seller through the
// role, by the same send-and-record pipeline as every other settlement (kind 'session').
// State machine: open -> closing -> closed; closing goes back to open when nothing was broadcast. The close that
// took the session to closing owns it (a token in the row): only it records and sends the settlement, and only while
// it still owns the session, so a close outliving reconciliation's reopen sends nothing.

export interface SessionDeskOptions {
  facilitator: Facilitator;
  store: SessionStore;
  /** The delegation backend, ready once the stablecoin mint has been read from the chain. */
  backend: () => Promise<DelegationBackend>;
  feePayer: Wallet;
  /** The key buyers' roles authorise (session-domain sessionDelegate). */
  delegate: Wallet;
  asset: string;
  logger: Logger;
  /**
   * How long a buyer's close waits before it settles, ms: a seller paid by vouchers forwards the ones it holds in that
   * time (runtime/paywall-session.ts forwards every sweep), so a buyer cannot close on an older amount than it vouched.
   */
  closeGraceMs: number;
}

export const walletMismatch = (named: string, caller: string) =>
  new HttpError(
    403,
    'wallet_mismatch',
    `the request names ${named}, but SIGN-IN-WITH-X proved ${caller}; sign in with that wallet`,
    { named, caller },
  );

const roleNotFound = (reason: string, message: string) => unprocessable('wallet_role_not_found', message, { reason });

/** Why the buyer's role cannot be used now, or null when it can. */
export function roleProblem(
  role: RoleRow | undefined,
  state: DelegationState,
  delegate: string,
  now: Date,
): HttpError | null {
  if (!role)
    return roleNotFound(
      'none',
      'the buyer has no delegation role on this network; onboard first (POST /api/sessions/onboard)',
    );
  if (role.expires_at.getTime() <= now.getTime()) {
    return roleNotFound(
      'expired',
      `the buyer's delegation role expired at ${role.expires_at.toISOString()}; renew it (POST /api/sessions/onboard)`,
    );
  }
  if (state.delegate !== delegate) {
    return roleNotFound(
      'revoked',
      `the buyer's wallet ${state.smartWallet} no longer delegates to ${delegate} (the role was revoked); onboard again`,
    );
  }
  return null;
}

/**
 * The token program clears a delegate whose allowance is used up: a role whose delegate is gone, unexpired, that has
 * settled its whole limit since it was granted was spent, not revoked by its buyer.
 */
export async function spentRole(
  store: SessionStore,
  role: RoleRow,
  state: DelegationState,
  network: string,
  at: Date,
): Promise<boolean> {
  return (
    role.expires_at.getTime() > at.getTime() &&
    state.delegate === null &&
    (await store.settledSince(role.wallet, network, role.granted_at)) >= role.spend_limit
  );
}

export function createSessionDesk({
  facilitator,
  store,
  backend,
  feePayer,
  delegate,
  asset,
  logger,
  closeGraceMs,
}: SessionDeskOptions) {
  const { now, network } = facilitator;

  function view(s: SessionRow): MppSession {
    return {
      success: true,
      ok: true,
      channelId: s.channel_id,
      state: s.state,
      buyerWallet: s.buyer,
      smartWallet: s.smart_wallet,
      sellerWallet: s.seller,
      sessionKey: s.session_key,
      voucherSigner: s.voucher_signer,
      depositAtomic: s.deposit.toString(),
      acceptedCumulative: s.accepted.toString(),
      remainingAtomic: (s.deposit - s.accepted).toString(),
      pricePerUnit: s.price_per_unit?.toString() ?? null,
      asset: s.asset,
      network: s.network,
      channelProgram: s.channel_program,
      roleId: s.role_id,
      idleTimeoutSeconds: s.idle_timeout_seconds,
      openedAt: s.opened_at.toISOString(),
      expiresAt: s.expires_at.toISOString(),
    };
  }

  const notOpen = (s: SessionRow) =>
    conflict('session_not_open', `session ${s.channel_id} is ${s.state}, not open`, {
      state: s.state,
      closedAt: s.closed_at?.toISOString() ?? null,
      signature: s.settlement_signature,
    });

  async function find(channelId: string): Promise<SessionRow> {
    const session = await store.session(channelId);
    if (!session) throw notFound('session_not_found', `no payment session ${channelId}`, { channelId });
    return session;
  }

  async function open(request: MppOpenSessionRequest, caller: string): Promise<MppSession> {
    if (request.buyerWallet !== caller) throw walletMismatch(request.buyerWallet, caller);
    servedCluster(network, request.network);
    const delegation = await backend();
    const at = now();
    const [role, state] = await Promise.all([
      store.role(request.buyerWallet, network),
      delegation.read(request.buyerWallet),
    ]);
    const problem = roleProblem(role, state, delegate.address, at);
    if (problem) {
      if (role && (await spentRole(store, role, state, network, at)))
        throw roleNotFound(
          'spent',
          `the buyer's delegation role has moved its whole limit of ${role.spend_limit} atomic units; onboard again to renew it (POST /api/sessions/onboard)`,
        );
      throw problem;
    }
    if (request.smartWallet !== undefined && request.smartWallet !== state.smartWallet) {
      throw roleNotFound(
        'smart_wallet_mismatch',
        `${request.smartWallet} is not the buyer's onboarded wallet ${state.smartWallet}`,
      );
    }
    const expiresAt = sessionDeadline(at, request.idleTimeoutSeconds, role!.expires_at);
    if (expiresAt.getTime() <= at.getTime())
      throw roleNotFound(
        'expiring',
        `the buyer's delegation role expires at ${role!.expires_at.toISOString()}; renew it first`,
      );
    const deposit = BigInt(request.depositAtomic);
    const channelId = randomId('chn');
    const row: SessionRow = {
      channel_id: channelId,
      state: 'open',
      network,
      buyer: request.buyerWallet,
      smart_wallet: state.smartWallet,
      seller: request.sellerWallet,
      session_key: request.sessionKey,
      voucher_signer: voucherSigner(feePayer, channelId).address,
      deposit,
      accepted: 0n,
      sequence: 0,
      price_per_unit: request.pricePerUnit === undefined ? null : BigInt(request.pricePerUnit),
      asset,
      channel_program: delegation.program,
      role_id: role!.role_id,
      idle_timeout_seconds: request.idleTimeoutSeconds,
      metadata: request.metadata ? JSON.stringify(request.metadata) : null,
      opened_at: at,
      expires_at: expiresAt,
      closing_at: null,
      closed_at: null,
      closed_by: null,
      settlement_key: null,
      settlement_signature: null,
      amount_settled: null,
      seller_seen_at: null,
      close_owner: null,
    };
    // Every open session's deposit must stay covered by both what the wallet holds and what the role may move.
    const available = state.balance < state.remaining ? state.balance : state.remaining;
    const result = await store.openSession(row, available);
    if (!result.opened) {
      const short = state.balance - result.reserved < deposit ? 'balance' : 'spend_limit';
      const left = available - result.reserved;
      throw unprocessable(
        'insufficient_balance',
        short === 'balance'
          ? `the wallet ${state.smartWallet} holds ${state.balance} atomic units, ${result.reserved} of them reserved by open sessions; the deposit needs ${deposit}`
          : `the delegation role can still move ${state.remaining} atomic units, ${result.reserved} of them reserved by open sessions; the deposit needs ${deposit}`,
        { reason: short, required: deposit.toString(), available: (left > 0n ? left : 0n).toString() },
      );
    }
    logger.info({ channelId, buyer: row.buyer, seller: row.seller, deposit: deposit.toString() }, 'session opened');
    return view(row);
  }

  function signedVoucher(s: SessionRow, voucher: MppVoucher, signature: string, delta: bigint): MppSignedVoucher {
    return {
      success: true,
      ok: true,
      voucher,
      signature,
      signer: s.voucher_signer,
      signatureType: 'ed25519',
      acceptedCumulative: s.accepted.toString(),
      deltaAtomic: delta.toString(),
      remainingAtomic: (s.deposit - s.accepted).toString(),
      expiresAt: s.expires_at.toISOString(),
    };
  }

  async function voucher(request: MppVoucherRequest, attempt = 0): Promise<MppSignedVoucher> {
    const session = await find(request.channelId);
    if (session.state !== 'open') throw notOpen(session);
    const at = now();
    if (session.expires_at.getTime() <= at.getTime()) {
      // Idle past its deadline: the facilitator closes it (settling what was vouched) rather than extend it.
      await close(session, 'idle').catch((error: unknown) =>
        logger.warn({ err: error, channelId: session.channel_id }, 'idle close failed'),
      );
      const after = (await store.session(session.channel_id)) ?? session;
      if (after.state !== 'open') throw notOpen(after);
      throw conflict(
        'session_not_open',
        `session ${session.channel_id} went idle at ${session.expires_at.toISOString()}; the facilitator is closing it`,
        {
          state: 'expired',
          closedAt: null,
          signature: null,
        },
      );
    }
    if (!verifyBase58Signature(request.signer, voucherRequestMessage(request), request.signature)) {
      throw new HttpError(
        401,
        'voucher_signature_invalid',
        `the signature is not ${request.signer}'s over this voucher request`,
        { signer: request.signer },
      );
    }
    if (request.signer !== session.session_key) {
      throw new HttpError(
        403,
        'signer_mismatch',
        `vouchers of ${session.channel_id} are requested by its session key ${session.session_key}, not ${request.signer}`,
        {
          expected: session.session_key,
          signer: request.signer,
        },
      );
    }
    const cumulative = BigInt(request.cumulativeAmount);
    // Only a request for the amount already accepted can be a retry: the others need not read the last voucher.
    const last = cumulative === session.accepted ? await store.lastVoucher(session.channel_id) : undefined;
    if (
      last &&
      last.cumulative === cumulative &&
      last.units === request.units &&
      last.meter === (request.meter ?? null) &&
      last.server_nonce === (request.serverNonce ?? null)
    ) {
      // The same request again (a retry): the same voucher, signed once.
      return signedVoucher(session, JSON.parse(last.voucher) as MppVoucher, last.signature, last.delta);
    }
    const verdict = judgeVoucher(
      { accepted: session.accepted, deposit: session.deposit, pricePerUnit: session.price_per_unit },
      cumulative,
      request.units,
    );
    if (verdict.kind === 'not_monotonic') {
      throw conflict(
        'amount_not_monotonic',
        `cumulativeAmount ${cumulative} is not above the accepted cumulative ${verdict.accepted}`,
        {
          acceptedCumulative: verdict.accepted.toString(),
        },
      );
    }
    if (verdict.kind === 'underpayment') {
      throw unprocessable(
        'underpayment',
        `the increment ${verdict.delta} is below ${request.units} × ${session.price_per_unit} = ${verdict.minimum}`,
        {
          minimum: verdict.minimum.toString(),
          delta: verdict.delta.toString(),
        },
      );
    }
    if (verdict.kind === 'over_deposit') {
      throw unprocessable(
        'insufficient_balance',
        `cumulativeAmount ${cumulative} exceeds the session's deposit ${verdict.deposit}`,
        {
          reason: 'deposit',
          required: cumulative.toString(),
          available: verdict.deposit.toString(),
        },
      );
    }
    const delegation = await backend();
    // A voucher is signed only while the chain covers it: the wallet's balance and the role's allowance, read
    // now, must cover this cumulative amount plus what the buyer's other unsettled sessions have vouched.
    // (Funds stay in the buyer's custody: one moved away later makes the next voucher fail, see the README.)
    const [role, state, elsewhere] = await Promise.all([
      store.role(session.buyer, network),
      delegation.read(session.buyer),
      store.vouchedElsewhere(session.buyer, network, session.channel_id),
    ]);
    const owed = elsewhere + cumulative;
    const also = elsewhere > 0n ? ` (${elsewhere} of it vouched in the buyer's other open sessions)` : '';
    if (state.balance < owed) {
      throw unprocessable(
        'insufficient_balance',
        `the wallet ${state.smartWallet} holds ${state.balance} atomic units, below the ${owed} vouched${also}`,
        {
          reason: 'balance',
          required: owed.toString(),
          available: state.balance.toString(),
        },
      );
    }
    const problem = roleProblem(role, state, delegate.address, at);
    if (problem) throw problem;
    if (state.remaining < owed) {
      throw unprocessable(
        'insufficient_balance',
        `the delegation role can still move ${state.remaining} atomic units, below the ${owed} vouched${also}`,
        {
          reason: 'spend_limit',
          required: owed.toString(),
          available: state.remaining.toString(),
        },
      );
    }

    const issued: MppVoucher = {
      channelId: session.channel_id,
      payer: session.buyer,
      recipient: session.seller,
      cumulativeAmount: cumulative.toString(),
      sequence: session.sequence + 1,
      units: request.units,
      ...(request.meter !== undefined ? { meter: request.meter } : {}),
      ...(request.serverNonce !== undefined ? { serverNonce: request.serverNonce } : {}),
      ...(session.price_per_unit !== null ? { pricePerUnit: session.price_per_unit.toString() } : {}),
      chainId: session.network,
      channelProgram: session.channel_program,
      issuedAt: at.toISOString(),
    };
    const signature = signVoucher(voucherSigner(feePayer, session.channel_id), issued);
    const expiresAt = sessionDeadline(at, session.idle_timeout_seconds, role!.expires_at);
    const accepted = await store.acceptVoucher(
      {
        channel_id: session.channel_id,
        sequence: issued.sequence,
        cumulative,
        delta: verdict.delta,
        units: request.units,
        meter: request.meter ?? null,
        server_nonce: request.serverNonce ?? null,
        voucher: JSON.stringify(issued),
        signature,
        issued_at: at,
      },
      session.accepted,
      expiresAt,
    );
    if (!accepted) {
      // Another request moved the session first: judge this one again against what it left.
      if (attempt < 3) return voucher(request, attempt + 1);
      throw conflict('amount_not_monotonic', 'the session changed while this voucher was signed; ask again', {
        acceptedCumulative: session.accepted.toString(),
      });
    }
    return signedVoucher(
      { ...session, accepted: cumulative, sequence: issued.sequence, expires_at: expiresAt },
      issued,
      signature,
      verdict.delta,
    );
  }

  function closed(s: SessionRow, closedBy: ClosedBy, closedAt: Date, signature: string | null): MppClosedSession {
    return {
      success: true,
      ok: true,
      channelId: s.channel_id,
      state: 'closed',
      // An idle close answers nobody; a close by a party names it.
      closedBy: closedBy === 'seller' ? 'seller' : 'buyer',
      closedAt: closedAt.toISOString(),
      settlement: {
        seller: s.seller,
        buyer: s.buyer,
        amountSettled: (s.amount_settled ?? s.accepted).toString(),
        buyerRefund: (s.deposit - s.accepted).toString(),
        unpaidAtomic: (s.accepted - (s.amount_settled ?? s.accepted)).toString(),
        voucherCount: s.sequence,
        sessionDurationSeconds: Math.max(0, Math.floor((closedAt.getTime() - s.opened_at.getTime()) / 1000)),
        signature,
        network: s.network,
        asset: s.asset,
      },
    };
  }

  /** What a session's settlement records, whoever writes it: its close, or reconciliation abandoning it. */
  const settlementOf = (s: SessionRow) => ({
    kind: 'session' as const,
    scheme: 'session',
    network,
    payer: s.buyer,
    payTo: s.seller,
    asset: s.asset,
    resource: null,
    description: `payment session ${s.channel_id}`,
  });

  /**
   * open -> closing -> closed: settles the accepted cumulative amount once; back to open when nothing was broadcast.
   */
  async function close(session: SessionRow, by: ClosedBy): Promise<MppClosedSession> {
    const owner = randomId('cls');
    if (!(await store.beginClose(session.channel_id, now(), by, owner)))
      throw notOpen((await store.session(session.channel_id)) ?? session);
    // Read again under the closing state: no voucher can change it any more.
    const s = (await store.session(session.channel_id))!;
    /** This close lost the session before sending anything (reconciliation reopened it, so another close may run). */
    const lost = async (): Promise<HttpError> => {
      const current = (await store.session(s.channel_id)) ?? s;
      logger.warn(
        { channelId: s.channel_id, state: current.state },
        'session close outlived its hold; nothing was sent',
      );
      if (current.state !== 'open') return notOpen(current);
      return unavailable(
        'chain_unavailable',
        `the close of ${s.channel_id} took too long (the chain answered too slowly) and the session was reopened; nothing was broadcast and the session stays open: close it again`,
        5,
      );
    };
    let broadcastStarted = false;
    try {
      if (s.accepted === 0n) {
        const at = now();
        if (!(await store.finishClose(s.channel_id, owner, at, 0n, null))) throw await lost();
        return closed(s, by, at, null);
      }
      const delegation = await backend();
      const [role, state] = await Promise.all([store.role(s.buyer, network), delegation.read(s.buyer)]);
      const problem = roleProblem(role, state, delegate.address, now());
      if (problem) throw problem;
      // The buyer's funds never left its wallet (the spec's bar tab): a buyer that moved them away, or lowered the
      // role, still pays what is left rather than nothing; the rest is recorded as unpaid.
      const covered = [s.accepted, state.balance, state.remaining].reduce((a, b) => (a < b ? a : b));
      if (covered === 0n) {
        const reason = state.balance === 0n ? 'balance' : 'spend_limit';
        throw unprocessable(
          'insufficient_balance',
          `the session consumed ${s.accepted} atomic units; the ${reason === 'balance' ? 'wallet holds' : 'role can still move'} nothing`,
          { reason, required: s.accepted.toString(), available: '0' },
        );
      }
      if (covered < s.accepted) {
        logger.warn(
          { channelId: s.channel_id, consumed: s.accepted.toString(), covered: covered.toString() },
          'session settles short: the buyer moved funds away after vouching',
        );
      }
      const instructions = await delegation.settlement(s.buyer, s.seller, covered, `mpp-session close ${s.channel_id}`);
      const { value: lifetime } = await onChain('getLatestBlockhash', () =>
        facilitator.rpc.getLatestBlockhash({ commitment: 'confirmed' }).send(),
      );
      const tx = buildTransaction(feePayer.address, lifetime, instructions, [delegate]);
      const rejection = await facilitator.simulate(tx);
      if (rejection) {
        const custom = (rejection.err as { InstructionError?: [number, { Custom?: number | bigint }] })
          ?.InstructionError?.[1]?.Custom;
        throw unprocessable('simulation_failed', `the settlement fails in simulation: ${stringify(rejection.err)}`, {
          error: JSON.parse(stringify(rejection.err)),
          logs: [...rejection.logs],
          ...(custom !== undefined ? { programError: Number(custom) } : {}),
        });
      }
      // The fee payer's signature is the transaction's id; Ed25519 is deterministic, so it is known before sending.
      const signature = base58Encode(signEd25519(feePayer, tx.messageBytes));
      // The point of no return: recorded under this close's ownership, or nothing is sent at all.
      if (!(await store.noteSettlement(s.channel_id, owner, tx.key, signature, now()))) throw await lost();
      broadcastStarted = true;
      const outcome = await facilitator.submit({ tx, ...settlementOf(s), amount: covered });
      switch (outcome.state) {
        case 'confirmed':
          // Not finished here only when reconciliation finished it first from the settlement row: closed all the same.
          await store.finishClose(s.channel_id, owner, outcome.at, covered, outcome.transaction);
          logger.info(
            { channelId: s.channel_id, amount: covered.toString(), signature: outcome.transaction, by },
            'session settled',
          );
          return closed({ ...s, amount_settled: covered }, by, outcome.at, outcome.transaction);
        case 'failed':
          await store.reopen(s.channel_id, owner);
          throw unprocessable(
            'simulation_failed',
            `the settlement was broadcast and failed on chain (${outcome.error}); nothing moved and the session stays open`,
            {
              signature: outcome.transaction,
              error: outcome.error,
            },
          );
        case 'refused':
          await store.reopen(s.channel_id, owner);
          throw unprocessable('simulation_failed', `${outcome.message}; nothing moved and the session stays open`, {
            error: outcome.message,
            logs: [],
          });
        case 'taken':
          // Reconciliation abandoned this close's settlement and reopened the session: nothing was sent.
          if ((await store.session(s.channel_id))?.close_owner !== owner) throw await lost();
          throw new HttpError(
            503,
            'settlement_pending',
            'the settlement is being sent by another close; the session stays closing and the facilitator finishes it',
            { signature },
            { 'retry-after': '5' },
          );
        case 'pending':
          throw new HttpError(
            503,
            'settlement_pending',
            'the settlement was broadcast and its confirmation is not seen yet; the session stays closing and the facilitator finishes it',
            { signature },
            { 'retry-after': '5' },
          );
      }
    } catch (error) {
      // Nothing was broadcast (or the send was refused outright): the session goes on, open.
      const unsent = !broadcastStarted || (error instanceof HttpError && error.code === 'chain_unavailable');
      if (unsent) await store.reopen(s.channel_id, owner);
      throw error;
    }
  }

  return {
    open,
    voucher: (request: MppVoucherRequest) => voucher(request),

    async close(channelId: string, caller: string): Promise<MppClosedSession> {
      const session = await find(channelId);
      const by = caller === session.buyer ? 'buyer' : caller === session.seller ? 'seller' : null;
      if (!by) {
        throw new HttpError(
          403,
          'not_session_party',
          `only the buyer ${session.buyer} or the seller ${session.seller} may close ${channelId}`,
          { caller },
        );
      }
      if (session.state !== 'open') throw notOpen(session);
      if (by === 'buyer' && closeGraceMs > 0 && session.seller_seen_at) {
        // The seller read the session, so its paywall takes vouchers and may hold some it has not forwarded yet: it
        // forwards them within the grace, the session staying open for them, and the close then settles the latest.
        await new Promise((resolve) => setTimeout(resolve, closeGraceMs));
        const after = await find(channelId);
        if (after.state === 'closed' && after.closed_at)
          return closed(after, after.closed_by ?? 'buyer', after.closed_at, after.settlement_signature);
        if (after.state !== 'open') throw notOpen(after);
        return close(after, by);
      }
      return close(session, by);
    },

    /** The session as the facilitator holds it, for its buyer or its seller. */
    async get(channelId: string, caller: string): Promise<MppSession> {
      const session = await find(channelId);
      if (caller !== session.buyer && caller !== session.seller) {
        throw new HttpError(
          403,
          'not_session_party',
          `only the buyer ${session.buyer} or the seller ${session.seller} may read ${channelId}`,
          { caller },
        );
      }
      if (caller === session.seller && !session.seller_seen_at) await store.sellerSeen(channelId, now());
      return view(session);
    },

    counts: (today: Date) => store.counts(today),

    /**
     * Finishes what was left half done: closes whose settlement was confirmed (or failed) after the request
     * gave up, closes interrupted before broadcasting, and sessions idle past their deadline.
     */
    async reconcile(): Promise<void> {
      const at = now();
      for (const s of await store.closing(new Date(at.getTime() - facilitator.confirmTimeoutMs))) {
        const closingAt = s.closing_at;
        if (!closingAt) continue;
        const settlement = s.settlement_key ? await facilitator.store.get(s.settlement_key) : undefined;
        // Every write names the close that owned the session as read, and a reopen also what it read: a close that
        // moved on meanwhile (recorded its settlement, renewing its hold) keeps the session.
        const seen = { closingAt, settlementKey: s.settlement_key };
        if (settlement?.status === 'settled')
          await store.finishClose(
            s.channel_id,
            s.close_owner,
            settlement.settledAt ?? at,
            settlement.amount,
            settlement.transaction,
          );
        else if (settlement?.status === 'failed') await store.reopen(s.channel_id, s.close_owner, seen);
        // Closing for 2 minutes with no settlement claimed: the close died (a crash) before sending, or is stalled
        // before sending (an RPC without a timeout). Reopened, the session can be closed again; a stalled close that
        // wakes up no longer owns it, and its noteSettlement refuses, so it sends nothing. One that noted its
        // settlement already is past that check: its settlement is claimed here, as abandoned, so that its own claim
        // finds it taken and it sends nothing either (else it could settle a session closed again since: paid twice).
        else if (!settlement && at.getTime() - closingAt.getTime() > 2 * 60_000) {
          if (s.settlement_key) {
            const abandoned = await facilitator.store.abandon(
              {
                ...settlementOf(s),
                key: s.settlement_key,
                amount: s.accepted,
                transaction: s.settlement_signature ?? '',
                blockhash: '',
                createdAt: at,
              },
              'abandoned: the close stalled before sending it, and the session was reopened',
            );
            // The close claimed it meanwhile: it is sending, and its outcome finishes the session.
            if (!abandoned) continue;
          }
          await store.reopen(s.channel_id, s.close_owner, seen);
        }
      }
      for (const s of await store.idle(at)) {
        await close(s, 'idle').catch((error: unknown) =>
          logger.warn({ err: error, channelId: s.channel_id }, 'idle close failed'),
        );
      }
    },
  };
}

export type SessionDesk = ReturnType<typeof createSessionDesk>;
