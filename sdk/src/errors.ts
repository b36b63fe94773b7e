import {
  PAYMENT_REQUIRED_HEADER,
  PaymentRequiredSchema,
  decodeX402Header,
  type PaymentRequired,
} from '@agent-economy/contracts';
import type { BudgetLimit, PaymentReceipt, PaymentRefund, SentPayment } from './payments/types';

/** Every error the SDK throws extends this. */
export class AgentEconomyError extends Error {
  override name = 'AgentEconomyError';
}

/** A service answered with an error status; `code`, `message` and `details` come from its error envelope. */
export class ApiError extends AgentEconomyError {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: unknown,
    readonly requestId: string | undefined,
    readonly headers: Record<string, string>,
    readonly body: unknown,
  ) {
    super(`${status} ${code}: ${message}`);
  }

  /**
   * The payment this error answer settled, when it did (a settle-first route whose request failed): its
   * receipt, with `refund` when the service gave the money back. Set by the paying client.
   */
  receipt?: PaymentReceipt;

  /**
   * The on-chain refund of a settle-first request that failed after its payment settled (`details.refund`):
   * the whole amount went back to the payer in `transaction`.
   */
  get refund(): PaymentRefund | undefined {
    const refund = (this.details as { refund?: { transaction?: unknown; amountAtomic?: unknown } } | undefined)?.refund;
    return typeof refund?.transaction === 'string' && refund.transaction && typeof refund.amountAtomic === 'string'
      ? { transaction: refund.transaction, amountAtomic: refund.amountAtomic }
      : undefined;
  }

  static from(status: number, body: unknown, headers: Record<string, string>): ApiError {
    const envelope = (
      body as { error?: { code?: unknown; message?: unknown; details?: unknown }; requestId?: unknown } | undefined
    )?.error;
    const code = typeof envelope?.code === 'string' ? envelope.code : `http_${status}`;
    const message = typeof envelope?.message === 'string' ? envelope.message : `HTTP ${status}`;
    const requestId =
      headers['x-request-id'] ??
      (typeof (body as { requestId?: unknown })?.requestId === 'string'
        ? (body as { requestId: string }).requestId
        : undefined);
    const args = [status, code, message, envelope?.details, requestId, headers, body] as const;
    switch (true) {
      case status === 400:
        return new BadRequestError(...args);
      case status === 401:
        return new AuthenticationError(...args);
      case status === 402:
        return new PaymentRequiredError(...args);
      case status === 403:
        return new PermissionDeniedError(...args);
      case status === 404:
        return new NotFoundError(...args);
      case status === 409:
        return new ConflictError(...args);
      case status === 413:
        return new PayloadTooLargeError(...args);
      case status === 422:
        return new UnprocessableEntityError(...args);
      case status === 429:
        return new RateLimitError(...args);
      case status >= 500:
        return new InternalServerError(...args);
      default:
        return new ApiError(...args);
    }
  }
}

export class BadRequestError extends ApiError {
  override name = 'BadRequestError';
  /** Each invalid field and what is wrong with it. */
  get fields(): { field: string; message: string }[] {
    return (this.details as { fields?: { field: string; message: string }[] } | undefined)?.fields ?? [];
  }
}
export class AuthenticationError extends ApiError {
  override name = 'AuthenticationError';
}
/** 402: the operation must be paid (or the payment was refused); `quote` is the decoded x402 PAYMENT-REQUIRED. */
export class PaymentRequiredError extends ApiError {
  override name = 'PaymentRequiredError';
  get quote(): PaymentRequired | undefined {
    const header = this.headers[PAYMENT_REQUIRED_HEADER];
    const parsed = PaymentRequiredSchema.safeParse(header ? decodeX402Header(header) : this.details);
    return parsed.success ? parsed.data : undefined;
  }
}
export class PermissionDeniedError extends ApiError {
  override name = 'PermissionDeniedError';
}
export class NotFoundError extends ApiError {
  override name = 'NotFoundError';
}
export class ConflictError extends ApiError {
  override name = 'ConflictError';
  /** The negotiation already open between this buyer and module (negotiation's 409 `negotiation_exists`). */
  get negotiationId(): string | undefined {
    const id = (this.details as { negotiationId?: unknown } | undefined)?.negotiationId;
    return typeof id === 'string' ? id : undefined;
  }
}
export class PayloadTooLargeError extends ApiError {
  override name = 'PayloadTooLargeError';
}
export class UnprocessableEntityError extends ApiError {
  override name = 'UnprocessableEntityError';
}
export class RateLimitError extends ApiError {
  override name = 'RateLimitError';
}
export class InternalServerError extends ApiError {
  override name = 'InternalServerError';
}

/** No HTTP answer: the service could not be reached or the connection broke. */
export class ConnectionError extends AgentEconomyError {
  override name = 'ConnectionError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
export class ConnectionTimeoutError extends ConnectionError {
  override name = 'ConnectionTimeoutError';
}
/** The caller's AbortSignal fired. */
export class UserAbortError extends AgentEconomyError {
  override name = 'UserAbortError';
}

type ApiErrorArgs = ConstructorParameters<typeof ApiError>;
/** The service's own message from its error envelope (ApiError.message has status and code in front). */
const serviceMessage = (error: ApiError): string => {
  const message = (error.body as { error?: { message?: unknown } } | undefined)?.error?.message;
  return typeof message === 'string' ? message : '';
};
const argsOf = (error: ApiError): ApiErrorArgs => [
  error.status,
  error.code,
  serviceMessage(error),
  error.details,
  error.requestId,
  error.headers,
  error.body,
];

/**
 * The client would not pay this quote: a price above one of your budgets. Nothing was built, signed or
 * sent. Still a PaymentRequiredError (the service's 402 and its `quote` are kept).
 */
export class BudgetExceededError extends PaymentRequiredError {
  override name = 'BudgetExceededError';
  constructor(
    from: ApiError,
    /** The budget the price breaks. */
    readonly limit: BudgetLimit,
    /** That budget, USD. */
    readonly limitUsd: string,
    /** The quoted price, USD. */
    readonly priceUsd: string,
    /** What that budget still allows, USD, counting payments in flight. */
    readonly remainingUsd: string,
    readonly service: string,
    readonly route: string,
    /** The budget named for a person: 'hourly', 'daily (education)', 'per-origin (https://…)'. */
    readonly cap: string = {
      perCall: 'per-call',
      perService: `per-service (${service})`,
      total: 'total',
      perOrigin: 'per-origin',
      hourly: 'hourly',
      daily: 'daily',
    }[limit],
  ) {
    super(...argsOf(from));
    this.message = `${route} costs ${priceUsd} USD; the ${cap} budget of ${limitUsd} USD allows ${remainingUsd} USD more`;
  }
}

/**
 * Your `onApprove` hook declined the payment (returned false or threw; the throw is the `cause`).
 * Nothing was signed or sent. Still a PaymentRequiredError (the service's 402 and its `quote` are kept).
 */
export class PaymentNotApprovedError extends PaymentRequiredError {
  override name = 'PaymentNotApprovedError';
  constructor(
    from: ApiError,
    readonly service: string,
    readonly route: string,
    /** The quoted price, USD. */
    readonly priceUsd: string,
    /** The recipient the payment would have gone to. */
    readonly payTo: string,
    options?: { cause?: unknown },
  ) {
    super(...argsOf(from));
    if (options?.cause !== undefined) (this as { cause?: unknown }).cause = options.cause;
    this.message = `${route} costs ${priceUsd} USD to ${payTo}; onApprove declined it, so nothing was signed`;
  }
}

/**
 * No element of the quote is one this client pays: network or asset not allowed, another scheme, no fee
 * payer (the service has no facilitator), or a mint that is not a 6-decimal token. Nothing was sent.
 */
export class PaymentNotAcceptableError extends PaymentRequiredError {
  override name = 'PaymentNotAcceptableError';
  constructor(
    from: ApiError,
    /** Why each element of `accepts` was refused, in order. */
    readonly reasons: string[],
  ) {
    super(...argsOf(from));
    this.message = `no acceptable payment option: ${reasons.join('; ')}`;
  }
}

/**
 * The service refused the payment the client sent (a 402 after paying): `code` and `reason` say why,
 * `quote` is its fresh quote, `payment` what was sent. Nothing settled and the client does not pay again.
 */
export class PaymentRefusedError extends PaymentRequiredError {
  override name = 'PaymentRefusedError';
  constructor(
    from: ApiError,
    readonly payment: SentPayment,
  ) {
    super(...argsOf(from));
    const said = serviceMessage(from);
    this.message = `payment refused by the service: ${this.reason}${said ? ` (${said})` : ''}`;
  }
  /** The facilitator's reason when the service gives one (details.reason), else the error code. */
  get reason(): string {
    const reason = (this.details as { reason?: unknown } | undefined)?.reason;
    return typeof reason === 'string' ? reason : this.code;
  }
}

/**
 * The payment was sent but the answer does not say whether it settled: none came back, or the service
 * reports a settlement still pending (then `payment.transaction` is its id), or a gateway gave up. The
 * SDK does not pay again; check the chain for `payment` (see SentPayment) and then tell the client with
 * `client.payments.resolve(payment, transaction | null)`. Until then its amount counts as spent.
 * Deliberately not a ConnectionError, so that generic retry-on-connection-error code does not pay twice.
 */
export class PaymentOutcomeUnknownError extends AgentEconomyError {
  override name = 'PaymentOutcomeUnknownError';
  constructor(
    message: string,
    readonly payment: SentPayment,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The Solana RPC (blockhash, mint lookup) failed before anything was signed or sent; safe to retry. */
export class SolanaRpcError extends ConnectionError {
  override name = 'SolanaRpcError';
}

/**
 * The wallet cannot cover the payment: it has no token account for the asset, or holds less than the
 * price. Checked on the chain before anything is signed or sent; nothing was spent. Amounts are atomic
 * units of `asset`, as decimal strings. On the local ledger, `fundWallet()` tops the wallet up.
 */
export class InsufficientFundsError extends AgentEconomyError {
  override name = 'InsufficientFundsError';
  constructor(
    /** The paying wallet. */
    readonly address: string,
    /** The mint the quote asks for. */
    readonly asset: string,
    /** The quoted amount, atomic units. */
    readonly needed: string,
    /** What the wallet's token account holds, atomic units ("0" when it has none). */
    readonly held: string,
    /** False when the wallet has no token account for the asset at all. */
    readonly hasTokenAccount: boolean,
  ) {
    super(
      hasTokenAccount
        ? `wallet ${address} holds ${held} atomic units of ${asset}, less than the ${needed} this call costs; nothing was signed`
        : `wallet ${address} has no token account for ${asset} (it never received any), so it cannot pay the ${needed} atomic units this call costs; nothing was signed`,
    );
  }
}

/**
 * The Solana RPC the client reads blockhashes from is on another chain than the service's quote names
 * (its genesis hash does not match the CAIP-2 network): a payment built there would never settle.
 * Nothing was signed. Point the client at the service's RPC (`deployment`, or `payments.rpcUrl`).
 */
export class ChainMismatchError extends AgentEconomyError {
  override name = 'ChainMismatchError';
  constructor(
    /** The quote's CAIP-2 network, solana:<genesis hash prefix>. */
    readonly network: string,
    readonly rpcUrl: string,
    /** The genesis hash the RPC reports. */
    readonly genesisHash: string,
  ) {
    super(
      `the Solana RPC at ${rpcUrl} is on the chain with genesis ${genesisHash}, not on ${network} as the service's quote says; nothing was signed (set the client's deployment or payments.rpcUrl to the service's RPC)`,
    );
  }
}
