import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ED25519_PKCS8_PREFIX, base58Encode, parseSecretKey } from '@agent-economy/contracts';

/** A Solana keypair: the 64-byte secret (seed then public key, as solana-keygen writes it) and its address. */
export interface Wallet {
  address: string;
  secretKey: Uint8Array;
}

function publicKeyOf(seed: Uint8Array): Uint8Array {
  const privateKey = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
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
