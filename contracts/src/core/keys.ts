import { base58Decode } from './base58';

// Solana keys as people hand them over, and the DER wrappings Ed25519 keys need for Node's crypto and
// WebCrypto: one home for the SDK's wallet and the servers' wallets.

/** PKCS#8 DER header of an Ed25519 private key; the 32-byte seed follows it. */
export const ED25519_PKCS8_PREFIX = Uint8Array.from([
  0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
]);
/** SPKI DER header of an Ed25519 public key; the 32-byte key follows it. */
export const ED25519_SPKI_PREFIX = Uint8Array.from([
  0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
]);

/**
 * Reads a secret key written as a solana-keygen JSON array of bytes or as base58 (its length is the caller's check).
 */
export function parseSecretKey(text: string): Uint8Array {
  const trimmed = text.trim();
  if (trimmed.startsWith('[')) {
    let numbers: unknown;
    try {
      numbers = JSON.parse(trimmed);
    } catch {
      throw new Error('a JSON secret key must be an array of 64 bytes');
    }
    if (!Array.isArray(numbers) || !numbers.every((n) => Number.isInteger(n) && n >= 0 && n <= 255)) {
      throw new Error('a JSON secret key must be an array of 64 bytes');
    }
    return Uint8Array.from(numbers as number[]);
  }
  const bytes = base58Decode(trimmed);
  if (!bytes) throw new Error('a secret key must be base58 or a JSON array of bytes');
  return bytes;
}
