// Payment sessions paid by vouchers on the paid path: the names a 402 quote offers them under and the bytes a
// buyer's session key signs, one definition for the buyer (SDK), the seller (paywall) and the facilitator.

/** The scheme of a session offer in a quote's `accepts`, and of a voucher's PAYMENT-SIGNATURE. */
export const SESSION_SCHEME = 'session';
/** Names the voucher format in the offer's `extra.protocol`. */
export const SESSION_PROTOCOL = 'agent-economy-session-v1';
/** Where a buyer asks the seller to close (settle) its session; the offer's `extra.close`. */
export const SESSION_CLOSE_PATH = '/x402/sessions/close';

export const VOUCHER_REQUEST_DOMAIN = 'solana-mpp-session-voucher-request-v1:';

/**
 * Whether the facilitator's refusal to open a session (its error code and details) says the buyer's delegation role
 * has moved what it may, expired or expires within the minute: onboarding again renews it. Not a role its buyer
 * revoked: that stays revoked.
 */
export function renewedByOnboarding(code: string, details: unknown): boolean {
  const reason = (details as { reason?: unknown } | undefined)?.reason;
  return (
    (code === 'insufficient_balance' && reason === 'spend_limit') ||
    (code === 'wallet_role_not_found' && (reason === 'spent' || reason === 'expired' || reason === 'expiring'))
  );
}

/** JSON with object keys sorted recursively and undefined members left out (the bytes vouchers sign). */
export function sortedJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v) => sortedJson(v === undefined ? null : v)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${sortedJson(v)}`).join(',')}}`;
}

export interface VoucherRequestFields {
  channelId: string;
  cumulativeAmount: string;
  units: number;
  meter?: string;
  serverNonce?: string;
}

/** The bytes the buyer's session key signs to ask for a voucher (a seller takes the same bytes as payment). */
export function voucherRequestMessage(f: VoucherRequestFields): Uint8Array {
  const fields = {
    channelId: f.channelId,
    cumulativeAmount: f.cumulativeAmount,
    units: f.units,
    meter: f.meter,
    serverNonce: f.serverNonce,
  };
  return new TextEncoder().encode(VOUCHER_REQUEST_DOMAIN + sortedJson(fields));
}

/** The bytes a buyer's session key signs to ask the seller to close its session. */
export const sessionCloseMessage = (channelId: string): Uint8Array =>
  new TextEncoder().encode(`agent-economy session close v1:${channelId}`);
