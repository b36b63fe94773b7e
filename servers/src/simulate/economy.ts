import { createHmac } from 'node:crypto';
import {
  address,
  appendTransactionMessageInstructions,
  compileTransaction,
  createNoopSigner,
  createSolanaRpc,
  createTransactionMessage,
  getBase64Decoder,
  getBase64EncodedWireTransaction,
  getBase64Encoder,
  getTransactionDecoder,
  getTransactionEncoder,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Blockhash,
} from '@solana/kit';
import { getSetComputeUnitLimitInstruction, getSetComputeUnitPriceInstruction } from '@solana-program/compute-budget';
import { getTransferCheckedInstruction } from '@solana-program/token';
import { atomicToUsd, base58Encode, renewedByOnboarding, voucherRequestMessage } from '@agent-economy/contracts';
import {
  ApiError,
  BudgetExceededError,
  RateLimitError,
  createClient,
  walletFromSecretKey,
  type AgentEconomyClient,
} from '@agent-economy/sdk';
import { hashString, uniform } from '../upstream/market/random';
import { associatedTokenAddress } from '../solana/programs';
import { signEd25519, walletFromSeed, type Wallet } from '../solana/keys';
import { createMint, mintTokens, setMintAuthority, transferTokens } from './mints';

// A seeded population of agents trading through the real services: each step one agent buys a lesson, asks the tutor,
// draws randomness, asks for a fee estimate, publishes knowledge or buys another agent's, launches a token to a
// heavy-tailed set of holders, or moves tokens it holds. Every payment is a real x402 payment and every token move a
// real transaction, so the chain services have true history to analyse; it doubles as a load generator.

export interface Deployment {
  rpcUrl: string;
  /**
   * The local ledger's faucet (POST {address, usd, sol}); absent on a real cluster, where agents must be funded first.
   */
  faucetUrl?: string;
  network: string;
  /** Service id → base address. */
  services: Record<string, string>;
  /** Service id → the wallet it is paid to (services.json has them): one-shot charges pay these. */
  wallets?: Record<string, string>;
}

export interface SimulationOptions {
  deployment: Deployment;
  seed?: string;
  agents?: number;
  /** Stop after this many seconds, or after `steps` steps, whichever comes first (at least one of them). */
  seconds?: number;
  steps?: number;
  /** Per-agent spending cap, USD (the SDK's budget: an agent never spends more). */
  budgetUsd?: string;
  /**
   * Keepers: this many of the agents are bots on a schedule, paying for a cheap call every `keeperIntervalMs` instead
   * of taking random steps, as monitoring and rebalancing bots do; the chain analyses (intel) can tell them apart by
   * their timing. Default 2 when there are at least 4 agents, else 0.
   */
  keepers?: number;
  /**
   * Milliseconds between a keeper's calls (default 10000: 25 slots, so that a call delayed by a second or two still
   * keeps the rhythm).
   */
  keeperIntervalMs?: number;
  onProgress?: (progress: SimulationProgress) => void;
  signal?: AbortSignal;
}

export type ActionKind =
  'lesson' | 'tutor' | 'entropy' | 'gas' | 'charge' | 'tab' | 'publish' | 'purchase' | 'launch' | 'transfer' | 'keeper';

export interface SimulationProgress {
  elapsedSeconds: number;
  steps: number;
  calls: number;
  paidCalls: number;
  /** Of the paid calls, those paid by a voucher in a payment session rather than a transaction each. */
  sessionCalls: number;
  /** Atomic units of the stablecoin that settled in x402 payments. */
  volumeAtomic: bigint;
  mints: number;
  tokenTransfers: number;
  errors: number;
}

export interface SimulationSummary extends SimulationProgress {
  agents: string[];
  /**
   * Skipped: the action's precondition was not met yet (no module listed to buy, no token held to move), or a limit
   * held it back, charging nothing (heldBack).
   */
  byAction: Record<ActionKind, { ok: number; failed: number; skipped: number }>;
  /** Error messages by how often they happened, most frequent first. */
  errorsByMessage: { message: string; count: number }[];
  /**
   * Actions a limit held back, nothing charged, by reason: a 429 (the agent then rests for its Retry-After) or the
   * agent's own budget spent.
   */
  heldBack: { reason: string; count: number }[];
  launchedMints: { mint: string; creator: string; holders: number; renounced: boolean; transfers: number }[];
  /** The keepers' wallets (a subset of agents) and the calls each paid on its schedule. */
  keepers: { wallet: string; calls: number }[];
  volumeUsd: string;
}

interface Agent {
  wallet: Wallet;
  client: AgentEconomyClient;
  /** Holds a delegation role at the facilitator (payment sessions). */
  onboarded?: boolean;
  /** Told to wait (429 Retry-After, e.g. the facilitator's per-payer settle cap): takes no step before this time. */
  restingUntil?: number;
  /** Has spent its whole budget (--budget-usd): takes no more steps that pay through the SDK. */
  spent?: boolean;
}

/** A transaction the facilitator issued, signed in `wallet`'s slot (the fee payer's is left for the facilitator). */
function signIssued(transaction: string, wallet: Wallet): string {
  const tx = getTransactionDecoder().decode(getBase64Encoder().encode(transaction));
  const signatures = { ...tx.signatures, [wallet.address]: signEd25519(wallet, new Uint8Array(tx.messageBytes)) };
  return getBase64Decoder().decode(getTransactionEncoder().encode({ ...tx, signatures } as never));
}

interface Launched {
  mint: string;
  decimals: number;
  creator: Agent;
  holders: Agent[];
  renounced: boolean;
  transfers: number;
}

/** A run bounded by steps waits until every keeper has paid this often: three intervals show a schedule. */
const MIN_KEEPER_CALLS = 4;

const TOPICS = [
  ['priority fees', 'How to pick a compute-unit price from recent prioritization fees, per writable account.'],
  ['retrieval chunking', 'Chunk sizes, overlap and why headings belong in every chunk for retrieval.'],
  ['agent budgets', 'Per-call, per-service and rolling caps that keep an autonomous agent from overspending.'],
  ['escrow timers', 'Review windows and timeout releases that keep both sides of a trade honest.'],
  ['funding rates', 'Reading perpetual funding across venues and what a squeeze looks like before it happens.'],
  ['tool schemas', 'Designing tool input schemas a model fills in correctly the first time.'],
  ['idempotency', 'Idempotency keys for paid calls: retry without paying twice.'],
  ['holder concentration', 'Gini and HHI of token holders, and why burn and pool accounts are left out.'],
] as const;

const QUESTIONS = [
  'How should an agent chunk documents for retrieval?',
  'What is a good way to retry a failed tool call?',
  'How do I keep an agent within its budget?',
  'When should an agent summarize its memory?',
  'How do I deploy an agent behind a load balancer?',
];

/** A deterministic wallet per (seed, index): the same seed finds the same agents (and their balances) again. */
export function agentWallet(seed: string, index: number): Wallet {
  return walletFromSeed(createHmac('sha256', `agent-economy-simulate:${seed}`).update(String(index)).digest());
}

async function fund(deployment: Deployment, address: string): Promise<void> {
  if (!deployment.faucetUrl) return;
  const response = await fetch(deployment.faucetUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ address, usd: '20', sol: '1' }),
  });
  if (!response.ok) throw new Error(`the faucet refused ${address}: HTTP ${response.status} ${await response.text()}`);
}

/** An action that cannot run yet (nothing to buy, no token held): not an error. */
class Skip extends Error {}

/** A limit that held an action back, charging nothing (not an error): a 429, or the agent's own budget spent. */
function heldBy(error: unknown): string | undefined {
  if (error instanceof RateLimitError) return `429 ${error.code}`;
  if (error instanceof BudgetExceededError) return `its ${error.cap} budget spent`;
  return undefined;
}

const messageOf = (error: unknown) =>
  error instanceof ApiError
    ? `${error.status} ${error.code}${typeof (error.details as { reason?: unknown } | undefined)?.reason === 'string' ? ` (${(error.details as { reason: string }).reason})` : ''}`
    : error instanceof Error
      ? error.message.split('\n')[0]!.slice(0, 160)
      : String(error);

export async function simulate(options: SimulationOptions): Promise<SimulationSummary> {
  const { deployment } = options;
  if (options.seconds === undefined && options.steps === undefined) throw new Error('simulate needs seconds or steps');
  const seed = options.seed ?? 'agent-economy';
  const key = hashString(seed);
  let draw = 0;
  const random = () => uniform(key, draw++);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const rpc = createSolanaRpc(deployment.rpcUrl);

  const agents: Agent[] = [];
  const population = options.agents ?? 6;
  // Keepers are the first agents: bots paying on a schedule beside the traders' random steps.
  const keeperCount = Math.max(0, Math.min(options.keepers ?? (population >= 4 ? 2 : 0), population - 2));
  for (let i = 0; i < population; i++) {
    const wallet = agentWallet(seed, i);
    await fund(deployment, wallet.address);
    const client = createClient({
      baseUrls: deployment.services as never,
      wallet: await walletFromSecretKey(wallet.secretKey),
      network: deployment.network,
      maxRetries: 0,
      // Every other trader pays a seller it calls often by vouchers in a payment session (where the seller offers
      // them), the rest with a transaction per call: the economy sees both. Keepers pay by transaction: their rhythm
      // on chain is what the timing analyses read.
      payments: {
        rpcUrl: deployment.rpcUrl,
        maxPerCallUsd: '1',
        maxTotalUsd: options.budgetUsd ?? '5',
        sessions: i >= keeperCount && i % 2 === 1 ? { after: 2, depositUsd: '0.25' } : false,
      },
    });
    agents.push({ wallet, client });
  }

  const progress: SimulationProgress = {
    elapsedSeconds: 0,
    steps: 0,
    calls: 0,
    paidCalls: 0,
    sessionCalls: 0,
    volumeAtomic: 0n,
    mints: 0,
    tokenTransfers: 0,
    errors: 0,
  };
  const byAction = Object.fromEntries(
    (
      [
        'lesson',
        'tutor',
        'entropy',
        'gas',
        'charge',
        'tab',
        'publish',
        'purchase',
        'launch',
        'transfer',
        'keeper',
      ] as const
    ).map((a) => [a, { ok: 0, failed: 0, skipped: 0 }]),
  ) as SimulationSummary['byAction'];
  const errors = new Map<string, number>();
  const runStarted = new Date().toISOString();
  const heldBack = new Map<string, number>();
  const launched: Launched[] = [];
  let lessons: { courseId: string; lessonId: string }[] | undefined;

  /** Runs one paid or free call and counts what it paid from its receipt. */
  async function call<T extends { payment?: { amount: string; session?: unknown } | undefined }>(
    run: () => Promise<T>,
  ): Promise<T> {
    progress.calls++;
    const result = await run();
    if (result.payment) {
      progress.paidCalls++;
      if (result.payment.session) progress.sessionCalls++;
      progress.volumeAtomic += BigInt(result.payment.amount);
    }
    return result;
  }

  const has = (id: string) => !!deployment.services[id];
  const sellers = Object.entries(deployment.wallets ?? {})
    .filter(([id]) => id !== 'facilitator')
    .map(([, wallet]) => wallet);
  const actions: { kind: ActionKind; weight: number; run(agent: Agent): Promise<void> }[] = [
    {
      kind: 'lesson',
      weight: has('education') ? 3 : 0,
      async run(agent) {
        if (!lessons) {
          progress.calls++;
          lessons = (await agent.client.education.catalog()).courses.flatMap((c) =>
            c.lessons.map((l) => ({ courseId: c.id, lessonId: l.id })),
          );
        }
        await call(() => agent.client.education.lesson.withResponse({ body: pick(lessons!) }));
      },
    },
    {
      kind: 'tutor',
      weight: has('education') ? 2 : 0,
      run: async (agent) =>
        void (await call(() => agent.client.education.tutor.withResponse({ body: { question: pick(QUESTIONS) } }))),
    },
    {
      kind: 'entropy',
      weight: has('entropy') ? 2 : 0,
      run: async (agent) =>
        void (await call(() => agent.client.entropy.dice.withResponse({ body: { sides: 6, count: 2 } }))),
    },
    {
      kind: 'gas',
      weight: has('gas') ? 1 : 0,
      run: async (agent) =>
        void (await call(() =>
          agent.client.gas.recommend.withResponse({
            body: { urgency: pick(['low', 'normal', 'high', 'urgent'] as const) },
          }),
        )),
    },
    {
      kind: 'charge',
      // A one-shot charge through the facilitator (/mpp/prepare, then /mpp/settle): a stablecoin transfer the agent
      // signs with the facilitator as fee payer, to a service's wallet.
      weight: has('facilitator') && sellers.length ? 1 : 0,
      async run(agent) {
        const prepared = await agent.client.facilitator.prepare({ body: {} });
        const recipient = pick(sellers);
        const amount = BigInt(1_000 + Math.floor(random() * 9_000)); // 0.001 to 0.01 USD
        const self = createNoopSigner(address(agent.wallet.address));
        const message = pipe(
          createTransactionMessage({ version: 0 }),
          (m) => setTransactionMessageFeePayer(address(prepared.feePayer), m),
          (m) =>
            setTransactionMessageLifetimeUsingBlockhash(
              {
                blockhash: prepared.blockhash as Blockhash,
                lastValidBlockHeight: BigInt(prepared.lastValidBlockHeight),
              },
              m,
            ),
          (m) =>
            appendTransactionMessageInstructions(
              [
                getSetComputeUnitLimitInstruction({ units: 20_000 }),
                getSetComputeUnitPriceInstruction({ microLamports: 1n }),
                getTransferCheckedInstruction(
                  {
                    source: address(
                      associatedTokenAddress(agent.wallet.address, prepared.splToken, prepared.tokenProgram),
                    ),
                    mint: address(prepared.splToken),
                    destination: address(associatedTokenAddress(recipient, prepared.splToken, prepared.tokenProgram)),
                    authority: self,
                    amount,
                    decimals: prepared.decimals,
                  },
                  { programAddress: address(prepared.tokenProgram) },
                ),
              ],
              m,
            ),
        );
        const compiled = compileTransaction(message);
        // The buyer signs its slot only; the facilitator co-signs as fee payer when it settles.
        const signatures = {
          ...compiled.signatures,
          [agent.wallet.address]: signEd25519(agent.wallet, new Uint8Array(compiled.messageBytes)),
        };
        const transaction = getBase64EncodedWireTransaction({ ...compiled, signatures } as typeof compiled);
        progress.calls++;
        const settled = await agent.client.facilitator.settleCharge({
          body: { transaction, recipient, amount: amount.toString() },
        });
        progress.paidCalls++;
        progress.volumeAtomic += BigInt(settled.amount);
      },
    },
    {
      kind: 'tab',
      // A payment session at the facilitator (the settlement API's sessions): onboarding once, a deposit, a few
      // vouchers for rising amounts signed by a fresh session key, and the close that settles them to a service.
      weight: has('facilitator') && sellers.length ? 1 : 0,
      async run(agent) {
        const facilitator = agent.client.facilitator;
        const onboard = async () => {
          progress.calls++;
          const started = await facilitator.onboard({
            body: { buyerWallet: agent.wallet.address, spendLimitAtomic: '5000000', ttlSeconds: 86_400 },
          });
          if (started.status === 'transactions_required') {
            progress.calls++;
            await facilitator.confirmOnboarding({
              body: {
                buyerWallet: agent.wallet.address,
                signedTransactions: started.transactions.map((t) => signIssued(t.transaction, agent.wallet)),
              },
            });
          }
          agent.onboarded = true;
        };
        if (!agent.onboarded) await onboard();
        const key = walletFromSeed(
          createHmac('sha256', `agent-economy-simulate:${seed}:tab`).update(`${agent.wallet.address}:${draw}`).digest(),
        );
        const body = {
          buyerWallet: agent.wallet.address,
          sellerWallet: pick(sellers),
          depositAtomic: '200000',
          sessionKey: key.address,
          idleTimeoutSeconds: 600,
        };
        progress.calls++;
        const { channelId } = await facilitator.openSession({ body }).catch(async (error: unknown) => {
          // The delegation role has moved its limit: onboarding again grants it afresh, as an agent would.
          if (!(error instanceof ApiError && renewedByOnboarding(error.code, error.details))) throw error;
          await onboard();
          progress.calls++;
          return facilitator.openSession({ body });
        });
        let cumulative = 0n;
        for (let i = 0, n = 2 + Math.floor(random() * 3); i < n; i++) {
          cumulative += BigInt(5_000 + Math.floor(random() * 20_000));
          const request = voucherRequestMessage({ channelId, cumulativeAmount: cumulative.toString(), units: 1 });
          const signature = base58Encode(signEd25519(key, request));
          progress.calls++;
          await facilitator.signVoucher({
            body: { channelId, cumulativeAmount: cumulative.toString(), units: 1, signer: key.address, signature },
          });
          progress.sessionCalls++;
        }
        progress.calls++;
        await facilitator.closeSession({ body: { channelId } });
        progress.paidCalls++;
        progress.volumeAtomic += cumulative;
      },
    },
    {
      kind: 'publish',
      weight: has('knowledge-market') ? 2 : 0,
      async run(agent) {
        const [topic, summary] = pick(TOPICS);
        const n = Math.floor(random() * 1e9);
        const priceUsd = (0.01 + Math.floor(random() * 40) / 100).toFixed(2);
        await call(() =>
          agent.client.knowledgeMarket.publish.withResponse({
            body: {
              title: `Notes on ${topic} #${n}`,
              description: summary,
              tags: [topic.split(' ')[0]!.toLowerCase()],
              capabilities: [topic.replace(/\s+/g, '-')],
              priceUsd,
              format: 'markdown',
              // The run's start in the notes: the same seed runs again with the same agents, whose earlier notes are
              // listed already (a seller may not list the same content twice).
              content: `# ${topic}\n\n${summary}\n\nField notes ${n} from agent ${agent.wallet.address.slice(0, 8)}, run of ${runStarted}: measured, written down, sold.\n`,
            } as never,
          }),
        );
      },
    },
    {
      kind: 'purchase',
      weight: has('knowledge-market') ? 3 : 0,
      async run(agent) {
        progress.calls++;
        const { items } = await agent.client.knowledgeMarket.list({ query: { maxPriceUsd: '1', limit: 50 } as never });
        const others = items.filter((m) => m.seller.wallet !== agent.wallet.address);
        if (!others.length) throw new Skip('nothing to buy yet');
        const module = pick(others);
        await call(() =>
          agent.client.knowledgeMarket.purchase.withResponse({ params: { moduleId: module.id }, body: {} }),
        );
      },
    },
    {
      kind: 'launch',
      weight: 1,
      async run(agent) {
        const decimals = pick([0, 6, 9]);
        const freeze = random() < 0.3 ? agent.wallet.address : null;
        const mint = await createMint(rpc, agent.wallet, { decimals, freezeAuthority: freeze });
        // Heavy-tailed holdings: holder k gets a share ∝ 1 / k^1.2 (a Zipf law), the creator keeping the largest.
        const holders = [
          agent,
          ...agents
            .filter((a) => a !== agent)
            .sort(() => random() - 0.5)
            .slice(0, 2 + Math.floor(random() * (agents.length - 1))),
        ];
        const supply = BigInt(1_000_000 + Math.floor(random() * 9_000_000)) * 10n ** BigInt(decimals);
        const weights = holders.map((_, k) => 1 / (k + 1) ** 1.2);
        const total = weights.reduce((a, b) => a + b, 0);
        const grants = holders.map((h, k) => ({
          owner: h.wallet.address,
          amount: (supply * BigInt(Math.round((weights[k]! / total) * 1e6))) / 1_000_000n,
        }));
        await mintTokens(rpc, agent.wallet, mint, agent.wallet, decimals, grants);
        const renounced = random() < 0.5;
        if (renounced) await setMintAuthority(rpc, agent.wallet, mint, agent.wallet, 'mint', null);
        progress.mints++;
        launched.push({ mint, decimals, creator: agent, holders, renounced, transfers: 0 });
      },
    },
    {
      kind: 'transfer',
      weight: 3,
      async run(agent) {
        const held = launched.filter((l) => l.holders.includes(agent));
        if (!held.length) throw new Skip('holds no launched token yet');
        const token = pick(held);
        const to = pick(agents.filter((a) => a !== agent));
        const { value } = await rpc
          .getTokenAccountsByOwner(
            agent.wallet.address as never,
            { mint: token.mint as never },
            { encoding: 'jsonParsed' },
          )
          .send();
        const balance = BigInt(
          (value[0]?.account.data as { parsed?: { info?: { tokenAmount?: { amount?: string } } } } | undefined)?.parsed
            ?.info?.tokenAmount?.amount ?? '0',
        );
        if (balance === 0n) throw new Skip('its balance of that token is zero');
        const amount = (balance * BigInt(1 + Math.floor(random() * 20))) / 100n || 1n;
        await transferTokens(rpc, agent.wallet, token.mint, token.decimals, agent.wallet, to.wallet.address, amount);
        if (!token.holders.includes(to)) token.holders.push(to);
        token.transfers++;
        progress.tokenTransfers++;
      },
    },
  ];
  // The SDK's x402 calls, which count against an agent's budget: an agent that has spent it takes the other steps.
  const budgeted = new Set<ActionKind>(['lesson', 'tutor', 'entropy', 'gas', 'publish', 'purchase']);
  const chooseAction = (agent: Agent) => {
    const open = actions.filter((a) => a.weight > 0 && !(agent.spent && budgeted.has(a.kind)));
    let r = random() * open.reduce((s, a) => s + a.weight, 0);
    for (const action of open) {
      r -= action.weight;
      if (r < 0) return action;
    }
    return open[0] ?? actions.find((a) => a.weight > 0)!;
  };

  const started = Date.now();
  const deadline = options.seconds === undefined ? Infinity : started + options.seconds * 1000;
  const maxSteps = options.steps ?? Infinity;
  let lastReport = 0;

  // Keepers pay on their schedule beside the random steps, until the run ends.
  const keepers = agents.slice(0, keeperCount).map((agent) => ({ agent, calls: 0 }));
  const traders = agents.slice(keepers.length);
  const interval = options.keeperIntervalMs ?? 10_000;
  let stepsDone = false;
  const keeperCall = has('entropy')
    ? (a: Agent) => call(() => a.client.entropy.coin.withResponse({ body: { count: 1 } }))
    : has('education')
      ? (a: Agent) =>
          call(() =>
            a.client.education.lesson.withResponse({ body: { courseId: 'tool-use', lessonId: 'function-calling' } }),
          )
      : undefined;
  const keeperLoops = keeperCall
    ? keepers.map(async (keeper, k) => {
        // Staggered so that two keepers never pay in the same slot.
        for (let tick = 0; ; tick++) {
          const at = started + (k * interval) / keepers.length + tick * interval;
          await new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));
          const enough = keepers.every((kp) => kp.calls >= MIN_KEEPER_CALLS) || options.steps === undefined;
          if (options.signal?.aborted || Date.now() >= deadline || (stepsDone && enough)) return;
          try {
            await keeperCall(keeper.agent);
            keeper.calls++;
            byAction.keeper.ok++;
          } catch (error) {
            const held = heldBy(error);
            if (held) {
              byAction.keeper.skipped++;
              heldBack.set(held, (heldBack.get(held) ?? 0) + 1);
              continue;
            }
            byAction.keeper.failed++;
            progress.errors++;
            const message = `keeper: ${messageOf(error)}`;
            errors.set(message, (errors.get(message) ?? 0) + 1);
          }
        }
      })
    : [];

  while (progress.steps < maxSteps && Date.now() < deadline && !options.signal?.aborted) {
    // Agents told to wait sit out their Retry-After; when all are waiting, the run waits for the first.
    const awake = traders.filter((t) => !(t.restingUntil! > Date.now()));
    if (!awake.length) {
      const first = Math.min(deadline, ...traders.map((t) => t.restingUntil!));
      await new Promise((resolve) => setTimeout(resolve, Math.max(10, Math.min(first - Date.now(), 1_000))));
      continue;
    }
    const agent = awake[Math.floor(random() * awake.length)]!;
    const action = chooseAction(agent);
    progress.steps++;
    try {
      await action.run(agent);
      byAction[action.kind].ok++;
    } catch (error) {
      const held = heldBy(error);
      if (error instanceof Skip) byAction[action.kind].skipped++;
      else if (held) {
        byAction[action.kind].skipped++;
        heldBack.set(held, (heldBack.get(held) ?? 0) + 1);
        if (error instanceof RateLimitError)
          agent.restingUntil = Date.now() + (Number(error.headers['retry-after']) || 1) * 1000;
        if (error instanceof BudgetExceededError && error.limit === 'total') agent.spent = true;
      } else {
        byAction[action.kind].failed++;
        progress.errors++;
        const message = `${action.kind}: ${messageOf(error)}`;
        errors.set(message, (errors.get(message) ?? 0) + 1);
      }
    }
    progress.elapsedSeconds = Math.round((Date.now() - started) / 100) / 10;
    if (options.onProgress && Date.now() - lastReport >= 250) {
      lastReport = Date.now();
      options.onProgress({ ...progress });
    }
  }
  stepsDone = true;
  await Promise.all(keeperLoops);
  // Open payment sessions are closed: their sellers settle what was vouched on chain.
  await Promise.all(
    agents.map((a) =>
      a.client
        .close()
        .catch((error: unknown) =>
          errors.set(`close: ${messageOf(error)}`, (errors.get(`close: ${messageOf(error)}`) ?? 0) + 1),
        ),
    ),
  );
  progress.elapsedSeconds = Math.round((Date.now() - started) / 100) / 10;
  options.onProgress?.({ ...progress });
  return {
    ...progress,
    agents: agents.map((a) => a.wallet.address),
    byAction,
    errorsByMessage: [...errors].map(([message, count]) => ({ message, count })).sort((a, b) => b.count - a.count),
    heldBack: [...heldBack].map(([reason, count]) => ({ reason, count })).sort((a, b) => b.count - a.count),
    launchedMints: launched.map((l) => ({
      mint: l.mint,
      creator: l.creator.wallet.address,
      holders: l.holders.length,
      renounced: l.renounced,
      transfers: l.transfers,
    })),
    keepers: keepers.map((k) => ({ wallet: k.agent.wallet.address, calls: k.calls })),
    volumeUsd: atomicToUsd(progress.volumeAtomic),
  };
}
