// Session-paid throughput (issue 14, goal 2), a row of `npm run bench -- throughput`: buyers that call one seller
// often pay by vouchers in a payment session, through the SDK's public session option, against the same running
// `npm start` (PAYWALL_SESSIONS=on) as the free and paid rows, so the ratio to free calls is of one run. Each
// worker is a buyer of its own (one session each, as separate agents would be): vouchers of one session are
// cumulative, so one buyer's calls go one after another anyway. Figures depend on the machine; nothing asserts them.
import { createClient, sessionsOf, walletFromSecretKey, type AgentEconomyClient } from '@agent-economy/sdk';
import { generateWallet } from '../servers/src/solana/keys';
import { load, type Segment } from './support/load';
import { fund, type Stack } from './support/stack';

/** Buyers with a session open each, measured in segments (bench/support/load.ts interleave). */
export interface SessionBuyers {
  /** Calls for `seconds`, after a warm-up when asked. */
  run(seconds: number, warmup: boolean): Promise<Segment>;
  /** Calls (warm-up included) that went out paid exact rather than by voucher. */
  notByVoucher(): number;
  /** Closes every session: the sellers' closes settle what was vouched on chain. */
  close(): Promise<void>;
}

const LESSON = { body: { courseId: 'tool-use', lessonId: 'function-calling' } } as const;
const LESSON_USD = 0.05;

/** `concurrency` buyers, each with a session open to education, to call POST /api/lesson for `seconds` in all. */
export async function sessionBuyers(
  stack: Stack,
  options: { concurrency: number; seconds: number },
): Promise<SessionBuyers> {
  // Enough for a generous rate for the whole run, with the warm-up; the faucet grants up to 1,000 USD a call.
  const depositUsd = Math.min(900, Math.ceil(options.seconds * 500 * LESSON_USD));
  // Each client with sessions closes them before the process exits (a beforeExit listener each).
  process.setMaxListeners(Math.max(process.getMaxListeners(), options.concurrency + 10));
  const clients: AgentEconomyClient[] = await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      const buyer = generateWallet();
      await fund(stack, buyer.address, depositUsd + 10, '1');
      return createClient({
        deployment: stack.servicesJson,
        wallet: await walletFromSecretKey(buyer.secretKey),
        maxRetries: 0,
        payments: {
          rpcUrl: stack.rpcUrl,
          maxPerCallUsd: '0.10',
          // Idle between its turns (interleave) for a few seconds a round: never long enough to close.
          sessions: {
            after: 1,
            depositUsd: String(depositUsd),
            spendLimitUsd: String(depositUsd),
            idleMs: 60 * 60_000,
          },
        },
      });
    }),
  );
  const close = async () => void (await Promise.allSettled(clients.map((client) => client.close())));
  try {
    // The first call pays exact and opens the session; the measured calls should all go by voucher.
    await Promise.all(
      clients.map(async (client) => {
        await client.education.lesson(LESSON);
        for (let i = 0; i < 300 && !sessionsOf(client.payments).open.length; i++)
          await new Promise((r) => setTimeout(r, 100));
        if (!sessionsOf(client.payments).open.length)
          throw new Error(`no session opened: ${JSON.stringify(sessionsOf(client.payments).closed)}`);
      }),
    );
  } catch (error) {
    await close();
    throw error;
  }
  let notByVoucher = 0;
  return {
    run: (seconds, warmup) =>
      load(
        async (worker) => {
          const paid = await clients[worker]!.education.lesson.withResponse(LESSON);
          if (!paid.payment?.session) notByVoucher++;
        },
        { concurrency: options.concurrency, seconds, warmup },
      ),
    notByVoucher: () => notByVoucher,
    close,
  };
}
