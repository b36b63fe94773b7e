import { ED25519_PKCS8_PREFIX, base58Encode, parseSecretKey } from '@agent-economy/contracts';
import { AgentEconomyError } from './errors';

/** What the SDK needs of a wallet: its address and Ed25519 signatures. */
export interface Signer {
  address: string;
  signMessage(message: Uint8Array): Promise<Uint8Array>;
}

/**
 * A wallet from a Solana secret key: 64 bytes (seed then public key, as solana-keygen writes them), as
 * bytes, a JSON array or base58. Signing uses WebCrypto's Ed25519 (Node 20+, modern browsers).
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
  const key = await crypto.subtle.importKey('pkcs8', pkcs8, { name: 'Ed25519' }, false, ['sign']);
  const address = base58Encode(bytes.subarray(32));
  // Check that the public half belongs to the seed: a mismatched key would sign for another address.
  const probe = new TextEncoder().encode('agent-economy key check');
  const publicKey = await crypto.subtle.importKey('raw', bytes.subarray(32), { name: 'Ed25519' }, false, ['verify']);
  const signature = new Uint8Array(await crypto.subtle.sign('Ed25519', key, probe));
  if (!(await crypto.subtle.verify('Ed25519', publicKey, signature, probe))) {
    throw new AgentEconomyError('the secret key does not match its public half');
  }
  return {
    address,
    async signMessage(message) {
      return new Uint8Array(await crypto.subtle.sign('Ed25519', key, message));
    },
  };
}
