import { base58Decode, base58Encode } from '@agent-economy/contracts';
import { verifyEd25519 } from './keys';

// Solana wire formats read by hand, so that every byte string handed to LiteSVM is one it can
// deserialize: its native addon aborts the whole process on bytes it cannot parse.

export const PACKET_DATA_SIZE = 1232;
export const MAX_BASE58_SIZE = 1683; // as Agave: the base58 length of a full packet
export const MAX_BASE64_SIZE = 1644;
export const TRANSACTION_TYPE = 'solana_transaction::versioned::VersionedTransaction';
export const MESSAGE_TYPE = 'solana_message::versioned::VersionedMessage';

export interface CompiledInstruction {
  programIdIndex: number;
  accounts: number[];
  data: Uint8Array;
}

export interface AddressTableLookup {
  accountKey: string;
  writableIndexes: number[];
  readonlyIndexes: number[];
}

export interface ParsedMessage {
  bytes: Uint8Array;
  version: 'legacy' | 0;
  numRequiredSignatures: number;
  numReadonlySigned: number;
  numReadonlyUnsigned: number;
  staticKeys: string[];
  recentBlockhash: string;
  /** Where the 32-byte recent blockhash sits inside `bytes` (replaceRecentBlockhash rewrites it). */
  blockhashOffset: number;
  instructions: CompiledInstruction[];
  lookups: AddressTableLookup[];
}

export interface ParsedTransaction {
  /** The transaction's bytes exactly as deserialized (trailing bytes dropped). */
  bytes: Uint8Array;
  signatures: Uint8Array[];
  message: ParsedMessage;
  /** base58 of the first signature: the transaction's id. */
  signature: string;
}

/** Bytes that do not deserialize; `message` reads like bincode's error text. */
export class WireError extends Error {}

class Reader {
  pos = 0;
  constructor(readonly bytes: Uint8Array) {}

  u8(): number {
    if (this.pos >= this.bytes.length) throw new WireError('io error: unexpected end of file');
    return this.bytes[this.pos++]!;
  }

  take(n: number): Uint8Array {
    if (this.pos + n > this.bytes.length) throw new WireError('io error: unexpected end of file');
    const out = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  /** Solana's compact-u16: 1 to 3 bytes, canonical form only. */
  shortVec(): number {
    let value = 0;
    for (let n = 0; n < 3; n++) {
      const byte = this.u8();
      if (n === 2 && byte > 0x03) throw new WireError('invalid value: integer overflow, expected a compact-u16');
      value |= (byte & 0x7f) << (n * 7);
      if ((byte & 0x80) === 0) {
        if (n > 0 && byte === 0) throw new WireError('invalid value: alias encoding, expected a compact-u16');
        return value;
      }
    }
    throw new WireError('invalid value: integer overflow, expected a compact-u16');
  }

  key(): string {
    return encodeAddress(this.take(32));
  }

  byteList(): number[] {
    return Array.from(this.take(this.shortVec()));
  }
}

function readMessage(reader: Reader): ParsedMessage {
  const start = reader.pos;
  const prefix = reader.u8();
  let version: 'legacy' | 0 = 'legacy';
  let numRequiredSignatures = prefix;
  if (prefix & 0x80) {
    const v = prefix & 0x7f;
    if (v !== 0) throw new WireError(`invalid value: integer \`${v}\`, expected a valid transaction message version`);
    version = 0;
    numRequiredSignatures = reader.u8();
  }
  const numReadonlySigned = reader.u8();
  const numReadonlyUnsigned = reader.u8();
  const keyCount = reader.shortVec();
  const staticKeys: string[] = [];
  for (let i = 0; i < keyCount; i++) staticKeys.push(reader.key());
  const blockhashOffset = reader.pos - start;
  const recentBlockhash = reader.key();
  const instructionCount = reader.shortVec();
  const instructions: CompiledInstruction[] = [];
  for (let i = 0; i < instructionCount; i++) {
    const programIdIndex = reader.u8();
    const accounts = reader.byteList();
    const data = reader.take(reader.shortVec());
    instructions.push({ programIdIndex, accounts, data: new Uint8Array(data) });
  }
  const lookups: AddressTableLookup[] = [];
  if (version === 0) {
    const lookupCount = reader.shortVec();
    for (let i = 0; i < lookupCount; i++) {
      const accountKey = reader.key();
      lookups.push({ accountKey, writableIndexes: reader.byteList(), readonlyIndexes: reader.byteList() });
    }
  }
  return {
    bytes: reader.bytes.slice(start, reader.pos),
    version,
    numRequiredSignatures,
    numReadonlySigned,
    numReadonlyUnsigned,
    staticKeys,
    recentBlockhash,
    blockhashOffset,
    instructions,
    lookups,
  };
}

/** Deserializes a wire transaction as Agave's bincode does (trailing bytes allowed and ignored). */
export function parseTransaction(bytes: Uint8Array): ParsedTransaction {
  const reader = new Reader(bytes);
  const count = reader.shortVec();
  const signatures: Uint8Array[] = [];
  for (let i = 0; i < count; i++) signatures.push(new Uint8Array(reader.take(64)));
  const message = readMessage(reader);
  const exact = bytes.slice(0, reader.pos);
  return { bytes: exact, signatures, message, signature: base58Encode(signatures[0] ?? new Uint8Array(64)) };
}

/** Deserializes a bare message (getFeeForMessage). */
export function parseMessage(bytes: Uint8Array): ParsedMessage {
  return readMessage(new Reader(bytes));
}

/**
 * Agave's structural checks before a transaction reaches the runtime. Returns the TransactionError
 * name a node reports ("invalid transaction: ..."), or null when the transaction is well formed.
 */
export function sanitizeTransaction(tx: ParsedTransaction): 'SanitizeFailure' | 'AccountLoadedTwice' | null {
  const m = tx.message;
  const numStatic = m.staticKeys.length;
  if (m.numReadonlySigned >= m.numRequiredSignatures) return 'SanitizeFailure';
  if (m.numRequiredSignatures + m.numReadonlyUnsigned > numStatic) return 'SanitizeFailure';
  let numDynamic = 0;
  for (const lookup of m.lookups) {
    const n = lookup.writableIndexes.length + lookup.readonlyIndexes.length;
    if (n === 0) return 'SanitizeFailure';
    numDynamic += n;
  }
  const total = numStatic + numDynamic;
  if (total > 256) return 'SanitizeFailure';
  for (const ix of m.instructions) {
    if (ix.programIdIndex === 0 || ix.programIdIndex >= numStatic) return 'SanitizeFailure';
    if (ix.accounts.some((a) => a >= total)) return 'SanitizeFailure';
  }
  if (tx.signatures.length !== m.numRequiredSignatures || tx.signatures.length > numStatic) return 'SanitizeFailure';
  if (new Set(m.staticKeys).size !== numStatic) return 'AccountLoadedTwice';
  return null;
}

/** Whether the message marks account `index` (in static-then-loaded order) writable, before any demotion. */
export function isWritableIndex(m: ParsedMessage, index: number, loadedWritableCount: number): boolean {
  const numStatic = m.staticKeys.length;
  if (index < m.numRequiredSignatures) return index < m.numRequiredSignatures - m.numReadonlySigned;
  if (index < numStatic) return index < numStatic - m.numReadonlyUnsigned;
  return index - numStatic < loadedWritableCount;
}

export function isSignerIndex(m: ParsedMessage, index: number): boolean {
  return index < m.numRequiredSignatures;
}

/** Whether every required signature verifies against its signer over the message bytes. */
export function verifySignatures(tx: ParsedTransaction): boolean {
  const m = tx.message;
  if (tx.signatures.length < m.numRequiredSignatures) return false;
  for (let i = 0; i < m.numRequiredSignatures; i++) {
    const key = base58Decode(m.staticKeys[i]!);
    if (!key || !verifyEd25519(key, m.bytes, tx.signatures[i]!)) return false;
  }
  return true;
}

/** Serializes signatures and message bytes back into a wire transaction. */
export function encodeTransaction(signatures: Uint8Array[], messageBytes: Uint8Array): Uint8Array {
  const prefix = encodeShortVec(signatures.length);
  const out = new Uint8Array(prefix.length + signatures.length * 64 + messageBytes.length);
  out.set(prefix, 0);
  signatures.forEach((s, i) => out.set(s, prefix.length + i * 64));
  out.set(messageBytes, prefix.length + signatures.length * 64);
  return out;
}

function encodeShortVec(value: number): Uint8Array {
  const out: number[] = [];
  let rest = value;
  for (;;) {
    const byte = rest & 0x7f;
    rest >>= 7;
    if (rest === 0) {
      out.push(byte);
      return Uint8Array.from(out);
    }
    out.push(byte | 0x80);
  }
}

/** Decodes base58 with bs58-style error text, or throws WireError. */
export function decodeBase58(text: string): Uint8Array {
  const bytes = base58Decode(text);
  if (bytes) return bytes;
  const index = [...text].findIndex((ch) => base58Decode(ch) === undefined);
  throw new WireError(`InvalidCharacter { character: '${[...text][index] ?? '?'}', index: ${index} }`);
}

const BASE64_CHAR = /^[A-Za-z0-9+/]$/;
const BASE64_BODY = /^[A-Za-z0-9+/]*$/;

/** Decodes standard base64 with canonical padding, as Agave's engine does, or throws WireError. */
export function decodeBase64(text: string): Uint8Array {
  const body = text.replace(/={1,2}$/, '');
  // One test of the whole text; the offending character is looked for only when there is one.
  if (!BASE64_BODY.test(body)) {
    for (let i = 0; i < body.length; i++) {
      if (!BASE64_CHAR.test(body[i]!)) throw new WireError(`InvalidByte(${i}, ${body.charCodeAt(i)})`);
    }
  }
  if (text.length % 4 !== 0) throw new WireError('InvalidPadding');
  const bytes = new Uint8Array(Buffer.from(text, 'base64'));
  if (Buffer.from(bytes).toString('base64') !== text)
    throw new WireError(`InvalidLastSymbol(${body.length - 1}, ${body.charCodeAt(body.length - 1)})`);
  return bytes;
}

export function toBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

// Addresses are converted back and forth on every account read; base58 is slow, so both ways are cached.
const toBase58 = new Map<string, string>();
const fromBase58 = new Map<string, Uint8Array>();
const CACHE_LIMIT = 100_000;

/** base58 of a 32-byte key. */
export function encodeAddress(bytes: Uint8Array): string {
  const hex = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
  let text = toBase58.get(hex);
  if (text === undefined) {
    text = base58Encode(bytes);
    if (toBase58.size >= CACHE_LIMIT) toBase58.clear();
    toBase58.set(hex, text);
  }
  return text;
}

/** The 32 bytes of a base58 address (a shared copy: callers must not modify it). */
export function addressBytes(address: string): Uint8Array {
  let bytes = fromBase58.get(address);
  if (bytes === undefined) {
    bytes = base58Decode(address);
    if (!bytes || bytes.length !== 32) throw new Error(`not a 32-byte base58 address: ${address}`);
    if (fromBase58.size >= CACHE_LIMIT) fromBase58.clear();
    fromBase58.set(address, bytes);
  }
  return bytes;
}

export function isAddress(text: unknown): text is string {
  if (typeof text !== 'string' || text.length < 32 || text.length > 44) return false;
  return base58Decode(text)?.length === 32;
}
