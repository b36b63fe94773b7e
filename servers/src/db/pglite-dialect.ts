import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import {
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
} from 'kysely';

export interface PGliteThreadOptions {
  /** Directory of PGlite's files (initialised); absent: in memory, from `template`. */
  dataDir?: string;
  /** A dump of an initialised data directory (PGlite's dumpDataDir), for an in-memory database. */
  template?: Uint8Array;
  /** How often at most the thread looks for a table to analyze (pglite-thread.mjs); 10 s unless set (tests). */
  analyzeEveryMs?: number;
}

/**
 * PostgreSQL's WebAssembly, compiled once by a process and shared by its database threads (a compiled module crosses
 * to a thread without a copy; its file bundle, read by each thread, would be copied).
 */
let artifacts: Promise<{ wasm: object }> | undefined;
function pgliteArtifacts() {
  artifacts ??= (async () => {
    const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
    const code = await readFile(join(dirname(entry), 'pglite.wasm'));
    // The WebAssembly global is not in this project's libraries (no DOM), only Node's.
    const { compile } = (globalThis as unknown as { WebAssembly: { compile(code: Uint8Array): Promise<object> } })
      .WebAssembly;
    return { wasm: await compile(code) };
  })();
  return artifacts;
}

interface Answer {
  id: number;
  rows?: unknown[];
  affectedRows?: number;
  error?: Record<string, unknown> & { message: string };
}

/** An error PGlite raised on its thread, with its fields (PostgreSQL's code, detail, constraint …) as they were. */
function rebuilt(fields: Record<string, unknown> & { message: string }): Error {
  const { stack: _stack, ...rest } = fields;
  return Object.assign(new Error(fields.message), rest);
}

/**
 * PGlite on a thread of its own (pglite-thread.mjs): PostgreSQL's WebAssembly, its files and its protocol run there,
 * and this thread, which serves every request of the process, only sends a statement's text and parameters and gets
 * its rows back. A paid call's statements cost the event loop a third of its time when PGlite ran on it.
 */
export class PGliteThread {
  private readonly worker: Worker;
  private readonly pending = new Map<number, { resolve(answer: Answer): void; reject(error: Error): void }>();
  private ids = 0;
  private stopped: Error | undefined;
  readonly ready: Promise<void>;

  /** Starts a database thread (its `ready` says when it takes statements). */
  static async start(options: PGliteThreadOptions): Promise<PGliteThread> {
    return new PGliteThread({ ...options, ...(await pgliteArtifacts()) });
  }

  private constructor(workerData: PGliteThreadOptions & { wasm: object }) {
    this.worker = new Worker(new URL('./pglite-thread.mjs', import.meta.url), {
      workerData,
      // The thread's garbage is short-lived protocol buffers: a small young generation keeps its heap near its live
      // size (a two-service process 325 MB of RSS after 300 paid calls, 359 MB with V8's default of 8 MB and more).
      resourceLimits: { maxYoungGenerationSizeMb: 2 },
    });
    let started!: () => void;
    let failed!: (error: Error) => void;
    this.ready = new Promise<void>((resolve, reject) => {
      started = resolve;
      failed = reject;
    });
    // Until it is ready, and while statements are under way, the thread keeps the process alive; idle, it does not
    // (a process that forgot to close its database still exits).
    this.worker.on('message', (message: Answer & { ready?: true; failed?: Answer['error'] }) => {
      if (message.ready) {
        this.worker.unref();
        return started();
      }
      if (message.failed) {
        failed(rebuilt(message.failed));
        return void this.worker.terminate();
      }
      const call = this.pending.get(message.id);
      if (!call) return;
      this.pending.delete(message.id);
      if (this.pending.size === 0) this.worker.unref();
      call.resolve(message);
    });
    const stop = (error: Error) => {
      this.stopped ??= error;
      failed(error);
      for (const call of this.pending.values()) call.reject(error);
      this.pending.clear();
    };
    // Whoever uses the database first meets a failed start (the driver's init); until then it is no unhandled one.
    this.ready.catch(() => undefined);
    this.worker.on('error', stop);
    this.worker.on('exit', (code) => stop(new Error(`the database thread has stopped (exit code ${code})`)));
  }

  private send(message: { sql: string; parameters: readonly unknown[] } | { close: true }): Promise<Answer> {
    if (this.stopped) return Promise.reject(this.stopped);
    const id = ++this.ids;
    if (this.pending.size === 0) this.worker.ref();
    return new Promise<Answer>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, ...message });
    });
  }

  async query<R>(sql: string, parameters: readonly unknown[]): Promise<QueryResult<R>> {
    const answer = await this.send({ sql, parameters });
    if (answer.error) throw rebuilt(answer.error);
    return {
      rows: answer.rows as R[],
      ...(answer.affectedRows !== undefined ? { numAffectedRows: BigInt(answer.affectedRows) } : {}),
    };
  }

  /** Closes the database (its files flushed) and ends the thread. */
  async close(): Promise<void> {
    if (this.stopped) return;
    await this.send({ close: true });
    this.stopped = new Error('the database is closed');
    // Its files closed, the thread has nothing left to do: it is ended without waiting for its teardown (tens of
    // milliseconds, freeing its memory).
    void this.worker.terminate();
  }
}

/** A user of the one PGlite session (Kysely's connection): a statement, or a transaction. */
class PGliteConnection implements DatabaseConnection {
  constructor(private readonly driver: PGliteDriver) {}

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return this.driver.execute<R>(this, query);
  }

  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('PGlite does not stream query results');
  }
}

/**
 * PGlite is one session. Statements of different users go to its thread as they come, without waiting for each
 * other's answers: the thread runs them in order, each in its own implicit transaction, as a PostgreSQL server runs
 * statements of separate connections. A transaction has the session to itself: from its begin to its commit or
 * rollback, other users' statements and transactions wait, so nothing interleaves with it.
 */
class PGliteDriver implements Driver {
  private transaction: { owner: PGliteConnection; ended: Promise<void>; end(): void } | undefined;

  constructor(private readonly thread: PGliteThread) {}

  async init(): Promise<void> {
    await this.thread.ready;
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    return new PGliteConnection(this);
  }

  async execute<R>(connection: PGliteConnection, query: CompiledQuery): Promise<QueryResult<R>> {
    // Sent in the same turn as the check: nothing can begin in between.
    while (this.transaction && this.transaction.owner !== connection) await this.transaction.ended;
    return this.thread.query<R>(query.sql, query.parameters);
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    const owner = connection as PGliteConnection;
    // Taken in the same turn as the check: of the users woken by one end, the first takes the session.
    while (this.transaction) await this.transaction.ended;
    let end!: () => void;
    const ended = new Promise<void>((resolve) => (end = resolve));
    this.transaction = { owner, ended, end };
    try {
      await this.thread.query('begin', []);
    } catch (error) {
      this.finish(owner);
      throw error;
    }
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.end(connection as PGliteConnection, 'commit');
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return this.end(connection as PGliteConnection, 'rollback');
  }

  /** Ends the transaction, and gives the session back whether or not the statement went through. */
  private async end(owner: PGliteConnection, statement: 'commit' | 'rollback'): Promise<void> {
    try {
      await this.thread.query(statement, []);
    } finally {
      this.finish(owner);
    }
  }

  private finish(owner: PGliteConnection): void {
    if (this.transaction?.owner !== owner) return;
    const { end } = this.transaction;
    this.transaction = undefined;
    end();
  }

  async releaseConnection(): Promise<void> {}

  async destroy(): Promise<void> {
    while (this.transaction) await this.transaction.ended;
    // The thread answers what was sent before it closes.
    await this.thread.close();
  }
}

export class PGliteDialect implements Dialect {
  constructor(private readonly thread: PGliteThread) {}
  createAdapter() {
    return new PostgresAdapter();
  }
  createDriver() {
    return new PGliteDriver(this.thread);
  }
  createQueryCompiler() {
    return new PostgresQueryCompiler();
  }
  createIntrospector(db: Kysely<unknown>) {
    return new PostgresIntrospector(db);
  }
}
