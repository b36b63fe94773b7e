import { describe, expect, it } from 'vitest';
import { base58Encode } from '@agent-economy/contracts';
import { generateWallet, signEd25519 } from '../../servers/src/solana/keys';
import { fleschReadingEase, safetyCheck, syllables } from '../../servers/src/services/verification/domain';
import { luhnValid, shannonEntropy, validMnemonic } from '../../servers/src/services/verification/safety';

const ABANDON_ABOUT = `${'abandon '.repeat(11)}about`; // BIP-39 test vector: entropy of sixteen zero bytes

describe('safety rules', () => {
  const codes = (body: string) => safetyCheck(body).findings.map((f) => f.code);

  it('tells a Solana key pair from a transaction signature of the same length', () => {
    const wallet = generateWallet();
    expect(codes(`SECRET=${base58Encode(wallet.secretKey)}`)).toEqual(['secret_solana_keypair']);
    expect(codes(`key: ${JSON.stringify([...wallet.secretKey])}`)).toEqual(['secret_solana_keypair']);
    const signature = base58Encode(signEd25519(wallet, new Uint8Array([1, 2, 3])));
    expect(codes(`See transaction ${signature} on the explorer.`)).toEqual([]);
    expect(
      codes(`key: ${JSON.stringify([...generateWallet().secretKey.slice(0, 32), ...wallet.secretKey.slice(32)])}`),
    ).toEqual([]);
  });

  it('recognises a seed phrase by its BIP-39 checksum', () => {
    expect(validMnemonic(ABANDON_ABOUT.split(' '))).toBe(true);
    expect(validMnemonic('abandon '.repeat(12).trim().split(' '))).toBe(false);
    // Entropy 0x7f × 16 (a BIP-39 reference vector).
    expect(
      validMnemonic('legal winner thank year wave sausage worth useful legal winner thank yellow'.split(' ')),
    ).toBe(true);
    expect(codes(`My words: ${'abandon '.repeat(12)}`)).toEqual([]);
  });

  it('uses entropy and placeholders to keep examples from counting as secrets', () => {
    expect(shannonEntropy('aaaa')).toBe(0);
    expect(shannonEntropy('abcd')).toBe(2);
    expect(codes('OPENAI_API_KEY=sk-your-key-goes-here-please')).toEqual([]);
    expect(codes('const apiKey = process.env.OPENAI_API_KEY1234;')).toEqual([]);
    expect(codes('api_key = "k9Qz7Lx2Vb8Nw4Rt6Yp1"')).toEqual(['secret_generic']);
    expect(codes('token: aaaaaaaaaaaaaaaa1')).toEqual([]);
  });

  it('checks card numbers with Luhn and skips reserved mail domains', () => {
    expect(luhnValid('4111111111111111')).toBe(true);
    expect(luhnValid('4111111111111112')).toBe(false);
    expect(codes('Card 4111 1111 1111 1111 on file.')).toEqual(['personal_card_number']);
    expect(codes('Card 4111 1111 1111 1112 on file.')).toEqual([]);
    expect(codes('Write to ops@example.com or dev@service.test.')).toEqual([]);
  });

  it('flags destructive commands, not ordinary ones', () => {
    expect(codes('rm -rf node_modules && npm ci')).toEqual([]);
    expect(codes('sudo rm -fr ~')).toEqual(['dangerous_rm_rf']);
    expect(codes(':(){ :|:& };:')).toEqual(['dangerous_fork_bomb']);
    expect(codes('dd if=/dev/zero of=/dev/sda bs=1M')).toEqual(['dangerous_disk_wipe']);
    expect(codes("const { exec } = require('child_process');\neval(code);")).toEqual([
      'code_child_process',
      'code_eval',
    ]);
    expect(codes('model.evaluate(x); retrieval(x)')).toEqual([]);
  });

  it('computes Flesch reading ease from counted syllables', () => {
    expect([
      syllables('the'),
      syllables('table'),
      syllables('overlap'),
      syllables('between'),
      syllables('make'),
      syllables('readability'),
    ]).toEqual([1, 2, 3, 2, 1, 5]);
    // "The cat sat on the mat." 6 words, 1 sentence, 6 syllables: 206.835 − 6.09 − 84.6 = 116.145
    expect(fleschReadingEase(6, 1, 6)).toBeCloseTo(116.145, 10);
  });
});
