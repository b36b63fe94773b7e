import { describe, expect, it } from 'vitest';
import { generateWallet, signEd25519, verifyEd25519, verifyEd25519Async } from '../../servers/src/solana/keys';

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

// The thread-pool check (a session's vouchers) must judge exactly as the synchronous one.
describe('verifyEd25519Async', () => {
  it('holds for its message and key only, and is false for malformed input', async () => {
    const message = new TextEncoder().encode('voucher for 150000');
    const signer = generateWallet();
    const signature = signEd25519(signer, message);
    const key = signer.secretKey.subarray(32);
    const forged = Uint8Array.from(signature, (b, i) => (i === 63 ? b ^ 0x40 : b));
    const cases: [Uint8Array, Uint8Array, Uint8Array][] = [
      [key, message, signature],
      [key, new TextEncoder().encode('voucher for 150001'), signature],
      [generateWallet().secretKey.subarray(32), message, signature],
      [key, message, forged],
      [key, message, signature.subarray(0, 63)],
      [key.subarray(0, 31), message, signature],
      [new Uint8Array(32), message, signature],
    ];
    const answers = await Promise.all(cases.map(([k, m, s]) => verifyEd25519Async(k, m, s)));
    expect(answers).toEqual([true, false, false, false, false, false, false]);
    expect(answers).toEqual(cases.map(([k, m, s]) => verifyEd25519(k, m, s)));
  });
});
