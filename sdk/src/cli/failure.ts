import {
  ApiError,
  BadRequestError,
  BudgetExceededError,
  ChainMismatchError,
  ConnectionError,
  InsufficientFundsError,
  PayloadTooLargeError,
  PaymentOutcomeUnknownError,
  PaymentRequiredError,
} from '../index';

/** Exit codes of the agent-economy command, one per class of failure (documented in its --help and the README). */
export const EXIT = {
  ok: 0,
  /** Bad flags or arguments, an unknown service or route, no deployment or wallet. */
  usage: 1,
  /** The input breaks the route's contract (checked before any request), or the service answered 400/413. */
  validation: 2,
  /** A payment not made: over --max-usd or a budget, no wallet or funds, refused by the service. */
  payment: 3,
  /** The service answered with an error (401, 403, 404, 409, 422, 429, 5xx). */
  service: 4,
  /** No answer: the service, the ledger's RPC or faucet could not be reached. */
  connection: 5,
  /** A payment was sent but its outcome is unknown: check the chain before paying again. */
  paymentUnknown: 6,
} as const;

/** A failure with its exit code and a machine-readable code, as --json prints it. */
export class CliFailure extends Error {
  constructor(
    readonly exitCode: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
  }
}

export class UsageError extends CliFailure {
  constructor(message: string, details?: unknown) {
    super(EXIT.usage, 'usage', message, details);
  }
}

/** The input breaks the contract: each field and what is wrong with it. */
export class InputError extends CliFailure {
  constructor(readonly fields: { field: string; message: string }[]) {
    super(
      EXIT.validation,
      'invalid_input',
      `invalid input: ${fields.map((f) => `${f.field}: ${f.message}`).join('; ')}`,
      { fields },
    );
  }
}

/** Any error as a CliFailure with the exit code of its class. */
export function classify(error: unknown): CliFailure {
  if (error instanceof CliFailure) return error;
  if (error instanceof BudgetExceededError) {
    return new CliFailure(EXIT.payment, 'budget_exceeded', error.message, {
      limit: error.limit,
      limitUsd: error.limitUsd,
      priceUsd: error.priceUsd,
      remainingUsd: error.remainingUsd,
    });
  }
  if (error instanceof InsufficientFundsError) {
    const { address, asset, needed, held } = error;
    return new CliFailure(
      EXIT.payment,
      'insufficient_funds',
      `${error.message} (agent-economy wallet fund tops it up on the local ledger)`,
      { address, asset, needed, held },
    );
  }
  if (error instanceof ChainMismatchError) return new CliFailure(EXIT.payment, 'chain_mismatch', error.message);
  if (error instanceof PaymentRequiredError) {
    // A 402 this command did not pay: no wallet, an unacceptable quote, or a payment the service refused.
    return new CliFailure(
      EXIT.payment,
      error.code === 'http_402' ? 'payment_required' : error.code,
      error.message,
      error.details,
    );
  }
  if (error instanceof BadRequestError || error instanceof PayloadTooLargeError) {
    const fields = error instanceof BadRequestError ? error.fields : [];
    return new CliFailure(EXIT.validation, error.code, error.message, fields.length ? { fields } : error.details);
  }
  if (error instanceof ApiError) return new CliFailure(EXIT.service, error.code, error.message, error.details);
  if (error instanceof PaymentOutcomeUnknownError) {
    const { payment } = error;
    return new CliFailure(EXIT.paymentUnknown, 'payment_outcome_unknown', error.message, {
      payer: payment.payer,
      payTo: payment.requirements.payTo,
      amount: payment.requirements.amount,
      payerSignature: payment.payerSignature,
      memo: payment.memo,
      ...(payment.transaction ? { transaction: payment.transaction } : {}),
    });
  }
  if (error instanceof ConnectionError) return new CliFailure(EXIT.connection, 'connection_failed', error.message);
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof TypeError && /fetch failed/i.test(message)) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return new CliFailure(
      EXIT.connection,
      'connection_failed',
      `${message}${cause ? `: ${cause.code ?? cause.message}` : ''}`,
    );
  }
  return new CliFailure(EXIT.usage, 'error', message);
}
