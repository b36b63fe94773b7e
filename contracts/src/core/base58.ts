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

/** Each character's digit by its code, -1 outside the alphabet. */
const DIGIT = new Int8Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DIGIT[ALPHABET.charCodeAt(i)] = i;

/** Decodes base58; returns undefined for a character outside the alphabet. */
export function base58Decode(text: string): Uint8Array | undefined {
  let zeros = 0;
  while (zeros < text.length && text[zeros] === '1') zeros++;
  // The number in 16-bit limbs, least significant first, taking up to five digits a step (a voucher's signer and
  // signature are decoded on every call paid by voucher): limb * 58^5 + carry stays below 2^46, exact in a double.
  const limbs: number[] = [];
  for (let i = zeros; i < text.length;) {
    let group = 0;
    let scale = 1;
    for (const end = Math.min(i + 5, text.length); i < end; i++) {
      const code = text.charCodeAt(i);
      const digit = code < 128 ? DIGIT[code]! : -1;
      if (digit < 0) return undefined;
      group = group * 58 + digit;
      scale *= 58;
    }
    let carry = group;
    for (let j = 0; j < limbs.length; j++) {
      const value = limbs[j]! * scale + carry;
      carry = Math.floor(value / 65_536);
      limbs[j] = value - carry * 65_536;
    }
    while (carry > 0) {
      limbs.push(carry % 65_536);
      carry = Math.floor(carry / 65_536);
    }
  }
  // Big-endian bytes after the zeros: two a limb, one only for a top limb below 256 (the top limb is never 0).
  const top = limbs.length ? limbs[limbs.length - 1]! : 0;
  const out = new Uint8Array(zeros + limbs.length * 2 - (limbs.length && top < 256 ? 1 : 0));
  let at = out.length;
  for (const limb of limbs) {
    out[--at] = limb & 0xff;
    if (at > zeros) out[--at] = limb >> 8;
  }
  return out;
}
