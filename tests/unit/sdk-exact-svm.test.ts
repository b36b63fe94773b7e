import { describe, expect, it } from 'vitest';
import { address } from '@solana/kit';
import { findAssociatedTokenPda } from '@solana-program/token';
import { USDC_DEVNET } from '@agent-economy/contracts';
import { TOKEN_2022_PROGRAM_ADDRESS, associatedTokenAccount } from '../../sdk/src/payments/exact-svm';
import { TOKEN_PROGRAM, TOKEN_2022_PROGRAM, associatedTokenAddress } from '../../servers/src/solana/programs';
import { generateWallet } from '../../servers/src/solana/keys';

// The SDK remembers the associated token accounts it derives (a payment needs two): what it remembers must be what the
// derivation gives, for each owner, mint and token program, and the same as the chain side (the facilitator) derives.
describe('SDK associated token accounts', () => {
  it('match the derivation and the servers, per owner, mint and token program, remembered or not', async () => {
    const owners = Array.from({ length: 4 }, () => generateWallet().address);
    const mints = [USDC_DEVNET, generateWallet().address];
    for (const owner of owners)
      for (const mint of mints)
        for (const program of [TOKEN_PROGRAM, TOKEN_2022_PROGRAM]) {
          const [expected] = await findAssociatedTokenPda({
            owner: address(owner),
            mint: address(mint),
            tokenProgram: address(program),
          });
          const first = await associatedTokenAccount(address(owner), address(mint), address(program));
          const again = await associatedTokenAccount(address(owner), address(mint), address(program));
          expect([first, again]).toEqual([expected, expected]);
          expect(first).toBe(associatedTokenAddress(owner, mint, program));
        }
    // Token-2022 accounts differ from the original program's: the program is part of the key.
    const [owner] = owners;
    expect(await associatedTokenAccount(address(owner!), address(USDC_DEVNET), TOKEN_2022_PROGRAM_ADDRESS)).not.toBe(
      await associatedTokenAccount(address(owner!), address(USDC_DEVNET), address(TOKEN_PROGRAM)),
    );
  });
});
