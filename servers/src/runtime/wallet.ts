import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { base58Decode, base58Encode } from '@agent-economy/contracts';

/** A Solana keypair: the 64-byte secret (seed then public key, as solana-keygen writes it) and its address. */
export interface Wallet {
  address: string;
  secretKey: Uint8Array;
}

const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

function publicKeyOf(seed: Uint8Array): Uint8Array {
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });
  return new Uint8Array(createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).subarray(-32));
}

export function walletFromSecretKey(secretKey: Uint8Array): Wallet {
  if (secretKey.length !== 64) throw new Error(`a Solana secret key has 64 bytes, not ${secretKey.length}`);
  const publicKey = publicKeyOf(secretKey.subarray(0, 32));
  if (!publicKey.every((byte, i) => byte === secretKey[32 + i])) throw new Error('the secret key does not match its public half');
  return { address: base58Encode(publicKey), secretKey };
}

export function generateWallet(): Wallet {
  const { privateKey } = generateKeyPairSync('ed25519');
  const seed = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(-32);
  const secretKey = new Uint8Array(64);
  secretKey.set(seed, 0);
  secretKey.set(publicKeyOf(seed), 32);
  return walletFromSecretKey(secretKey);
}

/** Reads a secret key written as a solana-keygen JSON array of 64 numbers or as base58. */
export function parseSecretKey(text: string): Uint8Array {
  const trimmed = text.trim();
  if (trimmed.startsWith('[')) {
    const numbers: unknown = JSON.parse(trimmed);
    if (!Array.isArray(numbers) || !numbers.every((n) => Number.isInteger(n) && n >= 0 && n <= 255)) {
      throw new Error('a JSON secret key must be an array of 64 bytes');
    }
    return Uint8Array.from(numbers as number[]);
  }
  const bytes = base58Decode(trimmed);
  if (!bytes) throw new Error('a secret key must be base58 or a JSON array of bytes');
  return bytes;
}

/**
 * The wallet named `name`: from the environment variable if set, else from <dataDir>/keys/<name>.json,
 * generated there at first start (mode 0600). Without a data directory (tests) it lives in memory only.
 */
export function loadOrCreateWallet(name: string, options: { dataDir?: string; envValue?: string }): Wallet {
  if (options.envValue) return walletFromSecretKey(parseSecretKey(options.envValue));
  if (!options.dataDir) return generateWallet();
  const dir = join(options.dataDir, 'keys');
  const file = join(dir, `${name}.json`);
  if (existsSync(file)) return walletFromSecretKey(parseSecretKey(readFileSync(file, 'utf8')));
  const wallet = generateWallet();
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(file, JSON.stringify([...wallet.secretKey]), { mode: 0o600 });
  return wallet;
}
