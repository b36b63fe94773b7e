import { describe, expect, it } from 'vitest';
import { base58Decode, base58Encode } from '@agent-economy/contracts';
import {
  canonicalize,
  decodeEd25519Multikey,
  didKeyOf,
  publicKeyOfDidKey,
  signDataIntegrity,
  verifyDataIntegrity,
  type ProofOptions,
} from '../../servers/src/services/identity/crypto';
import { signEd25519, walletFromSeed } from '../../servers/src/solana/keys';

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

describe('did:key and Ed25519 known vectors', () => {
  it('derives the did:key of the RFC 8032 test 1 key and signs as the RFC says', () => {
    const wallet = walletFromSeed(
      Buffer.from('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60', 'hex'),
    );
    expect(hex(wallet.secretKey.slice(32))).toBe('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a');
    expect(didKeyOf(wallet.secretKey.slice(32))).toBe('did:key:z6MktwupdmLXVVqTzCw4i46r4uGyosGXRnR3XjN4Zq7oMMsw');
    expect(hex(signEd25519(wallet, new Uint8Array(0)))).toBe(
      'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
    );
  });

  it('decodes the did:key spec example to its Ed25519 key and refuses other codecs', () => {
    expect(hex(publicKeyOfDidKey('did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK')!)).toBe(
      '2e6fcce36701dc791488e0d0b1745cc1e33a4c1c9fcc41c63bd343dbbe0970e6',
    );
    // An X25519 key (multicodec 0xec) is not an Ed25519 Multikey.
    expect(
      decodeEd25519Multikey('z' + base58Encode(new Uint8Array([0xec, 0x01, ...new Uint8Array(32).fill(1)]))),
    ).toBeUndefined();
    expect(publicKeyOfDidKey('did:web:example.com')).toBeUndefined();
  });

  it('canonicalizes as RFC 8785 does (numbers and property order)', () => {
    expect(canonicalize({ numbers: [333333333.33333329, 1e30, 4.5, 2e-3, 0.000000000000000000000000001] })).toBe(
      '{"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27]}',
    );
    const sorted = canonicalize({
      '\u20ac': 1,
      '\r': 2,
      '\ufb33': 3,
      '1': 4,
      '\ud83d\ude00': 5,
      '\u0080': 6,
      '\u00f6': 7,
    });
    expect([...sorted.matchAll(/:(\d)/g)].map((m) => m[1])).toEqual(['2', '4', '6', '7', '1', '5', '3']);
  });

  // W3C vc-di-eddsa test vectors (TestVectors/eddsa-jcs-2022/signedJCS.json and keyPair.json).
  const w3cVector = {
    '@context': ['https://www.w3.org/ns/credentials/v2', 'https://www.w3.org/ns/credentials/examples/v2'],
    id: 'urn:uuid:58172aac-d8ba-11ed-83dd-0b3aef56cc33',
    type: ['VerifiableCredential', 'AlumniCredential'],
    name: 'Alumni Credential',
    description: 'A minimum viable example of an Alumni Credential.',
    issuer: 'https://vc.example/issuers/5678',
    validFrom: '2023-01-01T00:00:00Z',
    credentialSubject: { id: 'did:example:abcdefgh', alumniOf: 'The School of Examples' },
  };
  const w3cProof = {
    type: 'DataIntegrityProof',
    cryptosuite: 'eddsa-jcs-2022',
    created: '2023-02-24T23:36:38Z',
    verificationMethod: 'https://vc.example/issuers/5678#z6MkrJVnaZkeFzdQyMZu1cgjg7k1pZZ6pvBQ7XJPt4swbTQ2',
    proofPurpose: 'assertionMethod',
    '@context': ['https://www.w3.org/ns/credentials/v2', 'https://www.w3.org/ns/credentials/examples/v2'],
  };
  const w3cProofValue = 'z63t83Y53KfzJ5ZosfKTnqfMcKB2dmTrfjSaQjeNNjAD5srBowQfmWqeRb8rRjmeEuCBEsddF9LsVogtuTsijJKh4';

  it('verifies and reproduces the W3C eddsa-jcs-2022 test vector', () => {
    const publicKey = decodeEd25519Multikey('z6MkrJVnaZkeFzdQyMZu1cgjg7k1pZZ6pvBQ7XJPt4swbTQ2')!;
    const secured = { ...w3cVector, proof: { ...w3cProof, proofValue: w3cProofValue } };
    expect(verifyDataIntegrity(secured, publicKey)).toBe(true);
    expect(verifyDataIntegrity({ ...secured, name: 'Alumni Credentia1' }, publicKey)).toBe(false);
    // The secret key multibase is 0x80 0x26 (ed25519-priv) then the 32-byte seed; Ed25519 is deterministic.
    const seed = base58Decode('3u2en7t5LR2WtQH5PfFqMqwVHBeXouLzo6haApm8XHqvjxq')!;
    expect([seed[0], seed[1]]).toEqual([0x80, 0x26]);
    const signed = signDataIntegrity(w3cVector, w3cProof as unknown as ProofOptions, walletFromSeed(seed.subarray(2)));
    expect(signed.proof.proofValue).toBe(w3cProofValue);
    expect(hex(base58Decode(w3cProofValue.slice(1))!)).toBe(
      'fc91dec6565f35fbe185a77352e7fc512f95d1904da305cfef32ab8135469301f5a72d4e7a58368fc6ffc497b44633993bac054e3bc1436e3c846db8f1544503',
    );
  });
});
