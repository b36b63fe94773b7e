import { ED25519_PKCS8_PREFIX, base58Encode, parseSecretKey } from '@agent-economy/contracts';
import { AgentEconomyError } from './errors';

/** What the SDK needs of a wallet: its address and Ed25519 signatures. */
export interface Signer {
  address: string;
  signMessage(message: Uint8Array): Promise<Uint8Array>;
}

/**
 * A wallet from a Solana secret key: 64 bytes (seed then public key, as solana-keygen writes them), as
 * bytes, a JSON array or base58. Signing uses Node's Ed25519 where there is one, else WebCrypto's (modern browsers).
 */
export async function walletFromSecretKey(secret: Uint8Array | string): Promise<Signer> {
  let bytes: Uint8Array;
  try {
    bytes = typeof secret === 'string' ? parseSecretKey(secret) : secret;
  } catch (error) {
    throw new AgentEconomyError((error as Error).message);
  }
  if (bytes.length !== 64) throw new AgentEconomyError(`a Solana secret key has 64 bytes, not ${bytes.length}`);
  const pkcs8 = new Uint8Array(48);
  pkcs8.set(ED25519_PKCS8_PREFIX, 0);
  pkcs8.set(bytes.subarray(0, 32), 16);
  const sign = nodeEd25519Signer(pkcs8) ?? (await webCryptoSigner(pkcs8));
  const address = base58Encode(bytes.subarray(32));
  // Check that the public half belongs to the seed: a mismatched key would sign for another address.
  const probe = new TextEncoder().encode('agent-economy key check');
  const publicKey = await crypto.subtle.importKey('raw', bytes.subarray(32), { name: 'Ed25519' }, false, ['verify']);
  if (!(await crypto.subtle.verify('Ed25519', publicKey, await sign(probe), probe))) {
    throw new AgentEconomyError('the secret key does not match its public half');
  }
  return {
    address,
    async signMessage(message) {
      return sign(message);
    },
  };
}

type Sign = (message: Uint8Array) => Uint8Array | Promise<Uint8Array>;

/**
 * Node's own Ed25519 (node:crypto), where the runtime has it: a signature costs about a third of WebCrypto's CPU
 * (about 40 against 120 µs, measured on Node 20), which a payment session pays on every call. Ed25519 is
 * deterministic, so both give the same bytes.
 */
function nodeEd25519Signer(pkcs8: Uint8Array): Sign | undefined {
  const nodeCrypto =
    typeof process === 'undefined'
      ? undefined
      : (process.getBuiltinModule?.('node:crypto') as typeof import('node:crypto') | undefined);
  if (typeof nodeCrypto?.createPrivateKey !== 'function' || typeof nodeCrypto.sign !== 'function') return undefined;
  try {
    const key = nodeCrypto.createPrivateKey({ key: pkcs8 as Buffer, format: 'der', type: 'pkcs8' });
    nodeCrypto.sign(null, new Uint8Array(0), key);
    return (message) => new Uint8Array(nodeCrypto.sign(null, message, key));
  } catch {
    // A runtime whose node:crypto lacks Ed25519 (some Node-compatible ones): WebCrypto's then.
    return undefined;
  }
}

/** WebCrypto's Ed25519 (browsers, and runtimes without node:crypto). */
async function webCryptoSigner(pkcs8: Uint8Array): Promise<Sign> {
  const key = await crypto.subtle.importKey('pkcs8', pkcs8, { name: 'Ed25519' }, false, ['sign']);
  return async (message) => new Uint8Array(await crypto.subtle.sign('Ed25519', key, message));
}

const BASE58_KEY = /^[1-9A-HJ-NP-Za-km-z]{64,90}$/;

/**
 * A wallet from a solana-keygen JSON file (a leading `~/` means your home directory). Node only: the
 * file system is loaded when called, so the SDK stays importable in browsers.
 */
export async function walletFromFile(path: string): Promise<Signer> {
  let text: string;
  try {
    // Specifiers in variables, so that browser bundlers do not try to bundle Node's modules.
    const fsModule = 'node:fs/promises';
    const osModule = 'node:os';
    const { readFile } = (await import(
      /* webpackIgnore: true */ /* @vite-ignore */ fsModule
    )) as typeof import('node:fs/promises');
    let resolved = path;
    if (path.startsWith('~/')) {
      const { homedir } = (await import(
        /* webpackIgnore: true */ /* @vite-ignore */ osModule
      )) as typeof import('node:os');
      resolved = `${homedir()}${path.slice(1)}`;
    }
    text = await readFile(resolved, 'utf8');
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    throw new AgentEconomyError(
      `cannot read the wallet file ${path}: ${typeof code === 'string' ? code : (error as Error).message}`,
      { cause: error },
    );
  }
  try {
    return await walletFromSecretKey(text);
  } catch (error) {
    // The message names the file, never its contents.
    throw new AgentEconomyError(`the wallet file ${path} holds no usable key: ${(error as Error).message}`);
  }
}

/**
 * A wallet from an environment variable (default AGENT_ECONOMY_WALLET) holding a secret key (base58 or
 * a solana-keygen JSON array) or the path of a solana-keygen file.
 */
export async function walletFromEnv(name = 'AGENT_ECONOMY_WALLET'): Promise<Signer> {
  const value = (typeof process === 'undefined' ? undefined : process.env[name])?.trim();
  if (!value) throw new AgentEconomyError(`the environment variable ${name} is not set`);
  if (!value.startsWith('[') && !BASE58_KEY.test(value)) return walletFromFile(value);
  try {
    return await walletFromSecretKey(value);
  } catch (error) {
    throw new AgentEconomyError(`${name} holds no usable key: ${(error as Error).message}`);
  }
}

/** A new wallet: a Signer that also holds its secret key, to save with walletToFile or keep elsewhere. */
export interface GeneratedWallet extends Signer {
  /** The 64-byte Solana secret key (seed then public key), as solana-keygen writes it. Keep it secret. */
  readonly secretKey: Uint8Array;
}

/** Generates a fresh Ed25519 wallet with WebCrypto (Node 20+, Bun, Deno, modern browsers). */
export async function generateWallet(): Promise<GeneratedWallet> {
  const pair = await crypto.subtle.generateKey({ name: 'Ed25519' }, true, ['sign', 'verify']);
  if (!('privateKey' in pair))
    throw new AgentEconomyError("this runtime's WebCrypto did not generate an Ed25519 key pair");
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey('pkcs8', pair.privateKey));
  const publicKey = new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey));
  const secretKey = new Uint8Array(64);
  // PKCS#8 of an Ed25519 key is a fixed 16-byte prefix then the 32-byte seed.
  secretKey.set(pkcs8.subarray(ED25519_PKCS8_PREFIX.length, ED25519_PKCS8_PREFIX.length + 32), 0);
  secretKey.set(publicKey, 32);
  const signer = await walletFromSecretKey(secretKey);
  return { address: signer.address, signMessage: signer.signMessage, secretKey };
}

/**
 * Writes a wallet's secret key to a solana-keygen JSON file (the format walletFromFile reads), readable by
 * you only (mode 0600). Refuses to overwrite an existing file, so a funded key is never lost. Node only.
 */
export async function walletToFile(wallet: { secretKey: Uint8Array }, path: string): Promise<void> {
  if (!(wallet.secretKey instanceof Uint8Array) || wallet.secretKey.length !== 64) {
    throw new AgentEconomyError('walletToFile needs a wallet with its 64-byte secretKey (from generateWallet)');
  }
  const fsModule = 'node:fs/promises';
  const osModule = 'node:os';
  const pathModule = 'node:path';
  const { writeFile, mkdir } = (await import(
    /* webpackIgnore: true */ /* @vite-ignore */ fsModule
  )) as typeof import('node:fs/promises');
  const { dirname } = (await import(
    /* webpackIgnore: true */ /* @vite-ignore */ pathModule
  )) as typeof import('node:path');
  let resolved = path;
  if (path.startsWith('~/')) {
    const { homedir } = (await import(
      /* webpackIgnore: true */ /* @vite-ignore */ osModule
    )) as typeof import('node:os');
    resolved = `${homedir()}${path.slice(1)}`;
  }
  try {
    await mkdir(dirname(resolved), { recursive: true, mode: 0o700 });
    // 'wx': fails if the file exists, atomically, so two writers never clobber each other's key.
    await writeFile(resolved, `${JSON.stringify([...wallet.secretKey])}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'EEXIST')
      throw new AgentEconomyError(`the wallet file ${path} already exists; walletToFile never overwrites a key`, {
        cause: error,
      });
    throw new AgentEconomyError(
      `cannot write the wallet file ${path}: ${typeof code === 'string' ? code : (error as Error).message}`,
      { cause: error },
    );
  }
}
