import { createClient, sessionsOf, walletFromSecretKey } from '@agent-economy/sdk';
import { base58Decode } from '@agent-economy/contracts';

// A buyer in its own process (session-payments.test.ts): it pays the education service, opens a payment
// session after one call, pays CALLS more by voucher, prints what it vouched and dies without closing
// (SIGKILL: no exit hook runs), so the seller must settle the session by itself.

const wallet = await walletFromSecretKey(base58Decode(process.env.BUYER_SECRET!)!);
const client = createClient({
  baseUrls: { facilitator: process.env.FACILITATOR_URL!, education: process.env.SERVICE_URL! },
  wallet,
  maxRetries: 0,
  payments: { rpcUrl: process.env.RPC_URL!, sessions: { after: 1, depositUsd: '0.5' } },
});
const lesson = { body: { courseId: 'rag', lessonId: 'chunking' } } as const;
await client.education.lesson(lesson);
for (let i = 0; i < 50 && !sessionsOf(client.payments).open.length; i++) await new Promise((r) => setTimeout(r, 100));
const calls = Number(process.env.CALLS ?? '3');
for (let i = 0; i < calls; i++) await client.education.lesson(lesson);
const [open] = sessionsOf(client.payments).open;
process.stdout.write(`${JSON.stringify(open ?? null)}\n`, () => process.kill(process.pid, 'SIGKILL'));
