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

  it('decodes any text of the alphabet as @solana/kit does, leading 1s and all', () => {
    const alphabet = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
    const kitBytes = getBase58Encoder();
    for (let length = 1; length <= 100; length++) {
      for (let round = 0; round < 20; round++) {
        const picks = randomBytes(length);
        let text = [...picks].map((b) => alphabet[b % 58]).join('');
        if (round % 5 === 1) text = '1'.repeat(1 + (round % 4)) + text.slice(1 + (round % 4));
        if (round === 2) text = 'z'.repeat(length);
        expect(Buffer.from(base58Decode(text)!).toString('hex'), text).toBe(
          Buffer.from(kitBytes.encode(text)).toString('hex'),
        );
      }
    }
    expect(base58Decode('')).toEqual(new Uint8Array(0));
    expect(Buffer.from(base58Decode('111')!).toString('hex')).toBe('000000');
  });

  it('refuses a character outside the alphabet', () => {
    for (const bad of ['0', 'O', 'I', 'l', '+', ' ', 'é', '€', '\u{1F600}'])
      expect(base58Decode(`abc${bad}def`)).toBeUndefined();
  });
});
