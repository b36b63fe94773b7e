import { randomBytes } from 'node:crypto';
import {
  base58Encode,
  type ads,
  type Conversion,
  type RecordedConversion,
  type RecordedEvent,
  type SettlementEvent,
} from '@agent-economy/contracts';
import type { Logger } from 'pino';
import type { ServerInferRequest } from '@ts-rest/core';
import type { RouterImplementation } from '../../runtime/app';
import { callerOf } from '../../runtime/app';
import { HttpError, conflict, notFound, unavailable, unprocessable } from '../../runtime/errors';
import type { Vault } from '../../runtime/vault';
import type { resourceCatalog } from './catalog';
import {
  beaconUrl,
  budgetProblem,
  canServe,
  decodeCursor,
  encodeCursor,
  heldOf,
  manifestVersion,
  pickCampaign,
  statusAt,
  toCampaign,
  toManifestCampaign,
  unfunded,
  type StoredCampaign,
} from './domain';
import type { AdsStore, CampaignChanges, ConversionRow, EventRow } from './store';

/** The settled payment of a settle-first activation, as the runtime hands it over. */
export interface ActivationPayment {
  key: string;
  transaction: string;
  payer: string;
  amount: bigint;
}

export interface AdsDeps {
  store: AdsStore;
  catalog: ReturnType<typeof resourceCatalog>;
  /** The network's wallet: activations pay into it, pauses refund from it. */
  vault: () => Promise<Vault>;
  /** Wallets of the facilitators this deployment trusts to report settlements. */
  facilitators: ReadonlySet<string>;
  /** The deployment's CAIP-2 network. */
  network: string;
  publicUrl: string;
  /** The settled activation payment of the request, when it carried one. */
  activationPayment: (res: unknown) => ActivationPayment | undefined;
  logger: Logger;
  now: () => Date;
}

/** Largest activation payment (the route's declared maximum price: 1,000,000 USD). */
export const MAX_ACTIVATION = 1_000_000_000_000n;
export const MANIFEST_TTL_SECONDS = 60;
const CLOCK_SKEW_MS = 5 * 60_000;

const newId = (prefix: string) => `${prefix}_${base58Encode(randomBytes(12))}`;
const forbidden = (code: string, message: string) => new HttpError(403, code, message);
const badCursor = () =>
  new HttpError(400, 'invalid_request', 'Invalid request: query.cursor is not a cursor this list gave', {
    fields: [{ field: 'query.cursor', message: 'is not a nextCursor of this list' }],
  });
const campaignNotFound = (id: string) => notFound('campaign_not_found', `No campaign ${id}`, { campaignId: id });

function cursorOf(cursor: string | undefined): number | undefined {
  const seq = decodeCursor(cursor);
  if (Number.isNaN(seq)) throw badCursor();
  return seq;
}

/** A page from rows fetched with limit + 1. */
function pageOf<R extends { seq: number }, T>(rows: R[], limit: number, map: (r: R) => T) {
  const items = rows.slice(0, limit);
  return { items: items.map(map), nextCursor: rows.length > limit ? encodeCursor(items.at(-1)!.seq) : null };
}

const toEvent = (e: EventRow): RecordedEvent => ({
  eventId: e.event_id,
  txHash: e.tx_hash,
  network: e.network,
  resource: { url: e.resource_url, description: e.resource_description },
  payer: e.payer,
  settledAmount: BigInt(e.settled_amount).toString(),
  campaignId: e.campaign_id,
  timestamp: new Date(e.settled_at).toISOString(),
  chargedAmount: BigInt(e.charged).toString(),
  receivedAt: new Date(e.received_at).toISOString(),
});

const toConversion = (c: ConversionRow, duplicate: boolean): RecordedConversion => ({
  conversionId: c.conversion_id,
  originalTxHash: c.original_tx,
  conversionTxHash: c.conversion_tx,
  campaignId: c.campaign_id,
  payerWallet: c.payer,
  convertedResourceUrl: c.converted_url,
  network: c.network,
  timestamp: new Date(c.converted_at).toISOString(),
  chargedAmount: BigInt(c.charged).toString(),
  recordedAt: new Date(c.recorded_at).toISOString(),
  duplicate,
});

/** Everything that can refuse an activation before it is quoted, under no lock (the handler checks again under one). */
export async function planActivation(
  deps: AdsDeps,
  id: string,
  caller: string | undefined,
): Promise<{ campaign: StoredCampaign; price: bigint }> {
  const campaign = await deps.store.campaign(id);
  if (!campaign) throw campaignNotFound(id);
  if (caller && caller !== campaign.advertiser.wallet)
    throw forbidden('not_advertiser_owner', 'Only the advertiser’s wallet may change its campaigns');
  assertActivatable(campaign, deps.now());
  const price = unfunded(campaign);
  if (price > MAX_ACTIVATION)
    throw unprocessable(
      'budget_too_large',
      'One activation can fund at most 1,000,000 USD: lower budget_total, or activate, pause and raise it in steps',
      { unfunded: price.toString() },
    );
  return { campaign, price };
}

function assertActivatable(c: StoredCampaign, now: Date) {
  const status = statusAt(c, now);
  if (status === 'exhausted' || status === 'completed') {
    throw conflict('campaign_ended', `Campaign ${c.id} is ${status}: raise budget_total or move schedule_end first`, {
      status,
    });
  }
}

async function ownedCampaign(deps: AdsDeps, id: string, caller: string): Promise<StoredCampaign> {
  const campaign = await deps.store.campaign(id);
  if (!campaign) throw campaignNotFound(id);
  if (caller !== campaign.advertiser.wallet)
    throw forbidden('not_advertiser_owner', 'Only the advertiser’s wallet may change its campaigns');
  return campaign;
}

function assertFacilitator(deps: AdsDeps, caller: string) {
  if (!deps.facilitators.has(caller))
    throw forbidden('not_facilitator', 'Only the facilitator this ad network trusts may call this route');
}

type MatchRequest = ServerInferRequest<typeof ads.router.match>['body'];

/**
 * POST /v1/match for `caller` (the facilitator that proved its wallet): the campaign to recommend after a settlement,
 * recorded once per settlement (over HTTP, or in process from a facilitator beside it: index.ts).
 */
export async function matchSettlement(deps: AdsDeps, body: MatchRequest, caller: string) {
  assertFacilitator(deps, caller);
  const { store, now } = deps;
  const at = now();
  const [facts, campaigns] = await Promise.all([deps.catalog.facts(body.resourceUrl), store.activeCampaigns(at)]);
  const winner = pickCampaign(campaigns, { resourceUrl: body.resourceUrl, network: body.network }, facts, at);
  if (body.txHash) {
    const recorded = await store.recordMatch(
      {
        tx_hash: body.txHash,
        network: body.network,
        resource_url: body.resourceUrl,
        payer: body.payerWallet,
        settled_amount: BigInt(body.settledAmount),
        campaign_id: winner?.id ?? null,
        reported_at: at,
      },
      at,
    );
    // A settlement reported again (or two reports of it racing) answers its first match: it was recorded, and
    // maybe delivered, once; the first choice stands.
    const chosen =
      recorded.campaign_id === winner?.id
        ? winner
        : recorded.campaign_id
          ? await store.campaign(recorded.campaign_id)
          : undefined;
    return chosen ? matchFound(deps, chosen, body.txHash) : { matched: false as const };
  }
  if (winner) await store.countMatch(winner.id, at);
  return winner ? matchFound(deps, winner) : { matched: false as const };
}

export function adsHandlers(deps: AdsDeps): RouterImplementation<typeof ads.router> {
  const { store, now } = deps;

  /** Sends the refunds a pause recorded; a chain that does not answer leaves them for the next pause. */
  async function sendRefunds(unsent: { key: string; campaign_id: string; to_wallet: string; amount: bigint }[]) {
    if (!unsent.length) return;
    const vault = await deps.vault();
    for (const refund of unsent) {
      const { transaction } = await vault.transfer({
        to: refund.to_wallet,
        amount: refund.amount,
        key: refund.key,
        memo: `ads refund ${refund.campaign_id}`,
      });
      await store.refundSent(refund.key, refund.campaign_id, transaction, now());
    }
  }

  return {
    match: async ({ body, res }) => ({ status: 200, body: await matchSettlement(deps, body, callerOf(res)) }),

    campaigns: {
      list: async ({ query }) => {
        await store.completeEnded(now());
        const rows = await store.campaigns({
          ...(query.status ? { status: [query.status] } : {}),
          ...(query.advertiser_id ? { advertiserId: query.advertiser_id } : {}),
          ...(query.cursor ? { before: cursorOf(query.cursor) } : {}),
          limit: query.limit + 1,
        });
        const at = now();
        return { status: 200, body: pageOf(rows, query.limit, (c) => toCampaign(c, at)) };
      },

      get: async ({ params }) => {
        const campaign = await store.campaign(params.id);
        if (!campaign) throw campaignNotFound(params.id);
        return { status: 200, body: toCampaign(campaign, now()) };
      },

      create: async ({ body, res }) => {
        const caller = callerOf(res);
        const advertiser = await store.advertiser(body.advertiser_id, now());
        if (!advertiser)
          throw notFound('advertiser_not_found', `No advertiser ${body.advertiser_id}`, {
            advertiserId: body.advertiser_id,
          });
        if (caller !== advertiser.wallet)
          throw forbidden('not_advertiser_owner', 'Only the advertiser’s wallet may create its campaigns');
        const at = now();
        const fields = {
          budgetTotal: BigInt(body.budget_total),
          budgetDaily: BigInt(body.budget_daily),
          maxBid: BigInt(body.max_bid_amount),
          spentTotal: 0n,
          scheduleStart: new Date(body.schedule_start),
          scheduleEnd: body.schedule_end ? new Date(body.schedule_end) : null,
        };
        const problem = budgetProblem(fields, at, true);
        if (problem) throw unprocessable(problem.code, problem.message);
        const id = newId('cmp');
        await store.insertCampaign(
          {
            id,
            advertiserId: advertiser.id,
            name: body.name,
            ...fields,
            bidStrategy: body.bid_strategy,
            targetCategories: [...new Set(body.target_categories)],
            targetNetworks: [...new Set(body.target_networks)],
            targetTransports: [...new Set(body.target_transports)],
            targetUrlPatterns: [...new Set(body.target_url_patterns)],
            recResourceUrl: body.rec_resource_url,
            recDescription: body.rec_description,
            recSponsorName: body.rec_sponsor_name,
            recCatalogId: body.rec_catalog_id ?? null,
          },
          at,
        );
        return { status: 201, body: toCampaign((await store.campaign(id))!, at) };
      },

      update: async ({ params, body, res }) => {
        await ownedCampaign(deps, params.id, callerOf(res));
        const at = now();
        const updated = await store.updateCampaign(
          params.id,
          (c) => {
            const next = {
              budgetTotal: body.budget_total !== undefined ? BigInt(body.budget_total) : c.budgetTotal,
              budgetDaily: body.budget_daily !== undefined ? BigInt(body.budget_daily) : c.budgetDaily,
              maxBid: body.max_bid_amount !== undefined ? BigInt(body.max_bid_amount) : c.maxBid,
              spentTotal: c.spentTotal,
              scheduleStart: body.schedule_start !== undefined ? new Date(body.schedule_start) : c.scheduleStart,
              scheduleEnd:
                body.schedule_end !== undefined
                  ? body.schedule_end
                    ? new Date(body.schedule_end)
                    : null
                  : c.scheduleEnd,
            };
            const problem = budgetProblem(
              next,
              at,
              body.schedule_end !== undefined || body.schedule_start !== undefined,
            );
            if (problem) throw unprocessable(problem.code, problem.message);
            const changes: CampaignChanges = {};
            if (body.name !== undefined) changes.name = body.name;
            if (body.budget_total !== undefined) changes.budget_total = next.budgetTotal;
            if (body.budget_daily !== undefined) changes.budget_daily = next.budgetDaily;
            if (body.max_bid_amount !== undefined) changes.max_bid = next.maxBid;
            if (body.bid_strategy !== undefined) changes.bid_strategy = body.bid_strategy;
            if (body.schedule_start !== undefined) changes.schedule_start = next.scheduleStart;
            if (body.schedule_end !== undefined) changes.schedule_end = next.scheduleEnd;
            if (body.rec_resource_url !== undefined) changes.rec_resource_url = body.rec_resource_url;
            if (body.rec_description !== undefined) changes.rec_description = body.rec_description;
            if (body.rec_sponsor_name !== undefined) changes.rec_sponsor_name = body.rec_sponsor_name;
            if (body.rec_catalog_id !== undefined) changes.rec_catalog_id = body.rec_catalog_id;
            if (body.target_categories) changes.target_categories = [...new Set(body.target_categories)];
            if (body.target_networks) changes.target_networks = [...new Set(body.target_networks)];
            if (body.target_transports) changes.target_transports = [...new Set(body.target_transports)];
            if (body.target_url_patterns) changes.target_url_patterns = [...new Set(body.target_url_patterns)];
            // An ended campaign given room again (more budget, a later end) is paused: activating it funds the rest.
            const status = statusAt(c, at);
            if (status === 'exhausted' && next.budgetTotal > c.spentTotal) changes.status = 'paused';
            if (status === 'completed' && (!next.scheduleEnd || next.scheduleEnd.getTime() > at.getTime()))
              changes.status = 'paused';
            return changes;
          },
          at,
        );
        if (!updated) throw campaignNotFound(params.id);
        return { status: 200, body: toCampaign(updated, at) };
      },

      activate: async ({ params, res }) => {
        const caller = callerOf(res);
        await ownedCampaign(deps, params.id, caller);
        const payment = deps.activationPayment(res);
        const at = now();
        const activated = await store.activate(
          params.id,
          payment
            ? {
                paymentKey: payment.key,
                transaction: payment.transaction,
                payer: payment.payer,
                amount: payment.amount,
              }
            : null,
          (c, replay) => {
            if (replay) return;
            assertActivatable(c, at);
            // The budget may have changed between the quote and the payment: never activate what is not covered.
            if (heldOf(c) < c.budgetTotal - c.spentTotal) {
              throw conflict(
                'funding_changed',
                'The campaign’s budget changed after the quote: what was paid does not cover it (the payment is refunded); activate again',
                {
                  required: (c.budgetTotal - c.spentTotal).toString(),
                  held: heldOf(c).toString(),
                },
              );
            }
          },
          at,
        );
        if (!activated) throw campaignNotFound(params.id);
        return { status: 200, body: toCampaign(activated, at) };
      },

      pause: async ({ params, res }) => {
        await ownedCampaign(deps, params.id, callerOf(res));
        const at = now();
        await store.completeEnded(at);
        const paused = await store.pause(
          params.id,
          (c) => {
            if (c.status === 'draft')
              throw conflict('campaign_not_active', `Campaign ${c.id} is a draft: it was never activated`, {
                status: c.status,
              });
          },
          at,
        );
        if (!paused) throw campaignNotFound(params.id);
        await sendRefunds(paused.unsent);
        return { status: 200, body: toCampaign((await store.campaign(params.id))!, now()) };
      },
    },

    advertisers: {
      list: async ({ query }) => {
        const rows = await store.advertisers(
          { ...(query.cursor ? { before: cursorOf(query.cursor) } : {}), limit: query.limit + 1 },
          now(),
        );
        return {
          status: 200,
          body: pageOf(rows, query.limit, (a) => ({
            id: a.id,
            name: a.name,
            wallet_address: a.wallet,
            network: a.network,
            campaign_count: a.campaign_count,
            active_campaigns: a.active_campaigns,
            spent_total: a.spent_total.toString(),
            created_at: a.created_at.toISOString(),
          })),
        };
      },

      create: async ({ body, res }) => {
        const caller = callerOf(res);
        if (caller !== body.wallet_address)
          throw forbidden('wallet_mismatch', 'The SIGN-IN-WITH-X proof must be signed by wallet_address');
        if (body.network !== deps.network) {
          throw unprocessable(
            'unsupported_network',
            `This ad network runs on ${deps.network}: campaigns are funded and refunded there`,
            { network: deps.network },
          );
        }
        const at = now();
        const id = newId('adv');
        if (
          !(await store.insertAdvertiser({
            id,
            name: body.name,
            wallet: body.wallet_address,
            network: body.network,
            created_at: at,
          }))
        ) {
          throw conflict(
            'advertiser_exists',
            `The wallet ${body.wallet_address} is already an advertiser on ${body.network}`,
          );
        }
        return {
          status: 201,
          body: {
            id,
            name: body.name,
            wallet_address: body.wallet_address,
            network: body.network,
            campaign_count: 0,
            active_campaigns: 0,
            spent_total: '0',
            created_at: at.toISOString(),
          },
        };
      },
    },

    events: {
      create: async ({ body }) => {
        const settlement = await deliveredSettlement(deps, body);
        const received = await store.recordEvent(
          {
            tx_hash: body.txHash,
            event_id: newId('evt'),
            campaign_id: body.campaignId,
            network: body.network,
            resource_url: body.resource.url,
            resource_description: body.resource.description,
            payer: body.payer,
            settled_amount: settlement.settled_amount,
            settled_at: new Date(body.timestamp),
            received_at: now(),
          },
          now(),
        );
        if (!received) throw campaignNotFound(body.campaignId);
        const { event, duplicate } = received;
        return {
          status: 200,
          body: {
            accepted: true as const,
            eventId: event.event_id,
            duplicate,
            chargedAmount: BigInt(event.charged).toString(),
          },
        };
      },

      list: async ({ query }) => {
        const rows = await store.events({
          ...(query.campaignId ? { campaignId: query.campaignId } : {}),
          ...(query.cursor ? { before: cursorOf(query.cursor) } : {}),
          limit: query.limit + 1,
        });
        return { status: 200, body: pageOf(rows, query.limit, toEvent) };
      },
    },

    conversions: {
      create: async ({ body, res }) => {
        await checkConversion(deps, body, callerOf(res));
        const recorded = await store.recordConversion(
          {
            conversion_tx: body.conversionTxHash,
            conversion_id: newId('cnv'),
            original_tx: body.originalTxHash,
            campaign_id: body.campaignId,
            payer: body.payerWallet,
            converted_url: body.convertedResourceUrl,
            network: body.network,
            converted_at: new Date(body.timestamp),
            recorded_at: now(),
          },
          now(),
        );
        if (!recorded) throw campaignNotFound(body.campaignId);
        return { status: 200, body: toConversion(recorded.conversion, recorded.duplicate) };
      },

      list: async ({ params, query }) => {
        if (!(await store.campaign(params.id))) throw campaignNotFound(params.id);
        const rows = await store.conversions({
          campaignId: params.id,
          ...(query.cursor ? { before: cursorOf(query.cursor) } : {}),
          limit: query.limit + 1,
        });
        return { status: 200, body: pageOf(rows, query.limit, (c) => toConversion(c, false)) };
      },
    },

    manifest: async () => {
      const at = now();
      const campaigns = (await store.activeCampaigns(at))
        .filter((c) => canServe(c, at))
        .sort((a, b) => a.seq - b.seq)
        .map((c) => toManifestCampaign(c, deps.publicUrl));
      return {
        status: 200,
        body: {
          version: manifestVersion(campaigns),
          generatedAt: at.toISOString(),
          ttlSeconds: MANIFEST_TTL_SECONDS,
          campaigns,
        },
      };
    },

    impression: async ({ params, query }) => {
      if (!(await store.campaign(params.campaignId))) throw campaignNotFound(params.campaignId);
      if (query.tx) await store.countImpression(params.campaignId, query.tx);
      return { status: 204, body: undefined };
    },

    health: async () => {
      try {
        await store.ping();
      } catch (error) {
        deps.logger.error({ err: error }, 'health check: database unreachable');
        throw unavailable('database_unavailable', 'The database does not answer', 5);
      }
      const catalog = await deps.catalog.current();
      return {
        status: 200,
        body: {
          status: catalog.asked > 0 && catalog.read === 0 ? ('degraded' as const) : ('ok' as const),
          service: 'ads',
          version: '1.0.0',
          bazaarResources: catalog.entries.length,
        },
      };
    },
  };
}

function matchFound(deps: AdsDeps, c: StoredCampaign, txHash?: string) {
  return {
    matched: true as const,
    campaignId: c.id,
    recommendation: { resourceUrl: c.recResourceUrl, description: c.recDescription, sponsor: c.recSponsorName },
    impressionBeacon: beaconUrl(deps.publicUrl, c.id, txHash),
    conversionResource: c.recResourceUrl,
  };
}

/**
 * The settlement an event reports, as the facilitator's /v1/match recorded it for the campaign: anything else is
 * made up (or another campaign's) and is refused, so no caller can charge a campaign for a settlement it never got.
 */
async function deliveredSettlement(deps: AdsDeps, event: SettlementEvent) {
  const settlement = await deps.store.settlement(event.txHash);
  const delivered =
    settlement &&
    settlement.campaign_id === event.campaignId &&
    settlement.payer === event.payer &&
    settlement.resource_url === event.resource.url &&
    settlement.network === event.network;
  if (!delivered) {
    if (!(await deps.store.campaign(event.campaignId))) throw campaignNotFound(event.campaignId);
    throw notFound(
      'settlement_not_found',
      `Transaction ${event.txHash} is not a settlement the facilitator reported with a match of campaign ${event.campaignId} for this payer, resource and network`,
      { txHash: event.txHash },
    );
  }
  if (settlement.settled_amount !== BigInt(event.settledAmount)) {
    throw unprocessable(
      'event_invalid',
      `settledAmount differs from the settlement the facilitator reported (${settlement.settled_amount})`,
      { settledAmount: settlement.settled_amount.toString() },
    );
  }
  return settlement;
}

/** A conversion must follow a delivered settlement of the campaign, by the same payer, to the recommended resource. */
async function checkConversion(deps: AdsDeps, body: Conversion, caller: string) {
  const campaign = await deps.store.campaign(body.campaignId);
  if (!campaign) throw campaignNotFound(body.campaignId);
  const original = await deps.store.settlement(body.originalTxHash);
  if (!original || original.campaign_id !== campaign.id) {
    throw notFound(
      'event_not_found',
      `Transaction ${body.originalTxHash} is not a sponsored settlement of campaign ${campaign.id}`,
      { originalTxHash: body.originalTxHash },
    );
  }
  const invalid = (message: string) => unprocessable('conversion_invalid', message);
  if (body.conversionTxHash === body.originalTxHash)
    throw invalid('conversionTxHash is the sponsored settlement itself');
  if (body.payerWallet !== original.payer) throw invalid('payerWallet is not the payer of the sponsored settlement');
  if (body.convertedResourceUrl !== campaign.recResourceUrl)
    throw invalid(`convertedResourceUrl is not the recommended resource ${campaign.recResourceUrl}`);
  // Compared with the facilitator's own time of the settlement when its event is recorded (one clock), else with when
  // it was reported here, allowing for the two machines' clocks to differ a little.
  const event = (await deps.store.events({ txHash: body.originalTxHash, limit: 1 }))[0];
  const settledAt = event ? new Date(event.settled_at).getTime() : original.reported_at.getTime() - CLOCK_SKEW_MS;
  if (Date.parse(body.timestamp) < settledAt) throw invalid('timestamp precedes the sponsored settlement');
  if (deps.facilitators.has(caller)) return;
  // Anyone else: the payer itself, citing a settlement the facilitator reported, paid by it for the recommended
  // resource.
  if (caller !== body.payerWallet)
    throw forbidden('not_payer', 'Only the facilitator or the payer itself may report a conversion');
  const conversion = await deps.store.settlement(body.conversionTxHash);
  if (
    !conversion ||
    conversion.payer !== body.payerWallet ||
    conversion.resource_url !== body.convertedResourceUrl ||
    conversion.network !== body.network
  ) {
    throw unprocessable(
      'conversion_unverified',
      `Transaction ${body.conversionTxHash} is not a settlement the facilitator reported of ${body.payerWallet} paying for ${body.convertedResourceUrl}`,
      {
        conversionTxHash: body.conversionTxHash,
      },
    );
  }
}
