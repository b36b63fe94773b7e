import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { DEFAULT_PORTS, envPrefix } from '@agent-economy/contracts';

// `npm start` as a child process for the benchmarks: its own data directory and ports (the defaults shifted
// by an offset, so a developer's own `npm start` keeps running), read back from the services.json it writes.

const repoRoot = resolve(import.meta.dirname, '../..');

export interface Stack {
  /** The child's process id (the node process that serves, not a wrapper). */
  pid: number;
  dataDir: string;
  servicesJson: string;
  services: Record<string, { url: string; wallet: string }>;
  rpcUrl: string;
  demoKeyFile: string;
  /** Resident set size of the serving process, bytes (Linux /proc). */
  rss(): number;
  close(): Promise<void>;
}

export interface StackOptions {
  /** SERVICES: the services to mount (default all). */
  services?: string[];
  /** Added to every default port. */
  portOffset?: number;
  /** Extra node flags (--cpu-prof, --max-old-space-size …). */
  nodeFlags?: string[];
  env?: Record<string, string>;
}

const free = (port: number) =>
  new Promise<boolean>((done) => {
    const probe = createServer().once('error', () => done(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => done(true)));
  });

/** An offset at which every default port (and the console's) is free here. */
async function freeOffset(): Promise<number> {
  const ports = [...Object.values(DEFAULT_PORTS), 4000];
  for (let offset = 30_000; offset <= 55_000; offset += 1_000) {
    if ((await Promise.all(ports.map((p) => free(p + offset)))).every(Boolean)) return offset;
  }
  throw new Error('no free block of ports for the benchmark stack');
}

export function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb * 1024;
}

/**
 * CPU time (user and system) a process has used, ms (Linux /proc): a figure per call that holds on a loaded machine,
 * where rates only compare within a run.
 */
export function cpuMsOf(pid: number): number {
  return statCpuMs(`/proc/${pid}/stat`);
}

/**
 * CPU time of a Node process's main thread alone, ms: its event loop, where every request is served, so the figure
 * that limits its throughput (the rest is GC helpers and libuv's thread pool).
 */
export function loopCpuMsOf(pid: number): number {
  return statCpuMs(`/proc/${pid}/task/${pid}/stat`);
}

/** CPU this process (the bench's callers: SDK clients or the raw HTTP client) has used, ms. */
export function clientCpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

function statCpuMs(file: string): number {
  const fields = readFileSync(file, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/** Starts `npm start` (the same entry, run by node with tsx) and resolves once its services.json is written. */
export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ae-bench-'));
  const offset = options.portOffset ?? (await freeOffset());
  const ports = Object.fromEntries(
    Object.entries(DEFAULT_PORTS).map(([id, port]) => [`${envPrefix(id)}_PORT`, String(port + offset)]),
  );
  const child: ChildProcess = spawn(
    process.execPath,
    [...(options.nodeFlags ?? []), '--import', 'tsx', '--conditions=ae-source', 'servers/src/main.ts'],
    {
      cwd: repoRoot,
      env: {
        ...process.env,
        ...ports,
        CONSOLE_PORT: String(4000 + offset),
        DATA_DIR: dataDir,
        LOG_LEVEL: 'warn',
        // The settle caps are backpressure for a shared fee payer (10 a second in all by default): a benchmark
        // measures what the stack can do, so they are lifted here.
        FACILITATOR_SETTLE_CAP: '1000000',
        FACILITATOR_SELLER_SETTLE_CAP: '1000000',
        FACILITATOR_PAYER_SETTLE_CAP: '1000000',
        ...(options.services ? { SERVICES: options.services.join(',') } : {}),
        ...options.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  let warmedUp = false;
  child.stdout!.on('data', (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4000);
    if (output.includes('Warm-up done') || output.includes('warm-up stopped')) warmedUp = true;
  });
  child.stderr!.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
  const servicesJson = join(dataDir, 'services.json');
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`npm start exited with ${code}:\n${output}`))),
  );
  const started = Date.now();
  // Read until whole: the file is written in one call, but may be seen between its creation and that write.
  const read = () => {
    try {
      return existsSync(servicesJson) ? (JSON.parse(readFileSync(servicesJson, 'utf8')) as unknown) : undefined;
    } catch {
      return undefined;
    }
  };
  let text: unknown;
  while (!(text = read())) {
    await Promise.race([new Promise((r) => setTimeout(r, 200)), exited]);
    if (Date.now() - started > 180_000) throw new Error(`npm start did not come up in 180 s:\n${output}`);
  }
  const written = text as {
    chain: { rpcUrl: string };
    demoWallet: { keyFile: string };
    services: { id: string; url: string; wallet: string }[];
  };
  // npm start's warm-up (SIMULATE_WARMUP_STEPS paid calls by simulated agents) would run beside the first rows:
  // measured once it is over.
  // (A SERVICES process warms up only when SIMULATE_WARMUP_STEPS says so.)
  const env = { ...process.env, ...options.env };
  const warmUp = (!options.services && !env.SERVICES) || env.SIMULATE_WARMUP_STEPS !== undefined;
  while (warmUp && env.SIMULATE_WARMUP_STEPS !== '0' && !warmedUp && Date.now() - started < 300_000)
    await Promise.race([new Promise((r) => setTimeout(r, 200)), exited]);
  exited.catch(() => undefined);
  return {
    pid: child.pid!,
    dataDir,
    servicesJson,
    services: Object.fromEntries(written.services.map((s) => [s.id, { url: s.url, wallet: s.wallet }])),
    rpcUrl: written.chain.rpcUrl,
    demoKeyFile: written.demoWallet.keyFile,
    rss: () => rssOf(child.pid!),
    close: async () => {
      if (child.exitCode === null) {
        const gone = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([gone, new Promise((r) => setTimeout(r, 15_000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Funds `address` from the stack's local faucet with `usd` of the stablecoin, rounded up (the faucet grants up to
 * 1,000 USD a call, so in calls of 1,000 at most) and, with the first call, `sol`.
 */
export async function fund(stack: Stack, address: string, usd: number, sol?: string): Promise<void> {
  for (let left = Math.ceil(usd), first = true; left > 0; left -= 1000, first = false) {
    const response = await fetch(`${stack.rpcUrl}/faucet`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ address, usd: String(Math.min(left, 1000)), ...(first && sol ? { sol } : {}) }),
    });
    if (!response.ok) throw new Error(`the faucet answered ${response.status}: ${await response.text()}`);
  }
}
