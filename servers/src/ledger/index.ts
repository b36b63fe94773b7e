// The local Solana ledger: LiteSVM behind a Solana JSON-RPC endpoint and a faucet.
export {
  DEFAULT_BLOCKHASH_LIFETIME_SLOTS,
  DEFAULT_SLOT_MS,
  DEVNET_GENESIS_HASH,
  FINALITY_DEPTH,
  LedgerError,
  LocalLedger,
  type LedgerAccount,
  type LocalLedgerOptions,
  type TxRecord,
} from './ledger';
export {
  startLedgerRpc,
  DEFAULT_FAUCET_CAPS,
  type FaucetCaps,
  type LedgerRpcOptions,
  type LedgerRpcServer,
} from './server';
export { handleRpcBody, API_VERSION, MAX_AIRDROP_LAMPORTS } from './rpc';
export { parseJson, stringifyJson } from './json';
export { describeTransactionError, type TransactionErrorJson } from '../solana/tx-error';
export {
  associatedTokenAddress,
  TOKEN_PROGRAM,
  TOKEN_2022_PROGRAM,
  ASSOCIATED_TOKEN_PROGRAM,
  SYSTEM_PROGRAM,
} from '../solana/programs';
