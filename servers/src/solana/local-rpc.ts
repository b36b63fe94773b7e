import { inProcessRegistry } from '../http/in-process';

// A ledger served by this very process (npm start, the test economy) answers the JSON-RPC calls of the services
// beside it without a round trip over loopback HTTP: the same request text, the same handler, the same response
// text, only the sockets, the HTTP parsing and the fetch client are skipped (they were a fifth of a settlement's
// CPU). Callers elsewhere, and every call once the server is closed, go over HTTP as before.

/** The largest request body the ledger reads; a larger one goes over HTTP to be refused there (413). */
export const MAX_RPC_BODY_BYTES = 1024 * 1024;

/** Answers a JSON-RPC request body with the response text (undefined: notifications only); never throws. */
export type LocalRpcHandler = (body: string, traceparent: string | undefined) => string | undefined;

const ledgers = inProcessRegistry<LocalRpcHandler>();

/** Serves `url`'s JSON-RPC in this process until the returned function is called (when the server closes). */
export const serveLocally = (url: string, handler: LocalRpcHandler): (() => void) => ledgers.serve(url, handler);

/** The handler of a ledger this process serves at `url`, if any. */
export const localRpc = (url: string): LocalRpcHandler | undefined => ledgers.lookup(url);
