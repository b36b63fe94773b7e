import type { Rpc, SolanaRpcApi } from '@solana/kit';
import { tracedFetch } from '../http/tracing';
import { tracedSolanaRpc } from '../runtime/traced-rpc';
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
  /**
   * The same method for many parameter lists, as JSON-RPC batches (BATCH_SIZE a request, a few in flight): one
   * round trip per hundred reads instead of one each. A request the node answers with an error is null.
   */
  batch<T>(method: string, paramsList: readonly unknown[][]): Promise<(T | null)[]>;
  /**
   * One JSON-RPC read, its result as plain JSON: numbers stay numbers (kit's client wraps every integer of the answer
   * in a BigInt, milliseconds of CPU for a page of a thousand signatures). An error answer fails the read (502).
   */
  call<T>(method: string, params: readonly unknown[]): Promise<T>;
}

/** Requests per JSON-RPC batch: what public nodes and the local ledger (MAX_BATCH_REQUESTS) accept. */
export const BATCH_SIZE = 100;
const BATCHES_IN_FLIGHT = 4;

export function solanaSource(
  context: Pick<ServiceContext, 'rpcUrl' | 'localChain'>,
  tracker?: UpstreamTracker,
): SolanaSource {
  const provider = context.localChain ? 'local-ledger' : 'solana-rpc';
  const own = tracker ?? new UpstreamTracker('chain', [provider]);
  // Reads made while a request is served carry its trace to the chain (runtime/traced-rpc.ts).
  const rpc = tracedSolanaRpc(context.rpcUrl);
  const read = <T>(request: (rpc: Rpc<SolanaRpcApi>) => Promise<T>) => own.call(provider, () => request(rpc));

  /** POSTs a JSON-RPC body to the chain, carrying the trace of the request being served. */
  async function post(method: string, body: string, what: string): Promise<unknown> {
    const response = await tracedFetch(`solana rpc ${method}`, context.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      signal: AbortSignal.timeout(30_000),
    });
    if (!response.ok) throw new Error(`the chain answered ${what} with HTTP ${response.status}`);
    return (await response.json()) as unknown;
  }

  async function call<T>(method: string, params: readonly unknown[]): Promise<T> {
    return own.call(provider, async () => {
      const answer = (await post(method, JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }), method)) as {
        result?: T;
        error?: { code?: unknown; message?: unknown };
      };
      if (answer?.error !== undefined || !('result' in (answer ?? {})))
        throw new Error(`the chain answered ${method} with ${JSON.stringify(answer?.error ?? answer).slice(0, 200)}`);
      return answer.result as T;
    });
  }

  async function batch<T>(method: string, paramsList: readonly unknown[][]): Promise<(T | null)[]> {
    const out: (T | null)[] = new Array(paramsList.length).fill(null);
    const chunks: number[] = [];
    for (let start = 0; start < paramsList.length; start += BATCH_SIZE) chunks.push(start);
    let next = 0;
    const worker = async () => {
      while (next < chunks.length) {
        const start = chunks[next++]!;
        const slice = paramsList.slice(start, start + BATCH_SIZE);
        const body = JSON.stringify(slice.map((params, i) => ({ jsonrpc: '2.0', id: start + i, method, params })));
        const answers = await own.call(provider, async () => {
          const parsed = await post(method, body, `a ${method} batch`);
          if (!Array.isArray(parsed))
            throw new Error(
              `the chain answered a ${method} batch without a batch (${JSON.stringify(parsed).slice(0, 200)})`,
            );
          return parsed as { id?: unknown; result?: T; error?: unknown }[];
        });
        for (const answer of answers) {
          if (
            typeof answer?.id === 'number' &&
            answer.id >= start &&
            answer.id < start + slice.length &&
            answer.error === undefined
          )
            out[answer.id] = answer.result ?? null;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(BATCHES_IN_FLIGHT, chunks.length) }, worker));
    return out;
  }

  return { rpc, provider, tracker: own, read, batch, call };
}
