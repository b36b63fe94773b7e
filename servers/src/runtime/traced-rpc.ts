import { createDefaultRpcTransport, createSolanaRpcFromTransport, type RpcTransport } from '@solana/kit';
import { SpanKind, currentTrace, currentTraceparent, inSpan } from '../http/tracing';
import { TOO_LARGE, asKitRead, asRead, localRpc } from '../solana/local-rpc';

/**
 * createSolanaRpc(url), with each call made while a request is served sent as a client span of it and carrying
 * its `traceparent`, so the chain's JSON-RPC (the local ledger) sees the trace. Calls outside a request (timers,
 * start-up) go out as before. A ledger served by this process is called directly (solana/local-rpc.ts): the same
 * request and response as over HTTP, in the shapes each side's JSON reader gives them.
 */
export function tracedSolanaRpc(url: string) {
  const plain = createDefaultRpcTransport({ url });
  const local = async <TResponse>(config: Parameters<RpcTransport>[0], http: () => Promise<TResponse>) => {
    const handler = localRpc(url);
    const request = handler && asRead(config.payload);
    if (!handler || request === TOO_LARGE) return http();
    config.signal?.throwIfAborted();
    return asKitRead(handler(request, currentTraceparent())) as TResponse;
  };
  const transport = (<TResponse>(config: Parameters<RpcTransport>[0]): Promise<TResponse> => {
    if (!currentTrace()) return local(config, () => plain<TResponse>(config));
    const method = String((config.payload as { method?: unknown } | undefined)?.method ?? 'batch');
    return inSpan(`solana rpc ${method}`, SpanKind.CLIENT, { 'rpc.system': 'jsonrpc', 'rpc.method': method }, () =>
      local(config, () =>
        // A transport's headers are fixed when it is made: one per traced call (without coalescing, which only
        // merges identical calls made in the same tick).
        createDefaultRpcTransport({ url, headers: { traceparent: currentTraceparent()! } })<TResponse>(config),
      ),
    );
  }) as typeof plain;
  return createSolanaRpcFromTransport(transport);
}
