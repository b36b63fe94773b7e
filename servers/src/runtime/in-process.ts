// What this very process serves, by URL: a caller that finds its target here calls it directly instead of over
// loopback HTTP (the ledger's JSON-RPC in solana/local-rpc.ts, the facilitator's /verify and /settle in
// facilitator-client.ts). An entry lives while its server listens; callers elsewhere, and every call once the server
// is closed, go over HTTP as before. No imports: the ledger, the runtime and the services all read it.

/** A URL's normal form ("http://127.0.0.1:8899/"), or undefined for one with a query or fragment (never served). */
function keyOf(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    return parsed.search || parsed.hash ? undefined : parsed.href;
  } catch {
    return undefined;
  }
}

/** One kind of in-process handler (JSON-RPC, a facilitator), by the URL it is served at. */
export function inProcessRegistry<H>() {
  const served = new Map<string, H>();
  // Asked on every call: the normal form of each URL seen is remembered.
  const keys = new Map<string, string | undefined>();
  const key = (url: string): string | undefined => {
    if (keys.has(url)) return keys.get(url);
    const normal = keyOf(url);
    if (keys.size < 1000) keys.set(url, normal);
    return normal;
  };
  return {
    /** Serves `url` in this process until the returned function is called (when the server closes). */
    serve(url: string, handler: H): () => void {
      const k = key(url);
      if (k) served.set(k, handler);
      return () => {
        if (k && served.get(k) === handler) served.delete(k);
      };
    },
    /** The handler this process serves at `url`, if any. */
    lookup(url: string): H | undefined {
      const k = key(url);
      return k === undefined ? undefined : served.get(k);
    },
  };
}
