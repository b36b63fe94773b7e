import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  sign,
  verify,
  type KeyObject,
} from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ED25519_PKCS8_PREFIX, ED25519_SPKI_PREFIX, base58Encode, parseSecretKey } from '@agent-economy/contracts';

/** A Solana keypair: the 64-byte secret (seed then public key, as solana-keygen writes it) and its address. */
export interface Wallet {
  address: string;
  secretKey: Uint8Array;
}

function publicKeyOf(seed: Uint8Array): Uint8Array {
  const privateKey = createPrivateKey({
    key: Buffer.concat([ED25519_PKCS8_PREFIX, seed]),
    format: 'der',
    type: 'pkcs8',
  });
  return new Uint8Array(createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).subarray(-32));
}

export function walletFromSecretKey(secretKey: Uint8Array): Wallet {
  if (secretKey.length !== 64) throw new Error(`a Solana secret key has 64 bytes, not ${secretKey.length}`);
  const publicKey = publicKeyOf(secretKey.subarray(0, 32));
  if (!publicKey.every((byte, i) => byte === secretKey[32 + i]))
    throw new Error('the secret key does not match its public half');
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

/** The keypair whose 32-byte Ed25519 seed is `seed` (e.g. a key derived from another for one purpose only). */
export function walletFromSeed(seed: Uint8Array): Wallet {
  if (seed.length !== 32) throw new Error(`an Ed25519 seed has 32 bytes, not ${seed.length}`);
  const secretKey = new Uint8Array(64);
  secretKey.set(seed, 0);
  secretKey.set(publicKeyOf(seed), 32);
  return walletFromSecretKey(secretKey);
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

// Key objects are cached: the ledger and the facilitator sign and verify on every transaction.
const signers = new Map<string, { key: KeyObject; publicHex: string }>();
const publicKeys = new Map<string, KeyObject | null>();
/** Signatures that held (hex) → the key and the message's SHA-256 they held for. */
const verifiedOnce = new Map<string, string>();
const heldFor = (publicHex: string, message: Uint8Array) =>
  `${publicHex}:${createHash('sha256').update(message).digest('hex')}`;
function rememberHeld(signatureHex: string, what: string): void {
  if (verifiedOnce.size >= 10_000) verifiedOnce.clear();
  verifiedOnce.set(signatureHex, what);
}

function cached<T>(cache: Map<string, T>, key: string, make: () => T): T {
  if (cache.has(key)) return cache.get(key)!;
  if (cache.size > 10_000) cache.clear();
  const value = make();
  cache.set(key, value);
  return value;
}

/**
 * Ed25519 signature of `message` by the wallet (a Solana transaction signature when `message` is its message bytes).
 */
export function signEd25519(wallet: Wallet, message: Uint8Array): Uint8Array {
  // Keyed by the seed (its hash: no secret kept as a string), not the address: a hand-made wallet whose address is not
  // its seed's cannot stand for another.
  const seed = wallet.secretKey.subarray(0, 32);
  const signer = cached(signers, createHash('sha256').update(seed).digest('hex'), () => {
    const key = createPrivateKey({
      key: Buffer.concat([ED25519_PKCS8_PREFIX, seed]),
      format: 'der',
      type: 'pkcs8',
    });
    // The public key the seed really has (not the wallet's stated half): a signature made here holds for it alone.
    const spki = createPublicKey(key).export({ format: 'der', type: 'spki' });
    return { key, publicHex: spki.subarray(-32).toString('hex') };
  });
  const signature = sign(null, message, signer.key);
  // It holds by construction, so checking it later is a lookup: the ledger checks the fee payer's co-signature of
  // every payment the facilitator sends, a full verification (about 100 µs) of a signature made a moment before.
  rememberHeld(signature.toString('hex'), heldFor(signer.publicHex, message));
  return new Uint8Array(signature);
}

/** The key object of a 32-byte Ed25519 public key (cached), or null for bytes that are not one. */
function publicKeyObject(publicKey: Uint8Array, hex = Buffer.from(publicKey).toString('hex')): KeyObject | null {
  return cached(publicKeys, hex, () => {
    try {
      return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, publicKey]), format: 'der', type: 'spki' });
    } catch {
      return null;
    }
  });
}

/** Whether `signature` is the Ed25519 signature of `message` by the 32-byte `publicKey`; false for malformed input. */
export function verifyEd25519(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  if (publicKey.length !== 32 || signature.length !== 64) return false;
  const keyHex = Buffer.from(publicKey).toString('hex');
  const key = publicKeyObject(publicKey, keyHex);
  if (!key) return false;
  // A signature that held once over the same message by the same key holds for good: the payer's signature on a
  // payment is checked by /verify and again by /settle, and the second check is this lookup (about 4 µs, not 200).
  const seen = Buffer.from(signature).toString('hex');
  const what = heldFor(keyHex, message);
  if (verifiedOnce.get(seen) === what) return true;
  try {
    const valid = verify(null, message, key, signature);
    if (valid) rememberHeld(seen, what);
    return valid;
  } catch {
    return false;
  }
}

/**
 * verifyEd25519 on libuv's thread pool, off the event loop (about 0.2 ms a check on a small server), for the hot paths:
 * a session's vouchers (each checked once: nothing is remembered) and a payment's payer, which the paywall checks
 * first (`remember`: the facilitator's checks of the same signature in this process are then lookups).
 */
export function verifyEd25519Async(
  publicKey: Uint8Array,
  message: Uint8Array,
  signature: Uint8Array,
  options: { remember?: boolean } = {},
): Promise<boolean> {
  if (publicKey.length !== 32 || signature.length !== 64) return Promise.resolve(false);
  const keyHex = Buffer.from(publicKey).toString('hex');
  const key = publicKeyObject(publicKey, keyHex);
  if (!key) return Promise.resolve(false);
  const seen = options.remember ? Buffer.from(signature).toString('hex') : '';
  const what = options.remember ? heldFor(keyHex, message) : '';
  if (options.remember && verifiedOnce.get(seen) === what) return Promise.resolve(true);
  return new Promise((resolve) => {
    try {
      verify(null, message, key, signature, (error, valid) => {
        const held = !error && valid;
        if (held && options.remember) rememberHeld(seen, what);
        resolve(held);
      });
    } catch {
      resolve(false);
    }
  });
}
