import { z } from 'zod';

/** The one error body of every service: { error: { code, message, details }, requestId }. */
export interface ErrorEnvelope {
  error: { code: string; message: string; details?: unknown };
  requestId: string;
}

export const ErrorEnvelope: z.ZodType<ErrorEnvelope> = z.object({
  error: z.object({
    code: z.string().describe('machine-readable error code, e.g. invalid_request'),
    message: z.string().describe('what went wrong, for a person'),
    details: z.unknown().optional().describe('structured detail: for invalid_request, each field and what is wrong'),
  }),
  requestId: z.string().describe('the x-request-id of the request, for logs and support'),
});

/** One invalid field in a 400 invalid_request error's details. */
export interface FieldIssue {
  /** Where the field is: body, query, params or headers, then its path, e.g. "body.lessonId". */
  field: string;
  message: string;
}

/** Error responses every route may answer, declared on every route so clients and documents know them. */
export const standardErrors = {
  400: ErrorEnvelope,
  500: ErrorEnvelope,
} as const;

/** Added to paid routes: 402 with the x402 quote in the PAYMENT-REQUIRED header; 503 when settlement is unreachable. */
export const paymentErrors = {
  402: ErrorEnvelope,
  503: ErrorEnvelope,
} as const;
