import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService, fixed, paymentErrors, standardErrors } from '@agent-economy/contracts';
import type { Kysely } from 'kysely';
import { migrate, type SharedDb } from '../../servers/src/db';
import { createServiceApp, fromContext } from '../../servers/src/runtime/app';
import type { ServiceContext } from '../../servers/src/runtime/context';
import { HttpError, unprocessable } from '../../servers/src/runtime/errors';
import { keepPayment, settlementOf } from '../../servers/src/runtime/paywall';

// A settle-first fixture service: an order is placed only once its payment has settled, and a failed
// order is refunded. Used in process (settle-first.test.ts) and as a child process (desk-process.ts).

const c = initContract();
export const desk = defineService({
  id: 'desk',
  title: 'Settle-first fixture',
  description: 'A paid route that commits to an order only once its payment has settled',
  router: c.router({
    order: {
      method: 'POST',
      path: '/api/order',
      body: z
        .object({ item: z.string().min(1), fail: z.enum(['no', 'domain', 'crash', 'pending']).default('no') })
        .strict(),
      responses: {
        201: z.object({ orderId: z.string(), item: z.string(), transaction: z.string() }),
        422: z.unknown(),
        ...standardErrors,
        ...paymentErrors,
      },
      summary: 'Places an order, paid before it is placed',
      metadata: { payment: fixed('0.50'), settle: 'first' },
    },
  }),
});

/** The desk on a context; `now` moves the paywall's lease clock, `paywall` overrides the context's (a fault). */
export async function createDeskApp(
  context: ServiceContext,
  options: { now?: () => Date; paywall?: ServiceContext['paywall'] } = {},
) {
  const db = context.db as SharedDb;
  await migrate(db, 'desk', {
    '001_orders': {
      async up(d) {
        await d.schema
          .createTable('desk_orders')
          .addColumn('payment_key', 'text', (col) => col.primaryKey())
          .addColumn('item', 'text', (col) => col.notNull())
          .addColumn('transaction', 'text', (col) => col.notNull())
          .execute();
      },
    },
  });
  return createServiceApp({
    service: desk,
    ...fromContext(context),
    ...(options.paywall ? { paywall: options.paywall } : {}),
    ...(options.now ? { now: options.now } : {}),
    handlers: {
      order: async ({ body, res }) => {
        const settlement = settlementOf(res);
        if (body.fail === 'domain') throw unprocessable('out_of_stock', `no ${body.item} left`, { item: body.item });
        if (body.fail === 'crash') throw new Error('the order book is on fire');
        if (body.fail === 'pending') {
          // The outcome is not known yet (as a gateway whose market did not answer): kept, not refunded.
          keepPayment(res);
          throw new HttpError(
            503,
            'order_pending',
            'the order is not placed yet; present the same payment again',
            {},
            {
              'retry-after': '1',
            },
          );
        }
        // Keyed by the payment: the same settled payment served again returns the same order.
        await db
          .insertInto('desk_orders')
          .values({ payment_key: settlement.key, item: body.item, transaction: settlement.transaction })
          .onConflict((oc) => oc.column('payment_key').doNothing())
          .execute();
        const order = await db
          .selectFrom('desk_orders')
          .selectAll()
          .where('payment_key', '=', settlement.key)
          .executeTakeFirstOrThrow();
        return {
          status: 201 as const,
          body: { orderId: `ord_${order.payment_key.slice(0, 12)}`, item: order.item, transaction: order.transaction },
        };
      },
    },
  });
}
