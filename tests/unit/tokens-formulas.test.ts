import { describe, expect, it } from 'vitest';
import {
  competitionRanks,
  compareTokens,
  holderDistribution,
  riskScore,
  riskWarnings,
} from '../../servers/src/services/tokens/domain';
import { gini, hhi } from '../../servers/src/upstream/measures';
import { decodeMetaplexMetadata, decodeMintFacts } from '../../servers/src/upstream/token-chain';

describe('formulas', () => {
  it('Gini on the research vectors', () => {
    expect(gini([1, 1, 1, 1])).toBe(0);
    expect(gini([0, 0, 0, 1])).toBe(0.75);
    expect(gini([1, 2, 3, 4, 5])).toBeCloseTo(0.266667, 6);
    expect(gini([10, 5, 3, 1, 1])).toBeCloseTo(0.44, 6);
    expect(gini([5, 10, 20, 50])).toBeCloseTo(0.426471, 6);
    expect(gini([])).toBe(0);
  });

  it('HHI on the research vectors', () => {
    expect(hhi([0.5, 0.3, 0.2])).toBeCloseTo(0.38, 9);
    expect(hhi([0.25, 0.25, 0.25, 0.25])).toBeCloseTo(0.25, 9);
  });

  it('competition ranks: ties share the better rank, unknown values rank last', () => {
    expect(competitionRanks([10, 30, 30, 5])).toEqual([3, 1, 1, 4]);
    expect(competitionRanks([10, null, 30])).toEqual([2, 3, 1]);
    expect(competitionRanks([40, 10, 20], true)).toEqual([3, 1, 2]);
  });

  it('holder distribution leaves burn and program accounts out of concentration', () => {
    const d = holderDistribution(
      [
        { tokenAccount: 'a', owner: 'A', amount: 600n },
        { tokenAccount: 'b', owner: 'B', amount: 300n },
        { tokenAccount: 'burn', owner: 'X', amount: 100n, excluded: 'burn' },
      ],
      1000n,
      2,
      40,
    );
    expect(d.topHolders.map((h) => [h.rank, h.tokenAccount, h.percent, h.whale, h.uiAmount])).toEqual([
      [1, 'a', 60, true, '6'],
      [2, 'b', 30, false, '3'],
    ]);
    expect(d.excluded).toEqual([{ tokenAccount: 'burn', owner: 'X', reason: 'burn', percent: 10 }]);
    expect(d.concentration).toEqual({
      top1Percent: 60,
      top10Percent: 90,
      top20Percent: 90,
      gini: gini([600, 300]),
      hhi: 0.45,
    });
    expect(d.whales).toEqual({ count: 1, totalPercent: 60 });
  });

  it('risk: every finding adds its stated points, capped at 100, most severe first', () => {
    const warnings = riskWarnings({
      mintAuthority: 'M',
      freezeAuthority: 'F',
      metadataMutable: true,
      permanentDelegate: 'D',
      transferHookProgram: null,
      transferFeePercent: 1.5,
      top1Percent: 25,
      top10Percent: 80,
      market: { liquidityUsd: '500', pairCount: 1, createdAt: null },
      now: new Date(),
    });
    expect(warnings.map((w) => [w.code, w.scoreImpact])).toEqual([
      ['mint_authority_enabled', 30],
      ['permanent_delegate', 25],
      ['freeze_authority_enabled', 20],
      ['single_holder_concentration', 20],
      ['top10_concentration', 15],
      ['transfer_fee', 10],
      ['low_liquidity', 10],
      ['mutable_metadata', 5],
    ]);
    expect(riskScore(warnings)).toEqual({ riskScore: 100, riskLevel: 'critical' });
    expect(riskScore(warnings.slice(-2))).toEqual({ riskScore: 15, riskLevel: 'low' });
  });

  it('compare: (n − r)/(n − 1) × 100 points per criterion, weighted', () => {
    const base = { symbol: null, name: null, priceUsd: null, marketCapUsd: null, priceChange24hPercent: null };
    const result = compareTokens([
      { ...base, mint: 'A', volume24hUsd: '100', liquidityUsd: '1000', riskScore: 10, top10HolderPercent: 20 },
      { ...base, mint: 'B', volume24hUsd: '300', liquidityUsd: '500', riskScore: 50, top10HolderPercent: 90 },
    ]);
    // A wins safety (.30), liquidity (.25), distribution (.15); B wins volume (.15); both tie marketCap and momentum
    // (.15).
    expect(result.tokens.map((t) => [t.mint, t.compositeScore, t.overallRank])).toEqual([
      ['A', 85, 1],
      ['B', 30, 2],
    ]);
    expect(result.leaders).toMatchObject({ safety: 'A', volume: 'B', liquidity: 'A', distribution: 'A' });
  });

  it('decodes a Token-2022 mint with a transfer fee, a permanent delegate and metadata', () => {
    const data = new Uint8Array(166 + 4 + 108 + 4 + 32 + 4 + 64 + 4 + 64 + 12 + 4 + 4 + 4);
    const base = decodeMintFacts('m', 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA', new Uint8Array(82));
    expect(base).toBeNull(); // an uninitialised mint
    data[44] = 9; // decimals
    data[45] = 1; // initialised
    data[165] = 1; // account type: mint
    const view = new DataView(data.buffer);
    let at = 166;
    view.setUint16(at, 1, true); // transferFeeConfig
    view.setUint16(at + 2, 108, true);
    view.setUint16(at + 4 + 106, 250, true); // newer fee: 250 basis points
    at += 4 + 108;
    view.setUint16(at, 12, true); // permanentDelegate
    view.setUint16(at + 2, 32, true);
    data.fill(7, at + 4, at + 36);
    at += 4 + 32;
    const meta = new Uint8Array(64 + 4 + 4 + 4 + 3 + 4);
    meta.fill(9, 0, 32); // update authority
    new DataView(meta.buffer).setUint32(64, 4, true);
    meta.set(new TextEncoder().encode('Coin'), 68);
    new DataView(meta.buffer).setUint32(72, 3, true);
    meta.set(new TextEncoder().encode('CNX'), 76);
    new DataView(meta.buffer).setUint32(79, 0, true);
    view.setUint16(at, 19, true); // tokenMetadata
    view.setUint16(at + 2, meta.length, true);
    data.set(meta, at + 4);
    const facts = decodeMintFacts(
      'm',
      'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb',
      data.subarray(0, at + 4 + meta.length),
    )!;
    expect(facts).toMatchObject({
      tokenProgram: 'token-2022',
      decimals: 9,
      extensions: ['transferFeeConfig', 'permanentDelegate', 'tokenMetadata'],
      transferFeePercent: 2.5,
    });
    expect(facts.permanentDelegate).not.toBeNull();
    expect(facts.metadata).toMatchObject({ name: 'Coin', symbol: 'CNX', uri: '', mutable: true });
  });

  it('decodes a Metaplex metadata account and its mutability', () => {
    const strings = [
      ['Bonk', 32],
      ['BONK', 10],
      ['https://x', 200],
    ] as const;
    const parts: number[] = [4, ...new Array(64).fill(1)];
    for (const [text, size] of strings) {
      const bytes = new Uint8Array(4 + size);
      new DataView(bytes.buffer).setUint32(0, size, true);
      bytes.set(new TextEncoder().encode(text), 4);
      parts.push(...bytes);
    }
    parts.push(0, 0, /* creators: none */ 0, /* primary sale */ 1, /* mutable */ 0);
    expect(decodeMetaplexMetadata(new Uint8Array(parts))).toMatchObject({
      name: 'Bonk',
      symbol: 'BONK',
      uri: 'https://x',
      mutable: false,
      updateAuthority: null,
    });
  });
});
