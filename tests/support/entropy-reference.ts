import { createHmac } from 'node:crypto';

// The test's own reference of the entropy algorithm (research/domain.md §7), written independently of
// servers/src/services/entropy so that the vectors and the service's proofs are judged against it.

export const TWO_32 = 2 ** 32;

/** An unsigned (or signed 64-bit) big-endian integer of `bits` bits. */
export const be = (bits: 32 | 64, value: number, signed = false) => {
  const b = Buffer.alloc(bits / 8);
  if (bits === 32) b.writeUInt32BE(value);
  else if (signed) b.writeBigInt64BE(BigInt(value));
  else b.writeBigUInt64BE(BigInt(value));
  return b;
};

export const mac = (key: Buffer, msg: Buffer) => createHmac('sha512', key).update(msg).digest();

export function refStream(seed: Buffer, label: string, bytes: number): Buffer {
  const blocks: Buffer[] = [];
  for (let j = 0; blocks.length * 64 < bytes; j++)
    blocks.push(mac(seed, Buffer.concat([Buffer.from(label, 'ascii'), be(32, j)])));
  return Buffer.concat(blocks).subarray(0, bytes);
}

/** A word reader over the stream with the reference uniform(n); `words` is every word read. */
export function refReader(seed: Buffer, label: string) {
  const stream = refStream(seed, label, 64 * 200);
  const words: number[] = [];
  let rejections = 0;
  const word = () => {
    const w = stream.readUInt32BE(words.length * 4);
    words.push(w);
    return w;
  };
  const uniform = (n: number) => {
    const limit = Math.floor(TWO_32 / n) * n;
    for (let w = word(); ; w = word()) {
      if (w < limit) return w % n;
      rejections++;
    }
  };
  return { uniform, words, rejections: () => rejections, blocks: () => Math.ceil((words.length * 4) / 64) };
}
