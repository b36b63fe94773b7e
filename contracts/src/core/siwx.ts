import { z } from 'zod';

// Sign-In-With-X (CAIP-122) for Solana: the SIGN-IN-WITH-X header is base64 JSON of these fields; the
// signed text is rebuilt from them by signer and verifier alike (research/x402.md §4, research/mpp.md §5).

export interface SiwxProof {
  domain: string;
  address: string;
  statement?: string;
  uri: string;
  version: '1';
  chainId: string;
  type: 'ed25519';
  signatureScheme?: 'siws';
  nonce: string;
  issuedAt: string;
  expirationTime?: string;
  notBefore?: string;
  requestId?: string;
  resources?: string[];
  /** base58 Ed25519 signature of the SIWS message. */
  signature: string;
}

export const SiwxProofSchema: z.ZodType<SiwxProof> = z.object({
  domain: z.string().min(1),
  address: z.string().min(32).max(44),
  statement: z.string().optional(),
  uri: z.string().url(),
  version: z.literal('1'),
  chainId: z.string().regex(/^solana:[1-9A-HJ-NP-Za-km-z]{32}$/, 'must be a Solana CAIP-2 chain id'),
  type: z.literal('ed25519'),
  signatureScheme: z.literal('siws').optional(),
  nonce: z.string().regex(/^[A-Za-z0-9]{8,64}$/, 'must be 8 to 64 letters and digits'),
  issuedAt: z.string().datetime({ offset: true }),
  expirationTime: z.string().datetime({ offset: true }).optional(),
  notBefore: z.string().datetime({ offset: true }).optional(),
  requestId: z.string().optional(),
  resources: z.array(z.string()).optional(),
  signature: z.string().min(64).max(100),
});

/** The Sign-In-With-Solana text that is signed: lines joined with "\n", no trailing newline. */
export function siwsMessage(proof: Omit<SiwxProof, 'signature'>): string {
  const lines = [`${proof.domain} wants you to sign in with your Solana account:`, proof.address, ''];
  if (proof.statement) lines.push(proof.statement, '');
  lines.push(
    `URI: ${proof.uri}`,
    `Version: ${proof.version}`,
    `Chain ID: ${proof.chainId.slice(proof.chainId.indexOf(':') + 1)}`,
    `Nonce: ${proof.nonce}`,
    `Issued At: ${proof.issuedAt}`,
  );
  if (proof.expirationTime) lines.push(`Expiration Time: ${proof.expirationTime}`);
  if (proof.notBefore) lines.push(`Not Before: ${proof.notBefore}`);
  if (proof.requestId) lines.push(`Request ID: ${proof.requestId}`);
  if (proof.resources?.length) lines.push('Resources:', ...proof.resources.map((r) => `- ${r}`));
  return lines.join('\n');
}
