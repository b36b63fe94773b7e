import { AgentEconomyError } from '../errors';
import type { PaymentReceipt, SentPayment } from './types';

/**
 * One line of the spend log, as a SpendStore keeps it. A payment leaves up to three records under one
 * `id`: `reserve` (money held, before anything is signed), `sent` (signed and about to leave: from here
 * it may settle) and its outcome, `receipt` or `release`. Amounts are atomic units, decimal strings.
 */
export type SpendRecord =
  | {
      type: 'reserve';
      id: string;
      at: string;
      service: string;
      origin: string;
      payTo: string;
      amount: string;
      paymentId?: string;
    }
  | { type: 'sent'; id: string; at: string; payment: SentPayment }
  | { type: 'receipt'; id: string; at: string; receipt: PaymentReceipt }
  | { type: 'release'; id: string; at: string };

/**
 * Where a spend log persists, so that budgets survive a restart: `createClient({ wallet, payments: { store } })`.
 * `append` must not resolve before the record is durable (the SDK signs only once its reservation is
 * stored); `load` returns every record appended, oldest first.
 */
export interface SpendStore {
  load(): Promise<SpendRecord[]>;
  append(record: SpendRecord): Promise<void>;
}

type Fs = typeof import('node:fs/promises');

/** node:fs, loaded only when a file store is used, so that the SDK still bundles for browsers. */
async function nodeFs(): Promise<Fs> {
  try {
    return await import('node:fs/promises');
  } catch {
    throw new AgentEconomyError('fileSpendStore needs Node.js (node:fs); pass your own SpendStore elsewhere');
  }
}

function isRecord(value: unknown): value is SpendRecord {
  const record = value as { type?: unknown; id?: unknown } | null;
  return (
    !!record &&
    typeof record.id === 'string' &&
    ['reserve', 'sent', 'receipt', 'release'].includes(record.type as string)
  );
}

/** Whether a process with this id is alive (signal 0 only checks); one we may not signal is alive. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === 'EPERM';
  }
}

/**
 * The spend log in a file: JSON lines, append-only, each record fsync'd before `append` resolves.
 * Single writer: the first `load` takes `<path>.lock` (holding this process id) and a second process
 * opening the same file is refused while this one lives, so two agents can never both spend against
 * one budget; a lock whose process died is taken over. A torn last line (a crash mid-write) is ignored.
 */
export function fileSpendStore(path: string): SpendStore & { close(): Promise<void> } {
  let handle: import('node:fs/promises').FileHandle | undefined;
  let locked = false;
  let queue: Promise<void> = Promise.resolve();
  const lockPath = `${path}.lock`;

  async function lock(fs: Fs): Promise<void> {
    if (locked) return;
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const file = await fs.open(lockPath, 'wx');
        await file.writeFile(String(process.pid));
        await file.sync();
        await file.close();
        locked = true;
        return;
      } catch (error) {
        if ((error as { code?: string }).code !== 'EEXIST') throw error;
        const owner = Number((await fs.readFile(lockPath, 'utf8').catch(() => '')).trim());
        if (owner === process.pid)
          throw new AgentEconomyError(
            `spend log ${path} is already open in this process: share one createPayments() object instead`,
          );
        if (Number.isInteger(owner) && owner > 0 && alive(owner)) {
          throw new AgentEconomyError(
            `spend log ${path} is in use by process ${owner}; one process at a time may spend against it`,
          );
        }
        await fs.rm(lockPath, { force: true }); // its process died: take it over
      }
    }
    throw new AgentEconomyError(`spend log ${path}: could not take its lock ${lockPath}`);
  }

  return {
    async load() {
      const fs = await nodeFs();
      await lock(fs);
      let text = '';
      try {
        text = await fs.readFile(path, 'utf8');
      } catch (error) {
        if ((error as { code?: string }).code !== 'ENOENT') throw error;
      }
      const records: SpendRecord[] = [];
      for (const line of text.split('\n')) {
        if (!line.trim()) continue;
        try {
          const parsed: unknown = JSON.parse(line);
          if (isRecord(parsed)) records.push(parsed);
        } catch {
          // a line torn by a crash mid-write: its payment was not yet signed on the strength of it
        }
      }
      // A torn last line is closed off, so the next record starts on a line of its own.
      if (text && !text.endsWith('\n')) await enqueue('\n');
      return records;
    },
    append(record) {
      return enqueue(`${JSON.stringify(record)}\n`);
    },
    async close() {
      await queue.catch(() => undefined);
      await handle?.close();
      handle = undefined;
      if (locked) await (await nodeFs()).rm(lockPath, { force: true });
      locked = false;
    },
  };

  /** Writes one at a time, in order; a failed write fails its own append only. */
  function enqueue(line: string): Promise<void> {
    const next = queue.then(() => write(line));
    queue = next.catch(() => undefined);
    return next;
  }

  async function write(line: string): Promise<void> {
    const fs = await nodeFs();
    await lock(fs);
    handle ??= await fs.open(path, 'a');
    await handle.write(line);
    await handle.sync();
  }
}
