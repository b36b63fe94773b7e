import type { ProtocolCategory } from '@agent-economy/contracts';

// Well-known Solana mainnet program ids and the protocol each belongs to. Ids were checked against the
// protocols' own documentation (Meteora's program table, Raydium's IDL crates) and, where they publish none,
// against several independent public codebases that call the programs. A program not listed here is
// reported by its id under `unknownPrograms`.

export interface ProtocolLabel {
  /** Protocol id in responses, e.g. "jupiter". */
  id: string;
  name: string;
  category: ProtocolCategory;
  /**
   * What the protocol's programs move for the wallet, which decides what its volume counts: nothing
   * (compute budget, memo, lookup tables), SOL only (System, native staking, account rent), tokens only
   * (the token programs), or either (every application protocol).
   */
  moves: 'none' | 'sol' | 'tokens' | 'any';
}

const label = (
  id: string,
  name: string,
  category: ProtocolCategory,
  moves: ProtocolLabel['moves'] = 'any',
): ProtocolLabel => ({ id, name, category, moves });

const SYSTEM = label('system', 'System Program', 'system', 'sol');
const COMPUTE_BUDGET = label('compute-budget', 'Compute Budget', 'system', 'none');
const LOOKUP_TABLES = label('address-lookup-table', 'Address Lookup Table', 'system', 'none');
const ATA = label('associated-token-account', 'Associated Token Account', 'system', 'sol');
const SPL_TOKEN = label('spl-token', 'SPL Token', 'payments', 'tokens');
const TOKEN_2022 = label('token-2022', 'Token-2022', 'payments', 'tokens');
const MEMO = label('memo', 'SPL Memo', 'other', 'none');
const NATIVE_STAKING = label('native-staking', 'Native Staking', 'staking', 'sol');
const JUPITER = label('jupiter', 'Jupiter', 'aggregator');
const JUPITER_PERPS = label('jupiter-perps', 'Jupiter Perpetuals', 'perpetuals');
const RAYDIUM = label('raydium', 'Raydium', 'dex');
const RAYDIUM_LAUNCHLAB = label('raydium-launchlab', 'Raydium LaunchLab', 'launchpad');
const ORCA = label('orca', 'Orca', 'dex');
const METEORA = label('meteora', 'Meteora', 'dex');
const METEORA_DBC = label('meteora-dbc', 'Meteora Dynamic Bonding Curve', 'launchpad');
const PHOENIX = label('phoenix', 'Phoenix', 'dex');
const OPENBOOK = label('openbook', 'OpenBook', 'dex');
const PUMP_FUN = label('pump-fun', 'Pump.fun', 'launchpad');
const PUMPSWAP = label('pumpswap', 'PumpSwap', 'dex');
const MARINADE = label('marinade', 'Marinade', 'liquid_staking');
const STAKE_POOL = label('spl-stake-pool', 'SPL Stake Pool (Jito and other LSTs)', 'liquid_staking');
const SANCTUM = label('sanctum', 'Sanctum', 'liquid_staking');
const KAMINO = label('kamino', 'Kamino Lend', 'lending');
const MARGINFI = label('marginfi', 'marginfi', 'lending');
const SOLEND = label('solend', 'Save (Solend)', 'lending');
const DRIFT = label('drift', 'Drift', 'perpetuals');
const MANGO = label('mango', 'Mango Markets', 'perpetuals');
const METAPLEX = label('metaplex', 'Metaplex', 'nft');
const MAGIC_EDEN = label('magic-eden', 'Magic Eden', 'nft');
const TENSOR = label('tensor', 'Tensor', 'nft');
const WORMHOLE = label('wormhole', 'Wormhole', 'bridge');
const DEBRIDGE = label('debridge', 'deBridge', 'bridge');
const SPL_GOVERNANCE = label('spl-governance', 'SPL Governance (Realms)', 'governance');
const SQUADS = label('squads', 'Squads Multisig', 'governance');
const NAME_SERVICE = label('name-service', 'Solana Name Service', 'other');

/** Program id -> protocol. */
export const PROGRAM_LABELS: ReadonlyMap<string, ProtocolLabel> = new Map([
  ['11111111111111111111111111111111', SYSTEM],
  ['ComputeBudget111111111111111111111111111111', COMPUTE_BUDGET],
  ['AddressLookupTab1e1111111111111111111111111', LOOKUP_TABLES],
  ['ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL', ATA],
  ['TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA', SPL_TOKEN],
  ['TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb', TOKEN_2022],
  ['MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr', MEMO],
  ['Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo', MEMO],
  ['Stake11111111111111111111111111111111111111', NATIVE_STAKING],
  // Jupiter: aggregator v6 and v4, limit orders v1 and v2, DCA; perpetuals apart
  ['JUP6LkbZbjS1jKKwapdHNy74zcZ3tLUZoi5QNyVTaV4', JUPITER],
  ['JUP4Fb2cqiRUcaTHdrPC8h2gNsA2ETXiPDD33WcGuJB', JUPITER],
  ['jupoNjAxXgZ4rjzxzPMP4oxduvQsQtZzyknqvzYNrNu', JUPITER],
  ['j1o2qRpjcyUwEvwtcfhEQefh773ZgjxcVRry7LDqg5X', JUPITER],
  ['DCA265Vj8a9CEuX1eb1LWRnDT7uK6q1xMipnNyatn23M', JUPITER],
  ['PERPHjGBqRHArX4DySjwM6UJHiR3sWAatqfdBS2qQJu', JUPITER_PERPS],
  // Raydium: AMM v4, stable AMM, CLMM, CPMM; LaunchLab apart
  ['675kPX9MHTjS2zt1qfr1NYHuzeLXfQM9H24wFSUt1Mp8', RAYDIUM],
  ['5quBtoiQqxF9Jv6KYKctB59NT3gtJD2Y65kdnB1Uev3h', RAYDIUM],
  ['CAMMCzo5YL8w4VFF8KVHrK22GGUsp5VTaW7grrKgrWqK', RAYDIUM],
  ['CPMMoo8L3F4NbTegBCKVNunggL7H1ZpdTHKxQB5qKP1C', RAYDIUM],
  ['LanMV9sAd7wArD4vJFi2qDdfnVhFxYSUg6eADduJ3uj', RAYDIUM_LAUNCHLAB],
  // Orca: Whirlpools and the legacy token-swap pools
  ['whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc', ORCA],
  ['9W959DqEETiGZocYWCQPaJ6sBmUzgfxXfqGeTEdp3aQP', ORCA],
  // Meteora: DLMM, DAMM v2, DAMM v1, dynamic vaults; the bonding curve apart
  ['LBUZKhRxPF3XUpBCjp4YzTKgLccjZhTSDM9YuVaPwxo', METEORA],
  ['cpamdpZCGKUy5JxQXB4dcpGPiikHawvSWAd6mEn1sGG', METEORA],
  ['Eo7WjKq67rjJQSZxS6z3YkapzY3eMj6Xy8X5EQVn5UaB', METEORA],
  ['24Uqj9JCLxUeoC3hGfh5W3s9FM9uCHDS2SG3LYwBpyTi', METEORA],
  ['dbcij3LWUppWqq96dh6gJWwBifmcGfLSB5D4DuSMaqN', METEORA_DBC],
  ['PhoeNiXZ8ByJGLkxNfZRnkUfjvmuYqLR89jjFHGqdXY', PHOENIX],
  ['opnb2LAfJYbRMAHHvqjCwQxanZn7ReEHp1k81EohpZb', OPENBOOK],
  ['6EF8rrecthR5Dkzon8Nwu78hRvfCKubJ14M5uBEwF6P', PUMP_FUN],
  ['pAMMBay6oceH9fJKBRHGP5D4bD4sWpmSwMn52FMfXEA', PUMPSWAP],
  ['MarBmsSgKXdrN1egZf5sqe1TMai9K1rChYNDJgjq7aD', MARINADE],
  ['SPoo1Ku8WFXoNDMHPsrGSTSG1Y47rzgn41SLUNakuHy', STAKE_POOL],
  ['stkitrT1Uoy18Dk1fTrgPw8W6MVzoCfYoAFT4MLsmhq', SANCTUM],
  ['KLend2g3cP87fffoy8q1mQqGKjrxjC8boSyAYavgmjD', KAMINO],
  ['MFv2hWf31Z9kbCa1snEPYctwafyhdvnV7FZnsebVacA', MARGINFI],
  ['So1endDq2YkqhipRh3WViPa8hdiSpxWy6z3Z6tMCpAo', SOLEND],
  ['dRiftyHA39MWEi3m9aunc5MzRF1JYuBsbn6VPcn33UH', DRIFT],
  ['4MangoMjqJ2firMokCjjGgoK8d4MXcrgL7XJaL3w6fVg', MANGO],
  // Metaplex: token metadata, Bubblegum (compressed NFTs), Core
  ['metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s', METAPLEX],
  ['BGUMAp9Gq7iTEuizy4pqaxsTyUCBK68MDfK752saRPUY', METAPLEX],
  ['CoREENxT6tW1HoK8ypY1SxRMZTcVPm7R94rH4PZNhX7d', METAPLEX],
  ['M2mx93ekt1fmXSVkTrUL9xVFHkmME8HTUi5Cyc5aF7K', MAGIC_EDEN],
  ['TSWAPaqyCSx2KABk68Shruf4rp7CxcNi8hAsbdwmHbN', TENSOR],
  ['TCMPhJdwDryooaGtiocG1u3xcYbRpiJzb283XfCZsDp', TENSOR],
  // Wormhole core bridge and token bridge; deBridge DLN source
  ['worm2ZoG2kUd4vFXhvjh93UUH596ayRfgQ2MgjNMTth', WORMHOLE],
  ['wormDTUJ6AWPNvk59vGQbDvGJmqbDTdgWgAqcLBCgUb', WORMHOLE],
  ['src5qyZHqTqecJV4aY6Cb6zDZLMDzrDKKezs22MPHr4', DEBRIDGE],
  ['GovER5Lthms3bLBqWub97yVrMmEogzX7xNjdXpPPCVZw', SPL_GOVERNANCE],
  ['SQDS4ep65T869zMMBKyuUq6aD6EgTu8psMjkvj52pCf', SQUADS],
  ['namesLPneVptA9Z5rqUDD9tMTWEJwofgaYwp8cawRkX', NAME_SERVICE],
]);

/**
 * USD stablecoins priced at 1 USD each (6 decimals): the only assets whose USD value is known without a
 * price feed. Mainnet USDC and USDT, and devnet USDC (the local ledger's stablecoin).
 */
export const USD_STABLECOINS: ReadonlyMap<string, number> = new Map([
  ['EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', 6],
  ['Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB', 6],
  ['4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU', 6],
]);
