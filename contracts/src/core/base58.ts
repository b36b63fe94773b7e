// Bitcoin-alphabet base58, as Solana uses for addresses and signatures.
const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const INDEX = new Map([...ALPHABET].map((ch, i) => [ch, i]));

/** 58 ** 5: the encoder gathers five base-58 digits a step (a limb); every value stays an exact integer in a double. */
const LIMB = 656_356_768;

export function base58Encode(bytes: Uint8Array): string {
  let zeros = 0;
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
  // The number in limbs of base 58^5, least significant first: a fifth of the steps of one digit at a time (a
  // signature, 64 bytes, is encoded on every payment), and limb * 256 + carry stays below 2^38.
  const limbs: number[] = [];
  for (let i = zeros; i < bytes.length; i++) {
    let carry = bytes[i]!;
    for (let j = 0; j < limbs.length; j++) {
      const value = limbs[j]! * 256 + carry;
      carry = Math.floor(value / LIMB);
      limbs[j] = value - carry * LIMB;
    }
    while (carry > 0) {
      limbs.push(carry % LIMB);
      carry = Math.floor(carry / LIMB);
    }
  }
  let digits = '';
  for (let j = limbs.length - 1; j >= 0; j--) {
    let limb = limbs[j]!;
    let five = '';
    for (let k = 0; k < 5; k++) {
      five = ALPHABET[limb % 58]! + five;
      limb = Math.floor(limb / 58);
    }
    digits += five;
  }
  // The top limb's padding: the number itself (past its zero bytes, each a '1') starts with no zero digit.
  let start = 0;
  while (start < digits.length && digits[start] === '1') start++;
  return '1'.repeat(zeros) + digits.slice(start);
}

/** Decodes base58; returns undefined for a character outside the alphabet. */
export function base58Decode(text: string): Uint8Array | undefined {
  let zeros = 0;
  while (zeros < text.length && text[zeros] === '1') zeros++;
  const bytes: number[] = [];
  for (let i = zeros; i < text.length; i++) {
    let carry = INDEX.get(text[i]!);
    if (carry === undefined) return undefined;
    for (let j = 0; j < bytes.length; j++) {
      carry += bytes[j]! * 58;
      bytes[j] = carry & 0xff;
      carry >>= 8;
    }
    while (carry > 0) {
      bytes.push(carry & 0xff);
      carry >>= 8;
    }
  }
  const out = new Uint8Array(zeros + bytes.length);
  out.set(bytes.reverse(), zeros);
  return out;
}
