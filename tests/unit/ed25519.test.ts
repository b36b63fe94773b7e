import { describe, expect, it } from 'vitest';
import { generateWallet, signEd25519, verifyEd25519, verifyEd25519Async } from '../../servers/src/solana/keys';
import { walletFromSecretKey } from '../../sdk/src/wallet';

// verifyEd25519 remembers signatures that held (the payer's signature is checked by /verify and again by /settle):
// the memory must never make a signature hold for another message or another key.
describe('verifyEd25519', () => {
  const message = new TextEncoder().encode('pay 0.05 USD to the seller');
  const other = new TextEncoder().encode('pay 5.00 USD to the seller');

  it('holds for its message and key, again from memory, and never for another message or key', () => {
    const signer = generateWallet();
    const stranger = generateWallet();
    const signature = signEd25519(signer, message);
    const key = signer.secretKey.subarray(32);
    expect(verifyEd25519(key, message, signature)).toBe(true);
    expect(verifyEd25519(key, message, signature)).toBe(true);
    expect(verifyEd25519(key, other, signature)).toBe(false);
    expect(verifyEd25519(stranger.secretKey.subarray(32), message, signature)).toBe(false);
    // A signature that failed is not remembered as holding, nor does a failure erase one that held.
    const forged = Uint8Array.from(signature, (b, i) => (i === 0 ? b ^ 1 : b));
    expect(verifyEd25519(key, message, forged)).toBe(false);
    expect(verifyEd25519(key, message, forged)).toBe(false);
    expect(verifyEd25519(key, message, signature)).toBe(true);
  });

  // A signature made by signEd25519 is remembered as holding, for the key its seed really has: a wallet whose stated
  // public half is another key's must not make its signatures hold for that key.
  it('remembers what it signs for the seed’s own key, never for a wallet’s mismatched public half', () => {
    const signer = generateWallet();
    const victim = generateWallet();
    const mismatched = { address: victim.address, secretKey: new Uint8Array(64) };
    mismatched.secretKey.set(signer.secretKey.subarray(0, 32), 0);
    mismatched.secretKey.set(victim.secretKey.subarray(32), 32);
    const signature = signEd25519(mismatched, message);
    expect(verifyEd25519(victim.secretKey.subarray(32), message, signature)).toBe(false);
    expect(verifyEd25519(signer.secretKey.subarray(32), message, signature)).toBe(true);
    expect(verifyEd25519(signer.secretKey.subarray(32), other, signature)).toBe(false);
  });
});

// The thread-pool check (a session's vouchers) must judge exactly as the synchronous one.
describe('verifyEd25519Async', () => {
  it('holds for its message and key only, and is false for malformed input', async () => {
    const message = new TextEncoder().encode('voucher for 150000');
    const signer = generateWallet();
    const signature = signEd25519(signer, message);
    const key = signer.secretKey.subarray(32);
    const forged = Uint8Array.from(signature, (b, i) => (i === 63 ? b ^ 0x40 : b));
    const cases: [Uint8Array, Uint8Array, Uint8Array][] = [
      [key, message, signature],
      [key, new TextEncoder().encode('voucher for 150001'), signature],
      [generateWallet().secretKey.subarray(32), message, signature],
      [key, message, forged],
      [key, message, signature.subarray(0, 63)],
      [key.subarray(0, 31), message, signature],
      [new Uint8Array(32), message, signature],
    ];
    const answers = await Promise.all(cases.map(([k, m, s]) => verifyEd25519Async(k, m, s)));
    expect(answers).toEqual([true, false, false, false, false, false, false]);
    expect(answers).toEqual(cases.map(([k, m, s]) => verifyEd25519(k, m, s)));
  });

  // The paywall checks a payment's payer this way, remembering what held for the facilitator's checks after it: the
  // memory must hold a signature for its own message and key only, and never a forged one.
  it('remembers, when asked, only a signature that held, for its message and key', async () => {
    const message = new TextEncoder().encode('pay 0.05 USD to the seller');
    const other = new TextEncoder().encode('pay 5.00 USD to the seller');
    const wallet = generateWallet();
    const payer = await walletFromSecretKey(wallet.secretKey); // signed outside the server's keys module
    const signature = await payer.signMessage(message);
    const key = wallet.secretKey.subarray(32);
    const forged = Uint8Array.from(signature, (b, i) => (i === 5 ? b ^ 1 : b));
    const remember = { remember: true };
    expect(await verifyEd25519Async(key, message, forged, remember)).toBe(false);
    expect(await verifyEd25519Async(key, message, forged, remember)).toBe(false);
    expect(verifyEd25519(key, message, forged)).toBe(false);
    expect(await verifyEd25519Async(key, message, signature, remember)).toBe(true);
    expect(await verifyEd25519Async(key, message, signature, remember)).toBe(true);
    expect(verifyEd25519(key, message, signature)).toBe(true);
    expect(await verifyEd25519Async(key, other, signature, remember)).toBe(false);
    expect(verifyEd25519(key, other, signature)).toBe(false);
    expect(await verifyEd25519Async(generateWallet().secretKey.subarray(32), message, signature, remember)).toBe(false);
  });
});

// The SDK signs with Node's Ed25519 where it can, else with WebCrypto's (browsers): the two must give the same bytes,
// the ones the servers check, and both must refuse a secret key whose public half belongs to another seed.
describe('SDK wallet signatures', () => {
  const message = new TextEncoder().encode('agent-economy voucher 150000');
  const withoutNodeCrypto = async <T>(run: () => Promise<T>): Promise<T> => {
    const original = process.getBuiltinModule;
    process.getBuiltinModule = ((id: string) => (id === 'node:crypto' ? undefined : original(id))) as typeof original;
    try {
      return await run();
    } finally {
      process.getBuiltinModule = original;
    }
  };

  it('are the same bytes from node:crypto and from WebCrypto, and hold for the server', async () => {
    const wallet = generateWallet();
    const secret = wallet.secretKey;
    // The Node path is the one taken where node:crypto is: its signing calls are counted.
    const original = process.getBuiltinModule;
    let nodeSignatures = 0;
    process.getBuiltinModule = ((id: string) => {
      const module = original(id) as typeof import('node:crypto');
      if (id !== 'node:crypto') return module;
      return {
        ...module,
        sign: (...args: Parameters<typeof module.sign>) => (nodeSignatures++, module.sign(...args)),
      };
    }) as typeof original;
    let node: Awaited<ReturnType<typeof walletFromSecretKey>>;
    try {
      node = await walletFromSecretKey(secret);
    } finally {
      process.getBuiltinModule = original;
    }
    const before = nodeSignatures;
    await node.signMessage(message);
    expect(nodeSignatures).toBe(before + 1);
    const web = await withoutNodeCrypto(() => walletFromSecretKey(secret));
    const [a, b] = [await node.signMessage(message), await web.signMessage(message)];
    expect(a).toHaveLength(64);
    expect(Buffer.from(a).toString('hex')).toBe(Buffer.from(b).toString('hex'));
    expect(Buffer.from(a).toString('hex')).toBe(Buffer.from(signEd25519(wallet, message)).toString('hex'));
    expect(verifyEd25519(secret.subarray(32), message, a)).toBe(true);
    expect(verifyEd25519(secret.subarray(32), new TextEncoder().encode('agent-economy voucher 150001'), a)).toBe(false);
  });

  it('refuse a secret key whose public half is another key, on either path', async () => {
    const mixed = new Uint8Array(64);
    mixed.set(generateWallet().secretKey.subarray(0, 32), 0);
    mixed.set(generateWallet().secretKey.subarray(32), 32);
    await expect(walletFromSecretKey(mixed)).rejects.toThrow('the secret key does not match its public half');
    await expect(withoutNodeCrypto(() => walletFromSecretKey(mixed))).rejects.toThrow(
      'the secret key does not match its public half',
    );
  });
});
