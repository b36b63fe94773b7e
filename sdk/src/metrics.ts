import { BudgetExceededError, PaymentOutcomeUnknownError, PaymentRefusedError, type ApiError } from './errors';
import type { HttpResponse } from './http';
import type { BudgetLimit } from './payments/types';

/**
 * What the client reports to `onMetric` (ClientOptions): one event per paid call, refused payment or budget
 * refusal, to count in your own metrics (Prometheus, OpenTelemetry, logs). Amounts are atomic units as decimal
 * strings (never floats of money).
 */
export type ClientMetric =
  | {
      name: 'payment';
      service: string;
      /** 'METHOD /path' of the contract route. */
      route: string;
      amountAtomic: string;
      asset: string;
      network: string;
      payTo: string;
      transaction: string;
      /** The whole logical call (quote, signing, delivery, settlement), seconds. */
      durationSeconds: number;
    }
  | { name: 'payment_refused'; service: string; route: string; code: string; reason?: string }
  | { name: 'budget_refused'; service: string; route: string; limit: BudgetLimit; priceUsd: string; limitUsd: string }
  | { name: 'payment_outcome_unknown'; service: string; route: string; amountAtomic: string };

export type MetricHook = (metric: ClientMetric) => void;

/** Calls the hook, ignoring its exceptions: a metric never fails a call. */
function emit(hook: MetricHook, metric: ClientMetric): void {
  try {
    hook(metric);
  } catch {
    // the caller's hook failed; the call's result stands
  }
}

/** Reports what one logical call did with money: a settled payment, or why a payment was not made or refused. */
export function reportCall(
  hook: MetricHook | undefined,
  service: string,
  route: string,
  startedMs: number,
  outcome: { response: HttpResponse } | { error: unknown },
): void {
  if (!hook) return;
  if ('response' in outcome) {
    const receipt = outcome.response.payment;
    if (!receipt) return;
    emit(hook, {
      name: 'payment',
      service,
      route,
      amountAtomic: receipt.amount,
      asset: receipt.asset,
      network: receipt.network,
      payTo: receipt.payTo,
      transaction: receipt.transaction,
      durationSeconds: (Date.now() - startedMs) / 1000,
    });
    return;
  }
  const { error } = outcome;
  if (error instanceof BudgetExceededError) {
    emit(hook, {
      name: 'budget_refused',
      service,
      route,
      limit: error.limit,
      priceUsd: error.priceUsd,
      limitUsd: error.limitUsd,
    });
  } else if (error instanceof PaymentRefusedError) {
    const reason = ((error as ApiError).details as { reason?: unknown } | undefined)?.reason;
    emit(hook, {
      name: 'payment_refused',
      service,
      route,
      code: error.code,
      ...(typeof reason === 'string' ? { reason } : {}),
    });
  } else if (error instanceof PaymentOutcomeUnknownError) {
    emit(hook, { name: 'payment_outcome_unknown', service, route, amountAtomic: error.payment.requirements.amount });
  }
}
