import { decodeX402Header, encodeX402Header } from '@agent-economy/contracts';
import { describe, expect, it } from 'vitest';

// The header codec uses Node's native base64 where it runs on Node; it must read and write exactly what the web's
// atob and btoa over UTF-8 do (the browser path, and what other x402 implementations send).
const webEncode = (value: unknown) => {
  let binary = '';
  for (const byte of new TextEncoder().encode(JSON.stringify(value))) binary += String.fromCharCode(byte);
  return btoa(binary);
};
const webDecode = (text: string): unknown => {
  try {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return undefined;
    const binary = atob(text);
    return JSON.parse(
      new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))),
    );
  } catch {
    return undefined;
  }
};

describe('x402 header codec', () => {
  const values = [
    { x402Version: 2, accepted: { scheme: 'exact', amount: '1000' }, payload: { transaction: 'AQID' } },
    { note: 'dégustation 🍷 — 支付', n: 1.5, list: [null, true, ''] },
    'a',
    0,
    [],
  ];

  it('encodes as btoa over UTF-8 does, and decodes it back', () => {
    for (const value of values) {
      const text = encodeX402Header(value);
      expect(text).toBe(webEncode(value));
      expect(decodeX402Header(text)).toStrictEqual(value);
    }
  });

  it('refuses what atob refuses, and text that is not UTF-8 JSON', () => {
    const json = webEncode({ a: 1 }); // "eyJhIjoxfQ==": padded
    const cases = [
      json,
      json.replace(/=+$/, ''), // unpadded: atob takes it
      json.slice(0, -1), // one "=" short of a whole quad
      `${json}=`,
      'eyJhIjoxfQ=', // padding on a partial quad
      'e',
      'eyJhIjoxfQ==x',
      'eyJh Ijoxf Q==',
      'eyJhIjoxfQ-_',
      '',
      btoa('{"a":'), // not JSON
      btoa('"\xff"'), // not UTF-8
      btoa('"\xc3\xa9"'), // UTF-8 "é"
    ];
    for (const text of cases) expect(decodeX402Header(text), text).toStrictEqual(webDecode(text));
    expect(decodeX402Header(json.replace(/=+$/, ''))).toStrictEqual({ a: 1 });
    expect(decodeX402Header(btoa('"\xc3\xa9"'))).toBe('é');
    expect(decodeX402Header('e')).toBeUndefined();
  });
});
