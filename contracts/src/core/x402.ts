import { z } from 'zod';
import { named } from './names';

// x402 v2 over HTTP (research/x402.md §1): the 402 quote travels base64-encoded in PAYMENT-REQUIRED,
// the payment in PAYMENT-SIGNATURE, the settlement receipt in PAYMENT-RESPONSE.
export const PAYMENT_REQUIRED_HEADER = 'payment-required';
export const PAYMENT_SIGNATURE_HEADER = 'payment-signature';
export const PAYMENT_RESPONSE_HEADER = 'payment-response';
export const SIGN_IN_WITH_X_HEADER = 'sign-in-with-x';

export interface ResourceInfo {
  url: string;
  description?: string;
  mimeType?: string;
}

export interface PaymentRequirements {
  scheme: string;
  network: string;
  /** Atomic units of `asset`, as a decimal integer string. */
  amount: string;
  asset: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra?: Record<string, unknown>;
}

export interface PaymentRequired {
  x402Version: 2;
  error?: string;
  resource: ResourceInfo;
  accepts: PaymentRequirements[];
  extensions?: Record<string, unknown>;
}

export const ResourceInfoSchema: z.ZodType<ResourceInfo> = named(
  'ResourceInfo',
  z.object({
    url: z.string(),
    description: z.string().optional(),
    mimeType: z.string().optional(),
  }),
);

export const PaymentRequirementsSchema: z.ZodType<PaymentRequirements> = named(
  'PaymentRequirements',
  z.object({
    scheme: z.string().min(1),
    network: z.string().min(3).includes(':'),
    amount: z.string().regex(/^\d+$/),
    asset: z.string().min(1),
    payTo: z.string().min(1),
    maxTimeoutSeconds: z.number().int().min(1),
    extra: z.record(z.unknown()).optional(),
  }),
);

export const PaymentRequiredSchema: z.ZodType<PaymentRequired> = named(
  'PaymentRequired',
  z.object({
    x402Version: z.literal(2),
    error: z.string().optional(),
    resource: ResourceInfoSchema,
    accepts: z.array(PaymentRequirementsSchema).min(1),
    extensions: z.record(z.unknown()).optional(),
  }),
);

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Node's Buffer, where there is one: its base64 is native, where Node's atob and btoa walk the text a character at a
 * time in JavaScript (every paid request decodes one header and encodes another, on both sides). Elsewhere (a
 * browser) atob and btoa.
 */
const NodeBuffer = (
  globalThis as {
    Buffer?: { from(text: string, encoding: 'utf8' | 'base64'): Uint8Array & { toString(encoding: 'base64'): string } };
  }
).Buffer;

/** JSON -> UTF-8 -> standard base64, as every x402 header value is encoded. */
export function encodeX402Header(value: unknown): string {
  const json = JSON.stringify(value);
  if (NodeBuffer) return NodeBuffer.from(json, 'utf8').toString('base64');
  const bytes = new TextEncoder().encode(json);
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The bytes of standard base64 text, or undefined where atob would refuse it (Buffer takes anything). */
function base64Bytes(value: string): Uint8Array | undefined {
  if (!BASE64.test(value)) return undefined;
  const padding = value.endsWith('==') ? 2 : value.endsWith('=') ? 1 : 0;
  // As atob: padding only on a whole number of quads, and no lone character left over.
  if ((padding && value.length % 4) || (value.length - padding) % 4 === 1) return undefined;
  if (NodeBuffer) return NodeBuffer.from(value, 'base64');
  const binary = atob(value);
  // A plain loop: Uint8Array.from with a mapping function costs a call per byte.
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** Decodes an x402 header value; undefined when it is not base64 JSON. */
export function decodeX402Header(value: string): unknown {
  try {
    const bytes = base64Bytes(value);
    return bytes && JSON.parse(utf8.decode(bytes));
  } catch {
    return undefined;
  }
}
