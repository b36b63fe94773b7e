// A ledger served by this very process (npm start, the test economy) answers the JSON-RPC calls of the services
// beside it without a round trip over loopback HTTP: the same request text, the same handler, the same response
// text, only the sockets, the HTTP parsing and the fetch client are skipped (they were a fifth of a settlement's
// CPU). Callers elsewhere, and every call once the server is closed, go over HTTP as before. No imports: runtime and
// ledger both read this registry, neither importing the other.

/** The largest request body the ledger reads; a larger one goes over HTTP to be refused there (413). */
export const MAX_RPC_BODY_BYTES = 1024 * 1024;

/** Answers a JSON-RPC request body with the response text (undefined: notifications only); never throws. */
export type LocalRpcHandler = (body: string, traceparent: string | undefined) => string | undefined;

const served = new Map<string, LocalRpcHandler>();

const keys = new Map<string, string | undefined>();
/** The URL's normal form ("http://127.0.0.1:8899/"), remembered: it is asked on every call. */
const keyOf = (url: string): string | undefined => {
  if (keys.has(url)) return keys.get(url);
  let key: string | undefined;
  try {
    const parsed = new URL(url);
    key = parsed.search || parsed.hash ? undefined : parsed.href;
  } catch {
    key = undefined;
  }
  if (keys.size < 1000) keys.set(url, key);
  return key;
};

/** Serves `url`'s JSON-RPC in this process until the returned function is called (when the server closes). */
export function serveLocally(url: string, handler: LocalRpcHandler): () => void {
  const key = keyOf(url);
  if (key) served.set(key, handler);
  return () => {
    if (key && served.get(key) === handler) served.delete(key);
  };
}

/** The handler of a ledger this process serves at `url`, if any. */
export function localRpc(url: string): LocalRpcHandler | undefined {
  const key = keyOf(url);
  return key === undefined ? undefined : served.get(key);
}
