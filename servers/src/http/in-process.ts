// What this very process serves, by URL: a caller that finds its target here calls it directly instead of over
// loopback HTTP. The ledger's JSON-RPC (solana/local-rpc.ts), and routes a service offers in process
// (runtime/in-process-route.ts: the facilitator's /verify, /settle and /mpp/session/voucher, the ad network's
// /v1/match). An entry lives while its server listens; callers elsewhere, and every call once the server is closed,
// go over HTTP as before.
// No imports: the ledger, the runtime and the services all read it.

/** A URL's normal form ("http://127.0.0.1:8899/"), or undefined for one with a query or fragment (never served). */
function keyOf(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    return parsed.search || parsed.hash ? undefined : parsed.href;
  } catch {
    return undefined;
  }
}

export interface InProcessRegistry<H> {
  /** Serves `url` in this process until the returned function is called (when the server closes). */
  serve(url: string, handler: H): () => void;
  /** The handler this process serves at `url`, if any. */
  lookup(url: string): H | undefined;
}

/** One kind of in-process handler (JSON-RPC, a service's routes), by the URL it is served at. */
export function inProcessRegistry<H>(): InProcessRegistry<H> {
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
    serve(url, handler) {
      const k = key(url);
      if (k) served.set(k, handler);
      return () => {
        if (k && served.get(k) === handler) served.delete(k);
      };
    },
    lookup(url) {
      const k = key(url);
      return k === undefined ? undefined : served.get(k);
    },
  };
}

/** An HTTP answer without the HTTP: status, body and the Retry-After header's value, if any. */
export interface InProcessAnswer {
  status: number;
  body: unknown;
  retryAfter?: string;
}

/**
 * A route a service answers in process for `caller`, the wallet the call is made for (what a signature proves over
 * HTTP: in process, holding the wallet is the proof, and only this process's own code reaches the registry).
 */
export type InProcessRoute = (body: unknown, caller: string | undefined) => Promise<InProcessAnswer>;

/** The routes each service of this process offers in process, by route key, at the URL it listens on. */
export const inProcessRoutes = inProcessRegistry<Readonly<Record<string, InProcessRoute>>>();

/**
 * An in-process route's answer, or an error once `ms` have passed without one: the limit its HTTP call would have. The
 * route's work is not cancelled; its late answer is dropped.
 */
export async function answerWithin(call: Promise<InProcessAnswer>, ms: number, what: string): Promise<InProcessAnswer> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([call, late]);
  } finally {
    clearTimeout(timer);
  }
}

const offered = new WeakMap<object, Readonly<Record<string, InProcessRoute>>>();

/** A service's app says which routes it answers in process; they are served once it listens (serveInProcess). */
export function offerInProcess(app: object, routes: Readonly<Record<string, InProcessRoute>>): void {
  offered.set(app, routes);
}

/**
 * Serves in process what `app` offers, at the URL it now listens on, until the returned function is called (when
 * its server closes). An app that offers nothing: nothing to undo.
 */
export function serveInProcess(app: object, url: string): () => void {
  const routes = offered.get(app);
  return routes ? inProcessRoutes.serve(url, routes) : () => undefined;
}
