import {
  closeSync,
  existsSync,
  fdatasync,
  fdatasyncSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';

// Persistence: a snapshot (LiteSVM's state plus our metadata) and an append-only log of JSON lines.
// Every committed transaction appends one line holding its history record and the post-state of the
// accounts it may have written, in a single write, so a crash loses at most what the OS had not yet
// flushed and never splits a transaction from its effects. Opening loads the snapshot, replays the
// account states logged after it, and reads the whole log for history. A new snapshot is cut at
// close and whenever enough log has accumulated, so replay stays short. The log is never rewritten,
// so a line's offset stays valid: the ledger reads old history records back by offset.

const MAGIC = Buffer.from('AELSNAP1');
const SNAPSHOT = 'snapshot.bin';
const LOG = 'ledger.log';
const LOCK = 'ledger.lock';
const SYNC_DELAY_MS = 200;
const READ_CHUNK = 1024 * 1024;
/** Most lines (a transaction's record and the accounts it wrote) fit in this; longer ones are read again whole. */
const LINE_GUESS = 16 * 1024;

export interface LogLine {
  /** Byte offset of the line in the log. */
  offset: number;
  record: Record<string, unknown>;
}

export class LedgerStore {
  private fd: number;
  private size: number;
  private syncTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Log size covered by the last snapshot. */
  snapshotOffset = 0;

  private constructor(readonly dir: string) {
    this.fd = openSync(join(dir, LOG), 'a+');
    this.size = fstatSync(this.fd).size;
  }

  /** Opens (creating) the directory and takes its lock, so two processes never write one ledger. */
  static open(dir: string): LedgerStore {
    mkdirSync(dir, { recursive: true });
    acquireLock(join(dir, LOCK));
    try {
      return new LedgerStore(dir);
    } catch (error) {
      rmSync(join(dir, LOCK), { force: true });
      throw error;
    }
  }

  readSnapshot(): { meta: Record<string, unknown>; svm: Uint8Array } | undefined {
    const path = join(this.dir, SNAPSHOT);
    if (!existsSync(path)) return undefined;
    const file = readFileSync(path);
    if (file.length < 12 || !file.subarray(0, 8).equals(MAGIC)) throw new Error(`${path} is not a ledger snapshot`);
    const metaLength = file.readUInt32LE(8);
    const meta = JSON.parse(file.subarray(12, 12 + metaLength).toString('utf8')) as Record<string, unknown>;
    this.snapshotOffset = Number(meta.logOffset ?? 0);
    return { meta, svm: new Uint8Array(file.buffer, file.byteOffset + 12 + metaLength, file.length - 12 - metaLength) };
  }

  /**
   * Every complete line of the log, in order; a torn last line (a crash mid-write) is cut off. Read a
   * chunk at a time, so that opening a long log does not hold all of it in memory at once.
   */
  *readLog(): Generator<LogLine> {
    let buffer = Buffer.alloc(0);
    let bufferOffset = 0; // log offset of buffer[0]
    let pos = 0; // start of the next line within buffer
    for (;;) {
      const end = buffer.indexOf(10, pos);
      if (end !== -1) {
        yield { offset: bufferOffset + pos, record: this.parse(buffer, pos, end, bufferOffset + pos) };
        pos = end + 1;
        continue;
      }
      const loaded = bufferOffset + buffer.length;
      if (loaded >= this.size) {
        if (pos < buffer.length) {
          ftruncateSync(this.fd, bufferOffset + pos);
          this.size = bufferOffset + pos;
        }
        return;
      }
      // keep the unfinished line and read on after it
      const next = Buffer.alloc(Math.min(READ_CHUNK, this.size - loaded));
      readSync(this.fd, next, 0, next.length, loaded);
      buffer = Buffer.concat([buffer.subarray(pos), next]);
      bufferOffset += pos;
      pos = 0;
    }
  }

  /** The line that starts at a byte offset readLog gave or append returned (history evicted from memory). */
  readLine(offset: number): Record<string, unknown> {
    if (this.closed) throw new Error('the ledger is closed');
    for (let length = LINE_GUESS; ; length *= 4) {
      const buffer = Buffer.alloc(Math.min(length, this.size - offset));
      readSync(this.fd, buffer, 0, buffer.length, offset);
      const end = buffer.indexOf(10);
      if (end !== -1) return this.parse(buffer, 0, end, offset);
      if (offset + buffer.length >= this.size) throw new Error(`${join(this.dir, LOG)} has no line at byte ${offset}`);
    }
  }

  private parse(buffer: Buffer, start: number, end: number, offset: number): Record<string, unknown> {
    try {
      return JSON.parse(buffer.toString('utf8', start, end)) as Record<string, unknown>;
    } catch {
      throw new Error(`${join(this.dir, LOG)} is corrupt at byte ${offset}`);
    }
  }

  /** Empties the log (a genesis that crashed before its first snapshot left only genesis records there). */
  truncateLog(): void {
    ftruncateSync(this.fd, 0);
    this.size = 0;
    this.snapshotOffset = 0;
  }

  /** Appends one record and returns its offset; it reaches the OS at once and the disk within SYNC_DELAY_MS. */
  append(record: object): number {
    if (this.closed) throw new Error('the ledger is closed');
    const line = Buffer.from(`${JSON.stringify(record)}\n`, 'utf8');
    const offset = this.size;
    writeSync(this.fd, line);
    this.size += line.length;
    this.syncTimer ??= setTimeout(() => {
      this.syncTimer = undefined;
      if (!this.closed) fdatasync(this.fd, () => undefined);
    }, SYNC_DELAY_MS).unref();
    return offset;
  }

  get bytesSinceSnapshot(): number {
    return this.size - this.snapshotOffset;
  }

  /** Writes a snapshot covering the whole log so far, atomically (temporary file, then rename). */
  writeSnapshot(meta: Record<string, unknown>, svm: Uint8Array): void {
    fdatasyncSync(this.fd);
    const metaBytes = Buffer.from(JSON.stringify({ ...meta, logOffset: this.size }), 'utf8');
    const header = Buffer.alloc(12);
    MAGIC.copy(header, 0);
    header.writeUInt32LE(metaBytes.length, 8);
    const tmp = join(this.dir, `${SNAPSHOT}.tmp`);
    const fd = openSync(tmp, 'w', 0o600); // it holds the local faucet's key
    try {
      writeSync(fd, header);
      writeSync(fd, metaBytes);
      writeSync(fd, svm);
      fdatasyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, join(this.dir, SNAPSHOT));
    this.snapshotOffset = this.size;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.syncTimer) clearTimeout(this.syncTimer);
    fdatasyncSync(this.fd);
    closeSync(this.fd);
    rmSync(join(this.dir, LOCK), { force: true });
  }
}

function acquireLock(path: string): void {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(path, String(process.pid), { flag: 'wx' });
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number(readFileSync(path, 'utf8'));
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder)) {
        throw new Error(`the ledger in ${path.slice(0, -LOCK.length - 1)} is in use by process ${holder}`);
      }
      if (holder === process.pid)
        throw new Error(`the ledger in ${path.slice(0, -LOCK.length - 1)} is already open in this process`);
      rmSync(path, { force: true }); // a lock left by a process that is gone
    }
  }
  throw new Error(`could not lock ${path}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
