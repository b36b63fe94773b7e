import { inProcessRegistry } from '../http/in-process';

// A ledger served by this very process (npm start, the test economy) answers the JSON-RPC calls of the services
// beside it without a round trip over loopback HTTP, and without the JSON text: the request goes in as the ledger's
// JSON reader would have read kit's text, and the answer comes back as kit's reader would have read the ledger's
// (asRead, asKitRead below). Only the sockets, the HTTP parsing, the fetch client and the two JSON round trips are
// skipped (a fifth of a settlement's CPU, then a twentieth of a paid call's). Callers elsewhere, and every call once
// the server is closed, go over HTTP as before.

/** The largest request body the ledger reads; a larger one goes over HTTP to be refused there (413). */
export const MAX_RPC_BODY_BYTES = 1024 * 1024;

/**
 * Answers a JSON-RPC request (one or a batch) in the shape the ledger reads JSON in, with the response in the shape it
 * writes (undefined: notifications only); never throws.
 */
export type LocalRpcHandler = (request: unknown, traceparent: string | undefined) => unknown;

const ledgers = inProcessRegistry<LocalRpcHandler>();

/** Serves `url`'s JSON-RPC in this process until the returned function is called (when the server closes). */
export const serveLocally = (url: string, handler: LocalRpcHandler): (() => void) => ledgers.serve(url, handler);

/** The handler of a ledger this process serves at `url`, if any. */
export const localRpc = (url: string): LocalRpcHandler | undefined => ledgers.lookup(url);

/** Too large to be answered in process: it goes over HTTP, to be refused as it would be there. */
export const TOO_LARGE = Symbol('larger than MAX_RPC_BODY_BYTES');

/**
 * A request as the ledger would read the JSON text kit writes for it: integers as numbers within 2^53 and bigints
 * beyond, members that are undefined (or functions) left out, undefined array items null, no number that is not
 * finite; TOO_LARGE when its strings alone pass MAX_RPC_BODY_BYTES.
 */
export function asRead(payload: unknown): unknown {
  let size = 0;
  const copy = (value: unknown, inArray: boolean): unknown => {
    switch (typeof value) {
      case 'bigint':
        return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
          ? Number(value)
          : value;
      case 'number':
        return Number.isFinite(value) ? value : null;
      case 'string':
        size += value.length;
        if (size > MAX_RPC_BODY_BYTES) throw TOO_LARGE;
        return value;
      case 'boolean':
        return value;
      case 'object':
        if (value === null) return null;
        if (Array.isArray(value)) return value.map((item) => copy(item, true));
        return Object.fromEntries(
          Object.entries(value)
            .filter(([, item]) => item !== undefined && typeof item !== 'function')
            .map(([key, item]) => [key, copy(item, false)]),
        );
      default:
        return inArray ? null : undefined;
    }
  };
  try {
    return copy(payload, false);
  } catch (error) {
    if (error === TOO_LARGE) return TOO_LARGE;
    throw error;
  }
}

/**
 * A response as kit reads the JSON text the ledger writes for it (parseJsonWithBigInts): every integer a bigint (a
 * number beyond 1e21 is written with an exponent, and stays a number), other numbers as they are, undefined members
 * left out and undefined array items null.
 */
export function asKitRead(value: unknown): unknown {
  switch (typeof value) {
    case 'number':
      if (!Number.isFinite(value)) return null;
      return Number.isInteger(value) && Math.abs(value) < 1e21 ? BigInt(value) : value;
    case 'bigint':
    case 'string':
    case 'boolean':
      return value;
    case 'object':
      if (value === null) return null;
      if (Array.isArray(value)) return value.map((item) => (item === undefined ? null : asKitRead(item)));
      return Object.fromEntries(
        Object.entries(value)
          .filter(([, item]) => item !== undefined)
          .map(([key, item]) => [key, asKitRead(item)]),
      );
    default:
      return null;
  }
}
