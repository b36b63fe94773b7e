import type { MppSponsoredAccess, PaymentRequirements } from '@agent-economy/contracts';

/** A refund a service sent back on chain after its settle-first request failed. */
export interface PaymentRefund {
  transaction: string;
  /** Atomic units of the payment's asset, decimal string. */
  amountAtomic: string;
}

/** What a settled payment bought, as `client.payments.receipts` and `.withResponse().payment` report it. */
export interface PaymentReceipt {
  /** Service id, e.g. 'education'. */
  service: string;
  /** The contract route paid for: 'METHOD /path', e.g. 'POST /api/lesson'. */
  route: string;
  /** Atomic units of `asset` that settled, as a decimal integer string. */
  amount: string;
  /** The same amount in USD, an exact decimal string (the stablecoin has 6 decimals). */
  amountUsd: string;
  /** Mint of the stablecoin paid with. */
  asset: string;
  /** CAIP-2 id of the network. */
  network: string;
  /** The service's wallet that was paid. */
  payTo: string;
  /** Your wallet. */
  payer: string;
  /** The settled transaction's id on chain (base58), from the service's PAYMENT-RESPONSE. */
  transaction: string;
  /** When the SDK received the settlement, ISO 8601. */
  at: string;
  /** scheme://host:port of the service paid (for per-origin budgets). */
  origin?: string;
  /**
   * The x402 payment identifier the call sent, when the service takes one: pass it as `paymentId` to retry the call
   * without paying again.
   */
  paymentId?: string;
  /**
   * The settled payment was given back: a settle-first route whose request failed refunds it on chain
   * (its transaction and amount, atomic units). It then counts as nothing spent.
   */
  refund?: PaymentRefund;
  /**
   * A sponsored recommendation the facilitator's ad network attached to this settlement (x402 extension
   * "sponsored-access"), when one matched: fire `tracking.impressionBeacon` (GET) once you show it.
   */
  sponsoredAccess?: MppSponsoredAccess;
  /** Paid by a voucher in a payment session (transaction empty until the seller settles the session). */
  session?: { channelId: string; cumulativeAmount: string };
}

/**
 * A payment the SDK signed and sent: enough to find it on chain when its outcome is unknown. The
 * chain's id of a Solana transaction is its first signature, the fee payer's, which only the
 * facilitator adds: use `transaction` when the service reported it, else look for `payerSignature`
 * among the transactions of your token account, or for the `memo`, which is unique to this payment.
 */
export interface SentPayment {
  service: string;
  /** 'METHOD /path'. */
  route: string;
  /** The quote element paid against, as sent in `accepted`. */
  requirements: PaymentRequirements;
  payer: string;
  /** Your Ed25519 signature of the transaction (its signatures[1]), base58. */
  payerSignature: string;
  memo: string;
  /** The partially signed wire transaction as sent, base64 (the fee payer's slot left empty). */
  signedTransaction: string;
  /** The transaction's id on chain (base58), when the service reported one (a settlement still pending). */
  transaction?: string;
  /** True when it was sent up front, before any 402 for this call. */
  prepaid: boolean;
  /**
   * Its x402 payment identifier, when the service takes one: call again with this `paymentId` to get the outcome
   * without paying twice.
   */
  paymentId?: string;
}

/**
 * Which budget a price would break: the per-call cap, a lifetime cap (total, per service, per origin) or a rolling one
 * (hourly, daily).
 */
export type BudgetLimit = 'perCall' | 'perService' | 'total' | 'perOrigin' | 'hourly' | 'daily';
