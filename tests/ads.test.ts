import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import axios from 'axios';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SOLANA_DEVNET, USDC_DEVNET, base58Encode, usdToAtomic, type Campaign } from '@agent-economy/contracts';
import {
  AuthenticationError,
  BadRequestError,
  ConflictError,
  NotFoundError,
  PaymentRequiredError,
  PermissionDeniedError,
  UnprocessableEntityError,
  createClient,
  walletFromSecretKey,
  type Signer,
} from '@agent-economy/sdk';
import { createAdsApp } from '../servers/src/services/ads';
import { generateWallet } from '../servers/src/solana/keys';
import { startEconomy, type Economy } from './support/economy';
import { inProcessRoutes } from '../servers/src/http/in-process';
import { startService, type RunningService } from './support/servers';

// The ad network on the local ledger, with the facilitator pointed at it: advertisers fund campaigns on chain, the
// facilitator asks for a recommendation after each settlement and reports it, and nobody else can make a campaign pay.

const OTHER_NETWORK = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp';
const DAY = 86_400_000;

let economy: Economy;
let ads: RunningService;
let adsUrl = '';
let clock = new Date();
let advertiser: Signer, stranger: Signer, facilitatorSigner: Signer, buyer: Signer;
let advertiserId: string;

const fail = <T>(p: Promise<T>) =>
  p.then(
    () => expect.unreachable('expected an error') as never,
    (e) => e,
  );
const fakeTx = () => base58Encode(randomBytes(64));
const later = (ms: number) => new Date(clock.getTime() + ms).toISOString();
/** A client of the ad network proving `wallet`; it pays (activations) within 100 USD when it may. */
const as = (wallet?: Signer, pays = false) =>
  createClient({
    baseUrls: { ads: adsUrl, education: economy.education.url },
    ...(wallet ? { wallet } : {}),
    payments: pays ? { maxPerCallUsd: '100', maxTotalUsd: '1000', rpcUrl: economy.rpcUrl } : false,
    maxRetries: 0,
  });
const balance = (wallet: string) => economy.ledger.tokenBalance(wallet);
/** Waits for the facilitator's fire-and-forget report to land (a condition, not a duration). */
async function until<T>(read: () => Promise<T>, ok: (value: T) => boolean): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const value = await read();
    if (ok(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('condition not reached');
}

const lessonUrl = () => `${economy.education.url}/api/lesson`;
const exerciseUrl = () => `${economy.education.url}/api/exercise`;

function campaignBody(overrides: Record<string, unknown> = {}) {
  return {
    advertiser_id: advertiserId,
    name: 'Exercises for lesson buyers',
    budget_total: '2000000',
    budget_daily: '1000000',
    max_bid_amount: '500000',
    schedule_start: new Date(clock.getTime() - 60_000).toISOString(),
    rec_resource_url: exerciseUrl(),
    rec_description: 'Practice what you just learned',
    rec_sponsor_name: 'Exercise Lab',
    target_categories: ['education'],
    ...overrides,
  };
}

/** Creates and funds (pays budget_total on chain) and activates a campaign. */
async function fundedCampaign(overrides: Record<string, unknown> = {}): Promise<Campaign> {
  const created = await as(advertiser).ads.campaigns.create({ body: campaignBody(overrides) as never });
  return await as(advertiser, true).ads.campaigns.activate({ params: { id: created.id } });
}

/** The facilitator's side of a settlement, done by hand: match (recording the settlement) then the event. */
async function sponsoredSettlement(campaignUrl = lessonUrl(), payer = buyer.address) {
  const txHash = fakeTx();
  const match = await as(facilitatorSigner).ads.match({
    body: {
      resourceUrl: campaignUrl,
      resourceDescription: 'A lesson',
      network: SOLANA_DEVNET,
      payerWallet: payer,
      settledAmount: '50000',
      txHash,
    },
  });
  return { txHash, match };
}
const eventOf = (txHash: string, campaignId: string, payer = buyer.address) => ({
  txHash,
  network: SOLANA_DEVNET,
  resource: { url: lessonUrl(), description: 'A lesson' },
  payer,
  settledAmount: '50000',
  campaignId,
  timestamp: clock.toISOString(),
});

/** The facilitator's report that the payer of `originalTxHash` went on to pay for the recommended resource. */
const conversionOf = (originalTxHash: string, campaignId: string) => ({
  originalTxHash,
  conversionTxHash: fakeTx(),
  campaignId,
  payerWallet: buyer.address,
  convertedResourceUrl: exerciseUrl(),
  network: SOLANA_DEVNET,
  timestamp: later(1000),
});

beforeAll(async () => {
  economy = await startEconomy({ facilitator: { ads: { url: () => adsUrl } } });
  ads = await economy.startPaidService(
    (context) => createAdsApp(context, { catalog: () => [economy.education.url], now: () => clock }),
    { id: 'ads', sol: true },
  );
  adsUrl = ads.url;
  const owner = generateWallet();
  [advertiser, stranger, facilitatorSigner, buyer] = await Promise.all([
    walletFromSecretKey(owner.secretKey),
    walletFromSecretKey(generateWallet().secretKey),
    walletFromSecretKey(economy.feePayer.secretKey),
    walletFromSecretKey(economy.buyer.secretKey),
  ]);
  await economy.ledger.mintTo(advertiser.address, usdToAtomic('100'));
  await economy.ledger.airdrop(advertiser.address, 1_000_000_000n);
  const created = await as(advertiser).ads.advertisers.create({
    body: { name: 'Exercise Lab', wallet_address: advertiser.address, network: SOLANA_DEVNET },
  });
  advertiserId = created.id;
}, 60_000);
afterAll(async () => {
  await economy?.close();
});

describe('advertisers', () => {
  it('registers an advertiser proven by its own wallet, once per wallet and network', async () => {
    const list = await as().ads.advertisers.list({ query: {} });
    expect(list.items.find((a) => a.id === advertiserId)).toMatchObject({
      name: 'Exercise Lab',
      wallet_address: advertiser.address,
      network: SOLANA_DEVNET,
    });
    expect(
      (
        await fail(
          as(advertiser).ads.advertisers.create({
            body: { name: 'Again', wallet_address: advertiser.address, network: SOLANA_DEVNET },
          }),
        )
      ).code,
    ).toBe('advertiser_exists');
    const mismatch = await fail(
      as(stranger).ads.advertisers.create({
        body: { name: 'Thief', wallet_address: advertiser.address, network: SOLANA_DEVNET },
      }),
    );
    expect(mismatch).toBeInstanceOf(PermissionDeniedError);
    expect(mismatch.code).toBe('wallet_mismatch');
    expect(
      (
        await fail(
          as(stranger).ads.advertisers.create({
            body: { name: 'Elsewhere', wallet_address: stranger.address, network: OTHER_NETWORK },
          }),
        )
      ).code,
    ).toBe('unsupported_network');
    expect(
      await fail(
        as().ads.advertisers.create({
          body: { name: 'Anon', wallet_address: stranger.address, network: SOLANA_DEVNET },
        }),
      ),
    ).toBeInstanceOf(AuthenticationError);
    const bad = await fail(
      as(stranger).ads.advertisers.create({ body: { name: '', wallet_address: 'nope', network: SOLANA_DEVNET } }),
    );
    expect(bad).toBeInstanceOf(BadRequestError);
    expect(JSON.stringify(bad.details)).toContain('wallet_address');
    expect((await as().ads.advertisers.list({ query: {} })).items).toHaveLength(list.items.length);
    // Paged newest first.
    await as(stranger).ads.advertisers.create({
      body: { name: 'Second', wallet_address: stranger.address, network: SOLANA_DEVNET },
    });
    const first = await as().ads.advertisers.list({ query: { limit: 1 } });
    expect(first.items[0]).toMatchObject({ name: 'Second', campaign_count: 0, spent_total: '0' });
    const second = await as().ads.advertisers.list({ query: { limit: 1, cursor: first.nextCursor! } });
    expect(second).toMatchObject({ items: [{ id: advertiserId }], nextCursor: null });
  });
});

describe('campaigns', () => {
  it('creates a draft with every field, in atomic units, and refuses what breaks the rules', async () => {
    const body = campaignBody({
      schedule_end: later(30 * DAY),
      target_networks: [SOLANA_DEVNET],
      target_transports: ['http'],
      target_url_patterns: [`${economy.education.url}/*`],
      rec_catalog_id: 'exercise-rag',
      bid_strategy: 'cpa',
    });
    const created = await as(advertiser).ads.campaigns.create({ body: body as never });
    expect(created).toMatchObject({
      status: 'draft',
      advertiser_id: advertiserId,
      advertiser: { id: advertiserId, wallet_address: advertiser.address },
      budget_total: '2000000',
      budget_daily: '1000000',
      max_bid_amount: '500000',
      bid_strategy: 'cpa',
      target_categories: ['education'],
      target_networks: [SOLANA_DEVNET],
      target_transports: ['http'],
      rec_catalog_id: 'exercise-rag',
      spent_total: '0',
      spent_today: '0',
      budget_funded: '0',
      budget_held: '0',
      activated_at: null,
      stats: { matches: 0, settlements: 0, impressions: 0, conversions: 0 },
    });
    expect(created.id).toMatch(/^cmp_/);
    expect(await as().ads.campaigns.get({ params: { id: created.id } })).toEqual(created);
    const drafts = await as().ads.campaigns.list({ query: { status: 'draft', advertiser_id: advertiserId } });
    expect(drafts.items.map((c) => c.id)).toContain(created.id);

    const refuse = async (overrides: Record<string, unknown>, code: string) =>
      expect((await fail(as(advertiser).ads.campaigns.create({ body: campaignBody(overrides) as never }))).code).toBe(
        code,
      );
    await refuse({ budget_daily: '3000000' }, 'budget_daily_exceeds_total');
    await refuse({ max_bid_amount: '1000001' }, 'bid_exceeds_daily_budget');
    await refuse({ schedule_end: new Date(clock.getTime() - 120_000).toISOString() }, 'schedule_invalid');
    await refuse({ advertiser_id: 'adv_0000000000000000' }, 'advertiser_not_found');
    const notOwner = await fail(as(stranger).ads.campaigns.create({ body: campaignBody() as never }));
    expect(notOwner.code).toBe('not_advertiser_owner');
    for (const overrides of [
      { budget_total: '0' },
      { budget_total: '1.5' },
      { target_categories: ['Not A Slug'] },
      { rec_resource_url: 'ftp://x' },
      { bid_strategy: 'cpc' },
    ]) {
      expect(
        await fail(as(advertiser).ads.campaigns.create({ body: campaignBody(overrides) as never })),
      ).toBeInstanceOf(BadRequestError);
    }
    expect(await fail(as().ads.campaigns.get({ params: { id: 'cmp_0000000000000000' } }))).toBeInstanceOf(
      NotFoundError,
    );
  });

  it('updates fields (owner only), replacing target lists and clearing with null', async () => {
    const created = await as(advertiser).ads.campaigns.create({
      body: campaignBody({ schedule_end: later(DAY), rec_catalog_id: 'x' }) as never,
    });
    const updated = await as(advertiser).ads.campaigns.update({
      params: { id: created.id },
      body: {
        name: 'Renamed',
        target_categories: [],
        schedule_end: null,
        rec_catalog_id: null,
        budget_daily: '800000',
      },
    });
    expect(updated).toMatchObject({
      name: 'Renamed',
      target_categories: [],
      schedule_end: null,
      rec_catalog_id: null,
      budget_daily: '800000',
      status: 'draft',
    });
    expect(
      (await fail(as(stranger).ads.campaigns.update({ params: { id: created.id }, body: { name: 'Mine' } }))).code,
    ).toBe('not_advertiser_owner');
    expect(
      (
        await fail(
          as(advertiser).ads.campaigns.update({ params: { id: created.id }, body: { max_bid_amount: '900000' } }),
        )
      ).code,
    ).toBe('bid_exceeds_daily_budget');
    expect(await fail(as(advertiser).ads.campaigns.update({ params: { id: created.id }, body: {} }))).toBeInstanceOf(
      BadRequestError,
    );
    expect((await as().ads.campaigns.get({ params: { id: created.id } })).name).toBe('Renamed');
  });
});

describe('funding, activation and pause', () => {
  it('activation pays the budget into the network wallet on chain; pause pays the unspent part back', async () => {
    const created = await as(advertiser).ads.campaigns.create({
      body: campaignBody({ target_categories: ['no-such-category'] }) as never,
    });
    // A stranger cannot fund or activate someone else's campaign: refused before any quote.
    expect((await fail(as(stranger, true).ads.campaigns.activate({ params: { id: created.id } }))).code).toBe(
      'not_advertiser_owner',
    );
    // Without paying, the quote is the whole budget.
    const quote = await fail(as(advertiser).ads.campaigns.activate({ params: { id: created.id } }));
    expect(quote).toBeInstanceOf(PaymentRequiredError);
    expect(JSON.stringify(quote)).toContain('2000000');
    const [vaultBefore, ownerBefore] = [balance(ads.context.wallet.address), balance(advertiser.address)];
    const active = await as(advertiser, true).ads.campaigns.activate({ params: { id: created.id } });
    expect(active).toMatchObject({ status: 'active', budget_funded: '2000000', budget_held: '2000000' });
    expect(active.activated_at).not.toBeNull();
    expect(balance(ads.context.wallet.address) - vaultBefore).toBe(2_000_000n);
    expect(ownerBefore - balance(advertiser.address)).toBe(2_000_000n);
    // Activating an active, funded campaign is free and changes nothing.
    const again = await as(advertiser).ads.campaigns.activate({ params: { id: created.id } });
    expect(again).toMatchObject({ status: 'active', budget_funded: '2000000' });

    const paused = await as(advertiser).ads.campaigns.pause({ params: { id: created.id } });
    expect(paused).toMatchObject({ status: 'paused', budget_refunded: '2000000', budget_held: '0' });
    expect(paused.last_refund_transaction).toMatch(/^[1-9A-HJ-NP-Za-km-z]{80,90}$/);
    expect(balance(advertiser.address)).toBe(ownerBefore);
    // Pausing again refunds nothing more.
    expect(await as(advertiser).ads.campaigns.pause({ params: { id: created.id } })).toMatchObject({
      status: 'paused',
      budget_refunded: '2000000',
    });
    expect(balance(advertiser.address)).toBe(ownerBefore);
    // Reactivating pays the budget in again.
    expect(await as(advertiser, true).ads.campaigns.activate({ params: { id: created.id } })).toMatchObject({
      status: 'active',
      budget_funded: '4000000',
      budget_held: '2000000',
    });
    await as(advertiser).ads.campaigns.pause({ params: { id: created.id } });
    expect(balance(advertiser.address)).toBe(ownerBefore);

    const draft = await as(advertiser).ads.campaigns.create({ body: campaignBody() as never });
    const notActive = await fail(as(advertiser).ads.campaigns.pause({ params: { id: draft.id } }));
    expect(notActive).toBeInstanceOf(ConflictError);
    expect(notActive.code).toBe('campaign_not_active');
    // Too large for one activation: refused before any quote.
    const huge = await as(advertiser).ads.campaigns.create({
      body: campaignBody({ budget_total: '2000000000000', budget_daily: '1000000' }) as never,
    });
    const tooLarge = await fail(as(advertiser, true).ads.campaigns.activate({ params: { id: huge.id } }));
    expect(tooLarge).toBeInstanceOf(UnprocessableEntityError);
    expect(tooLarge.code).toBe('budget_too_large');
    expect(balance(advertiser.address)).toBe(ownerBefore);
    // Beyond what the database's int8 holds (2^63 - 1): a 400 naming the field, not an overflow (a 500).
    for (const budget_total of ['9223372036854775808', '9'.repeat(25)]) {
      const over = await fail(as(advertiser).ads.campaigns.create({ body: campaignBody({ budget_total }) as never }));
      expect(over.status).toBe(400);
      expect(over.code).toBe('invalid_request');
      expect(JSON.stringify(over.details)).toContain('budget_total');
    }
    const most = await as(advertiser).ads.campaigns.create({
      body: campaignBody({ budget_total: '9223372036854775807', budget_daily: '1000000' }) as never,
    });
    expect(most.budget_total).toBe('9223372036854775807');
    expect(await fail(as(advertiser).ads.campaigns.pause({ params: { id: 'cmp_0000000000000000' } }))).toBeInstanceOf(
      NotFoundError,
    );
  });
});

describe('activation refunds', () => {
  it('a budget raised between the quote and the payment: the payment no longer matches the price and moves nothing', async () => {
    const draft = await as(advertiser).ads.campaigns.create({
      body: campaignBody({ budget_total: '1000000', target_categories: ['no-such-category'] }) as never,
    });
    const racing = axios.create();
    let raised = false;
    racing.interceptors.request.use(async (config) => {
      // Just as the paid retry leaves, the advertiser (in another tab) raises the budget.
      if (!raised && config.headers?.['payment-signature']) {
        raised = true;
        await as(advertiser).ads.campaigns.update({ params: { id: draft.id }, body: { budget_total: '1500000' } });
      }
      return config;
    });
    const before = balance(advertiser.address);
    const client = createClient({
      baseUrls: { ads: adsUrl },
      wallet: advertiser,
      axios: racing,
      payments: { maxPerCallUsd: '100', rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    const error = await fail(client.ads.campaigns.activate({ params: { id: draft.id } }));
    expect(raised).toBe(true);
    // The price is worked out again when the payment arrives (1.50 USD now): the 1.00 USD payment is refused unsettled.
    expect(error).toBeInstanceOf(PaymentRequiredError);
    expect(balance(advertiser.address)).toBe(before);
    // Paying the new price activates it.
    expect(await as(advertiser, true).ads.campaigns.activate({ params: { id: draft.id } })).toMatchObject({
      status: 'active',
      budget_funded: '1500000',
      budget_held: '1500000',
    });
    expect(before - balance(advertiser.address)).toBe(1_500_000n);
    await as(advertiser).ads.campaigns.pause({ params: { id: draft.id } });
    expect(balance(advertiser.address)).toBe(before);
  });
});

describe('match, events and the facilitator', () => {
  let campaign: Campaign;

  beforeAll(async () => {
    // The only campaign targeting education from here on (the others are paused or target nothing that exists).
    campaign = await fundedCampaign({ max_bid_amount: '400000' });
  });

  it('only the facilitator may ask for a match', async () => {
    const body = {
      resourceUrl: lessonUrl(),
      resourceDescription: '',
      network: SOLANA_DEVNET,
      payerWallet: buyer.address,
      settledAmount: '50000',
    };
    expect((await fail(as(stranger).ads.match({ body }))).code).toBe('not_facilitator');
    expect(await fail(as().ads.match({ body }))).toBeInstanceOf(AuthenticationError);
    const preview = await as(facilitatorSigner).ads.match({ body });
    expect(preview).toMatchObject({
      matched: true,
      campaignId: campaign.id,
      recommendation: { resourceUrl: exerciseUrl(), sponsor: 'Exercise Lab' },
    });
    // Outside the targeting (category from the catalog, network, own resource): no match, and nothing else.
    expect(
      await as(facilitatorSigner).ads.match({ body: { ...body, resourceUrl: 'http://127.0.0.1:9/unknown' } }),
    ).toEqual({ matched: false });
    expect(await as(facilitatorSigner).ads.match({ body: { ...body, network: OTHER_NETWORK } })).toMatchObject({
      matched: true,
    });
    expect(await as(facilitatorSigner).ads.match({ body: { ...body, resourceUrl: exerciseUrl() } })).toEqual({
      matched: false,
    });
    expect(await fail(as(facilitatorSigner).ads.match({ body: { ...body, settledAmount: '-1' } }))).toBeInstanceOf(
      BadRequestError,
    );
  });

  it('a paid lesson carries the recommendation on its receipt; the settlement is charged, the beacon counted once', async () => {
    const before = await as().ads.campaigns.get({ params: { id: campaign.id } });
    const client = createClient({
      baseUrls: { education: economy.education.url },
      wallet: buyer,
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    const lesson = await client.education.lesson.withResponse({
      body: { courseId: 'tool-use', lessonId: 'function-calling' },
    });
    const receipt = lesson.payment!;
    expect(receipt.sponsoredAccess).toMatchObject({
      delivered: true,
      campaignId: campaign.id,
      recommendations: [
        { resourceUrl: exerciseUrl(), description: 'Practice what you just learned', sponsor: 'Exercise Lab' },
      ],
      tracking: { conversionResource: exerciseUrl() },
    });
    const events = await until(
      () => as().ads.events.list({ query: { campaignId: campaign.id } }),
      (page) => page.items.some((e) => e.txHash === receipt.transaction),
    );
    const event = events.items.find((e) => e.txHash === receipt.transaction)!;
    // cpm: 0.40 USD per 1000 sponsored settlements = 400 atomic units each
    expect(event).toMatchObject({
      campaignId: campaign.id,
      payer: buyer.address,
      settledAmount: '50000',
      chargedAmount: '400',
      resource: { url: lessonUrl() },
    });
    const beacon = receipt.sponsoredAccess!.tracking.impressionBeacon;
    expect(beacon).toBe(`${adsUrl}/v1/track/impression/${campaign.id}?tx=${receipt.transaction}`);
    for (let i = 0; i < 3; i++) {
      const response = await fetch(beacon);
      expect(response.status).toBe(204);
      expect(await response.text()).toBe('');
    }
    await fetch(`${adsUrl}/v1/track/impression/${campaign.id}`);
    await fetch(`${adsUrl}/v1/track/impression/${campaign.id}?tx=${fakeTx()}`);
    expect((await fetch(`${adsUrl}/v1/track/impression/cmp_0000000000000000`)).status).toBe(404);
    const after = await as().ads.campaigns.get({ params: { id: campaign.id } });
    expect(after.stats).toEqual({
      matches: before.stats.matches + 1,
      settlements: before.stats.settlements + 1,
      impressions: before.stats.impressions + 1,
      conversions: 0,
    });
    expect(BigInt(after.spent_total) - BigInt(before.spent_total)).toBe(400n);
    expect(BigInt(after.budget_held)).toBe(2_000_000n - BigInt(after.spent_total));

    // Buying the recommended exercise is a conversion the facilitator reports (cpm: charged nothing).
    const exercise = await client.education.exercise.withResponse({ body: { courseId: 'rag', lessonId: 'chunking' } });
    const conversions = await until(
      () => as().ads.conversions.list({ params: { id: campaign.id }, query: {} }),
      (page) => page.items.length > 0,
    );
    expect(conversions.items[0]).toMatchObject({
      originalTxHash: receipt.transaction,
      conversionTxHash: exercise.payment!.transaction,
      payerWallet: buyer.address,
      convertedResourceUrl: exerciseUrl(),
      chargedAmount: '0',
      duplicate: false,
    });
    // The exercise is the campaign's own resource: no recommendation for it.
    expect(exercise.payment!.sponsoredAccess).toBeUndefined();
    // The payer may report it too: the same conversion, not charged twice.
    const { originalTxHash, conversionTxHash, campaignId, payerWallet, convertedResourceUrl, network, timestamp } =
      conversions.items[0]!;
    const again = await as(buyer).ads.conversions.create({
      body: { originalTxHash, conversionTxHash, campaignId, payerWallet, convertedResourceUrl, network, timestamp },
    });
    expect(again).toMatchObject({ duplicate: true, conversionId: conversions.items[0]!.conversionId });

    // A recommendation converts once: the next exercise converts only the lesson bought since.
    const second = (
      await client.education.lesson.withResponse({ body: { courseId: 'tool-use', lessonId: 'function-calling' } })
    ).payment!;
    expect(second.sponsoredAccess).toMatchObject({ campaignId: campaign.id });
    const next = await client.education.exercise.withResponse({ body: { courseId: 'rag', lessonId: 'chunking' } });
    const both = await until(
      () => as().ads.conversions.list({ params: { id: campaign.id }, query: {} }),
      (page) => page.items.length > 1,
    );
    expect(both.items.map((c) => [c.originalTxHash, c.conversionTxHash])).toEqual([
      [second.transaction, next.payment!.transaction],
      [receipt.transaction, exercise.payment!.transaction],
    ]);
  });

  it('two purchases of the recommended resource at once convert its recommendation once', async () => {
    const client = createClient({
      baseUrls: { education: economy.education.url },
      wallet: buyer,
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    const lesson = (
      await client.education.lesson.withResponse({ body: { courseId: 'tool-use', lessonId: 'function-calling' } })
    ).payment!;
    expect(lesson.sponsoredAccess).toMatchObject({ campaignId: campaign.id });
    // Settled side by side, so the facilitator claims their conversions in one statement.
    const exercises = await Promise.all(
      ['chunking', 'rag-basics'].map((lessonId) =>
        client.education.exercise.withResponse({ body: { courseId: 'rag', lessonId } }),
      ),
    );
    const transactions = exercises.map((e) => e.payment!.transaction);
    const claimed = await economy.facilitator.database.db
      .selectFrom('facilitator_sponsored' as never)
      .select(['tx_hash' as never, 'converted_tx' as never])
      .where('converted_tx' as never, 'in', transactions as never)
      .execute();
    expect(claimed).toHaveLength(1);
    expect(claimed[0]).toMatchObject({ tx_hash: lesson.transaction });
    const conversions = await until(
      () => as().ads.conversions.list({ params: { id: campaign.id }, query: {} }),
      (page) => page.items.some((c) => c.originalTxHash === lesson.transaction),
    );
    const converted = conversions.items.filter((c) => c.originalTxHash === lesson.transaction);
    expect(converted).toHaveLength(1);
    expect(transactions).toContain(converted[0]!.conversionTxHash);
  });

  /** A settlement of a lesson, as the facilitator reports it to /v1/match (a new transaction each time). */
  const settledLesson = () => ({
    resourceUrl: lessonUrl(),
    resourceDescription: 'A lesson',
    network: SOLANA_DEVNET,
    payerWallet: buyer.address,
    settledAmount: '50000',
    txHash: fakeTx(),
  });

  it('a settlement reported again answers its first match and is counted once', async () => {
    const before = await as().ads.campaigns.get({ params: { id: campaign.id } });
    const body = settledLesson();
    const [first, raced] = await Promise.all([
      as(facilitatorSigner).ads.match({ body }),
      as(facilitatorSigner).ads.match({ body }),
    ]);
    expect(first).toMatchObject({ matched: true, campaignId: campaign.id });
    expect(raced).toEqual(first);
    expect(await as(facilitatorSigner).ads.match({ body })).toEqual(first);
    // Recorded without a match (the campaign's own resource): reported again for a resource it targets, still none.
    const unmatched = { ...body, resourceUrl: exerciseUrl(), txHash: fakeTx() };
    expect(await as(facilitatorSigner).ads.match({ body: unmatched })).toEqual({ matched: false });
    expect(await as(facilitatorSigner).ads.match({ body: { ...unmatched, resourceUrl: lessonUrl() } })).toEqual({
      matched: false,
    });
    const after = await as().ads.campaigns.get({ params: { id: campaign.id } });
    expect(after.stats.matches).toBe(before.stats.matches + 1);
  });

  it('settlements reported together are recorded once each; one reported twice keeps its first record', async () => {
    const local = inProcessRoutes.lookup(adsUrl)!.match!;
    // Matching nothing (the campaign's own resource), in one turn as concurrent settlements report them: one insert.
    const bodies = Array.from({ length: 6 }, () => ({ ...settledLesson(), resourceUrl: exerciseUrl() }));
    const again = { ...bodies[0]!, settledAmount: '1' };
    const answers = await Promise.all([...bodies, again].map((body) => local(body, facilitatorSigner.address)));
    expect(answers).toEqual(Array(7).fill({ status: 200, body: { matched: false } }));
    const rows = await ads.database.db
      .selectFrom('ads_settlements' as never)
      .select(['tx_hash' as never, 'settled_amount' as never])
      .where('tx_hash' as never, 'in', bodies.map((b) => b.txHash) as never)
      .execute();
    expect(rows).toHaveLength(6);
    const amounts = (rows as { tx_hash: string; settled_amount: unknown }[]).map((r) => String(r.settled_amount));
    expect(amounts).toEqual(Array(6).fill('50000'));
  });

  it('in process (a facilitator beside it, as under npm start) it answers as over HTTP, refusals included', async () => {
    // What the facilitator of this process calls after each settlement (facilitator/sponsored.ts).
    const local = inProcessRoutes.lookup(adsUrl)?.match;
    expect(local).toBeDefined();
    const body = settledLesson();
    const before = await as().ads.campaigns.get({ params: { id: campaign.id } });
    const matched = await local!(body, facilitatorSigner.address);
    expect(matched).toMatchObject({ status: 200, body: { matched: true, campaignId: campaign.id } });
    // The same settlement over HTTP: its first match, recorded once.
    expect(await as(facilitatorSigner).ads.match({ body })).toEqual(matched.body);
    expect((await as().ads.campaigns.get({ params: { id: campaign.id } })).stats.matches).toBe(
      before.stats.matches + 1,
    );
    // Anyone but the trusted facilitator, no caller, a malformed body: refused as HTTP refuses them, nothing recorded.
    const refused = await local!({ ...body, txHash: fakeTx() }, stranger.address);
    expect(refused).toMatchObject({ status: 403, body: { error: { code: 'not_facilitator' } } });
    expect(await local!({ ...body, txHash: fakeTx() }, undefined)).toMatchObject({
      status: 401,
      body: { error: { code: 'siwx_invalid' } },
    });
    const malformed = await local!({ ...body, settledAmount: '-1' }, facilitatorSigner.address);
    expect(malformed).toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } });
    expect(JSON.stringify(malformed.body)).toContain('body.settledAmount');
    expect((await as().ads.campaigns.get({ params: { id: campaign.id } })).stats.matches).toBe(
      before.stats.matches + 1,
    );
  });

  it('a made-up settlement costs a campaign nothing: events and conversions are checked against what the facilitator reported', async () => {
    const before = await as().ads.campaigns.get({ params: { id: campaign.id } });
    const forged = await fail(as(stranger).ads.events.create({ body: eventOf(fakeTx(), campaign.id) }));
    expect(forged).toBeInstanceOf(NotFoundError);
    expect(forged.code).toBe('settlement_not_found');
    // Even the facilitator's key cannot charge a settlement that /v1/match never delivered for the campaign.
    expect((await fail(as(facilitatorSigner).ads.events.create({ body: eventOf(fakeTx(), campaign.id) }))).code).toBe(
      'settlement_not_found',
    );
    // A delivered settlement reported with other fields is refused too.
    const { txHash } = await sponsoredSettlement();
    expect(
      (await fail(as(stranger).ads.events.create({ body: eventOf(txHash, campaign.id, stranger.address) }))).code,
    ).toBe('settlement_not_found');
    expect(
      (await fail(as(stranger).ads.events.create({ body: { ...eventOf(txHash, campaign.id), settledAmount: '1' } })))
        .code,
    ).toBe('event_invalid');
    expect((await fail(as(stranger).ads.events.create({ body: eventOf(txHash, 'cmp_0000000000000000') }))).code).toBe(
      'campaign_not_found',
    );
    // Reported by anyone, a delivered settlement is charged once.
    const first = await as(stranger).ads.events.create({ body: eventOf(txHash, campaign.id) });
    const second = await as(facilitatorSigner).ads.events.create({ body: eventOf(txHash, campaign.id) });
    expect(first).toMatchObject({ accepted: true, duplicate: false, chargedAmount: '400' });
    expect(second).toMatchObject({ accepted: true, duplicate: true, eventId: first.eventId, chargedAmount: '400' });

    // Conversions: a stranger cannot claim the buyer's; the buyer must cite a settlement the facilitator reported.
    const conversion = {
      originalTxHash: txHash,
      conversionTxHash: fakeTx(),
      campaignId: campaign.id,
      payerWallet: buyer.address,
      convertedResourceUrl: exerciseUrl(),
      network: SOLANA_DEVNET,
      timestamp: later(1000),
    };
    expect((await fail(as(stranger).ads.conversions.create({ body: conversion }))).code).toBe('not_payer');
    expect((await fail(as(buyer).ads.conversions.create({ body: conversion }))).code).toBe('conversion_unverified');
    expect(
      (await fail(as(buyer).ads.conversions.create({ body: { ...conversion, originalTxHash: fakeTx() } }))).code,
    ).toBe('event_not_found');
    expect(
      (await fail(as(buyer).ads.conversions.create({ body: { ...conversion, conversionTxHash: txHash } }))).code,
    ).toBe('conversion_invalid');
    expect(
      (await fail(as(buyer).ads.conversions.create({ body: { ...conversion, convertedResourceUrl: lessonUrl() } })))
        .code,
    ).toBe('conversion_invalid');
    expect(
      (await fail(as(buyer).ads.conversions.create({ body: { ...conversion, timestamp: later(-DAY) } }))).code,
    ).toBe('conversion_invalid');
    expect(
      await fail(as(buyer).ads.conversions.create({ body: { ...conversion, conversionTxHash: 'x' } })),
    ).toBeInstanceOf(BadRequestError);

    const after = await as().ads.campaigns.get({ params: { id: campaign.id } });
    expect(BigInt(after.spent_total) - BigInt(before.spent_total)).toBe(400n);
    expect(after.stats.conversions).toBe(before.stats.conversions);
  });

  it('the facilitator settles normally while the ad network is down', async () => {
    const saved = adsUrl;
    adsUrl = 'http://127.0.0.1:9';
    try {
      const client = createClient({
        baseUrls: { education: economy.education.url },
        wallet: buyer,
        payments: { rpcUrl: economy.rpcUrl },
        maxRetries: 0,
      });
      const before = balance(economy.education.context.wallet.address);
      const lesson = await client.education.lesson.withResponse({
        body: { courseId: 'tool-use', lessonId: 'function-calling' },
      });
      expect(lesson.payment!.transaction).toMatch(/^[1-9A-HJ-NP-Za-km-z]{80,90}$/);
      expect(lesson.payment!.sponsoredAccess).toBeUndefined();
      expect(balance(economy.education.context.wallet.address) - before).toBe(50_000n);
    } finally {
      adsUrl = saved;
    }
  });

  it('settles normally when the ad network hangs: the recommendation is given up after the time limit', async () => {
    const saved = adsUrl;
    const hanging = createServer(() => undefined);
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    adsUrl = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`;
    try {
      const client = createClient({
        baseUrls: { education: economy.education.url },
        wallet: buyer,
        payments: { rpcUrl: economy.rpcUrl },
        maxRetries: 0,
      });
      const lesson = await client.education.lesson.withResponse({
        body: { courseId: 'tool-use', lessonId: 'function-calling' },
      });
      expect(lesson.payment!.transaction).toMatch(/^[1-9A-HJ-NP-Za-km-z]{80,90}$/);
      expect(lesson.payment!.sponsoredAccess).toBeUndefined();
    } finally {
      adsUrl = saved;
      hanging.closeAllConnections();
      hanging.close();
    }
  });

  it('lists events newest first, 50 by default, paged with a cursor', async () => {
    const settlements = await Promise.all(Array.from({ length: 52 }, () => sponsoredSettlement()));
    await Promise.all(
      settlements.map((s) => as(facilitatorSigner).ads.events.create({ body: eventOf(s.txHash, campaign.id) })),
    );
    const page = await as().ads.events.list({ query: {} });
    expect(page.items).toHaveLength(50);
    expect(page.nextCursor).not.toBeNull();
    const rest = await as().ads.events.list({ query: { cursor: page.nextCursor!, limit: 200 } });
    expect(new Set([...page.items, ...rest.items].map((e) => e.eventId)).size).toBe(
      page.items.length + rest.items.length,
    );
    expect(rest.nextCursor).toBeNull();
    const mine = await as().ads.events.list({ query: { campaignId: campaign.id, limit: 200 } });
    expect(mine.items.length).toBeGreaterThanOrEqual(53);
    expect(mine.items.every((e) => e.campaignId === campaign.id)).toBe(true);
    const times = page.items.map((e) => Date.parse(e.receivedAt));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    const one = await as().ads.events.list({ query: { limit: 1 } });
    expect(one.nextCursor).not.toBeNull();
    const next = await as().ads.events.list({ query: { limit: 1, cursor: one.nextCursor! } });
    expect(next.items[0]!.eventId).not.toBe(one.items[0]!.eventId);
    expect(await fail(as().ads.events.list({ query: { limit: 201 } }))).toBeInstanceOf(BadRequestError);
    expect(await fail(as().ads.events.list({ query: { cursor: 'garbage' } }))).toBeInstanceOf(BadRequestError);
  });
});

describe('budgets', () => {
  it('concurrent settlements never spend more than the budget; the campaign ends exhausted', async () => {
    // Pause every other education campaign so this one wins every match.
    for (const c of (await as().ads.campaigns.list({ query: { status: 'active', advertiser_id: advertiserId } }))
      .items) {
      await as(advertiser).ads.campaigns.pause({ params: { id: c.id } });
    }
    // cpa: 1000 per conversion; 3500 in all: three full charges and one of 500, however the reports interleave.
    const small = await fundedCampaign({
      budget_total: '3500',
      budget_daily: '3500',
      max_bid_amount: '1000',
      bid_strategy: 'cpa',
    });
    const settlements = await Promise.all(Array.from({ length: 8 }, () => sponsoredSettlement()));
    expect(settlements.every((s) => s.match.matched && s.match.campaignId === small.id)).toBe(true);
    // A cpa campaign pays nothing per settlement.
    const events = await Promise.all(
      settlements.map((s) => as(facilitatorSigner).ads.events.create({ body: eventOf(s.txHash, small.id) })),
    );
    expect(events.map((e) => e.chargedAmount)).toEqual(Array(8).fill('0'));
    // Two replicas of the ad network on one database take the reports at once.
    const replica = await startService(
      (context) => createAdsApp(context, { catalog: () => [economy.education.url], now: () => clock }),
      {
        id: 'ads',
        database: ads.database,
        wallet: ads.context.wallet,
        rpcUrl: economy.rpcUrl,
        paywall: { feePayer: economy.feePayer.address, facilitatorUrl: economy.facilitator.url },
      },
    );
    const onReplica = createClient({
      baseUrls: { ads: replica.url },
      wallet: facilitatorSigner,
      payments: false,
      maxRetries: 0,
    });
    const receipts = await Promise.all(
      settlements.map((s, i) =>
        (i % 2 ? onReplica : as(facilitatorSigner)).ads.conversions.create({ body: conversionOf(s.txHash, small.id) }),
      ),
    ).finally(() => replica.close());
    const charged = receipts.map((r) => BigInt(r.chargedAmount)).sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
    expect(charged).toEqual([1000n, 1000n, 1000n, 500n, 0n, 0n, 0n, 0n]);
    const after = await as().ads.campaigns.get({ params: { id: small.id } });
    expect(after).toMatchObject({ status: 'exhausted', spent_total: '3500', spent_today: '3500', budget_held: '0' });
    // Exhausted: it matches nothing, cannot be activated, and the manifest leaves it out.
    expect((await sponsoredSettlement()).match).toEqual({ matched: false });
    expect((await fail(as(advertiser, true).ads.campaigns.activate({ params: { id: small.id } }))).code).toBe(
      'campaign_ended',
    );
    expect((await as().ads.manifest()).campaigns.map((c) => c.campaignId)).not.toContain(small.id);
    // Raising the budget makes it paused; activating pays only the difference.
    expect(
      await as(advertiser).ads.campaigns.update({ params: { id: small.id }, body: { budget_total: '5500' } }),
    ).toMatchObject({ status: 'paused' });
    const before = balance(advertiser.address);
    expect(await as(advertiser, true).ads.campaigns.activate({ params: { id: small.id } })).toMatchObject({
      status: 'active',
      budget_funded: '5500',
      budget_held: '2000',
    });
    expect(before - balance(advertiser.address)).toBe(2000n);
    expect(
      (await fail(as(advertiser).ads.campaigns.update({ params: { id: small.id }, body: { budget_total: '3000' } })))
        .code,
    ).toBe('budget_below_spent');
    await as(advertiser).ads.campaigns.pause({ params: { id: small.id } });
  });

  it('the daily budget resets at 00:00 UTC and the schedule end completes the campaign', async () => {
    const daily = await fundedCampaign({
      budget_total: '3000',
      budget_daily: '1000',
      max_bid_amount: '1000',
      bid_strategy: 'cpa',
      schedule_end: later(3 * DAY),
    });
    const first = await sponsoredSettlement();
    expect(first.match).toMatchObject({ campaignId: daily.id });
    expect(
      (await as(facilitatorSigner).ads.conversions.create({ body: conversionOf(first.txHash, daily.id) }))
        .chargedAmount,
    ).toBe('1000');
    // Today's budget is spent: no match until tomorrow.
    expect((await sponsoredSettlement()).match).toEqual({ matched: false });
    clock = new Date(clock.getTime() + DAY);
    const next = await as().ads.campaigns.get({ params: { id: daily.id } });
    expect(next).toMatchObject({ spent_today: '0', spent_total: '1000', status: 'active' });
    expect((await sponsoredSettlement()).match).toMatchObject({ campaignId: daily.id });
    const manifest = await as().ads.manifest();
    expect(manifest.campaigns.find((c) => c.campaignId === daily.id)).toMatchObject({
      recommendation: { resourceUrl: exerciseUrl(), sponsor: 'Exercise Lab' },
      targeting: { categories: ['education'] },
      impressionBeacon: `${adsUrl}/v1/track/impression/${daily.id}`,
    });
    expect(manifest.ttlSeconds).toBe(60);
    expect((await as().ads.manifest()).version).toBe(manifest.version);
    // Past schedule_end: completed, out of the manifest, and pausing withdraws what it still holds.
    clock = new Date(clock.getTime() + 3 * DAY);
    expect(await as().ads.campaigns.get({ params: { id: daily.id } })).toMatchObject({ status: 'completed' });
    expect((await sponsoredSettlement()).match).toEqual({ matched: false });
    expect((await as().ads.manifest()).version).not.toBe(manifest.version);
    const before = balance(advertiser.address);
    expect(await as(advertiser).ads.campaigns.pause({ params: { id: daily.id } })).toMatchObject({
      status: 'completed',
      budget_held: '0',
      budget_refunded: '2000',
    });
    expect(balance(advertiser.address) - before).toBe(2000n);
  });
});

describe('health', () => {
  it('counts the catalog resources it read from the services’ descriptors', async () => {
    const health = await as().ads.health();
    // the education service's paid routes: lesson, quiz, exercise, tutor
    expect(health).toEqual({ status: 'ok', service: 'ads', version: '1.0.0', bazaarResources: 4 });
  });
});

describe('example', () => {
  it('npm run example:ads: an advertiser funds a campaign, the demo wallet gets its recommendation and converts', async () => {
    clock = new Date();
    const dataDir = mkdtempSync(join(tmpdir(), 'ae-ads-example-'));
    try {
      const keyFile = join(dataDir, 'demo-agent.json');
      writeFileSync(keyFile, JSON.stringify([...economy.buyer.secretKey]));
      writeFileSync(
        join(dataDir, 'services.json'),
        JSON.stringify({
          chain: {
            rpcUrl: economy.rpcUrl,
            stablecoin: USDC_DEVNET,
            network: SOLANA_DEVNET,
            faucet: `${economy.rpcUrl}/faucet`,
          },
          demoWallet: { address: economy.buyer.address, keyFile },
          services: [
            { id: 'ads', url: adsUrl, wallet: ads.context.wallet.address },
            { id: 'education', url: economy.education.url, wallet: economy.education.context.wallet.address },
          ],
        }),
      );
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ['--import', 'tsx', '--conditions=ae-source', 'examples/ads.ts'],
        {
          cwd: fileURLToPath(new URL('..', import.meta.url)),
          env: { ...process.env, DATA_DIR: dataDir },
        },
      );
      expect(stdout).toContain('funded with 10 USD by the faucet');
      expect(stdout).toContain('is active: paid 5 USD into the ad network');
      expect(stdout).toContain('Agent bought "Function Calling" for 0.05 USD');
      expect(stdout).toContain('"Practice what you just learned with a graded exercise" by Exercise Lab');
      expect(stdout).toContain('Impression beacon: HTTP 204');
      expect(stdout).toContain('Conversion recorded: cnv_');
      expect(stdout).toContain('spent 0.001 USD (1000 atomic units), 4.999 USD of the 5 USD budget left');
      expect(stdout).toContain('1 match(es), 1 sponsored settlement(s), 1 impression(s), 1 conversion(s)');
      expect(stdout).toContain('Paused: 4.999 USD paid back to the advertiser');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
