import { z } from 'zod';
import { base58Decode } from './base58';
import { named } from './names';

// Chain identifiers. Networks are CAIP-2 ids; Solana addresses are base58 of 32 bytes, signatures of 64.
export const SOLANA_MAINNET = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp';
export const SOLANA_DEVNET = 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1';
export const SOLANA_TESTNET = 'solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z';
export const USDC_MAINNET = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
export const USDC_DEVNET = '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU';

export function isBase58OfLength(text: string, length: number): boolean {
  if (text.length < 32 || text.length > 90) return false;
  return base58Decode(text)?.length === length;
}

export const SolanaAddress = named(
  'SolanaAddress',
  z.string().refine((s) => isBase58OfLength(s, 32), 'must be a base58 Solana address (32 bytes)'),
  { example: USDC_DEVNET },
);

export const SolanaSignature = named(
  'SolanaSignature',
  z.string().refine((s) => isBase58OfLength(s, 64), 'must be a base58 Solana transaction signature (64 bytes)'),
  { example: '4Nh3b2byArLCjLJpy9oEmY9zzY4pTrSgQwjVuSio3Ak7pKfUSyvB8Ym1v6HnneC8TkoEP5Y3iUECyM4wr18LU3d9' },
);

/** CAIP-2 chain id: <namespace>:<reference>, e.g. solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1. */
export const Caip2Network = named(
  'Caip2Network',
  z
    .string()
    .regex(
      /^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$/,
      'must be a CAIP-2 chain id such as solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
    ),
  { example: SOLANA_DEVNET },
);

/** ISO 8601 UTC timestamp with milliseconds, as every service writes times. */
export const Timestamp = named(
  'Timestamp',
  z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, 'must be an ISO 8601 UTC time with milliseconds'),
  { example: '2026-01-15T12:00:00.000Z' },
);
