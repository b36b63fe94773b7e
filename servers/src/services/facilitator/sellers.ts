import { HttpError } from '../../runtime/errors';
import { RESOURCE_SERVER_HEADER, verifyResourceRequest } from '../../runtime/resource-auth';
import type { SettlementKind, SettlementStore } from './store';

// Whom the fee payer works for. It pays the fees of every settlement, so it settles only payments to the
// sellers it serves: registered payTo wallets (the deployment's services, FACILITATOR_SELLERS), or any payTo
// when the call is signed by a registered resource server (a marketplace paying its sellers directly). A
// stranger moving 1 atomic unit between two wallets of their own is refused before the chain is asked.
// Then caps per window, counted per kind of settlement (x402 and charges apart, so a flood of one does not
// starve the other): in all, per payTo and per payer.

export interface SellerRegistry {
  /** payTo wallets the fee payer settles for. Live: the owner may add to the set while the app runs. */
  sellers: ReadonlySet<string>;
  /** Wallets of resource servers whose signed calls are settled for any payTo. */
  resourceServers: ReadonlySet<string>;
}

/** A request as the gate reads it (Express's, with the body's bytes kept by the runtime). */
export interface SignedRequest {
  header(name: string): string | undefined;
  method: string;
  rawBody?: Buffer;
}

export function payeeGate(registry: SellerRegistry, now: () => Date = () => new Date()) {
  /** `address`, when it is a registered resource server (its identity proven by the caller); else 403. */
  const registered = (address: string): string => {
    if (!registry.resourceServers.has(address)) {
      throw new HttpError(
        403,
        'resource_server_unauthorized',
        `${address} is not a resource server this facilitator settles for (FACILITATOR_RESOURCE_SERVERS)`,
        { resourceServer: address },
      );
    }
    return address;
  };
  return {
    /**
     * The registered resource server that signed this call to `route` (/verify, /settle, /mpp/settle), or
     * undefined when the call is unsigned. A signature that does not hold, or a signer not registered, is 403.
     */
    resourceServer(req: SignedRequest, route: string): string | undefined {
      const header = req.header(RESOURCE_SERVER_HEADER);
      if (header === undefined) return undefined;
      const verdict = verifyResourceRequest(header, req.method, route, req.rawBody ?? Buffer.alloc(0), now().getTime());
      if ('error' in verdict) throw new HttpError(403, 'resource_server_unauthorized', verdict.error);
      return registered(verdict.address);
    },

    registered,

    /** 403 payee_not_served unless `payTo` is a registered seller or a registered resource server signed the call. */
    admit(payTo: string, resourceServer: string | undefined): void {
      if (resourceServer !== undefined || registry.sellers.has(payTo)) return;
      throw new HttpError(
        403,
        'payee_not_served',
        `this facilitator pays the fees of payments to the sellers it serves; ${payTo} is not one (register it in FACILITATOR_SELLERS, or have its resource server sign its calls with the ${RESOURCE_SERVER_HEADER} header)`,
        { payTo },
      );
    },
  };
}

export type PayeeGate = ReturnType<typeof payeeGate>;

/**
 * Backpressure on the fee payer: settlements claimed per window, per kind of settlement, in all, per payTo and per
 * payer.
 */
export interface SettleCaps {
  global: number;
  perSeller: number;
  perPayer: number;
  windowSeconds: number;
}

/**
 * Design (the spec names the codes, not the values): per minute and kind, 600 in all, 120 to one seller, 60 from one
 * payer.
 */
export const DEFAULT_SETTLE_CAPS: SettleCaps = { global: 600, perSeller: 120, perPayer: 60, windowSeconds: 60 };

/** How long a count far below its cap is trusted before the database is asked again. */
const COUNT_REUSE_MS = 250;

export function settleCaps(store: SettlementStore, caps: SettleCaps, now: () => Date) {
  // A count far below its cap (under half) is reused for COUNT_REUSE_MS, plus this replica's admissions since: an
  // over-estimate here (claims only leave the window), missing only other replicas' claims of those moments. Counting
  // the window on every settlement cost three queries each, and more the busier the window; near a cap (and for
  // any small cap) every settlement counts exactly, as before.
  const recent = new Map<string, { at: number; count: number; since: number }>();
  // One count of a filter at a time: the checks that need it meanwhile share its answer.
  const counting = new Map<string, Promise<{ at: number; count: number; oldest: Date | null }>>();
  const countOnce = (
    key: string,
    since: Date,
    filter: Parameters<SettlementStore['claimedSince']>[1],
    limit: number,
  ) => {
    let pending = counting.get(key);
    if (!pending) {
      const at = performance.now();
      pending = store
        .claimedSince(since, filter, limit)
        .then((counted) => ({ at, ...counted }))
        .finally(() => counting.delete(key));
      counting.set(key, pending);
    }
    return pending;
  };
  const fresh = (key: string, limit: number): boolean => {
    const seen = recent.get(key);
    return !!seen && performance.now() - seen.at < COUNT_REUSE_MS && (seen.count + seen.since) * 2 < limit;
  };
  return {
    /** 429 when this kind of settlement is at a cap in the window; Retry-After: when the oldest counted leaves it. */
    async check(kind: SettlementKind, payer: string, payTo: string): Promise<void> {
      // Counted from the claims in the database, so every replica sees the same load; requests racing past the
      // count together can overshoot by a few: the caps are backpressure, not accounting.
      const at = now();
      const since = new Date(at.getTime() - caps.windowSeconds * 1000);
      const route = kind === 'x402' ? 'x402 settlements' : 'charges';
      const limits = [
        {
          key: `${kind} all`,
          filter: {},
          limit: caps.global,
          code: 'global_settle_cap_exceeded',
          what: `${route} in all`,
          details: {},
        },
        {
          key: `${kind} to ${payTo}`,
          filter: { payTo },
          limit: caps.perSeller,
          code: 'seller_settle_cap_exceeded',
          what: `${route} to ${payTo}`,
          details: { recipient: payTo },
        },
        {
          key: `${kind} from ${payer}`,
          filter: { payer },
          limit: caps.perPayer,
          code: 'payer_settle_cap_exceeded',
          what: `${route} from ${payer}`,
          details: { payer },
        },
      ];
      for (const { key, filter, limit, code, what, details } of limits) {
        if (fresh(key, limit)) continue;
        const { at: counted, count, oldest } = await countOnce(key, since, { kind, ...filter }, limit);
        if (count < limit) {
          if (recent.size >= 10_000) {
            for (const [k, v] of recent) if (counted - v.at >= COUNT_REUSE_MS) recent.delete(k);
          }
          if (!((recent.get(key)?.at ?? -Infinity) >= counted)) recent.set(key, { at: counted, count, since: 0 });
          continue;
        }
        recent.delete(key);
        const retryAfter = Math.max(
          1,
          Math.ceil(((oldest ?? at).getTime() + caps.windowSeconds * 1000 - at.getTime()) / 1000),
        );
        throw new HttpError(
          429,
          code,
          `${count} ${what} were settled in the last ${caps.windowSeconds} s, the limit; try again later`,
          { limit, windowSeconds: caps.windowSeconds, ...details },
          { 'retry-after': String(retryAfter) },
        );
      }
      for (const { key } of limits) {
        const seen = recent.get(key);
        if (seen) seen.since++;
      }
    },
  };
}
