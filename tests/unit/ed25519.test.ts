import { describe, expect, it } from 'vitest';
import { generateWallet, signEd25519, verifyEd25519 } from '../../servers/src/solana/keys';

// verifyEd25519 remembers signatures that held (the payer's signature is checked by /verify and again by /settle):
// the memory must never make a signature hold for another message or another key.
describe('verifyEd25519', () => {
  const message = new TextEncoder().encode('pay 0.05 USD to the seller');
  const other = new TextEncoder().encode('pay 5.00 USD to the seller');

  it('holds for its message and key, again from memory, and never for another message or key', () => {
    const signer = generateWallet();
    const stranger = generateWallet();
    const signature = signEd25519(signer, message);
    const key = signer.secretKey.subarray(32);
    expect(verifyEd25519(key, message, signature)).toBe(true);
    expect(verifyEd25519(key, message, signature)).toBe(true);
    expect(verifyEd25519(key, other, signature)).toBe(false);
    expect(verifyEd25519(stranger.secretKey.subarray(32), message, signature)).toBe(false);
    // A signature that failed is not remembered as holding, nor does a failure erase one that held.
    const forged = Uint8Array.from(signature, (b, i) => (i === 0 ? b ^ 1 : b));
    expect(verifyEd25519(key, message, forged)).toBe(false);
    expect(verifyEd25519(key, message, forged)).toBe(false);
    expect(verifyEd25519(key, message, signature)).toBe(true);
  });
});
