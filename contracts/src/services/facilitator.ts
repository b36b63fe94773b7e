import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService } from '../core/service';
import { named } from '../core/names';
import { ErrorEnvelope, standardErrors } from '../core/errors';
import { free, type RouteMeta } from '../core/payment';
import { AtomicAmount, PositiveInt8Atomic } from '../core/money';
import {
  Caip2Network,
  isBase58OfLength,
  SolanaAddress,
  SolanaSignature,
  SOLANA_DEVNET,
  SOLANA_MAINNET,
  SOLANA_TESTNET,
  Timestamp,
  USDC_DEVNET,
} from '../core/chain';
import {
  PaymentRequirementsSchema,
  ResourceInfoSchema,
  type PaymentRequirements,
  type ResourceInfo,
} from '../core/x402';
import { authErrors } from './shared';

// The settlement API (spec 002) and the x402 facilitator routes (research/x402.md §1.2, §3).
// Every route is free: the facilitator is the infrastructure that settles payments, paid through the operator's
// agreement with its sellers, not per call; asking for an x402 payment to reach the service that settles x402
// payments would be circular, and the official x402 facilitator client cannot pay a 402.

const c = initContract();

// ---------------------------------------------------------------------------------------------------------------
// Interfaces first, then schemas annotated with them: keeps the emitted declarations small.

/** A Solana cluster as the settlement API names networks. */
export type FacilitatorCluster = 'mainnet-beta' | 'devnet' | 'testnet';
/** Every accepted spelling of a network: cluster names, legacy x402 v1 names and CAIP-2 ids; all read as a cluster. */
export type FacilitatorNetworkName =
  | FacilitatorCluster
  | 'mainnet'
  | 'solana'
  | 'solana-devnet'
  | 'solana-testnet'
  | typeof SOLANA_MAINNET
  | typeof SOLANA_DEVNET
  | typeof SOLANA_TESTNET;

// Charges

export interface MppPrepareRequest<Network = FacilitatorCluster> {
  network?: Network;
}
export interface MppPreparedCharge {
  /** The facilitator key to put as fee payer (account 0); the buyer pays no SOL. */
  feePayer: string;
  recentBlockhash: string;
  /** The same value as recentBlockhash, for clients written against that spelling. */
  blockhash: string;
  lastValidBlockHeight: number;
  /** CAIP-2 id of the network. */
  network: string;
  cluster: FacilitatorCluster;
  /** Mint of the USD stablecoin the charge must transfer. */
  splToken: string;
  decimals: number;
  tokenProgram: string;
}
export interface MppSettledResource {
  url: string;
  description?: string;
}
export interface MppChargeRequest<Network = FacilitatorCluster> {
  /** Base64 serialized v0 transaction, signed by the buyer only. */
  transaction: string;
  network?: Network;
  recipient?: string;
  amount?: string;
  asset?: string;
  resource?: MppSettledResource;
}
/** A sponsored recommendation the ad network matched to a settlement. */
export interface MppSponsoredAccess {
  delivered: boolean;
  campaignId: string;
  recommendations: { resourceUrl: string; description: string; sponsor: string }[];
  tracking: { impressionBeacon: string; conversionResource: string };
}
export interface MppChargeSettlement {
  success: true;
  ok: true;
  /** Base58 transaction signature. */
  signature: string;
  /** The buyer: authority of the transfer. */
  payer: string;
  /** CAIP-2 id of the network. */
  network: string;
  recipient: string;
  amount: string;
  asset: string;
  settlement: { recipient: string; amount: string; asset: string; feePayer: string };
  slot: number;
  confirmedAt: string;
  sponsoredAccess?: MppSponsoredAccess;
}

// Statistics

export type MppSettlementKind = 'charge' | 'x402' | 'session';
export interface MppSettlementRecord {
  signature: string;
  kind: MppSettlementKind;
  payer: string;
  recipient: string;
  amount: string;
  asset: string;
  network: string;
  at: string;
}
export interface MppCounter {
  total: number;
  today: number;
}
export interface MppOutcomeCounter extends MppCounter {
  success: number;
  fail: number;
  /** success / (success + fail), 0 to 1; null before the first attempt. */
  successRate: number | null;
}
export interface MppSettlementStats {
  asOf: string;
  networks: string[];
  prepare: MppCounter;
  settle: MppOutcomeCounter;
  x402: { verify: MppCounter & { valid: number; invalid: number }; settle: MppOutcomeCounter };
  sessions: { open: number; openedToday: number; closedToday: number; settledAtomic: string };
  volumeAtomic: string;
  volumeTodayAtomic: string;
  recentSettlements: MppSettlementRecord[];
  lastSettlement: MppSettlementRecord | null;
}

// Sessions

export type MppSessionState = 'open' | 'closing' | 'closed';
export interface MppOpenSessionRequest {
  buyerWallet: string;
  sellerWallet: string;
  depositAtomic: string;
  sessionKey: string;
  smartWallet?: string;
  pricePerUnit?: string;
  network?: FacilitatorCluster;
  idleTimeoutSeconds: number;
  metadata?: Record<string, string>;
}
export type MppOpenSessionInput = Omit<MppOpenSessionRequest, 'network' | 'idleTimeoutSeconds'> & {
  network?: FacilitatorNetworkName;
  idleTimeoutSeconds?: number;
};
export interface MppSession {
  success: true;
  ok: true;
  channelId: string;
  state: MppSessionState;
  buyerWallet: string;
  smartWallet: string;
  sellerWallet: string;
  /** The buyer's key that signs voucher requests. */
  sessionKey: string;
  /** The facilitator's key for this channel that signs every voucher it issues. */
  voucherSigner: string;
  depositAtomic: string;
  acceptedCumulative: string;
  remainingAtomic: string;
  pricePerUnit: string | null;
  asset: string;
  network: string;
  channelProgram: string;
  roleId: number;
  idleTimeoutSeconds: number;
  openedAt: string;
  expiresAt: string;
}
export interface MppVoucherRequest {
  channelId: string;
  cumulativeAmount: string;
  units: number;
  meter?: string;
  serverNonce?: string;
  signer: string;
  signature: string;
}
export type MppVoucherInput = Omit<MppVoucherRequest, 'units'> & { units?: number };
/** The voucher the facilitator signs; absent optional fields are left out of the signed bytes. */
export interface MppVoucher {
  channelId: string;
  payer: string;
  recipient: string;
  cumulativeAmount: string;
  sequence: number;
  units: number;
  meter?: string;
  serverNonce?: string;
  pricePerUnit?: string;
  chainId: string;
  channelProgram: string;
  issuedAt: string;
}
export interface MppSignedVoucher {
  success: true;
  ok: true;
  voucher: MppVoucher;
  signature: string;
  signer: string;
  signatureType: 'ed25519';
  acceptedCumulative: string;
  deltaAtomic: string;
  remainingAtomic: string;
  expiresAt: string;
}
export interface MppCloseSessionRequest {
  channelId: string;
}
export interface MppSessionSettlement {
  seller: string;
  buyer: string;
  amountSettled: string;
  buyerRefund: string;
  /** Consumed but not covered at close: the buyer had moved its funds away (or lowered the role) after vouching. */
  unpaidAtomic: string;
  voucherCount: number;
  sessionDurationSeconds: number;
  signature: string | null;
  network: string;
  asset: string;
}
export interface MppClosedSession {
  success: true;
  ok: true;
  channelId: string;
  state: 'closed';
  closedBy: 'buyer' | 'seller';
  closedAt: string;
  settlement: MppSessionSettlement;
}

// Onboarding

export type SmartWalletTransactionType = 'create_wallet' | 'grant_role';
export interface SmartWalletTransaction {
  type: SmartWalletTransactionType;
  /** Base64 serialized transaction for the buyer to sign; the facilitator signs as fee payer on confirm. */
  transaction: string;
  description: string;
}
export interface DelegationRole {
  roleId: number | null;
  /** The facilitator key the role authorises. */
  delegate: string;
  asset: string;
  spendLimitAtomic: string;
  spendLimitRemaining: string | null;
  ttlSeconds: number;
  expiresAt: string | null;
  programs: string[];
}
export interface SmartWalletOnboardRequest {
  buyerWallet: string;
  /** Default: the facilitator's own cluster. */
  network?: FacilitatorCluster;
  spendLimitAtomic: string;
  ttlSeconds: number;
}
export interface SmartWalletOnboardInput {
  buyerWallet: string;
  network?: FacilitatorNetworkName;
  spendLimitAtomic?: string;
  ttlSeconds?: number;
}
export interface SmartWalletOnboarding {
  status: 'ready' | 'transactions_required';
  buyerWallet: string;
  network: FacilitatorCluster;
  chainId: string;
  smartWallet: string;
  role: DelegationRole;
  transactions: SmartWalletTransaction[];
  transactionsExpireAt: string | null;
  nextStep: string;
}
export interface SmartWalletConfirmRequest {
  buyerWallet: string;
  /** Default: the facilitator's own cluster. */
  network?: FacilitatorCluster;
  signedTransactions: string[];
}
export interface SmartWalletConfirmInput {
  buyerWallet: string;
  network?: FacilitatorNetworkName;
  signedTransactions: string[];
}
export interface SmartWalletConfirmation extends SmartWalletOnboarding {
  /** Base58 signatures of the transactions confirmed by this call. */
  signatures: string[];
}
export type SmartWalletOnboardingState = 'not_onboarded' | 'pending' | 'active' | 'expired' | 'revoked';
export interface SmartWalletStatusQuery {
  wallet: string;
  /** Default: the facilitator's own cluster. */
  network?: FacilitatorCluster;
}
export interface SmartWalletStatusInput {
  wallet: string;
  network?: FacilitatorNetworkName;
}
export interface SmartWalletStatus {
  wallet: string;
  network: FacilitatorCluster;
  chainId: string;
  status: SmartWalletOnboardingState;
  smartWallet: string | null;
  roleId: number | null;
  spendLimitAtomic: string | null;
  spendLimitRemaining: string | null;
  roleExpiresAt: string | null;
  openSessions: number;
}

// x402 facilitator (research/x402.md §1.2 and §3)

/** x402 v2 PaymentPayload: the decoded PAYMENT-SIGNATURE header a resource server forwards. */
export interface X402PaymentPayload {
  x402Version: 2;
  resource?: ResourceInfo;
  accepted: PaymentRequirements;
  /** Scheme-specific; Solana `exact`: { transaction: base64 partially-signed v0 transaction }. */
  payload: Record<string, unknown>;
  extensions?: Record<string, unknown>;
}
/** Body of POST /verify and POST /settle. */
export interface X402FacilitatorRequest {
  x402Version: 2;
  paymentPayload: X402PaymentPayload;
  paymentRequirements: PaymentRequirements;
}
export interface X402VerifyResponse {
  isValid: boolean;
  invalidReason?: string;
  invalidMessage?: string;
  payer?: string;
  extensions?: Record<string, unknown>;
}
export interface X402VerifyFailure extends X402VerifyResponse {
  isValid: false;
  invalidReason: string;
  invalidMessage: string;
}
export interface X402SettleResponse {
  success: boolean;
  errorReason?: string;
  errorMessage?: string;
  payer?: string;
  /** Base58 transaction signature; empty string when nothing was broadcast. */
  transaction: string;
  network: string;
  amount?: string;
  extensions?: Record<string, unknown>;
}
export interface X402SettleFailure extends X402SettleResponse {
  success: false;
  errorReason: string;
  errorMessage: string;
}
export interface X402SupportedKind {
  x402Version: 2;
  scheme: 'exact';
  network: string;
  extra: { feePayer: string };
}
export interface X402SupportedResponse {
  kinds: X402SupportedKind[];
  extensions: string[];
  /** CAIP family pattern (e.g. "solana:*") -> signer addresses. */
  signers: Record<string, string[]>;
}

// ---------------------------------------------------------------------------------------------------------------
// Field schemas

const CLUSTER_OF: Record<FacilitatorNetworkName, FacilitatorCluster> = {
  'mainnet-beta': 'mainnet-beta',
  mainnet: 'mainnet-beta',
  solana: 'mainnet-beta',
  [SOLANA_MAINNET]: 'mainnet-beta',
  devnet: 'devnet',
  'solana-devnet': 'devnet',
  [SOLANA_DEVNET]: 'devnet',
  testnet: 'testnet',
  'solana-testnet': 'testnet',
  [SOLANA_TESTNET]: 'testnet',
};
const ClusterSchema: z.ZodType<FacilitatorCluster> = named(
  'FacilitatorCluster',
  z.enum(['mainnet-beta', 'devnet', 'testnet']),
);
const NetworkName: z.ZodType<FacilitatorCluster, z.ZodTypeDef, FacilitatorNetworkName> = named(
  'NetworkName',
  z
    .enum([
      'mainnet-beta',
      'devnet',
      'testnet',
      'mainnet',
      'solana',
      'solana-devnet',
      'solana-testnet',
      SOLANA_MAINNET,
      SOLANA_DEVNET,
      SOLANA_TESTNET,
    ])
    .transform((name) => CLUSTER_OF[name])
    .describe('Solana network: a cluster name, a legacy x402 v1 name or a CAIP-2 id; read as the cluster'),
);

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** A serialized Solana transaction (at most 1232 bytes) in standard base64. */
const Base64Transaction = z
  .string()
  .min(4)
  .max(1644)
  .regex(BASE64, 'must be a standard base64 serialized Solana transaction (at most 1232 bytes)');
const Blockhash = named(
  'Blockhash',
  z.string().refine((s) => isBase58OfLength(s, 32), 'must be a base58 blockhash (32 bytes)'),
  {
    example: 'EkSnNWid2cvwEVnVx9aBqawnmiCNiDgp3gUdkDPTKN1N',
  },
);
const Ed25519Signature = named(
  'Ed25519Signature',
  z.string().refine((s) => isBase58OfLength(s, 64), 'must be a base58 Ed25519 signature (64 bytes)'),
  {
    example: '4Nh3b2byArLCjLJpy9oEmY9zzY4pTrSgQwjVuSio3Ak7pKfUSyvB8Ym1v6HnneC8TkoEP5Y3iUECyM4wr18LU3d9',
  },
);
const ChannelId = z
  .string()
  .regex(/^chn_[A-Za-z0-9]{16,40}$/, 'must be a channel id returned by POST /mpp/session/open (chn_…)');

/**
 * Renames the alternate field spellings published for the same API (research/mpp.md §2, §6) to our
 * names before validation. A field sent under both names is left as it is, so the strict body rejects the alias.
 */
function acceptingAliases<Out, In>(
  aliases: Readonly<Record<string, string>>,
  schema: z.ZodType<Out, z.ZodTypeDef, In>,
): z.ZodType<Out, z.ZodTypeDef, In> {
  const rename = (value: unknown) => {
    if (!value || typeof value !== 'object' || Array.isArray(value)) return value;
    const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
    for (const [alias, name] of Object.entries(aliases)) {
      if (alias in out && !(name in out)) {
        out[name] = out[alias];
        delete out[alias];
      }
    }
    return out;
  };
  return z.preprocess(rename, schema) as unknown as z.ZodType<Out, z.ZodTypeDef, In>;
}

// ---------------------------------------------------------------------------------------------------------------
// Charge schemas

const PrepareRequestSchema: z.ZodType<
  MppPrepareRequest,
  z.ZodTypeDef,
  MppPrepareRequest<FacilitatorNetworkName>
> = named(
  'MppPrepareRequest',
  z
    .object({
      network: NetworkName.optional().describe('the network to pay on; default: the facilitator’s own network'),
    })
    .strict(),
);

const PreparedChargeSchema: z.ZodType<MppPreparedCharge> = named(
  'MppPreparedCharge',
  z.object({
    feePayer: SolanaAddress.describe('the facilitator key to set as fee payer (account 0); the buyer pays no SOL'),
    recentBlockhash: Blockhash,
    blockhash: Blockhash.describe('the same value as recentBlockhash, for clients written against that spelling'),
    lastValidBlockHeight: z.number().int().nonnegative().describe('the transaction must land by this block height'),
    network: Caip2Network,
    cluster: ClusterSchema,
    splToken: SolanaAddress.describe('mint of the USD stablecoin the charge transfers'),
    decimals: z.number().int().describe('decimals of the stablecoin: 6'),
    tokenProgram: SolanaAddress.describe('SPL Token or Token-2022 program that owns the mint'),
  }),
);

const SettledResourceSchema: z.ZodType<MppSettledResource> = named(
  'MppSettledResource',
  z.object({ url: z.string().url().max(2048), description: z.string().max(500).optional() }).strict(),
);

const ChargeRequestSchema: z.ZodType<MppChargeRequest, z.ZodTypeDef, MppChargeRequest<FacilitatorNetworkName>> = named(
  'MppChargeRequest',
  z
    .object({
      transaction: Base64Transaction.describe(
        'the charge: a v0 transaction with fee payer = /mpp/prepare feePayer, signed by the buyer only (slot 0 left empty)',
      ),
      network: NetworkName.optional().describe('default: the facilitator’s own network'),
      recipient: SolanaAddress.optional().describe(
        'the seller wallet (owner, not token account) the transfer must pay',
      ),
      amount: PositiveInt8Atomic.optional().describe('the exact amount the transfer must move, atomic units'),
      asset: SolanaAddress.optional().describe('the mint the transfer must move; only the stablecoin is accepted'),
      resource: SettledResourceSchema.optional().describe(
        'what was bought; when given, the ad network may attach a sponsored recommendation',
      ),
    })
    .strict(),
);

const SponsoredAccessSchema: z.ZodType<MppSponsoredAccess> = named(
  'MppSponsoredAccess',
  z.object({
    delivered: z.boolean(),
    campaignId: z.string(),
    recommendations: z.array(z.object({ resourceUrl: z.string(), description: z.string(), sponsor: z.string() })),
    tracking: z.object({
      impressionBeacon: z.string().describe('fire it (GET) to confirm the recommendation was delivered'),
      conversionResource: z.string().describe('the recommended resource'),
    }),
  }),
);

const ChargeSettlementSchema: z.ZodType<MppChargeSettlement> = named(
  'MppChargeSettlement',
  z.object({
    success: z.literal(true),
    ok: z.literal(true).describe('the same as success, for clients written against that spelling'),
    signature: SolanaSignature,
    payer: SolanaAddress.describe('the buyer: authority of the transfer'),
    network: Caip2Network,
    recipient: SolanaAddress,
    amount: AtomicAmount,
    asset: SolanaAddress,
    settlement: z.object({
      recipient: SolanaAddress,
      amount: AtomicAmount,
      asset: SolanaAddress,
      feePayer: SolanaAddress,
    }),
    slot: z.number().int().describe('slot in which the transaction was confirmed'),
    confirmedAt: Timestamp,
    sponsoredAccess: SponsoredAccessSchema.optional(),
  }),
);

// Statistics schemas

const SettlementRecordSchema: z.ZodType<MppSettlementRecord> = named(
  'MppSettlementRecord',
  z.object({
    signature: SolanaSignature,
    kind: z
      .enum(['charge', 'x402', 'session'])
      .describe('charge: /mpp/settle; x402: /settle; session: /mpp/session/close'),
    payer: SolanaAddress,
    recipient: SolanaAddress,
    amount: AtomicAmount,
    asset: SolanaAddress,
    network: Caip2Network,
    at: Timestamp,
  }),
);
const CounterShape = {
  total: z.number().int().describe('since the facilitator’s database was created'),
  today: z.number().int().describe('since 00:00 UTC'),
};
const OutcomeCounterSchema: z.ZodType<MppOutcomeCounter> = named(
  'MppOutcomeCounter',
  z.object({
    ...CounterShape,
    success: z.number().int(),
    fail: z.number().int(),
    successRate: z
      .number()
      .min(0)
      .max(1)
      .nullable()
      .describe('success / (success + fail); null before the first attempt'),
  }),
);
const SettlementStatsSchema: z.ZodType<MppSettlementStats> = named(
  'MppSettlementStats',
  z.object({
    asOf: Timestamp,
    networks: z.array(Caip2Network).describe('networks this facilitator settles on'),
    prepare: z.object(CounterShape).describe('POST /mpp/prepare calls'),
    settle: OutcomeCounterSchema.describe('POST /mpp/settle outcomes'),
    x402: z.object({
      verify: z.object({ ...CounterShape, valid: z.number().int(), invalid: z.number().int() }),
      settle: OutcomeCounterSchema,
    }),
    sessions: z.object({
      open: z.number().int().describe('sessions open now'),
      openedToday: z.number().int(),
      closedToday: z.number().int(),
      settledAtomic: AtomicAmount.describe('total settled by session closes'),
    }),
    volumeAtomic: AtomicAmount.describe('everything settled, all kinds'),
    volumeTodayAtomic: AtomicAmount,
    recentSettlements: z.array(SettlementRecordSchema).max(20).describe('newest first, at most 20'),
    lastSettlement: SettlementRecordSchema.nullable(),
  }),
);

// Session schemas

const SessionMetadata = z
  .record(z.string().min(1).max(64), z.string().max(256))
  .refine((m) => Object.keys(m).length <= 16, 'must have at most 16 entries')
  .describe('free labels kept with the session, at most 16 entries');

const OpenSessionSchema = acceptingAliases<MppOpenSessionRequest, MppOpenSessionInput>(
  {
    buyer_wallet: 'buyerWallet',
    buyer_swig_address: 'smartWallet',
    buyer_smart_wallet: 'smartWallet',
    seller_wallet: 'sellerWallet',
    deposit_atomic: 'depositAtomic',
    session_key: 'sessionKey',
    price_per_unit: 'pricePerUnit',
    idle_timeout_seconds: 'idleTimeoutSeconds',
  },
  z
    .object({
      buyerWallet: SolanaAddress.describe('the buyer; must be the SIGN-IN-WITH-X wallet'),
      sellerWallet: SolanaAddress.describe('the seller wallet the session pays'),
      depositAtomic: PositiveInt8Atomic.describe(
        'the most the session may consume, atomic units; nothing moves now: funds stay in the buyer’s smart wallet',
      ),
      sessionKey: SolanaAddress.describe(
        'the buyer’s Ed25519 session public key: every voucher request must be signed by it',
      ),
      smartWallet: SolanaAddress.optional().describe('the buyer’s smart wallet; default: the one onboarding created'),
      pricePerUnit: PositiveInt8Atomic.optional().describe(
        'the seller’s minimum price per unit, atomic units; a voucher increment below units × pricePerUnit is refused',
      ),
      network: NetworkName.optional().describe('default: the facilitator’s own network'),
      idleTimeoutSeconds: z
        .number()
        .int()
        .min(30)
        .max(86_400)
        .default(900)
        .describe('the facilitator closes the session after this long without a voucher, 30 to 86400, default 900'),
      metadata: SessionMetadata.optional(),
    })
    .strict()
    .describe(
      'Also accepted: buyer_wallet, buyer_swig_address or buyer_smart_wallet, seller_wallet, deposit_atomic, session_key, ' +
        'price_per_unit, idle_timeout_seconds.',
    ),
);

const SessionSchema: z.ZodType<MppSession> = named(
  'MppSession',
  z.object({
    success: z.literal(true),
    ok: z.literal(true),
    channelId: ChannelId,
    state: z.enum(['open', 'closing', 'closed']),
    buyerWallet: SolanaAddress,
    smartWallet: SolanaAddress,
    sellerWallet: SolanaAddress,
    sessionKey: SolanaAddress.describe('the buyer’s key that signs voucher requests'),
    voucherSigner: SolanaAddress.describe(
      'the facilitator’s key for this channel; it signs every voucher, sellers check it',
    ),
    depositAtomic: AtomicAmount,
    acceptedCumulative: AtomicAmount.describe('the highest cumulative amount vouched so far; "0" at open'),
    remainingAtomic: AtomicAmount.describe('depositAtomic − acceptedCumulative'),
    pricePerUnit: AtomicAmount.nullable(),
    asset: SolanaAddress.describe('the stablecoin mint'),
    network: Caip2Network,
    channelProgram: SolanaAddress.describe('the program that enforces the delegation role'),
    roleId: z.number().int().nonnegative(),
    idleTimeoutSeconds: z.number().int(),
    openedAt: Timestamp,
    expiresAt: Timestamp.describe(
      'when the facilitator closes the session by itself unless a voucher comes first; never after the role expires',
    ),
  }),
);

const VoucherRequestSchema = acceptingAliases<MppVoucherRequest, MppVoucherInput>(
  {
    channel_id: 'channelId',
    amount: 'cumulativeAmount',
    cumulative_amount: 'cumulativeAmount',
    server_nonce: 'serverNonce',
  },
  z
    .object({
      channelId: ChannelId,
      cumulativeAmount: PositiveInt8Atomic.describe('the total consumed since open (not a delta), atomic units'),
      units: z.number().int().min(1).max(1_000_000).default(1).describe('units this increment pays for, default 1'),
      meter: z
        .string()
        .regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'must be 1 to 64 letters, digits or _ . : -')
        .optional()
        .describe('what is metered, e.g. "requests" or "tokens"'),
      serverNonce: z
        .string()
        .regex(/^[A-Za-z0-9_-]{1,128}$/, 'must be 1 to 128 letters, digits, _ or -')
        .optional()
        .describe('the seller’s nonce for the request being paid; echoed in the signed voucher'),
      signer: SolanaAddress.describe('the buyer’s session key that signed this request'),
      signature: Ed25519Signature.describe(
        'Ed25519 signature by signer over UTF-8 "solana-mpp-session-voucher-request-v1:" + the JSON of ' +
          '{channelId, cumulativeAmount, units, meter?, serverNonce?} with keys sorted and absent fields left out',
      ),
    })
    .strict()
    .describe('Also accepted: channel_id; amount or cumulative_amount for cumulativeAmount; server_nonce.'),
);

const VoucherSchema: z.ZodType<MppVoucher> = named(
  'MppVoucher',
  z.object({
    channelId: ChannelId,
    payer: SolanaAddress.describe('the buyer wallet'),
    recipient: SolanaAddress.describe('the seller wallet'),
    cumulativeAmount: AtomicAmount,
    sequence: z.number().int().min(1).describe('1 for the first voucher of the channel, then 2, 3, …'),
    units: z.number().int().min(1),
    meter: z.string().optional(),
    serverNonce: z.string().optional(),
    pricePerUnit: AtomicAmount.optional(),
    chainId: Caip2Network,
    channelProgram: SolanaAddress,
    issuedAt: Timestamp,
  }),
);

const SignedVoucherSchema: z.ZodType<MppSignedVoucher> = named(
  'MppSignedVoucher',
  z.object({
    success: z.literal(true),
    ok: z.literal(true),
    voucher: VoucherSchema,
    signature: Ed25519Signature.describe(
      'Ed25519 signature by signer over UTF-8 "solana-mpp-session-voucher-v1:" + the JSON of voucher with keys sorted ' +
        'recursively and absent fields left out',
    ),
    signer: SolanaAddress.describe('the channel’s voucherSigner: the same key for every voucher of the channel'),
    signatureType: z.literal('ed25519'),
    acceptedCumulative: AtomicAmount,
    deltaAtomic: AtomicAmount.describe('this voucher’s increment over the previous one'),
    remainingAtomic: AtomicAmount,
    expiresAt: Timestamp.describe('the session’s new idle deadline'),
  }),
);

const CloseSessionSchema = acceptingAliases<MppCloseSessionRequest, MppCloseSessionRequest>(
  { channel_id: 'channelId' },
  z.object({ channelId: ChannelId }).strict().describe('Also accepted: channel_id.'),
);

const ClosedSessionSchema: z.ZodType<MppClosedSession> = named(
  'MppClosedSession',
  z.object({
    success: z.literal(true),
    ok: z.literal(true),
    channelId: ChannelId,
    state: z.literal('closed'),
    closedBy: z.enum(['buyer', 'seller']),
    closedAt: Timestamp,
    settlement: z.object({
      seller: SolanaAddress,
      buyer: SolanaAddress,
      amountSettled: AtomicAmount.describe(
        'transferred to the seller: the accepted cumulative amount, or what the smart wallet and the role still covered',
      ),
      buyerRefund: AtomicAmount.describe(
        'deposit − accepted cumulative: authorisation released; it never left the smart wallet',
      ),
      unpaidAtomic: AtomicAmount.describe(
        'accepted cumulative − settled: consumed but not covered at close (the buyer moved funds away after vouching); ' +
          'usually "0"',
      ),
      voucherCount: z.number().int(),
      sessionDurationSeconds: z.number().int(),
      signature: SolanaSignature.nullable().describe('the settlement transaction; null when nothing was consumed'),
      network: Caip2Network,
      asset: SolanaAddress,
    }),
  }),
);

// Onboarding schemas

const SmartWalletTransactionSchema: z.ZodType<SmartWalletTransaction> = named(
  'SmartWalletTransaction',
  z.object({
    type: z.enum(['create_wallet', 'grant_role']),
    transaction: Base64Transaction.describe(
      'for the buyer to sign; fee payer = the facilitator, which signs on confirm',
    ),
    description: z.string(),
  }),
);

const DelegationRoleSchema: z.ZodType<DelegationRole> = named(
  'DelegationRole',
  z.object({
    roleId: z.number().int().nonnegative().nullable().describe('null until the role exists on chain'),
    delegate: SolanaAddress.describe('the facilitator key the role authorises'),
    asset: SolanaAddress.describe('the only mint the role may move'),
    spendLimitAtomic: AtomicAmount,
    spendLimitRemaining: AtomicAmount.nullable().describe(
      'what the role can still move, less the deposits of open sessions',
    ),
    ttlSeconds: z.number().int(),
    expiresAt: Timestamp.nullable(),
    programs: z.array(SolanaAddress).describe('the programs the role may call'),
  }),
);

// The specification defaults the cluster to mainnet-beta; a deployment settles on one cluster, so the default is that
// cluster (a default the deployment would refuse with 422 unsupported_network helps nobody).
const OWN_CLUSTER =
  'cluster; default: the facilitator’s own (devnet on the local ledger), any other is 422 unsupported_network';

const OnboardRequestSchema = acceptingAliases<SmartWalletOnboardRequest, SmartWalletOnboardInput>(
  { buyer_wallet: 'buyerWallet', spend_limit_atomic: 'spendLimitAtomic', ttl_seconds: 'ttlSeconds' },
  z
    .object({
      buyerWallet: SolanaAddress.describe('the buyer; must be the SIGN-IN-WITH-X wallet'),
      network: NetworkName.optional().describe(OWN_CLUSTER),
      spendLimitAtomic: PositiveInt8Atomic.default('100000000').describe(
        'the most the delegation role may move, atomic units; default "100000000" (100 USD)',
      ),
      ttlSeconds: z
        .number()
        .int()
        .min(300)
        .max(2_592_000)
        .default(86_400)
        .describe('lifetime of the delegation role, 300 to 2592000 seconds, default 86400'),
    })
    .strict()
    .describe('Also accepted: buyer_wallet, spend_limit_atomic, ttl_seconds.'),
);

const onboardingFields = {
  status: z.enum(['ready', 'transactions_required']),
  buyerWallet: SolanaAddress,
  network: ClusterSchema,
  chainId: Caip2Network,
  smartWallet: SolanaAddress.describe('the buyer’s smart wallet (its address is known before it exists)'),
  role: DelegationRoleSchema,
  transactions: z.array(SmartWalletTransactionSchema).describe('to sign and send to /confirm; empty when ready'),
  transactionsExpireAt: Timestamp.nullable().describe(
    'sign and confirm before then (blockhash lifetime); null when ready',
  ),
  nextStep: z.string().describe('what to do next, in one sentence'),
};
const OnboardingSchema: z.ZodType<SmartWalletOnboarding> = named('SmartWalletOnboarding', z.object(onboardingFields));

const ConfirmRequestSchema = acceptingAliases<SmartWalletConfirmRequest, SmartWalletConfirmInput>(
  { buyer_wallet: 'buyerWallet', signed_transactions: 'signedTransactions' },
  z
    .object({
      buyerWallet: SolanaAddress.describe('the buyer; must be the SIGN-IN-WITH-X wallet'),
      network: NetworkName.optional().describe(OWN_CLUSTER),
      signedTransactions: z
        .array(Base64Transaction)
        .min(1)
        .max(3)
        .describe('the transactions /api/sessions/onboard returned, signed by the buyer, in the order given'),
    })
    .strict()
    .describe('Also accepted: buyer_wallet, signed_transactions.'),
);

const ConfirmationSchema: z.ZodType<SmartWalletConfirmation> = named(
  'SmartWalletConfirmation',
  z.object({
    ...onboardingFields,
    signatures: z.array(SolanaSignature).describe('the transactions confirmed by this call'),
  }),
);

const StatusQuerySchema = acceptingAliases<SmartWalletStatusQuery, SmartWalletStatusInput>(
  { buyer_wallet: 'wallet' },
  z.object({
    wallet: SolanaAddress.describe('the buyer wallet (also accepted as buyer_wallet)'),
    network: NetworkName.optional().describe(OWN_CLUSTER),
  }),
);

const StatusSchema: z.ZodType<SmartWalletStatus> = named(
  'SmartWalletStatus',
  z.object({
    wallet: SolanaAddress,
    network: ClusterSchema,
    chainId: Caip2Network,
    status: z
      .enum(['not_onboarded', 'pending', 'active', 'expired', 'revoked'])
      .describe(
        'not_onboarded: no smart wallet; pending: transactions issued, not all confirmed; active: the role exists and has ' +
          'not expired; expired: its ttl passed; revoked: the buyer removed it',
      ),
    smartWallet: SolanaAddress.nullable(),
    roleId: z.number().int().nonnegative().nullable(),
    spendLimitAtomic: AtomicAmount.nullable(),
    spendLimitRemaining: AtomicAmount.nullable(),
    roleExpiresAt: Timestamp.nullable(),
    openSessions: z.number().int().describe('the buyer’s open payment sessions on this network'),
  }),
);

// x402 schemas

export const X402PaymentPayloadSchema: z.ZodType<X402PaymentPayload> = named(
  'X402PaymentPayload',
  z
    .object({
      x402Version: z.literal(2),
      resource: ResourceInfoSchema.optional(),
      accepted: PaymentRequirementsSchema.describe('the element of the quote’s accepts the client chose'),
      payload: z
        .record(z.unknown())
        .describe('scheme-specific; Solana exact: { transaction: base64 v0 transaction signed by the payer only }'),
      extensions: z.record(z.unknown()).optional(),
    })
    .describe('x402 v2 PaymentPayload (the decoded PAYMENT-SIGNATURE header); unknown fields are ignored'),
);

const X402RequestSchema: z.ZodType<X402FacilitatorRequest> = named(
  'X402FacilitatorRequest',
  z
    .object({
      x402Version: z.literal(2),
      paymentPayload: X402PaymentPayloadSchema,
      paymentRequirements: PaymentRequirementsSchema.describe('the requirements the resource server expects to be met'),
    })
    .strict(),
);

const extensionsField = z
  .record(z.unknown())
  .optional()
  .describe('extension data; on settle, "sponsored-access" carries an ad recommendation when one matched');

const VerifyResponseSchema: z.ZodType<X402VerifyResponse> = named(
  'X402VerifyResponse',
  z.object({
    isValid: z.boolean(),
    invalidReason: z.string().optional().describe('x402 reason code, e.g. invalid_exact_svm_payload_amount_mismatch'),
    invalidMessage: z.string().optional(),
    payer: SolanaAddress.optional().describe('the transfer authority, when the transaction could be read'),
    extensions: extensionsField,
  }),
);
const VerifyFailureSchema: z.ZodType<X402VerifyFailure> = named(
  'X402VerifyFailure',
  z.object({
    isValid: z.literal(false),
    invalidReason: z.string(),
    invalidMessage: z.string(),
    payer: SolanaAddress.optional(),
    extensions: extensionsField,
  }),
);

const settleFields = {
  errorReason: z.string().optional(),
  errorMessage: z.string().optional(),
  payer: SolanaAddress.optional(),
  transaction: z.string().describe('base58 transaction signature; empty string when nothing was broadcast'),
  network: z.string().describe('CAIP-2 id of paymentRequirements.network; empty when the body could not be read'),
  amount: AtomicAmount.optional().describe('the amount settled, atomic units'),
  extensions: extensionsField,
};
const SettleResponseSchema: z.ZodType<X402SettleResponse> = named(
  'SettleResponse',
  z.object({ success: z.boolean(), ...settleFields }),
);
const SettleFailureSchema: z.ZodType<X402SettleFailure> = named(
  'X402SettleFailure',
  z.object({
    ...settleFields,
    success: z.literal(false),
    errorReason: z.string(),
    errorMessage: z.string(),
  }),
);

const SupportedSchema: z.ZodType<X402SupportedResponse> = named(
  'X402SupportedResponse',
  z.object({
    kinds: z.array(
      z.object({
        x402Version: z.literal(2),
        scheme: z.literal('exact'),
        network: Caip2Network,
        extra: z.object({ feePayer: SolanaAddress.describe('the fee payer clients put in extra.feePayer') }),
      }),
    ),
    extensions: z.array(z.string()).describe('extension keys this facilitator understands'),
    signers: z
      .record(z.array(SolanaAddress))
      .describe('CAIP family pattern, e.g. "solana:*" -> the facilitator’s signer keys'),
  }),
);

// ---------------------------------------------------------------------------------------------------------------
// Examples (checked against the schemas by tests)

const BUYER = '5nXTYaWgPyYj3MPg34iBvhJ12ihHue2Y4xddzVSKYWjv';
const SELLER = 'Et2c4UZJaf9DGyG7V6UErYLzU9gcKFkaFsmL27dZa86f';
const SESSION_KEY = '7MqaMeGnwDukq7R8JyK6n4JvBAYEH284MvqFVizuDkQC';
const FEE_PAYER = '7ZVVTzZ3ofzXLAk7KMpV23dacZK5VhZFaPLuJQ8neXda';
const EXAMPLE_TX =
  'mSmpXLqbvWgx/dBtggoluXhF6ZI5+C51JOm06TQ1EvxKf1PI3+XzrwpBoY7O+JJhROth1jkVn/azV5epzDFsckzo9ineFV8JB7K2bkpYtbtRFzW1' +
  'WBgpr/1F9dS61TuVXiXrHVXXrVfNGL03k7khjn7nkmhabdAqKCzCDTaVE+4UHlnrbp3oMb4r8+S4VWxejFiXklVQX7MivWG5Jq95x1SE6l1y9qC1' +
  'mDn+dZaOudL1/0wODvKvW+96areRhNefHBR0eAz2buY=';
const EXAMPLE_REQUIREMENTS = {
  scheme: 'exact',
  network: SOLANA_DEVNET,
  amount: '50000',
  asset: USDC_DEVNET,
  payTo: SELLER,
  maxTimeoutSeconds: 60,
  extra: { feePayer: FEE_PAYER },
};
const EXAMPLE_X402_BODY = {
  x402Version: 2,
  paymentPayload: {
    x402Version: 2,
    resource: {
      url: 'http://127.0.0.1:4105/api/lesson',
      description: 'Full AI-generated lesson',
      mimeType: 'application/json',
    },
    accepted: EXAMPLE_REQUIREMENTS,
    payload: { transaction: EXAMPLE_TX },
  },
  paymentRequirements: EXAMPLE_REQUIREMENTS,
};
const CHANNEL = 'chn_8fK2pQ7xVb3nRt5wYz1L';

// ---------------------------------------------------------------------------------------------------------------
// Descriptions shared by several routes

const FREE_WHY =
  'Free: the facilitator is the infrastructure that settles payments and is paid through the operator’s agreement ' +
  'with its sellers, not per call; an x402 charge for reaching the service that settles charges would be circular.';
const NETWORK_NOTE =
  '`network` takes a cluster name, a legacy x402 v1 name (solana, solana-devnet) or a CAIP-2 id; an unknown name is ' +
  '400 (the message lists the accepted names), a known network this deployment does not serve is 422 unsupported_network ' +
  '(details.supported).';
const SESSION_NOT_OPEN =
  '409 session_not_open (the session is closing or closed; details.state, details.closedAt, details.signature)';
const ERROR_STATUS_WHY =
  'Insufficient funds and underpayment are 422, not 402: on this API a 402 would tell x402 clients to pay a quote, and ' +
  'these routes have none.';
const X402_400 = (shape: string) =>
  `A body that does not parse answers 400 in the x402 shape, not the error envelope: ${shape}. The official ` +
  'HTTPFacilitatorClient turns a non-2xx body that carries that field into a typed VerifyError / SettleError with the ' +
  'status and reason (the reference example facilitator’s bare { error } would only give it an untyped error). An ' +
  'unexpected failure is 500 with reason unexpected_verify_error / unexpected_settle_error; 503 with the same reason and ' +
  'Retry-After when the chain RPC is unreachable (nothing was broadcast).';

// ---------------------------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------------------------
// Discovery: the settlement feed the marketplace reads, and x402's bazaar discovery extension

export interface DiscoverySettlement {
  transaction: string;
  kind: MppSettlementKind;
  payTo: string;
  payer: string;
  amount: string;
  asset: string;
  network: string;
  resource: string | null;
  settledAt: string;
  /** The seller's refund of this payment, once it reported one the chain confirms; null while there is none. */
  refund: { transaction: string; amount: string } | null;
}
export interface DiscoverySettlementPage {
  settlements: DiscoverySettlement[];
  nextCursor: string | null;
}
export interface BazaarResource {
  resource: string;
  type: string;
  x402Version: number;
  accepts: PaymentRequirements[];
  lastUpdated: string;
  description?: string;
  mimeType?: string;
  serviceName?: string;
  tags?: string[];
  iconUrl?: string;
  extensions?: Record<string, unknown>;
}
export interface BazaarResourcesResponse {
  x402Version: number;
  items: BazaarResource[];
  pagination: { limit: number; offset: number; total: number };
}
export interface BazaarSearchResponse {
  x402Version: number;
  resources: BazaarResource[];
  partialResults: boolean;
  pagination: { limit: number; cursor: string | null };
}

const DiscoverySettlementSchema: z.ZodType<DiscoverySettlement> = named(
  'DiscoverySettlement',
  z.object({
    transaction: SolanaSignature.describe('the settlement’s transaction signature: its unique key'),
    kind: z
      .enum(['charge', 'x402', 'session'])
      .describe('x402: POST /settle; charge: POST /mpp/settle; session: a session close'),
    payTo: z.string().describe('the seller wallet paid'),
    payer: z.string().describe('the buyer wallet that paid'),
    amount: AtomicAmount.describe('atomic units of the asset'),
    asset: z.string().describe('the token mint'),
    network: z.string().describe('CAIP-2 network'),
    resource: z
      .string()
      .nullable()
      .describe(
        'the resource URL the payment was for, without its query (it may carry the buyer’s input), when it named one',
      ),
    settledAt: Timestamp.describe('when the facilitator saw it confirmed'),
    refund: z
      .object({
        transaction: SolanaSignature.describe('the refund’s transaction signature'),
        amount: AtomicAmount.describe('atomic units returned to the payer'),
      })
      .strict()
      .nullable()
      .describe(
        'the seller’s refund of this payment (POST /discovery/refunds), checked on chain; null while there is none',
      ),
  }),
);
const BazaarResourceSchema: z.ZodType<BazaarResource> = named(
  'BazaarResource',
  z.object({
    resource: z.string().describe('the resource URL (its route template when it has path parameters)'),
    type: z.string().describe('"http"'),
    x402Version: z.number().int(),
    accepts: z.array(PaymentRequirementsSchema).describe('the requirements of the latest settlement for this resource'),
    lastUpdated: Timestamp,
    description: z.string().optional(),
    mimeType: z.string().optional(),
    serviceName: z.string().optional(),
    tags: z.array(z.string()).optional(),
    iconUrl: z.string().optional(),
    extensions: z
      .record(z.unknown())
      .optional()
      .describe('extensions["bazaar"]: the declared input and output (info and schema)'),
  }),
);
const BazaarFilters = {
  type: z.string().max(32).optional().describe('protocol type: "http"'),
  payTo: z.string().max(64).optional().describe('only resources paying this wallet'),
  scheme: z.string().max(32).optional().describe('only resources accepting this scheme ("exact")'),
  network: z.string().max(64).optional().describe('only resources accepting this CAIP-2 network'),
  extensions: z.string().max(64).optional().describe('only resources declaring this extension key ("bazaar")'),
};
const DISCOVERY_WHY =
  'Free and open: public discovery, as in x402’s bazaar extension; it lists what was settled, never who asked for what.';

const router = c.router({
  prepare: {
    method: 'POST',
    path: '/mpp/prepare',
    body: PrepareRequestSchema,
    summary: 'Fee payer and fresh blockhash for building a charge transaction',
    description:
      'Returns what a buyer needs to build a charge the facilitator will co-sign: the fee payer address (account 0 of ' +
      'the transaction: the buyer pays no SOL), a fresh blockhash with its last valid block height, and the stablecoin’s ' +
      'mint, decimals and token program. Build a v0 transaction with SetComputeUnitLimit, SetComputeUnitPrice, one ' +
      'TransferChecked from your token account to the seller’s and optionally a Memo; sign it yourself and send it to ' +
      `/mpp/settle. ${NETWORK_NOTE} Design: request and response fields; \`blockhash\` repeats \`recentBlockhash\` for ` +
      'clients written against that spelling. Errors: 400 invalid_request, 422 unsupported_network, 503 chain_unavailable ' +
      `(no blockhash from the chain; Retry-After). ${FREE_WHY}`,
    responses: { 200: PreparedChargeSchema, 422: ErrorEnvelope, 503: ErrorEnvelope, ...standardErrors },
    metadata: { payment: free(), example: { body: { network: 'devnet' } } } satisfies RouteMeta,
  },
  settleCharge: {
    method: 'POST',
    path: '/mpp/settle',
    body: ChargeRequestSchema,
    summary: 'Co-sign, simulate, broadcast and confirm a signed charge transaction',
    description:
      'Settles a charge built from /mpp/prepare and signed by the buyer only (base64). The facilitator checks its ' +
      'policy: account 0 is its fee payer and appears in no instruction; only ComputeBudget (price capped), SPL Token or ' +
      'Token-2022 TransferChecked, Memo and Lighthouse instructions; exactly one TransferChecked of the stablecoin to the ' +
      'recipient’s associated token account; with `recipient`, `amount`, `asset`, the transfer must match them exactly. ' +
      'Then it checks the payer’s balance, co-signs, simulates, broadcasts, waits for `confirmed` and records the ' +
      'settlement; a transaction (by message bytes) settles at most once, across replicas. With `resource`, the ad ' +
      'network may match a sponsored recommendation (`sponsoredAccess`) and is sent the settlement event. ' +
      'Success: 200 with `success` and `ok` true, the signature, the payer and `settlement`. Failure: the error envelope: ' +
      '409 blockhash_expired (rebuild with a fresh blockhash from /mpp/prepare); 422 invalid_transaction (the transaction ' +
      'violates the policy; details.reason: invalid_transaction_encoding, program_not_allowed, fee_payer_not_isolated, ' +
      'fee_payer_mismatch, signature_invalid (a signature other than the fee payer’s is missing or does not verify), ' +
      'no_transfer_instruction, multiple_transfers, mint_mismatch, recipient_mismatch, ' +
      'amount_mismatch, compute_price_too_high or duplicate_settlement: a transaction already settled is never settled ' +
      'or reported settled again); 422 simulation_failed (details.error, details.logs); 422 insufficient_balance (the ' +
      'payer’s token balance is below the transfer; details.required, details.available); 422 transaction_failed ' +
      '(broadcast, failed on chain; details.signature); 422 unsupported_network; 403 payee_not_served (the recipient ' +
      'is not a seller this facilitator serves and no registered resource server signed the call); 429 ' +
      'global_settle_cap_exceeded, seller_settle_cap_exceeded or payer_settle_cap_exceeded (Retry-After; by default 600 ' +
      'charges a minute in all, 120 to one recipient and 60 from one payer, per deployment); 503 chain_unavailable (nothing was broadcast) or settlement_pending ' +
      '(broadcast, confirmation not yet seen; details.signature: send the same transaction again to learn its outcome). ' +
      `${ERROR_STATUS_WHY} Design: bodies, statuses, policy reasons. No caller identity: the buyer’s signature in the ` +
      `transaction is the authorisation, and the facilitator only adds its fee-payer signature. ${FREE_WHY}`,
    responses: {
      200: ChargeSettlementSchema,
      403: ErrorEnvelope,
      409: ErrorEnvelope,
      422: ErrorEnvelope,
      429: ErrorEnvelope,
      503: ErrorEnvelope,
      ...standardErrors,
    },
    metadata: {
      payment: free(),
      example: {
        body: {
          transaction: EXAMPLE_TX,
          network: 'devnet',
          recipient: SELLER,
          amount: '50000',
          asset: USDC_DEVNET,
          resource: { url: 'http://127.0.0.1:4105/api/lesson', description: 'Full AI-generated lesson' },
        },
      },
    } satisfies RouteMeta,
  },
  stats: {
    method: 'GET',
    path: '/mpp/stats',
    summary: 'Live settlement statistics',
    description:
      'Counts of charge preparations and settlements (total and since 00:00 UTC, with outcomes and success rate), of ' +
      'x402 verifications and settlements, of payment sessions, the settled volume in atomic units, and the 20 most ' +
      'recent settlements of every kind. Design: the whole body. Free: a descriptive route monitors poll; every figure ' +
      'in it is public on chain.',
    responses: { 200: SettlementStatsSchema, ...standardErrors },
    metadata: { payment: free(), example: {} } satisfies RouteMeta,
  },
  openSession: {
    method: 'POST',
    path: '/mpp/session/open',
    body: OpenSessionSchema,
    summary: 'Open a payment channel between a buyer and a seller',
    description:
      'Opens a session (channel) in which the buyer pays the seller by vouchers for cumulative amounts, settled on chain ' +
      'once at close. Nothing moves at open: funds stay in the buyer’s smart wallet, which onboarding gave a delegation ' +
      'role the facilitator uses at close. The facilitator checks that role on chain and reserves `depositAtomic` of it; ' +
      'it creates a per-channel Ed25519 key (`voucherSigner`) that signs every voucher of the channel. `sessionKey` is ' +
      'the buyer’s own key that must sign every voucher request. State: open, then closing while the settlement is in ' +
      'flight, then closed; the facilitator closes an idle session itself (`expiresAt`). Errors: 401 siwx_invalid; 403 ' +
      'wallet_mismatch (buyerWallet is not the SIGN-IN-WITH-X wallet); 403 payee_not_served (sellerWallet is not a ' +
      'seller this facilitator serves); 422 wallet_role_not_found (no active delegation role for the buyer on this ' +
      'network: details.reason none, expired, expiring, revoked, or spent (it has moved its whole limit: onboarding ' +
      'again renews it); or smart_wallet_mismatch, smartWallet is not the onboarded one); 422 ' +
      'insufficient_balance (the smart wallet’s balance, or the role’s remaining limit less the deposits of open ' +
      `sessions, is below depositAtomic; details.reason, details.required, details.available); 422 unsupported_network; ` +
      `503 chain_unavailable. ${ERROR_STATUS_WHY} Design: bodies, states, the two keys, the buyer as caller (a session ` +
      'opened by anyone else could be drained to their wallet). Field spellings of the other published client are ' +
      `accepted (listed in the body schema). ${FREE_WHY}`,
    responses: { 200: SessionSchema, 422: ErrorEnvelope, 503: ErrorEnvelope, ...standardErrors, ...authErrors },
    metadata: {
      payment: free(),
      auth: 'siwx',
      example: {
        body: {
          buyerWallet: BUYER,
          sellerWallet: SELLER,
          depositAtomic: '5000000',
          sessionKey: SESSION_KEY,
          pricePerUnit: '1000',
          network: 'devnet',
          idleTimeoutSeconds: 900,
        },
      },
    } satisfies RouteMeta,
  },
  signVoucher: {
    method: 'POST',
    path: '/mpp/session/voucher',
    body: VoucherRequestSchema,
    summary: 'Sign a payment voucher for a cumulative amount within an open session',
    description:
      'The buyer asks for a voucher for the total consumed so far; the facilitator signs it with the channel’s ' +
      '`voucherSigner` and the buyer hands it to the seller, who checks the signer, the recipient and that the amount ' +
      'grew by at least its price. Caller: whoever holds the buyer’s session key: the request is signed by it ' +
      '(`signer`, `signature`), no SIGN-IN-WITH-X per voucher. Checks, in order: session_not_found (404), ' +
      `${SESSION_NOT_OPEN}, a signature that does not verify for signer (401 voucher_signature_invalid), signer_mismatch ` +
      '(403: signer is not the session key every voucher of the channel uses), amount_not_monotonic (409: ' +
      'cumulativeAmount is not above the accepted cumulative; details.acceptedCumulative), underpayment (422: the ' +
      'increment is below units × pricePerUnit; details.minimum), insufficient_balance (422: cumulativeAmount exceeds the ' +
      'deposit, or the smart wallet’s balance or the role’s remaining allowance, read on chain now, no longer covers it plus ' +
      'what the buyer’s other open sessions have vouched; details.reason deposit, balance or spend_limit), wallet_role_not_found (422: the buyer revoked the delegation ' +
      'role or it expired). Repeating the last accepted request (same cumulativeAmount, units, meter, serverNonce) ' +
      `returns the same voucher, so a retry is safe. ${ERROR_STATUS_WHY} Design: bodies, the signed messages, statuses. ` +
      `Field spellings of the other published client are accepted (listed in the body schema). ${FREE_WHY}`,
    responses: {
      200: SignedVoucherSchema,
      401: ErrorEnvelope,
      403: ErrorEnvelope,
      404: ErrorEnvelope,
      409: ErrorEnvelope,
      422: ErrorEnvelope,
      ...standardErrors,
    },
    metadata: {
      payment: free(),
      example: {
        body: {
          channelId: CHANNEL,
          cumulativeAmount: '3000',
          units: 1,
          meter: 'requests',
          serverNonce: 'req_7Qm2xP9a',
          signer: SESSION_KEY,
          signature: '3ZatnqUBULwrxixN8Zx3qVHpSn9NxgNG2f835upS4udN1j3jEFdkFgBPExvwrwZqSpXBx1Vvb3Fr3nVeuJKrWeZQ',
        },
      },
    } satisfies RouteMeta,
  },
  closeSession: {
    method: 'POST',
    path: '/mpp/session/close',
    body: CloseSessionSchema,
    summary: 'Close the session and settle on chain',
    description:
      'Closes an open session: the facilitator, through the buyer’s delegation role, makes one checked token transfer ' +
      '(TransferChecked) from the buyer’s smart wallet to the seller for the accepted cumulative amount, confirms it and ' +
      'answers the settlement; the rest of the deposit was never moved (`buyerRefund`). A session with nothing consumed ' +
      'closes without a transaction (signature null). State: open → closing → closed. Caller: the buyer or the seller, ' +
      'proven by SIGN-IN-WITH-X. Errors: 401 siwx_invalid; 403 not_session_party; 404 session_not_found; ' +
      `${SESSION_NOT_OPEN}; 422 wallet_role_not_found (the role was revoked or expired: the session stays open so the ` +
      'buyer can restore the role and close again); 422 insufficient_balance (the smart wallet holds less than the ' +
      'amount consumed); 422 simulation_failed; 503 chain_unavailable (nothing broadcast, the session stays open) or ' +
      'settlement_pending (broadcast, confirmation not yet seen; the session stays closing and the facilitator finishes ' +
      `it; details.signature). ${ERROR_STATUS_WHY} Design: bodies, the closed state name, statuses. ${FREE_WHY}`,
    responses: {
      200: ClosedSessionSchema,
      404: ErrorEnvelope,
      409: ErrorEnvelope,
      422: ErrorEnvelope,
      503: ErrorEnvelope,
      ...standardErrors,
      ...authErrors,
    },
    metadata: { payment: free(), auth: 'siwx', example: { body: { channelId: CHANNEL } } } satisfies RouteMeta,
  },
  onboard: {
    method: 'POST',
    path: '/api/sessions/onboard',
    body: OnboardRequestSchema,
    summary: 'Start onboarding: smart wallet and delegation role',
    description:
      'Prepares the buyer for payment sessions: a smart wallet owned by the buyer and a delegation role that lets the ' +
      'facilitator move only the stablecoin, only by TransferChecked, up to `spendLimitAtomic`, for `ttlSeconds`. ' +
      'Answers `ready` when that role already exists with these limits, can still move half its limit and has half ' +
      'its lifetime left, else `transactions_required` with the ' +
      'transactions to sign (create_wallet when the wallet does not exist, grant_role to add or renew the role), the ' +
      'facilitator as fee payer; sign them and send them to /api/sessions/onboard/confirm before ' +
      `transactionsExpireAt. ${NETWORK_NOTE} Errors: 401 siwx_invalid; 403 wallet_mismatch (buyerWallet is not the ` +
      'SIGN-IN-WITH-X wallet); 422 not_eligible (details.reason); 422 unsupported_network; 429 rate_limited (Retry-After; ' +
      'the facilitator pays the rent and fees of onboarding); 503 temporarily_unavailable (Retry-After). Design: bodies, ' +
      'defaults, statuses. Field spellings of the other published client are accepted (listed in the body schema). ' +
      FREE_WHY,
    responses: {
      200: OnboardingSchema,
      422: ErrorEnvelope,
      429: ErrorEnvelope,
      503: ErrorEnvelope,
      ...standardErrors,
      ...authErrors,
    },
    metadata: {
      payment: free(),
      auth: 'siwx',
      example: { body: { buyerWallet: BUYER, network: 'devnet', spendLimitAtomic: '25000000', ttlSeconds: 86_400 } },
    } satisfies RouteMeta,
  },
  confirmOnboarding: {
    method: 'POST',
    path: '/api/sessions/onboard/confirm',
    body: ConfirmRequestSchema,
    summary: 'Confirm smart wallet provisioning after signing its transactions',
    description:
      'Takes the onboarding transactions signed by the buyer; the facilitator checks each is exactly one it issued to ' +
      'this wallet (message bytes unchanged), signs as fee payer, simulates, broadcasts and waits for `confirmed`. ' +
      'Answers `ready` with the role, or `transactions_required` with the next round (at most three rounds). Sending ' +
      'transactions already confirmed again is harmless: they are recognised and reported. Errors: 401 siwx_invalid; 403 ' +
      'wallet_mismatch; 404 onboarding_not_found (no pending onboarding for this wallet and network: call ' +
      '/api/sessions/onboard); 409 blockhash_expired (call /api/sessions/onboard again for fresh transactions); 422 ' +
      'invalid_transaction (not a transaction issued for this onboarding, altered, or not signed by the buyer; ' +
      'details.index); 422 simulation_failed (details.index, details.logs); 429 rate_limited; 503 temporarily_unavailable ' +
      '(Retry-After: send the same transactions again). Design: bodies, statuses. Field spellings of the other published ' +
      `client are accepted (listed in the body schema). ${FREE_WHY}`,
    responses: {
      200: ConfirmationSchema,
      404: ErrorEnvelope,
      409: ErrorEnvelope,
      422: ErrorEnvelope,
      429: ErrorEnvelope,
      503: ErrorEnvelope,
      ...standardErrors,
      ...authErrors,
    },
    metadata: {
      payment: free(),
      auth: 'siwx',
      example: { body: { buyerWallet: BUYER, network: 'devnet', signedTransactions: [EXAMPLE_TX] } },
    } satisfies RouteMeta,
  },
  onboardingStatus: {
    method: 'GET',
    path: '/api/sessions/onboard/status',
    query: StatusQuerySchema,
    summary: 'Onboarding status of a buyer wallet',
    description:
      'Where a buyer stands: not_onboarded, pending, active, expired or revoked, with the smart wallet, the role id, the ' +
      'spend limit and what remains of it, the role’s expiry and the number of open sessions. `wallet` is required ' +
      '(also accepted as buyer_wallet); `network` is a cluster, default the facilitator’s own. Errors: 401 siwx_invalid; 403 ' +
      'wallet_mismatch (only the wallet itself may ask); 422 unsupported_network; 503 temporarily_unavailable. Design: ' +
      `the response, statuses. ${FREE_WHY}`,
    responses: { 200: StatusSchema, 422: ErrorEnvelope, 503: ErrorEnvelope, ...standardErrors, ...authErrors },
    metadata: {
      payment: free(),
      auth: 'siwx',
      example: { query: { wallet: BUYER, network: 'devnet' } },
    } satisfies RouteMeta,
  },
  supported: {
    method: 'GET',
    path: '/supported',
    summary: 'x402 payment kinds, extensions and signers this facilitator supports',
    description:
      'x402 v2 facilitator discovery (research/x402.md §3): `kinds` lists one { x402Version: 2, scheme: "exact", network, ' +
      'extra: { feePayer } } per Solana network served, the fee payer being one of the facilitator’s signer keys; ' +
      '`signers` maps "solana:*" to those keys; `extensions` names the extensions it understands. Resource servers read ' +
      'it at start to build their quotes. Free and open: resource servers and the official x402 packages call it ' +
      'without credentials. Errors: 500 in the error envelope (x402 defines no error body for this route).',
    responses: { 200: SupportedSchema, ...standardErrors },
    metadata: { payment: free(), wire: 'x402', example: {} } satisfies RouteMeta,
  },
  verify: {
    method: 'POST',
    path: '/verify',
    body: X402RequestSchema,
    summary: 'Verify an x402 payment against payment requirements',
    description:
      'x402 v2 facilitator verification (research/x402.md §2.4, §3): decodes the Solana exact transaction in ' +
      'paymentPayload.payload.transaction and checks it against paymentRequirements (scheme, network, fee payer is ours, ' +
      'instruction layout, mint, recipient, exact amount, memo) and simulates it, without sending anything. Every outcome ' +
      'the facilitator could judge is HTTP 200: { isValid: true, payer } or { isValid: false, invalidReason, ' +
      'invalidMessage, payer? } with the x402 reason codes (unsupported_scheme, invalid_network, ' +
      'invalid_exact_svm_payload_transaction_could_not_be_decoded, invalid_exact_svm_fee_payer_not_managed_by_facilitator, ' +
      'invalid_exact_svm_payload_mint_mismatch, invalid_exact_svm_payload_recipient_mismatch, ' +
      'invalid_exact_svm_payload_amount_mismatch, invalid_exact_svm_transaction_simulation_failed, insufficient_funds, …). ' +
      X402_400(
        '{ isValid: false, invalidReason: "invalid_payload" (or "invalid_payment_requirements" when only that part is ' +
          'malformed, "invalid_x402_version" when a version is not 2), invalidMessage: the fields and what is wrong }',
      ) +
      ' Free, for the sellers this facilitator serves: a paymentRequirements.payTo it does not serve (not a registered ' +
      'seller, and the call not signed by a registered resource server in the x-resource-server header) is 403 ' +
      'payee_not_served; a signature that does not hold, 403 resource_server_unauthorized.',
    responses: {
      200: VerifyResponseSchema,
      400: VerifyFailureSchema,
      403: VerifyFailureSchema,
      500: VerifyFailureSchema,
      503: VerifyFailureSchema,
    },
    metadata: { payment: free(), wire: 'x402', example: { body: EXAMPLE_X402_BODY } } satisfies RouteMeta,
  },
  settle: {
    method: 'POST',
    path: '/settle',
    body: X402RequestSchema,
    summary: 'Settle an x402 payment on chain',
    description:
      'x402 v2 facilitator settlement (research/x402.md §2.5, §3): verifies again, signs as fee payer, broadcasts and ' +
      'waits for `confirmed`, records the settlement, and for a sponsored resource adds the ad network’s ' +
      'recommendation under extensions["sponsored-access"]. A transaction (by message bytes) settles at most once, ' +
      'across replicas. Every outcome the facilitator could judge is HTTP 200: { success: true, transaction: base58 ' +
      'signature, network, payer, amount } or { success: false, errorReason, errorMessage, transaction, network } with ' +
      'the reason /verify would give (invalid_exact_svm_blockhash_expired, insufficient_funds, …), ' +
      'invalid_exact_svm_transaction_failed (failed on chain; transaction is empty, the signature in errorMessage), ' +
      'duplicate_settlement (transaction: the earlier settlement), or settlement_pending (broadcast, confirmation not ' +
      'seen within 30 s; transaction carries the signature; settling the same payload again reconciles it). 403 ' +
      'payee_not_served or resource_server_unauthorized, as /verify; 429 global_settle_cap_exceeded, ' +
      'seller_settle_cap_exceeded or payer_settle_cap_exceeded (Retry-After; x402 settlements counted apart from charges). ' +
      X402_400(
        '{ success: false, errorReason: "invalid_payload" (or "invalid_payment_requirements", "invalid_x402_version"), ' +
          'errorMessage: the fields and what is wrong, transaction: "", network: paymentRequirements.network when readable, ' +
          'else "" }',
      ) +
      ' Free, for the sellers this facilitator serves, as /verify.',
    responses: {
      200: SettleResponseSchema,
      400: SettleFailureSchema,
      403: SettleFailureSchema,
      429: SettleFailureSchema,
      500: SettleFailureSchema,
      503: SettleFailureSchema,
    },
    metadata: { payment: free(), wire: 'x402', example: { body: EXAMPLE_X402_BODY } } satisfies RouteMeta,
  },
  settlements: {
    method: 'GET',
    path: '/discovery/settlements',
    query: z
      .object({
        after: z
          .string()
          .regex(/^\d{1,18}$/)
          .optional()
          .describe('the nextCursor of the previous page; absent to start from the first settlement'),
        limit: z.coerce.number().int().min(1).max(500).default(100).describe('settlements per page, 1 to 500'),
      })
      .strict(),
    summary: 'Settled payments, in the order they were confirmed',
    description:
      'The public fields of every settlement confirmed on chain (x402, charge and session), oldest first, for readers ' +
      'that sync incrementally (the marketplace API): ask again with `after` = `nextCursor` to get only newer ones; ' +
      '`nextCursor` is null when there is nothing newer yet (keep the last cursor and ask again later). The cursor ' +
      'is the position in the confirmation order, assigned under a lock so that a record never appears behind a cursor ' +
      'already handed out. Pending and failed payments are never listed. Design: route, fields. ' +
      DISCOVERY_WHY,
    responses: {
      200: z.object({ settlements: z.array(DiscoverySettlementSchema), nextCursor: z.string().nullable() }),
      ...standardErrors,
    },
    metadata: { payment: free(), example: { query: { limit: 100 } } } satisfies RouteMeta,
  },
  refunds: {
    method: 'POST',
    path: '/discovery/refunds',
    body: z
      .object({
        settlement: SolanaSignature.describe('the transaction signature of the settled payment that was refunded'),
        refund: SolanaSignature.describe('the transaction signature of the refund'),
      })
      .strict(),
    summary: 'Record a seller’s refund of a settled payment',
    description:
      'A seller that returned a settled payment (a settle-first route whose handler failed) says so here, so that the ' +
      'feed and everything built on it (the marketplace’s calls and volume) stop counting the sale. Nothing is taken on ' +
      'trust: the refund transaction must be confirmed, successful, and move at least the settled amount of the same ' +
      'asset out of the seller’s (payTo) token accounts into the payer’s, land after the settlement, and carry an SPL Memo ' +
      'that names the settlement’s transaction (so no transfer made for anything else can pass for it); one refund ' +
      'transaction refunds one settlement. ' +
      'The settlement then appears again in GET /discovery/settlements, after the current cursor, with `refund` set. ' +
      'The call is signed by the seller: the x-resource-server header (address=<payTo>;ts=<unix seconds>;sig=<base58 ' +
      'Ed25519 signature over "agent-economy resource-server v1\\n<METHOD>\\n<path>\\n<sha256 of the body, hex>\\n<ts>">), ' +
      'as resource servers sign /settle. Asking again with the same pair answers the same record. Errors: 401 ' +
      'signature_required or signature_invalid; 403 not_the_seller (signed by another wallet than payTo); 404 settlement_not_found; 409 ' +
      'refund_already_used (that transaction refunded another settlement) or already_refunded (this settlement has ' +
      'another refund); 422 refund_not_verified (details.reason says what the chain shows); 502 upstream_unavailable ' +
      'when the chain does not answer. Design: route. ' +
      DISCOVERY_WHY,
    responses: {
      200: DiscoverySettlementSchema,
      401: ErrorEnvelope,
      403: ErrorEnvelope,
      404: ErrorEnvelope,
      409: ErrorEnvelope,
      422: ErrorEnvelope,
      502: ErrorEnvelope,
      ...standardErrors,
    },
    metadata: {
      payment: free(),
      example: {
        body: {
          settlement: '5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW',
          refund: '4hXTCkRzt9WyecNzV1XPgCDfGAZzQKNxLXgynz5QDuWWPSAZBZSHptvWRL3BjCvzUXRdKvHL2b7yGrRQcWyaqsaB',
        },
      },
    } satisfies RouteMeta,
  },
  resources: {
    method: 'GET',
    path: '/discovery/resources',
    query: z
      .object({
        ...BazaarFilters,
        limit: z.coerce.number().int().min(1).max(100).default(20).describe('resources per page, 1 to 100'),
        offset: z.coerce.number().int().min(0).max(100_000).default(0).describe('resources to skip'),
      })
      .strict(),
    summary: 'x402 bazaar: list discovered resources',
    description:
      'x402’s discovery extension (bazaar), as the official `withBazaar(client).extensions.bazaar.listResources()` reads ' +
      'it: `{ x402Version: 2, items, pagination: { limit, offset, total } }`, most recently settled first. The facilitator ' +
      'learns a resource from the payments it settles: the resource URL, the requirements and the `bazaar` extension the ' +
      'resource server declared in its 402 quote (echoed by the client in its payment). One entry per resource and seller, ' +
      'so nobody can overwrite another seller’s entry. Design: catalog source. ' +
      DISCOVERY_WHY,
    responses: {
      200: z.object({
        x402Version: z.number().int(),
        items: z.array(BazaarResourceSchema),
        pagination: z.object({ limit: z.number().int(), offset: z.number().int(), total: z.number().int() }),
      }),
      ...standardErrors,
    },
    metadata: { payment: free(), example: { query: { type: 'http', limit: 20 } } } satisfies RouteMeta,
  },
  search: {
    method: 'GET',
    path: '/discovery/search',
    query: z
      .object({
        query: z
          .string()
          .trim()
          .min(1)
          .max(200)
          .describe('words to look for in the resources’ descriptions, URLs, names and tags'),
        ...BazaarFilters,
        limit: z.coerce.number().int().min(1).max(100).default(20).describe('results per page, 1 to 100'),
        cursor: z
          .string()
          .regex(/^\d{1,6}$/)
          .optional()
          .describe('the pagination.cursor of the previous page'),
      })
      .strict(),
    summary: 'x402 bazaar: search discovered resources',
    description:
      'x402’s discovery search, as `withBazaar(client).extensions.bazaar.search({ query })` reads it: `{ x402Version: 2, ' +
      'resources, partialResults, pagination: { limit, cursor } }`. Ranking: every query word (case-folded, two letters ' +
      'or more) scores by where it occurs (service name and tags, then the URL path, then the description and the ' +
      'declared input fields), all words weighted by rarity across the catalog; resources matching no word are left out. ' +
      DISCOVERY_WHY,
    responses: {
      200: z.object({
        x402Version: z.number().int(),
        resources: z.array(BazaarResourceSchema),
        partialResults: z.boolean(),
        pagination: z.object({ limit: z.number().int(), cursor: z.string().nullable() }),
      }),
      ...standardErrors,
    },
    metadata: { payment: free(), example: { query: { query: 'lesson' } } } satisfies RouteMeta,
  },
  getSession: {
    method: 'GET',
    path: '/mpp/session/:channelId',
    pathParams: z.object({ channelId: ChannelId }).strict(),
    summary: 'A payment session as the facilitator holds it',
    description:
      'The session’s parties, keys, deposit, accepted cumulative amount and state. A seller paid by vouchers reads it ' +
      'before serving a channel’s first voucher (is the channel open, for it, with this session key and a deposit that ' +
      'covers the voucher), so a voucher for a channel that does not exist is refused before any work is done. Caller: ' +
      'the buyer or the seller, proven by SIGN-IN-WITH-X. Errors: 401 siwx_invalid; 403 not_session_party; 404 ' +
      `session_not_found. Not in the specification: added so sellers check a session before serving. ${FREE_WHY}`,
    responses: { 200: SessionSchema, 404: ErrorEnvelope, ...standardErrors, ...authErrors },
    metadata: { payment: free(), auth: 'siwx', example: { params: { channelId: CHANNEL } } } satisfies RouteMeta,
  },
});

export const facilitator = defineService({
  id: 'facilitator',
  title: 'Settlement API (Facilitator)',
  description:
    'Verifies, co-signs as fee payer, simulates, broadcasts and confirms stablecoin payments on Solana. The x402 v2 ' +
    'facilitator routes (/supported, /verify, /settle) serve resource servers and the official x402 packages; the ' +
    'charge routes (/mpp/prepare, /mpp/settle) settle one-shot charges; the session routes open payment channels paid by ' +
    'signed vouchers for cumulative amounts and settled on chain once at close; the onboarding routes give a buyer a ' +
    'smart wallet with a scoped delegation role. Every settlement is recorded. Every route is free.',
  router,
});
