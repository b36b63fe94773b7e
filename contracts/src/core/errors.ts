import { z } from 'zod';
import { named } from './names';
import { PaymentRequiredSchema } from './x402';

/** The one error body of every service: { error: { code, message, details }, requestId }. */
export interface ErrorEnvelope {
  error: { code: string; message: string; details?: unknown };
  requestId: string;
}

/** The envelope with `details` of a known shape (the documents type each error whose details are known). */
function envelopeWith(details: z.ZodTypeAny, codes: string) {
  return z.object({
    error: z.object({
      code: z.string().describe(`machine-readable error code, ${codes}`),
      message: z.string().describe('what went wrong, for a person'),
      details,
    }),
    requestId: z.string().describe('the x-request-id of the request, for logs and support'),
  });
}

export const ErrorEnvelope: z.ZodType<ErrorEnvelope> = named(
  'ErrorEnvelope',
  envelopeWith(
    z.unknown().optional().describe('structured detail: for invalid_request, each field and what is wrong'),
    'e.g. invalid_request',
  ),
);

/** One invalid field in a 400 invalid_request error's details. */
export interface FieldIssue {
  /** Where the field is: body, query, params or headers, then its path, e.g. "body.lessonId". */
  field: string;
  message: string;
}

export const FieldIssueSchema: z.ZodType<FieldIssue> = named(
  'FieldIssue',
  z.object({
    field: z.string().describe('body, query, params or headers, then the path, e.g. body.lessonId'),
    message: z.string(),
  }),
);

/** A refund of a settle-first payment whose request failed: sent on chain from the service's wallet. */
export interface Refund {
  transaction: string;
  amountAtomic: string;
}
export const RefundSchema: z.ZodType<Refund> = named(
  'Refund',
  z.object({
    transaction: z.string().describe('base58 signature of the refund transaction'),
    amountAtomic: z
      .string()
      .regex(/^(0|[1-9]\d{0,24})$/)
      .describe('the whole amount paid, atomic units'),
  }),
);

/** 400: invalid_request lists each field in `details.fields`; invalid_json and invalid_path have no details. */
export const InvalidRequestError = named(
  'InvalidRequestError',
  envelopeWith(
    z.object({ fields: z.array(FieldIssueSchema) }).optional(),
    'one of invalid_request, invalid_json, invalid_path',
  ),
);

/**
 * 402: `details` is the x402 quote (as in PAYMENT-REQUIRED), the facilitator's reason for a refused payment, and a
 * refund.
 */
export const PaymentRequiredError = named(
  'PaymentRequiredError',
  envelopeWith(
    z.intersection(
      PaymentRequiredSchema,
      z.object({
        reason: z
          .string()
          .optional()
          .describe('the facilitator’s x402 reason a payment was refused, e.g. insufficient_funds'),
        refund: RefundSchema.optional(),
      }),
    ),
    'one of payment_required, payment_invalid, payment_already_used, payment_failed, payment_refunded',
  ),
);

/** An error of a settle-first route: once the payment had settled, `details.refund` is the refund sent. */
export const RefundedError = named(
  'RefundedError',
  envelopeWith(z.object({ refund: RefundSchema.optional() }).passthrough().optional(), 'as the route declares'),
);

/** Error responses every route may answer, declared on every route so clients and documents know them. */
export const standardErrors = {
  400: ErrorEnvelope,
  500: ErrorEnvelope,
} as const;

/**
 * Added to paid routes: 402 with the x402 quote in the PAYMENT-REQUIRED header; 429 when the facilitator is at a
 * settlement cap (code global_, seller_ or payer_settle_cap_exceeded, nothing charged, Retry-After); 503 when
 * settlement is unreachable.
 */
export const paymentErrors = {
  402: ErrorEnvelope,
  429: ErrorEnvelope,
  503: ErrorEnvelope,
} as const;
