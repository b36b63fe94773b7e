import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SOLANA_DEVNET, USDC_DEVNET, type EntropyProof, type PaymentMeta } from '@agent-economy/contracts';
import {
  BadRequestError,
  InternalServerError,
  PaymentRequiredError,
  createClient,
  walletFromSecretKey,
} from '@agent-economy/sdk';
import { createEntropyApp } from '../servers/src/services/entropy';
import { generateWallet } from '../servers/src/solana/keys';
import type { ServiceContext } from '../servers/src/runtime/context';
import { startEconomy, type Economy } from './support/economy';
import { startService, type RunningService } from './support/servers';
import { TWO_32, be, mac, refReader, refStream } from './support/entropy-reference';

// The entropy oracle against the local ledger. Every draw is recomputed here from the proof's published inputs
// with node:crypto and a base58 decoder of our own, independent of the service's code.

const ROUTES = ['bytes', 'int', 'shuffle', 'coin', 'dice', 'proof'] as const;
const FREE: Record<string, PaymentMeta> = Object.fromEntries(ROUTES.map((r) => [r, { kind: 'fixed', usd: '0' }]));
const free = (c: ServiceContext) => createEntropyApp({ ...c, prices: FREE });

let economy: Economy;
let service: RunningService;
const entropy = () => service.client.entropy;

// --- the independent verifier ---------------------------------------------------------------------

const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
function b58(text: string): Buffer {
  let n = 0n;
  for (const ch of text) {
    const digit = ALPHABET.indexOf(ch);
    if (digit < 0) throw new Error(`not base58: ${text}`);
    n = n * 58n + BigInt(digit);
  }
  const hex = n === 0n ? '' : n.toString(16).padStart(Math.ceil(n.toString(16).length / 2) * 2, '0');
  const zeros = text.match(/^1*/)![0].length;
  return Buffer.concat([Buffer.alloc(zeros), Buffer.from(hex, 'hex')]);
}

/** Rebuilds every material from the raw values, runs the cascade, checks each published value; returns the seed. */
function recomputeSeed(proof: EntropyProof): Buffer {
  const s = proof.sources;
  const materials = {
    blockhash: b58(s.blockhash.blockhash),
    slotLeaders: Buffer.concat(s.slotLeaders.leaders.map(b58)),
    transactionSignatures: Buffer.concat(s.transactionSignatures.signatures.map(b58)),
    blockTiming: Buffer.concat(s.blockTiming.samples.flatMap((x) => [be(64, x.slot), be(64, x.blockTime, true)])),
    blockDetails: Buffer.concat([
      be(64, s.blockDetails.slot),
      be(64, s.blockDetails.parentSlot),
      be(64, s.blockDetails.blockHeight),
      b58(s.blockDetails.previousBlockhash),
      be(32, s.blockDetails.transactionCount),
    ]),
  };
  expect(materials.blockhash).toHaveLength(32);
  expect(materials.transactionSignatures).toHaveLength(64 * s.transactionSignatures.signatures.length);
  let key = Buffer.from(`ae-entropy-v1|${proof.proofId}|${proof.clientSeed ?? ''}`, 'utf8');
  expect(proof.initialKeyHex).toBe(key.toString('hex'));
  const order = ['blockhash', 'slotLeaders', 'transactionSignatures', 'blockTiming', 'blockDetails'] as const;
  expect(proof.cascade.map((c) => [c.step, c.source])).toEqual(order.map((o, i) => [i + 1, o]));
  order.forEach((name, i) => {
    expect(s[name].materialHex).toBe(materials[name].toString('hex'));
    expect(proof.cascade[i]!.keyHex).toBe(key.toString('hex'));
    key = mac(key, materials[name]);
    expect(proof.cascade[i]!.outputHex).toBe(key.toString('hex'));
  });
  expect(proof.seedHex).toBe(key.toString('hex'));
  return key;
}

async function rpc(method: string, params: unknown[]): Promise<any> {
  const response = await fetch(economy.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const json = (await response.json()) as { result?: unknown; error?: unknown };
  if (json.error) throw new Error(`${method}: ${JSON.stringify(json.error)}`);
  return json.result;
}

async function rejection(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail');
}

// --- setup -----------------------------------------------------------------------------------------

const active = generateWallet();
beforeAll(async () => {
  economy = await startEconomy();
  // a chain older than the harvest windows (16 leader slots, 8 timing blocks)
  economy.ledger.warp(40);
  service = await startService(free, { id: 'entropy', rpcUrl: economy.rpcUrl });
}, 60_000);
afterAll(async () => {
  await service?.close();
  await economy?.close();
});
// Recent transactions on the ledger, so that blocks carry signatures to harvest.
beforeEach(async () => {
  await economy.ledger.airdrop(active.address, 1_000_000_000n);
  await economy.ledger.mintTo(active.address, 1_000n);
});

// --- tests -----------------------------------------------------------------------------------------

describe('random bytes', () => {
  it('gives the first `length` bytes of the "bytes" stream, recomputable from the proof', async () => {
    const result = await entropy().bytes({ body: { length: 48, clientSeed: 'lottery-42' } });
    const seed = recomputeSeed(result.proof);
    const expected = refStream(seed, 'bytes', 48);
    expect(result.length).toBe(48);
    expect(result.hex).toBe(expected.toString('hex'));
    expect(result.base64).toBe(expected.toString('base64'));
    expect(result.derivation).toEqual({ label: 'bytes', blocksUsed: 1, wordsDrawn: 0, rejections: 0, rawWords: [] });
    expect(result.proof).toMatchObject({ version: 'ae-entropy-v1', network: SOLANA_DEVNET, clientSeed: 'lottery-42' });
    expect(result.source).toMatchObject({ mode: 'chain', providers: ['local-ledger'] });
  });

  it('defaults to 32 bytes, takes 1 and 64, and never repeats a proof or an output', async () => {
    const [a, b, one, max] = await Promise.all([
      entropy().bytes({ body: {} }),
      entropy().bytes({ body: {} }),
      entropy().bytes({ body: { length: 1 } }),
      entropy().bytes({ body: { length: 64 } }),
    ]);
    expect(a.length).toBe(32);
    expect(a.hex).toHaveLength(64);
    expect(a.proof.clientSeed).toBeNull();
    expect(a.proof.initialKeyHex).toBe(Buffer.from(`ae-entropy-v1|${a.proof.proofId}|`).toString('hex'));
    expect(a.proof.proofId).toMatch(/^ent_[0-9a-f]{24}$/);
    expect(b.proof.proofId).not.toBe(a.proof.proofId);
    expect(b.hex).not.toBe(a.hex);
    expect(one.hex).toBe(refStream(recomputeSeed(one.proof), 'bytes', 1).toString('hex'));
    expect(max.hex).toBe(refStream(recomputeSeed(max.proof), 'bytes', 64).toString('hex'));
  });

  it('rejects lengths outside 1 to 64 and bad client seeds with 400 naming the field', async () => {
    const cases: [unknown, string][] = [
      [{ length: 0 }, 'body.length'],
      [{ length: 65 }, 'body.length'],
      [{ length: 2.5 }, 'body.length'],
      [{ length: '32' }, 'body.length'],
      [{ clientSeed: '' }, 'body.clientSeed'],
      [{ clientSeed: 'x'.repeat(129) }, 'body.clientSeed'],
      [{ seed: 'abc' }, 'body.seed'],
    ];
    for (const [body, field] of cases) {
      const error = await rejection(entropy().bytes({ body } as never));
      expect(error).toBeInstanceOf(BadRequestError);
      expect(error.code).toBe('invalid_request');
      expect(error.details.fields.map((f: { field: string }) => f.field)).toContain(field);
    }
  });
});

describe('the harvest is the chain’s own data', () => {
  it('publishes five sources at one confirmed slot that the listed RPC calls fetch again', async () => {
    const report = await entropy().proof({ body: { clientSeed: 'audit-2025-01' } });
    const { proof } = report;
    const seed = recomputeSeed(proof);
    const s = proof.sources;

    // the block at the harvest slot
    const block = await rpc('getBlock', [
      proof.slot,
      { commitment: 'confirmed', transactionDetails: 'signatures', rewards: false, maxSupportedTransactionVersion: 0 },
    ]);
    expect(s.blockhash).toMatchObject({ slot: proof.slot, blockhash: block.blockhash });
    expect(s.blockDetails).toMatchObject({
      slot: proof.slot,
      parentSlot: block.parentSlot,
      blockHeight: block.blockHeight,
      previousBlockhash: block.previousBlockhash,
      transactionCount: block.signatures.length,
    });
    // slot leaders of the 16 slots ending at the harvest slot (the local ledger has one validator)
    expect(s.slotLeaders.startSlot).toBe(proof.slot - 15);
    expect(s.slotLeaders.leaders).toEqual(Array(16).fill(economy.ledger.identity));
    expect(await rpc('getSlotLeaders', [s.slotLeaders.startSlot, 16])).toEqual(s.slotLeaders.leaders);
    // signatures: non-empty (the ledger is busy), the first of their block, at or before the harvest slot
    expect(s.transactionSignatures.signatures.length).toBeGreaterThan(0);
    expect(s.transactionSignatures.signatures.length).toBeLessThanOrEqual(16);
    expect(s.transactionSignatures.slot).toBeLessThanOrEqual(proof.slot);
    const signed = await rpc('getBlock', [
      s.transactionSignatures.slot,
      { commitment: 'confirmed', transactionDetails: 'signatures', rewards: false },
    ]);
    expect(s.transactionSignatures.signatures).toEqual(signed.signatures.slice(0, 16));
    // timing: the 8 latest blocks up to the harvest slot, oldest first, with the chain's block times
    expect(s.blockTiming.samples.map((x) => x.slot)).toEqual(Array.from({ length: 8 }, (_, i) => proof.slot - 7 + i));
    for (const sample of s.blockTiming.samples) expect(await rpc('getBlockTime', [sample.slot])).toBe(sample.blockTime);

    // and the RPC calls the report lists are exactly these reads
    const calls = report.verification.rpcCalls;
    expect(calls.map((c) => c.method)).toEqual([
      'getBlock',
      'getSlotLeaders',
      ...(s.transactionSignatures.slot === proof.slot ? [] : ['getBlock']),
      ...Array(8).fill('getBlockTime'),
    ]);
    for (const call of calls) await expect(rpc(call.method, call.params)).resolves.toBeDefined();
    expect((await rpc(calls[0]!.method, calls[0]!.params)).blockhash).toBe(s.blockhash.blockhash);

    // the sample, the derivation, the quality figures
    expect(report.sampleHex).toBe(refStream(seed, 'proof', 64).toString('hex'));
    expect(report.derivation).toEqual({ label: 'proof', blocksUsed: 1, wordsDrawn: 0, rejections: 0, rawWords: [] });
    const materialBytes = 32 + 16 * 32 + 64 * s.transactionSignatures.signatures.length + 8 * 16 + (8 + 8 + 8 + 32 + 4);
    expect(report.quality).toEqual({
      sourcesHarvested: 5,
      materialBytes,
      distinctLeaders: 1,
      signaturesHarvested: s.transactionSignatures.signatures.length,
    });
    expect(report.verification.steps.length).toBeGreaterThanOrEqual(5);
    expect(report.verification.algorithm).toContain('ae-entropy-v1');
    expect(proof.clientSeed).toBe('audit-2025-01');
    expect(new Date(proof.harvestedAt).getTime()).toBeLessThanOrEqual(Date.now());
  });

  it('on an idle chain (no transaction in the last 150 slots) harvests no signatures and says so', async () => {
    economy.ledger.warp(200);
    const report = await entropy().proof({ body: {} });
    const s = report.proof.sources;
    expect(s.transactionSignatures).toEqual({ slot: report.proof.slot, signatures: [], materialHex: '' });
    expect(s.blockDetails.transactionCount).toBe(0);
    expect(report.quality).toMatchObject({ sourcesHarvested: 4, signaturesHarvested: 0 });
    expect(report.sampleHex).toBe(refStream(recomputeSeed(report.proof), 'proof', 64).toString('hex'));
    expect(report.verification.rpcCalls.filter((c) => c.method === 'getBlock')).toHaveLength(1);
  });

  it('takes `{}` without a client seed; a client seed changes the whole cascade', async () => {
    const report = await entropy().proof({ body: {} });
    expect(report.proof.clientSeed).toBeNull();
    recomputeSeed(report.proof);
    const error = await rejection(entropy().proof({ body: { clientSeed: 'a', extra: 1 } } as never));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.details.fields.map((f: { field: string }) => f.field)).toEqual(['body.extra']);
  });
});

describe('unbiased integers', () => {
  it('answers min + uniform(max − min + 1) from the "int" stream', async () => {
    const result = await entropy().int({ body: { min: 1, max: 100, clientSeed: 'raffle' } });
    const ref = refReader(recomputeSeed(result.proof), 'int');
    expect(result.value).toBe(1 + ref.uniform(100));
    expect(result).toMatchObject({ min: 1, max: 100 });
    expect(result.derivation).toEqual({
      label: 'int',
      blocksUsed: ref.blocks(),
      wordsDrawn: ref.words.length,
      rejections: ref.rejections(),
      rawWords: ref.words,
    });
  });

  it('rejects words at or above the limit for a range that is not a power of two, and shows them', async () => {
    const n = 2 ** 31 + 1; // each word is rejected with probability ≈ 1/2
    let rejectedSome = false;
    for (let i = 0; i < 24 && !rejectedSome; i++) {
      const result = await entropy().int({ body: { min: -5, max: -5 + n - 1 } });
      const ref = refReader(recomputeSeed(result.proof), 'int');
      expect(result.value).toBe(-5 + ref.uniform(n));
      expect(result.derivation.rawWords).toEqual(ref.words);
      expect(result.derivation.rejections).toBe(result.derivation.wordsDrawn - 1);
      expect(result.derivation.rawWords.slice(0, -1).every((w) => w >= n)).toBe(true);
      expect(result.derivation.rawWords.at(-1)!).toBeLessThan(n);
      rejectedSome = result.derivation.rejections > 0;
    }
    expect(rejectedSome).toBe(true);
  });

  it('handles the limits: a single value, negative ranges, 2^32 − 1 values and the full 2^32', async () => {
    const single = await entropy().int({ body: { min: 42, max: 42 } });
    expect(single.value).toBe(42);
    expect(single.derivation).toMatchObject({ wordsDrawn: 1, rejections: 0 });

    const full = await entropy().int({ body: { min: -(2 ** 31), max: 2 ** 31 - 1 } });
    expect(full.value).toBe(-(2 ** 31) + refReader(recomputeSeed(full.proof), 'int').uniform(TWO_32));
    expect(full.derivation.rejections).toBe(0);

    const nearly = await entropy().int({ body: { min: 0, max: TWO_32 - 2 } });
    const ref = refReader(recomputeSeed(nearly.proof), 'int');
    expect(nearly.value).toBe(ref.uniform(TWO_32 - 1));

    const huge = await entropy().int({ body: { min: Number.MAX_SAFE_INTEGER - 9, max: Number.MAX_SAFE_INTEGER } });
    expect(huge.value).toBe(Number.MAX_SAFE_INTEGER - 9 + refReader(recomputeSeed(huge.proof), 'int').uniform(10));
  });

  it('rejects bad ranges with 400 naming the field', async () => {
    const cases: [unknown, string][] = [
      [{ min: 5, max: 4 }, 'body.max'],
      [{ min: 0, max: TWO_32 }, 'body.max'],
      [{ min: -(2 ** 31), max: 2 ** 31 }, 'body.max'],
      [{ min: 1.5, max: 4 }, 'body.min'],
      [{ min: 0, max: 2 ** 53 }, 'body.max'],
      [{ max: 4 }, 'body.min'],
      [{ min: 1 }, 'body.max'],
      [{ min: '1', max: 4 }, 'body.min'],
    ];
    for (const [body, field] of cases) {
      const error = await rejection(entropy().int({ body } as never));
      expect(error).toBeInstanceOf(BadRequestError);
      expect(error.details.fields.map((f: { field: string }) => f.field)).toContain(field);
    }
  });
});

describe('shuffle', () => {
  it('is Fisher-Yates over the "shuffle" stream: a permutation of the items, recomputable', async () => {
    const items = ['alice', 'bob', 'carol', 'dave', 7, 3.5, 'bob', 'erin', 'frank', 'grace', 'heidi'];
    const result = await entropy().shuffle({ body: { items, clientSeed: 'round-7' } });
    const ref = refReader(recomputeSeed(result.proof), 'shuffle');
    const order = items.map((_, i) => i);
    for (let i = order.length - 1; i >= 1; i--) {
      const j = ref.uniform(i + 1);
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    expect(result.permutation).toEqual(order);
    expect(result.shuffled).toEqual(order.map((i) => items[i]));
    expect([...result.permutation].sort((a, b) => a - b)).toEqual(items.map((_, i) => i));
    expect(result.derivation).toMatchObject({
      label: 'shuffle',
      wordsDrawn: ref.words.length,
      rawWords: ref.words,
      rejections: ref.rejections(),
    });
    expect(ref.words.length).toBeGreaterThanOrEqual(items.length - 1);
  });

  it('leaves one item in place without drawing, and shuffles 1,000', async () => {
    const one = await entropy().shuffle({ body: { items: ['only'] } });
    expect(one).toMatchObject({
      shuffled: ['only'],
      permutation: [0],
      derivation: { wordsDrawn: 0, blocksUsed: 0, rawWords: [] },
    });
    const items = Array.from({ length: 1000 }, (_, i) => i);
    const many = await entropy().shuffle({ body: { items } });
    expect([...many.shuffled].sort((a, b) => Number(a) - Number(b))).toEqual(items);
    expect(many.shuffled).toEqual(many.permutation);
    expect(many.shuffled).not.toEqual(items);
    expect(many.derivation.wordsDrawn).toBe(999 + many.derivation.rejections);
  });

  it('rejects bad lists with 400 naming the field', async () => {
    const cases: [unknown, string][] = [
      [{ items: [] }, 'body.items'],
      [{ items: Array.from({ length: 1001 }, (_, i) => i) }, 'body.items'],
      [{ items: ['ok', 'x'.repeat(257)] }, 'body.items.1'],
      [{ items: ['ok', { name: 'x' }] }, 'body.items.1'],
      [{}, 'body.items'],
    ];
    for (const [body, field] of cases) {
      const error = await rejection(entropy().shuffle({ body } as never));
      expect(error).toBeInstanceOf(BadRequestError);
      expect(error.details.fields.map((f: { field: string }) => f.field)).toContain(field);
    }
  });
});

describe('coin flips and dice', () => {
  it('flips one coin for `{}` and 100 on request, each uniform(2) of the "coin" stream', async () => {
    const single = await entropy().coin({ body: {} });
    expect(single.outcomes).toHaveLength(1);
    expect(single.outcome).toBe(refReader(recomputeSeed(single.proof), 'coin').uniform(2) === 0 ? 'heads' : 'tails');

    const many = await entropy().coin({ body: { count: 100 } });
    const ref = refReader(recomputeSeed(many.proof), 'coin');
    const expected = Array.from({ length: 100 }, () => (ref.uniform(2) === 0 ? 'heads' : 'tails'));
    expect(many.outcomes).toEqual(expected);
    expect(many.outcome).toBe(expected[0]);
    expect(many.heads).toBe(expected.filter((o) => o === 'heads').length);
    expect(many.heads + many.tails).toBe(100);
    // 2 divides 2^32: a coin never rejects
    expect(many.derivation).toMatchObject({ label: 'coin', wordsDrawn: 100, rejections: 0, blocksUsed: 7 });
  });

  it('rolls dice: each uniform(sides) + 1 of the "dice" stream, with the total', async () => {
    const d6 = await entropy().dice({ body: {} });
    expect(d6).toMatchObject({ sides: 6, count: 1 });
    expect(d6.rolls).toEqual([refReader(recomputeSeed(d6.proof), 'dice').uniform(6) + 1]);

    const result = await entropy().dice({ body: { sides: 1000, count: 100, clientSeed: 'd1000' } });
    const ref = refReader(recomputeSeed(result.proof), 'dice');
    const expected = Array.from({ length: 100 }, () => ref.uniform(1000) + 1);
    expect(result.rolls).toEqual(expected);
    expect(result.total).toBe(expected.reduce((a, b) => a + b, 0));
    expect(result.rolls.every((r) => r >= 1 && r <= 1000)).toBe(true);
    expect(result.derivation).toMatchObject({ label: 'dice', rawWords: ref.words, rejections: ref.rejections() });
  });

  it('rejects counts and sides outside their limits with 400 naming the field', async () => {
    const coin: [unknown, string][] = [
      [{ count: 0 }, 'body.count'],
      [{ count: 101 }, 'body.count'],
      [{ count: 1.5 }, 'body.count'],
    ];
    for (const [body, field] of coin) {
      const error = await rejection(entropy().coin({ body } as never));
      expect(error.details.fields.map((f: { field: string }) => f.field)).toContain(field);
    }
    const dice: [unknown, string][] = [
      [{ sides: 1 }, 'body.sides'],
      [{ sides: 1001 }, 'body.sides'],
      [{ count: 0 }, 'body.count'],
      [{ count: 101 }, 'body.count'],
      [{ sides: 6, count: 2, bonus: 1 }, 'body.bonus'],
    ];
    for (const [body, field] of dice) {
      const error = await rejection(entropy().dice({ body } as never));
      expect(error).toBeInstanceOf(BadRequestError);
      expect(error.details.fields.map((f: { field: string }) => f.field)).toContain(field);
    }
  });
});

describe('when the chain does not answer', () => {
  it('answers 502 upstream_unavailable with Retry-After, before any quote, on every route', async () => {
    // startService's default rpcUrl is a closed port; one deployment free, one at the contract's prices
    const down = await startService(free, { id: 'entropy' });
    const downPaid = await startService(createEntropyApp, { id: 'entropy' });
    try {
      for (const client of [down.client.entropy, downPaid.client.entropy]) {
        const calls = [
          client.bytes({ body: {} }),
          client.int({ body: { min: 1, max: 6 } }),
          client.shuffle({ body: { items: [1, 2] } }),
          client.coin({ body: {} }),
          client.dice({ body: {} }),
          client.proof({ body: {} }),
        ];
        for (const call of calls) {
          const error = await rejection(call);
          expect(error).toBeInstanceOf(InternalServerError);
          expect(error.status).toBe(502);
          expect(error.code).toBe('upstream_unavailable');
          expect(error.headers['retry-after']).toBe('5');
          expect(error.details).toEqual({ provider: 'local-ledger' });
        }
      }
      // bad input is still 400, not 502: validation comes first
      const error = await rejection(down.client.entropy.bytes({ body: { length: 0 } }));
      expect(error).toBeInstanceOf(BadRequestError);
    } finally {
      await down.close();
      await downPaid.close();
    }
  });
});

describe('when the chain answers without a source', () => {
  it('answers 502 entropy_source_unavailable naming the source', async () => {
    // A JSON-RPC node with no block in the recent window (as a node answers getBlocks over skipped slots).
    const node = createServer((req, res) => {
      let raw = '';
      req.on('data', (chunk) => (raw += chunk));
      req.on('end', () => {
        const { id, method } = JSON.parse(raw) as { id: number; method: string };
        const result = method === 'getSlot' ? 5000 : method === 'getBlocks' ? [] : null;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id, result }));
      });
    });
    await new Promise<void>((resolve) => node.listen(0, '127.0.0.1', resolve));
    const port = (node.address() as AddressInfo).port;
    const empty = await startService(free, { id: 'entropy', rpcUrl: `http://127.0.0.1:${port}` });
    try {
      const error = await rejection(empty.client.entropy.coin({ body: {} }));
      expect(error.status).toBe(502);
      expect(error.code).toBe('entropy_source_unavailable');
      expect(error.details).toEqual({ source: 'blockhash' });
      expect(error.headers['retry-after']).toBe('5');
    } finally {
      await empty.close();
      await new Promise((resolve) => node.close(resolve));
    }
  });
});

describe('paid for real through the facilitator', () => {
  it('quotes each route at its contract price', async () => {
    const paid = await economy.startPaidService(createEntropyApp, { id: 'entropy' });
    const bodies = {
      bytes: {},
      int: { min: 1, max: 6 },
      shuffle: { items: ['a', 'b'] },
      coin: {},
      dice: {},
      proof: {},
    };
    const amounts = { bytes: '1000', int: '1000', shuffle: '2000', coin: '1000', dice: '1000', proof: '3000' };
    for (const route of ROUTES) {
      const error = await rejection(
        (paid.client.entropy[route] as (a: unknown) => Promise<unknown>)({ body: bodies[route] }),
      );
      expect(error).toBeInstanceOf(PaymentRequiredError);
      expect(error.quote.accepts[0]).toMatchObject({
        scheme: 'exact',
        amount: amounts[route],
        asset: USDC_DEVNET,
        network: SOLANA_DEVNET,
        payTo: paid.context.paywall.payTo,
      });
    }
  });

  it('charges the buyer the price of a dice roll, pays the seller, and the roll verifies', async () => {
    const paid = await economy.startPaidService(createEntropyApp, { id: 'entropy' });
    const buyer = createClient({
      baseUrls: { entropy: paid.url },
      wallet: await walletFromSecretKey(economy.buyer.secretKey),
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    const seller = paid.context.wallet.address;
    const [buyerBefore, sellerBefore] = [
      economy.ledger.tokenBalance(economy.buyer.address),
      economy.ledger.tokenBalance(seller),
    ];
    const roll = await buyer.entropy.dice({ body: { sides: 20, count: 2 } });
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(buyerBefore - 1_000n);
    expect(economy.ledger.tokenBalance(seller)).toBe(sellerBefore + 1_000n);
    const ref = refReader(recomputeSeed(roll.proof), 'dice');
    expect(roll.rolls).toEqual([ref.uniform(20) + 1, ref.uniform(20) + 1]);
    expect(buyer.payments.receipts).toHaveLength(1);
    expect(buyer.payments.receipts[0]).toMatchObject({ amount: '1000' });
  });

  it('charges nothing when the chain does not answer', async () => {
    const dead = await startService(createEntropyApp, {
      id: 'entropy',
      paywall: { feePayer: economy.feePayer.address, facilitatorUrl: economy.facilitator.url },
    });
    try {
      await economy.ledger.openTokenAccount(dead.context.wallet.address);
      economy.sellers.add(dead.context.wallet.address);
      const buyer = createClient({
        baseUrls: { entropy: dead.url },
        wallet: await walletFromSecretKey(economy.buyer.secretKey),
        payments: { rpcUrl: economy.rpcUrl },
        maxRetries: 0,
      });
      const before = economy.ledger.tokenBalance(economy.buyer.address);
      const error = await rejection(buyer.entropy.proof({ body: {} }));
      expect(error.status).toBe(502);
      expect(error.code).toBe('upstream_unavailable');
      expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(before);
      expect(economy.ledger.tokenBalance(dead.context.wallet.address)).toBe(0n);
      expect(buyer.payments.receipts).toEqual([]);
    } finally {
      await dead.close();
    }
  });
});
