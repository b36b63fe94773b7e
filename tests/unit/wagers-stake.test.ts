import { describe, expect, it } from 'vitest';
import { houseCutOf, stakeProblem } from '../../servers/src/services/wagers/domain';

describe('stake check (domain)', () => {
  const expectation = {
    player: 'P',
    sourceAccounts: new Set(['PA']),
    vaultAccounts: new Set(['VA']),
    mint: 'M',
    amount: 2_000_000n,
  };
  const ix = (info: Record<string, unknown>, type = 'transferChecked') => ({
    program: 'spl-token',
    parsed: { type, info },
  });
  const honest = { source: 'PA', destination: 'VA', authority: 'P', mint: 'M', tokenAmount: { amount: '2000000' } };
  const tx = (...instructions: unknown[]) =>
    ({ meta: { err: null, innerInstructions: [] }, transaction: { message: { instructions } } }) as never;

  it('accepts one TransferChecked of exactly the stake and refuses every deviation', () => {
    expect(stakeProblem(tx(ix(honest)), expectation)).toBeNull();
    expect(stakeProblem(null, expectation)).toMatch(/no confirmed transaction/);
    expect(
      stakeProblem(
        {
          meta: { err: { InstructionError: [0, 'x'] } },
          transaction: { message: { instructions: [ix(honest)] } },
        } as never,
        expectation,
      ),
    ).toMatch(/failed/);
    expect(stakeProblem(tx(ix({ ...honest, mint: 'OTHER' })), expectation)).toMatch(/stablecoin/);
    expect(stakeProblem(tx(ix({ ...honest, authority: 'Q' })), expectation)).toMatch(/signed by your connected wallet/);
    expect(stakeProblem(tx(ix({ ...honest, source: 'QA' })), expectation)).toMatch(/your token account/);
    expect(stakeProblem(tx(ix({ ...honest, tokenAmount: { amount: '1999999' } })), expectation)).toMatch(
      /not the stake/,
    );
    expect(stakeProblem(tx(ix({ ...honest, destination: 'XA' })), expectation)).toMatch(/nothing to the vault/);
    expect(
      stakeProblem(
        tx(ix({ source: 'PA', destination: 'VA', authority: 'P', amount: '2000000' }, 'transfer')),
        expectation,
      ),
    ).toMatch(/not a TransferChecked/);
    // Two transfers of the stake in one transaction pay twice the stake: refused, not half-used.
    expect(stakeProblem(tx(ix(honest), ix(honest)), expectation)).toMatch(/4 USD, not the stake of 2 USD/);
  });

  it('rounds the house cut down to the atomic unit', () => {
    expect(houseCutOf(4_000_000n, 500)).toBe(200_000n);
    expect(houseCutOf(2_000_002n, 500)).toBe(100_000n); // 100000.1 rounded down
    expect(houseCutOf(3n, 250)).toBe(0n);
  });
});
