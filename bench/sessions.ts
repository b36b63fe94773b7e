// Session-paid throughput (issue 14, goal 2), a row of `npm run bench -- throughput`: buyers that call one seller
// often pay by vouchers in a payment session, through the SDK's public session option, against the same running
// `npm start` (PAYWALL_SESSIONS=on) as the free and paid rows, so the ratio to free calls is of one run. Each
// worker is a buyer of its own (one session each, as separate agents would be): vouchers of one session are
// cumulative, so one buyer's calls go one after another anyway. Figures depend on the machine; nothing asserts them.
import { createClient, sessionsOf, walletFromSecretKey, type AgentEconomyClient } from '@agent-economy/sdk';
import { generateWallet } from '../servers/src/solana/keys';
import { load, type LoadResult } from './support/load';
import { clientCpuMs, cpuMsOf, fund, loopCpuMsOf, type Stack } from './support/stack';

export interface SessionRun extends LoadResult {
  /** Calls of the measured run that went out paid exact rather than by voucher. */
  notByVoucher: number;
  /** CPU the served process spent a measured call, ms. */
  serverCpuMs: number;
  /** The part of it on the process's event loop (main thread), ms. */
  loopCpuMs: number;
  /** CPU the bench process (the buyers' SDK clients) spent a measured call, ms. */
  clientCpuMs: number;
}

const LESSON = { body: { courseId: 'tool-use', lessonId: 'function-calling' } } as const;
const LESSON_USD = 0.05;

/** `concurrency` buyers, each with a session open to education, calling POST /api/lesson for `seconds`. */
export async function sessionThroughput(
  stack: Stack,
  options: { concurrency: number; seconds: number },
): Promise<SessionRun> {
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
          sessions: { after: 1, depositUsd: String(depositUsd), spendLimitUsd: String(depositUsd) },
        },
      });
    }),
  );
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
    let notByVoucher = 0;
    const [cpuBefore, loopBefore, clientBefore] = [cpuMsOf(stack.pid), loopCpuMsOf(stack.pid), clientCpuMs()];
    const result = await load(
      async (worker) => {
        const paid = await clients[worker]!.education.lesson.withResponse(LESSON);
        if (!paid.payment?.session) notByVoucher++;
      },
      { concurrency: options.concurrency, seconds: options.seconds },
    );
    const calls = Math.max(1, result.calls);
    const serverCpuMs = (cpuMsOf(stack.pid) - cpuBefore) / calls;
    const loopCpuMs = (loopCpuMsOf(stack.pid) - loopBefore) / calls;
    const clientCpu = (clientCpuMs() - clientBefore) / calls;
    return { ...result, notByVoucher, serverCpuMs, loopCpuMs, clientCpuMs: clientCpu };
  } finally {
    // The sellers' closes settle what was vouched on chain.
    await Promise.allSettled(clients.map((client) => client.close()));
  }
}
