import { createHmac, randomBytes } from 'node:crypto';
import { base58Decode, base58Encode, sortedJson, type MppVoucher } from '@agent-economy/contracts';
import { signEd25519, verifyEd25519, walletFromSeed, type Wallet } from '../../solana/keys';

// Payment-session rules as plain functions (research/mpp.md §1.4, §2.2): the message the channel's voucher signer
// signs, the keys the facilitator derives, and the voucher checks. What the buyer's session key signs is the
// contracts' (core/sessions.ts), shared with the SDK and the paywall.

export const VOUCHER_DOMAIN = 'solana-mpp-session-voucher-v1:';

/** The bytes the channel's voucher signer signs. */
export function voucherMessage(voucher: MppVoucher): Uint8Array {
  return new TextEncoder().encode(VOUCHER_DOMAIN + sortedJson(voucher));
}

export function verifyBase58Signature(signer: string, message: Uint8Array, signature: string): boolean {
  const key = base58Decode(signer);
  const sig = base58Decode(signature);
  return !!key && !!sig && verifyEd25519(key, message, sig);
}

export function signVoucher(signer: Wallet, voucher: MppVoucher): string {
  return base58Encode(signEd25519(signer, voucherMessage(voucher)));
}

/** A key derived from the facilitator's for one purpose only: every replica holding the key derives the same one. */
function derived(root: Wallet, purpose: string): Wallet {
  return walletFromSeed(new Uint8Array(createHmac('sha256', root.secretKey.subarray(0, 32)).update(purpose).digest()));
}

/**
 * The delegate the buyers' roles authorise. It is not the fee payer: the fee payer co-signs transactions
 * buyers build, so it must never be able to move a buyer's funds; the delegate signs only the facilitator's
 * own session settlements.
 */
export const sessionDelegate = (feePayer: Wallet) => derived(feePayer, 'agent-economy facilitator session delegate v1');

// Derived keys of recent channels: a busy channel is signed for at every checkpoint, and deriving costs a key import.
const signers = new Map<string, Wallet>();

/** The channel's voucher signer: one key per channel, the same after a restart, never stored. */
export function voucherSigner(feePayer: Wallet, channelId: string): Wallet {
  const key = `${feePayer.address}:${channelId}`;
  let signer = signers.get(key);
  if (!signer) {
    if (signers.size >= 10_000) signers.clear();
    signer = derived(feePayer, `agent-economy facilitator voucher signer v1:${channelId}`);
    signers.set(key, signer);
  }
  return signer;
}

const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A random id: prefix + 24 base62 characters (rejection sampling keeps every character equally likely). */
export function randomId(prefix: string, length = 24): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += ID_ALPHABET[byte % 62];
    }
  }
  return `${prefix}_${out}`;
}

/** How long before its role expires a session is due: the facilitator settles it while the role still holds. */
export const ROLE_EXPIRY_MARGIN_MS = 60_000;

/** The idle deadline of a session after activity at `at`: never past its role's expiry (less the margin). */
export function sessionDeadline(at: Date, idleTimeoutSeconds: number, roleExpiresAt: Date): Date {
  return new Date(Math.min(at.getTime() + idleTimeoutSeconds * 1000, roleExpiresAt.getTime() - ROLE_EXPIRY_MARGIN_MS));
}

export type VoucherVerdict =
  | { kind: 'ok'; delta: bigint }
  | { kind: 'not_monotonic'; accepted: bigint }
  | { kind: 'underpayment'; minimum: bigint; delta: bigint }
  | { kind: 'over_deposit'; deposit: bigint };

/** The amount rules of a voucher request, in the contract's order: monotonic, price, deposit. */
export function judgeVoucher(
  s: { accepted: bigint; deposit: bigint; pricePerUnit: bigint | null },
  cumulative: bigint,
  units: number,
): VoucherVerdict {
  if (cumulative <= s.accepted) return { kind: 'not_monotonic', accepted: s.accepted };
  const delta = cumulative - s.accepted;
  if (s.pricePerUnit !== null && delta < s.pricePerUnit * BigInt(units))
    return { kind: 'underpayment', minimum: s.pricePerUnit * BigInt(units), delta };
  if (cumulative > s.deposit) return { kind: 'over_deposit', deposit: s.deposit };
  return { kind: 'ok', delta };
}
