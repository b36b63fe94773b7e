import { parse, protocol, type PGlite, type Results } from '@electric-sql/pglite';
import {
  CompiledQuery,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
} from 'kysely';

/**
 * A parameter in the text form node-postgres sends it in (the PostgreSQL engine's driver), for the kinds the
 * services pass; undefined for any other kind (buffers, arrays, objects), which PGlite's own query serializes.
 */
function textParameter(value: unknown): string | null | undefined {
  if (value === null || value === undefined) return null;
  switch (typeof value) {
    case 'string':
      return value;
    case 'number':
    case 'bigint':
      return String(value);
    case 'boolean':
      return value ? 'true' : 'false';
  }
  return value instanceof Date && !Number.isNaN(value.getTime()) ? value.toISOString() : undefined;
}

/**
 * How many distinct statements stay prepared. The services run a few hundred texts often; a text is prepared on its
 * second run, so one-off texts (a batch of an unusual size) never hold a plan, and texts beyond are parsed each time.
 */
const MAX_PREPARED = 500;
/** Texts run once so far, remembered up to this many (then forgotten together). */
const MAX_SEEN_ONCE = 2_000;

/** PostgreSQL no longer accepts the prepared statement as it was planned (its tables changed), or no longer has it. */
function staleStatement(error: unknown): boolean {
  const { code, message } = error as { code?: string; message?: string };
  return code === '26000' || (code === '0A000' && /cached plan must not change result type/.test(message ?? ''));
}

// PGlite is one embedded connection: the driver hands it out to one user at a time, so a transaction
// never interleaves with another query.
class PGliteConnection implements DatabaseConnection {
  /** Statement text → name of the statement prepared for it. */
  private readonly prepared = new Map<string, string>();
  private readonly seenOnce = new Set<string>();
  private names = 0;

  constructor(private readonly pglite: PGlite) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const result = await this.run<R>(query.sql, query.parameters);
    return {
      rows: result.rows,
      ...(result.affectedRows !== undefined ? { numAffectedRows: BigInt(result.affectedRows) } : {}),
    };
  }

  /**
   * PGlite's query() asks PostgreSQL for the parameters' types first and sends each protocol message in its own call
   * into WebAssembly (six a statement). With parameters already in text form, as node-postgres sends them,
   * PostgreSQL infers their types itself, so one call carries the whole statement: about a third less CPU a statement.
   * A text run again is parsed and planned once, as a named prepared statement (about half the CPU of parsing it).
   */
  private async run<R>(text: string, parameters: readonly unknown[]): Promise<Results<R>> {
    const values = parameters.map(textParameter);
    if (values.includes(undefined)) return this.pglite.query<R>(text, parameters as unknown[]);
    try {
      return await this.execute<R>(text, values as (string | null)[]);
    } catch (error) {
      const name = this.prepared.get(text);
      if (!name || !staleStatement(error)) throw error;
      // Planned before its tables changed (a migration): dropped, and outside a transaction parsed again under a new
      // name (it did not run). Inside one, the error has aborted the transaction: it stands.
      this.prepared.delete(text);
      await this.close(name);
      if (this.pglite.isInTransaction()) throw error;
      return this.execute<R>(text, values as (string | null)[]);
    }
  }

  private async execute<R>(text: string, values: (string | null)[]): Promise<Results<R>> {
    const { serialize } = protocol;
    let name = this.prepared.get(text);
    const fresh = name === undefined && this.seenOnce.has(text) && this.prepared.size < MAX_PREPARED;
    if (fresh) {
      name = `ae_${++this.names}`;
      this.seenOnce.delete(text);
    } else if (name === undefined) {
      if (this.seenOnce.size >= MAX_SEEN_ONCE) this.seenOnce.clear();
      this.seenOnce.add(text);
    }
    const message = Buffer.concat([
      ...(name === undefined || fresh ? [serialize.parse({ text, ...(name ? { name } : {}) })] : []),
      serialize.bind({ values, ...(name ? { statement: name } : {}) }),
      serialize.describe({ type: 'P' }),
      serialize.execute({}),
      serialize.sync(),
    ]);
    if (fresh) this.prepared.set(text, name!);
    try {
      const { messages } = await this.pglite.execProtocol(message);
      return parse.parseResults(messages, this.pglite.parsers)[0] as Results<R>;
    } catch (error) {
      // A failed first run: the statement may have been parsed before it failed (a duplicate key), or not (a syntax
      // error); it is closed either way (closing a name that does not exist is no error) and prepared next time.
      if (fresh) {
        this.prepared.delete(text);
        await this.close(name!);
      }
      throw error;
    }
  }

  /** Drops a prepared statement; best effort (a failure leaves one unused plan behind). */
  private async close(name: string): Promise<void> {
    const { serialize } = protocol;
    await this.pglite
      .execProtocol(Buffer.concat([serialize.close({ type: 'S', name }), serialize.sync()]))
      .catch(() => undefined);
  }

  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('PGlite does not stream query results');
  }
}

class PGliteDriver implements Driver {
  private readonly connection: PGliteConnection;
  private queue: Promise<void> = Promise.resolve();
  private release: (() => void) | undefined;

  constructor(private readonly pglite: PGlite) {
    this.connection = new PGliteConnection(pglite);
  }

  async init(): Promise<void> {
    await this.pglite.waitReady;
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const previous = this.queue;
    let release!: () => void;
    this.queue = new Promise((resolve) => (release = resolve));
    await previous;
    this.release = release;
    return this.connection;
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin'));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async releaseConnection(): Promise<void> {
    const release = this.release;
    this.release = undefined;
    release?.();
  }

  async destroy(): Promise<void> {
    await this.queue;
    await this.pglite.close();
  }
}

export class PGliteDialect implements Dialect {
  constructor(private readonly pglite: PGlite) {}
  createAdapter() {
    return new PostgresAdapter();
  }
  createDriver() {
    return new PGliteDriver(this.pglite);
  }
  createQueryCompiler() {
    return new PostgresQueryCompiler();
  }
  createIntrospector(db: Kysely<unknown>) {
    return new PostgresIntrospector(db);
  }
}
