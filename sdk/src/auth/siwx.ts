import { SOLANA_DEVNET, base58Encode, encodeX402Header, siwsMessage, type SiwxProof } from '@agent-economy/contracts';
import type { Signer } from '../wallet';
import { randomHex } from '../random';

export interface SiwxOptions {
  /** The full URL of the request the proof is for. */
  url: string;
  /** CAIP-2 id of the Solana network; default devnet's. */
  chainId?: string;
  statement?: string;
  /** How long the proof stays valid; default 300 s. */
  expirationSeconds?: number;
  now?: Date;
}

function randomNonce(): string {
  return randomHex(16);
}

/**
 * A SIGN-IN-WITH-X header value proving `signer`'s wallet to the service at `url`: bound to that
 * service's origin, fresh, and with a nonce the service accepts once.
 */
export async function createSiwxHeader(signer: Signer, options: SiwxOptions): Promise<string> {
  const url = new URL(options.url);
  const issued = options.now ?? new Date();
  const fields: Omit<SiwxProof, 'signature'> = {
    domain: url.host,
    address: signer.address,
    ...(options.statement ? { statement: options.statement } : {}),
    uri: url.origin,
    version: '1',
    chainId: options.chainId ?? SOLANA_DEVNET,
    type: 'ed25519',
    signatureScheme: 'siws',
    nonce: randomNonce(),
    issuedAt: issued.toISOString(),
    expirationTime: new Date(issued.getTime() + (options.expirationSeconds ?? 300) * 1000).toISOString(),
  };
  const signature = await signer.signMessage(new TextEncoder().encode(siwsMessage(fields)));
  return encodeX402Header({ ...fields, signature: base58Encode(signature) });
}
