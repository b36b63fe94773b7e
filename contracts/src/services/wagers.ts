import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService } from '../core/service';
import { named } from '../core/names';
import { ErrorEnvelope, standardErrors } from '../core/errors';
import { free, type RouteMeta } from '../core/payment';
import { UsdAmount } from '../core/money';
import { SolanaSignature, Timestamp } from '../core/chain';
import { authErrors } from './shared';
import { DerivationSchema, EntropyProofSchema, type DrawDerivation, type EntropyProof } from './entropy';

const c = initContract();

// Design (the specification shows no bodies or states):
// - Identity: every route but health and ping carries SIGN-IN-WITH-X; the proven wallet is the caller. Connecting binds
//   that wallet to a chat username, which is how chat users (and this API) name opponents.
// - Stakes: the service holds them in its vault wallet. A player transfers the stake (stablecoin) from the connected
//   wallet to the vault and names the transfer's signature when challenging or accepting; the service checks it on
//   the chain. Refunds and payouts are on-chain transfers from the vault; every movement is in the wager's audit trail.
// - Outcome: a provably fair coin flip by the entropy service (POST /api/random/coin, paid by the vault from the house
//   cut), its proof stored on the wager. The service commits to a secret 32-byte seed when the challenge is created
//   (seedHash = SHA-256 of the seed's bytes) and reveals it once the flip is drawn. The flip's clientSeed is
//   hex(SHA-256(UTF-8 of seed + ":" + challengeId + ":" + challenger's stakeTxSignature + ":" + opponent's
//   stakeTxSignature)): fixed before the chain is harvested, steerable by neither player alone. Heads: the challenger
//   wins; tails: the opponent. Anyone can recompute the seed hash, the clientSeed and the flip from the proof.
// - Void: a wager that has had no flip for longer than WAGER_VOID_HOURS since acceptance (the entropy service gone) is
//   void: each stake is refunded in full from the vault, no house cut, no winner. A wager with its flip is never void.
// - Error codes of this service are UPPER_SNAKE_CASE, like the five the specification names.

export type ChallengeStatus = 'pending' | 'accepted' | 'declined' | 'expired' | 'cancelled';
export type WagerStatus = 'active' | 'settled' | 'void';
export type TransferKind = 'stake' | 'refund' | 'payout';

export interface WagerLimits {
  minWagerUsd: string;
  maxWagerUsd: string;
  houseCutPercent: number;
  challengeTtlSeconds: number;
}
export interface WagersHealth {
  status: 'ok';
  service: string;
  version: string;
  network: string;
  vaultAddress: string;
  asset: string;
  limits: WagerLimits;
}
export interface Pong {
  pong: true;
  time: string;
}
export interface ChatUser {
  username: string;
  address: string;
}
export interface WagerRecord {
  wagers: number;
  wins: number;
  losses: number;
  wageredUsd: string;
  wonUsd: string;
}
export interface ConnectedWallet {
  username: string;
  address: string;
  network: string;
  connectedAt: string;
  balanceUsd: string | null;
  record: WagerRecord;
}
export interface Disconnection {
  username: string;
  address: string;
  disconnectedAt: string;
  cancelledChallenges: string[];
  declinedChallenges: string[];
}
export interface Challenge {
  challengeId: string;
  status: ChallengeStatus;
  challenger: ChatUser;
  opponent: ChatUser;
  amountUsd: string;
  message: string | null;
  seedHash: string;
  stakeTxSignature: string;
  refundTxSignature: string | null;
  wagerId: string | null;
  createdAt: string;
  expiresAt: string;
  respondedAt: string | null;
}
export interface PendingChallenges {
  incoming: Challenge[];
  outgoing: Challenge[];
}
export interface WagerTransfer {
  kind: TransferKind;
  from: string;
  to: string;
  amountUsd: string;
  txSignature: string;
  confirmedAt: string;
}
export interface WagerFlip {
  clientSeed: string;
  outcome: 'heads' | 'tails';
  derivation: DrawDerivation;
  proof: EntropyProof;
  feeUsd: string;
  feeTxSignature: string | null;
}
export interface Wager {
  wagerId: string;
  challengeId: string;
  status: WagerStatus;
  network: string;
  vaultAddress: string;
  challenger: ChatUser;
  opponent: ChatUser;
  amountUsd: string;
  potUsd: string;
  houseCutPercent: number;
  houseCutUsd: string;
  payoutUsd: string;
  winner: 'challenger' | 'opponent' | null;
  seedHash: string;
  seed: string | null;
  flip: WagerFlip | null;
  transfers: WagerTransfer[];
  createdAt: string;
  settledAt: string | null;
  /** Present on a void wager only. */
  voidedAt?: string | null;
  /** Present on a void wager only: each player's refund, null until it lands. */
  refundTxSignatures?: { challenger: string | null; opponent: string | null } | null;
}

const Username = z
  .string()
  .regex(/^[A-Za-z0-9_]{2,32}$/, 'must be a chat username: 2 to 32 letters, digits or underscores');
const ChallengeId = z
  .string()
  .regex(/^chl_[A-Za-z0-9]{8,40}$/, 'must be a challenge id such as "chl_4Rt8mQ2xLp7Vn9Kd"');
const WagerId = z.string().regex(/^wgr_[A-Za-z0-9]{8,40}$/, 'must be a wager id such as "wgr_9Hs3kW5pZq2Tn7Xc"');
const Hex64 = z.string().regex(/^[0-9a-f]{64}$/);

const ChatUserSchema: z.ZodType<ChatUser> = named(
  'ChatUser',
  z.object({
    username: z.string(),
    address: z.string().describe('the connected Solana wallet'),
  }),
);
const WagersHealthSchema: z.ZodType<WagersHealth> = named(
  'WagersHealth',
  z.object({
    status: z.literal('ok'),
    service: z.string(),
    version: z.string(),
    network: z.string().describe('CAIP-2 id of the chain stakes move on (CHAIN_RPC_URL; default the main network)'),
    vaultAddress: z.string().describe('the vault wallet: transfer stakes here'),
    asset: z.string().describe('mint of the USD stablecoin stakes are paid in (6 decimals)'),
    limits: z.object({
      minWagerUsd: UsdAmount.describe('MIN_WAGER_USD, default 1'),
      maxWagerUsd: UsdAmount.describe('MAX_WAGER_USD, default 25'),
      houseCutPercent: z
        .number()
        .min(0)
        .max(100)
        .describe('HOUSE_CUT_PERCENT, default 5: share of the pot the house keeps'),
      challengeTtlSeconds: z.number().int().describe('how long a challenge stays pending; default 600'),
    }),
  }),
);
const PongSchema: z.ZodType<Pong> = named('Pong', z.object({ pong: z.literal(true), time: Timestamp }));
const ConnectedWalletSchema: z.ZodType<ConnectedWallet> = named(
  'ConnectedWallet',
  z.object({
    username: z.string(),
    address: z.string(),
    network: z.string(),
    connectedAt: Timestamp,
    balanceUsd: UsdAmount.nullable().describe(
      'stablecoin balance of the wallet on the chain; null when the chain does not answer',
    ),
    record: z.object({
      wagers: z.number().int().describe('settled wagers (a void wager counts neither as won nor as lost)'),
      wins: z.number().int(),
      losses: z.number().int(),
      wageredUsd: UsdAmount.describe('sum of the stakes of settled wagers'),
      wonUsd: UsdAmount.describe('sum of the payouts received'),
    }),
  }),
);
const DisconnectionSchema: z.ZodType<Disconnection> = named(
  'Disconnection',
  z.object({
    username: z.string(),
    address: z.string(),
    disconnectedAt: Timestamp,
    cancelledChallenges: z
      .array(z.string())
      .describe('your pending outgoing challenges, now cancelled, stakes refunded'),
    declinedChallenges: z.array(z.string()).describe('pending challenges to you, now declined, challengers refunded'),
  }),
);
const ChallengeSchema: z.ZodType<Challenge> = named(
  'Challenge',
  z.object({
    challengeId: z.string(),
    status: z
      .enum(['pending', 'accepted', 'declined', 'expired', 'cancelled'])
      .describe(
        'pending until the opponent accepts or declines, the TTL passes (expired) or the challenger disconnects (cancelled)',
      ),
    challenger: ChatUserSchema,
    opponent: ChatUserSchema,
    amountUsd: UsdAmount.describe('each player’s stake'),
    message: z.string().nullable(),
    seedHash: Hex64.describe('SHA-256 (hex) of the secret seed that will decide the coin flip'),
    stakeTxSignature: z.string().describe('the challenger’s stake transfer to the vault'),
    refundTxSignature: z
      .string()
      .nullable()
      .describe('the vault’s refund to the challenger once declined, expired or cancelled'),
    wagerId: z.string().nullable().describe('the wager created on acceptance'),
    createdAt: Timestamp,
    expiresAt: Timestamp,
    respondedAt: Timestamp.nullable(),
  }),
);
const PendingChallengesSchema: z.ZodType<PendingChallenges> = named(
  'PendingChallenges',
  z.object({
    incoming: z.array(ChallengeSchema).describe('pending challenges to you, oldest first'),
    outgoing: z.array(ChallengeSchema).describe('your pending challenges, oldest first'),
  }),
);
const WagerSchema: z.ZodType<Wager> = named(
  'Wager',
  z.object({
    wagerId: z.string(),
    challengeId: z.string(),
    status: z
      .enum(['active', 'settled', 'void'])
      .describe(
        'active: both stakes are in the vault and the payout is under way; settled: the winner is paid; void: no flip ' +
          'came within WAGER_VOID_HOURS (24 by default) of acceptance, so nobody won and each player’s stake is ' +
          'refunded in full from the vault (no house cut, no flip fee)',
      ),
    network: z.string(),
    vaultAddress: z.string(),
    challenger: ChatUserSchema,
    opponent: ChatUserSchema,
    amountUsd: UsdAmount.describe('each player’s stake'),
    potUsd: UsdAmount.describe('both stakes'),
    houseCutPercent: z.number().describe('HOUSE_CUT_PERCENT when the wager was created'),
    houseCutUsd: UsdAmount.describe('potUsd × houseCutPercent / 100, rounded down to 0.000001; stays in the vault'),
    payoutUsd: UsdAmount.describe('potUsd − houseCutUsd, paid to the winner'),
    winner: z
      .enum(['challenger', 'opponent'])
      .nullable()
      .describe('null until the flip is drawn; heads: the challenger'),
    seedHash: Hex64,
    seed: Hex64.nullable().describe(
      'the secret seed, revealed once the flip is drawn: check SHA-256(seed) = seedHash and the flip’s clientSeed',
    ),
    flip: z
      .object({
        clientSeed: Hex64.describe(
          'hex SHA-256 of seed ":" challengeId ":" both stake signatures (challenger’s first)',
        ),
        outcome: z.enum(['heads', 'tails']),
        derivation: DerivationSchema,
        proof: EntropyProofSchema.describe('the entropy service’s proof: recompute the flip from it'),
        feeUsd: UsdAmount.describe('what the entropy service charged the vault, paid from the house cut'),
        feeTxSignature: z.string().nullable().describe('the x402 settlement of that fee'),
      })
      .nullable()
      .describe('the coin flip that decided the wager, with its proof; null until drawn'),
    transfers: z
      .array(
        z.object({
          kind: z.enum(['stake', 'refund', 'payout']),
          from: z.string(),
          to: z.string(),
          amountUsd: UsdAmount,
          txSignature: z.string(),
          confirmedAt: Timestamp,
        }),
      )
      .describe('audit trail: every confirmed on-chain movement of this wager’s money, oldest first'),
    createdAt: Timestamp,
    settledAt: Timestamp.nullable(),
    voidedAt: Timestamp.nullable().optional().describe('when the wager became void; present on a void wager only'),
    refundTxSignatures: z
      .object({
        challenger: z.string().nullable().describe('the vault’s refund of the challenger’s stake; null until it lands'),
        opponent: z.string().nullable().describe('the vault’s refund of the opponent’s stake; null until it lands'),
      })
      .nullable()
      .optional()
      .describe(
        'present on a void wager only: the two refunds (also in `transfers`); a refund the chain refuses (e.g. the ' +
          'player closed its token account) is retried until it lands',
      ),
  }),
);

const identity =
  'Caller identity: SIGN-IN-WITH-X (the chat user’s wallet proof). Free: money moves through the vault as stakes and ' +
  'payouts, never as per-call fees. ';
const connected = 'Needs a connected wallet: 409 WALLET_NOT_CONNECTED otherwise. ';
const stakeRule =
  '`stakeTxSignature` names a confirmed transfer of exactly the stake, in the stablecoin, from your connected wallet to the ' +
  'vault (GET /api/v1/health gives the vault and asset), not yet used: 422 STAKE_INVALID (not found, not confirmed, wrong ' +
  'amount, sender, recipient or asset), 409 STAKE_ALREADY_USED. A transfer refused this way stays unused: name it in a later ' +
  'request. 503 chain_unavailable when the chain does not answer. ';

const router = c.router({
  health: {
    method: 'GET',
    path: '/api/v1/health',
    summary: 'Health check',
    description:
      'Design: status, version, the chain and vault stakes move through, and the limits (MIN_WAGER_USD, MAX_WAGER_USD, ' +
      'HOUSE_CUT_PERCENT, challenge lifetime). No authentication; free: monitors poll it. 503 chain_unavailable when the ' +
      'chain does not answer.',
    responses: { 200: WagersHealthSchema, 503: ErrorEnvelope, ...standardErrors },
    metadata: { payment: free() } satisfies RouteMeta,
  },
  ping: {
    method: 'GET',
    path: '/api/v1/ping',
    summary: 'Ping',
    description: 'Answers `{ pong: true, time }`. No authentication; free: a liveness probe.',
    responses: { 200: PongSchema, ...standardErrors },
    metadata: { payment: free() } satisfies RouteMeta,
  },
  connect: {
    method: 'POST',
    path: '/api/v1/wallet/connect',
    body: z
      .object({
        address: z.string().trim().min(1).max(100).describe('your Solana wallet: the one that signed SIGN-IN-WITH-X'),
        username: Username.describe('the chat username other users challenge you by'),
      })
      .strict(),
    summary: 'Connect a wallet',
    description:
      identity +
      'Design: binds the proven wallet to a chat username; stakes come from it and payouts go to it. Connecting again ' +
      'with the same wallet changes the username. Answers the connected wallet. Errors: 400 INVALID_ADDRESS (`address` is ' +
      'not a Solana address); 403 ADDRESS_MISMATCH (`address` is not the wallet that signed); 409 USERNAME_TAKEN (another ' +
      'wallet holds the username).',
    responses: { 200: ConnectedWalletSchema, 409: ErrorEnvelope, ...standardErrors, ...authErrors },
    metadata: {
      payment: free(),
      auth: 'siwx',
      example: { body: { address: '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM', username: 'alice_trades' } },
    } satisfies RouteMeta,
  },
  wallet: {
    method: 'GET',
    path: '/api/v1/wallet',
    summary: 'Connected wallet info',
    description:
      identity +
      connected +
      'Design: your username, wallet, network, stablecoin balance read from the chain, and your record of settled wagers.',
    responses: { 200: ConnectedWalletSchema, 409: ErrorEnvelope, ...standardErrors, ...authErrors },
    metadata: { payment: free(), auth: 'siwx' } satisfies RouteMeta,
  },
  disconnect: {
    method: 'DELETE',
    path: '/api/v1/wallet',
    summary: 'Disconnect the wallet',
    description:
      identity +
      connected +
      'Design: you go offline (others get USER_NOT_FOUND when challenging you); your pending outgoing challenges are ' +
      'cancelled and pending challenges to you declined, each stake refunded from the vault. Refused with 409 ' +
      'WAGER_IN_PROGRESS while you have an active wager.',
    responses: { 200: DisconnectionSchema, 409: ErrorEnvelope, 503: ErrorEnvelope, ...standardErrors, ...authErrors },
    metadata: { payment: free(), auth: 'siwx' } satisfies RouteMeta,
  },
  challenge: {
    method: 'POST',
    path: '/api/v1/wager/challenge',
    body: z
      .object({
        opponent: Username.describe('the chat username to challenge'),
        amountUsd: UsdAmount.describe(
          'each player’s stake in USD, within MIN_WAGER_USD and MAX_WAGER_USD (1 to 25 by default)',
        ),
        stakeTxSignature: SolanaSignature.describe('your stake transfer to the vault'),
        message: z.string().trim().min(1).max(200).optional().describe('shown to the opponent in the chat'),
      })
      .strict(),
    summary: 'Create a wager challenge',
    description:
      identity +
      connected +
      'Design: challenges a connected chat user to a coin flip for `amountUsd` each; your stake is held in the vault while ' +
      'the challenge is pending (challengeTtlSeconds, 600 by default) and refunded if it is declined, expires or is ' +
      'cancelled. ' +
      stakeRule +
      'Answers 201 with the pending challenge. Errors: 404 USER_NOT_FOUND (no such user, or offline: not connected); 422 ' +
      'SELF_WAGER (the opponent is you), AMOUNT_OUT_OF_RANGE (outside MIN_WAGER_USD to MAX_WAGER_USD); 409 ' +
      'WAGER_IN_PROGRESS (you or the opponent have an active wager), CHALLENGE_EXISTS (a pending challenge between you two ' +
      'already exists).',
    responses: {
      201: ChallengeSchema,
      404: ErrorEnvelope,
      409: ErrorEnvelope,
      422: ErrorEnvelope,
      503: ErrorEnvelope,
      ...standardErrors,
      ...authErrors,
    },
    metadata: {
      payment: free(),
      auth: 'siwx',
      example: {
        body: {
          opponent: 'bob_the_builder',
          amountUsd: '5',
          stakeTxSignature: '5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW',
          message: 'Best of one?',
        },
      },
    } satisfies RouteMeta,
  },
  accept: {
    method: 'POST',
    path: '/api/v1/wager/accept',
    body: z
      .object({
        challengeId: ChallengeId.describe('a pending challenge to you'),
        stakeTxSignature: SolanaSignature.describe('your matching stake transfer to the vault'),
      })
      .strict(),
    summary: 'Accept an incoming challenge',
    description:
      identity +
      connected +
      'Design: with your matching stake in the vault the challenge becomes a wager: `active` while the entropy service ' +
      'flips the coin (its proof is stored on the wager) and the winner is paid (payoutUsd = both stakes less ' +
      'HOUSE_CUT_PERCENT) from the vault, then `settled`; when the flip or the payout cannot finish now, the wager stays ' +
      '`active` and the service finishes it later. A wager still without a flip after WAGER_VOID_HOURS (24 by default) ' +
      'becomes `void`: both stakes are refunded in full and both players are free again. ' +
      stakeRule +
      'Answers the wager (`active`, or already `settled` or `void`). Errors: 404 CHALLENGE_NOT_FOUND (no such challenge ' +
      'to you); 409 CHALLENGE_NOT_PENDING (already accepted, declined, expired or cancelled), WAGER_IN_PROGRESS (you or ' +
      'the challenger have an active wager).',
    responses: {
      200: WagerSchema,
      404: ErrorEnvelope,
      409: ErrorEnvelope,
      422: ErrorEnvelope,
      503: ErrorEnvelope,
      ...standardErrors,
      ...authErrors,
    },
    metadata: {
      payment: free(),
      auth: 'siwx',
      example: {
        body: {
          challengeId: 'chl_4Rt8mQ2xLp7Vn9Kd',
          stakeTxSignature: '3nqf9zR2bS7cJpW4yTtYwK1xGvB6mLhQ8dNfE5uPaZrKcX2jVbHsM9gDq4oUeT7iLwRyA1kNzF3pC6vJxB8mQhSt',
        },
      },
    } satisfies RouteMeta,
  },
  decline: {
    method: 'POST',
    path: '/api/v1/wager/decline',
    body: z
      .object({
        challengeId: ChallengeId.optional().describe(
          'the challenge to decline; absent: your oldest pending incoming challenge',
        ),
      })
      .strict(),
    summary: 'Decline an incoming challenge',
    description:
      identity +
      connected +
      'Design: declines a pending challenge to you (the body may be `{}`: then the oldest one); the challenger’s stake is ' +
      'refunded from the vault. Answers the declined challenge with its refund signature. Errors: 404 CHALLENGE_NOT_FOUND ' +
      '(no such challenge to you, or none pending); 409 CHALLENGE_NOT_PENDING; 503 chain_unavailable or transfer_pending ' +
      '(the challenge is declined; the refund is retried until it lands).',
    responses: {
      200: ChallengeSchema,
      404: ErrorEnvelope,
      409: ErrorEnvelope,
      503: ErrorEnvelope,
      ...standardErrors,
      ...authErrors,
    },
    metadata: {
      payment: free(),
      auth: 'siwx',
      example: { body: { challengeId: 'chl_4Rt8mQ2xLp7Vn9Kd' } },
    } satisfies RouteMeta,
  },
  challenges: {
    method: 'GET',
    path: '/api/v1/wager/challenges',
    summary: 'Pending challenges, incoming and outgoing',
    description:
      identity + connected + 'Design: your pending challenges, split into `incoming` (to you) and `outgoing` (yours).',
    responses: { 200: PendingChallengesSchema, 409: ErrorEnvelope, ...standardErrors, ...authErrors },
    metadata: { payment: free(), auth: 'siwx' } satisfies RouteMeta,
  },
  active: {
    method: 'GET',
    path: '/api/v1/wager/active',
    summary: 'The caller’s current active wager',
    description:
      identity +
      connected +
      'Design: a player has at most one active wager. Errors: 404 NO_ACTIVE_WAGER when you have none.',
    responses: { 200: WagerSchema, 404: ErrorEnvelope, 409: ErrorEnvelope, ...standardErrors, ...authErrors },
    metadata: { payment: free(), auth: 'siwx' } satisfies RouteMeta,
  },
  get: {
    method: 'GET',
    path: '/api/v1/wager/:wagerId',
    pathParams: z.object({ wagerId: WagerId }),
    summary: 'Wager details by id',
    description:
      identity +
      'Design: the wager with its stakes, house cut, payout, winner, revealed seed and audit trail of transfers; only its ' +
      'two players may read it (by wallet, connected or not). Errors: 404 WAGER_NOT_FOUND; 403 NOT_A_PLAYER.',
    responses: { 200: WagerSchema, 404: ErrorEnvelope, ...standardErrors, ...authErrors },
    metadata: {
      payment: free(),
      auth: 'siwx',
      example: { params: { wagerId: 'wgr_9Hs3kW5pZq2Tn7Xc' } },
    } satisfies RouteMeta,
  },
});

export const wagers = defineService({
  id: 'wagers',
  title: 'Chat Wager Service',
  description:
    'REST interface for wagers between chat users: connect a wallet, challenge another user, accept or decline. Stakes are ' +
    'USD stablecoin held in the service’s vault wallet; a provably fair coin flip decides, and the winner is paid the pot ' +
    'less the house cut (HOUSE_CUT_PERCENT, default 5), every movement an on-chain transfer in the audit trail.',
  router,
});
