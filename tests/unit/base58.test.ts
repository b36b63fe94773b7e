import { getBase58Decoder, getBase58Encoder } from '@solana/kit';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { base58Decode, base58Encode } from '@agent-economy/contracts';

// Our base58 (addresses, signatures, transaction ids on every payment) against @solana/kit's, on random bytes of every
// length a Solana value has and more, with leading zero bytes (each a leading '1').
describe('base58', () => {
  it('encodes and decodes as @solana/kit does', () => {
    const kitText = getBase58Decoder();
    const kitBytes = getBase58Encoder();
    for (let length = 0; length <= 80; length++) {
      for (let round = 0; round < 40; round++) {
        const bytes = randomBytes(length);
        // Some with leading zero bytes, some all zero, some all 0xff.
        if (round % 4 === 1) bytes.fill(0, 0, Math.min(length, 1 + (round % 7)));
        if (round === 2) bytes.fill(0);
        if (round === 3) bytes.fill(0xff);
        const text = base58Encode(bytes);
        expect(text, `${length} bytes ${bytes.toString('hex')}`).toBe(kitText.decode(bytes));
        expect(Buffer.from(base58Decode(text)!).equals(bytes)).toBe(true);
        if (text) expect(Buffer.from(kitBytes.encode(text)).equals(bytes)).toBe(true);
      }
    }
  });

  it('refuses a character outside the alphabet', () => {
    for (const bad of ['0', 'O', 'I', 'l', '+', ' ']) expect(base58Decode(`abc${bad}def`)).toBeUndefined();
  });
});
