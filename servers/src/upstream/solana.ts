import { createSolanaRpc, type Rpc, type SolanaRpcApi } from '@solana/kit';
import type { ServiceContext } from '../runtime/context';
import { UpstreamTracker } from './tracker';

/** The chain a data service reads (`source.mode: "chain"`): the local ledger or a real cluster's JSON-RPC. */
export interface SolanaSource {
  rpc: Rpc<SolanaRpcApi>;
  /** "local-ledger" or "solana-rpc": the name in `source.providers` and in the health route. */
  provider: string;
  tracker: UpstreamTracker;
  /** One read of the chain, recorded for health; a failure becomes 502 upstream_unavailable. */
  read<T>(request: (rpc: Rpc<SolanaRpcApi>) => Promise<T>): Promise<T>;
}

export function solanaSource(context: Pick<ServiceContext, 'rpcUrl' | 'localChain'>, tracker?: UpstreamTracker): SolanaSource {
  const provider = context.localChain ? 'local-ledger' : 'solana-rpc';
  const own = tracker ?? new UpstreamTracker('chain', [provider]);
  const rpc = createSolanaRpc(context.rpcUrl);
  return { rpc, provider, tracker: own, read: (request) => own.call(provider, () => request(rpc)) };
}
