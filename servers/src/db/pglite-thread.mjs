// @ts-check
// PGlite (PostgreSQL in WebAssembly) on a thread of its own: the statements of every service run here, off the event
// loop that serves requests (db/pglite-dialect.ts is the other side). Plain JavaScript, so that a worker loads it under
// any runner (tsx, vitest, a compiled build) without a TypeScript loader of its own.
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite, protocol } from '@electric-sql/pglite';

const INT8_OID = 20;
// int8 columns hold money in atomic units: read them as bigint, exactly (a bigint crosses to the event loop as is).
const PARSERS = { [INT8_OID]: (/** @type {string} */ value) => BigInt(value) };

/**
 * How many distinct statements stay prepared. The services run a few hundred texts often; a text is prepared on its
 * second run, so one-off texts (a batch of an unusual size) never hold a plan, and texts beyond are parsed each time.
 */
const MAX_PREPARED = 500;
/** Texts run once so far, remembered up to this many (then forgotten together). */
const MAX_SEEN_ONCE = 2_000;

/** @type {{ dataDir?: string, template?: Uint8Array<SharedArrayBuffer>, wasm?: WebAssembly.Module, analyzeEveryMs?: number }} */
const options = workerData;
const port = /** @type {import('node:worker_threads').MessagePort} */ (parentPort);

/**
 * A parameter in the text form node-postgres sends it in (the PostgreSQL engine's driver), for the kinds the
 * services pass; undefined for any other kind (bytes, arrays, objects), which PGlite's own query serializes.
 * @param {unknown} value
 * @returns {string | null | undefined}
 */
function textParameter(value) {
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
 * PostgreSQL no longer accepts the prepared statement as it was planned (its tables changed), or no longer has it.
 * @param {any} error
 */
function staleStatement(error) {
  const { code, message } = error ?? {};
  return code === '26000' || (code === '0A000' && /cached plan must not change result type/.test(message ?? ''));
}

// PGlite's defaults plus a 32 MB buffer cache instead of PostgreSQL's 128 MB: the cache is WebAssembly memory that is
// never given back, and the services' working set is small (about 120 MB less RSS; fsync is off already: -F).
const startParams = [
  .../** @type {{ defaultStartParams: string[] }} */ (/** @type {unknown} */ (PGlite)).defaultStartParams,
  '-c',
  'shared_buffers=32MB',
];
const settings = {
  parsers: PARSERS,
  startParams,
  // Compiled once by the process (pglite-dialect.ts), not by each thread.
  ...(options.wasm ? { pgliteWasmModule: options.wasm } : {}),
};
// The template arrives in memory shared with the other threads (pglite-template.ts); a Blob takes an ordinary copy (the
// standard refuses shared memory there, and Node is following it).
const pglite = options.dataDir
  ? new PGlite(options.dataDir, settings)
  : new PGlite({
      loadDataDir: new Blob([/** @type {Uint8Array<SharedArrayBuffer>} */ (options.template).slice()]),
      ...settings,
    });

/** Statement text → name of the statement prepared for it. @type {Map<string, string>} */
const prepared = new Map();
/** @type {Set<string>} */
const seenOnce = new Set();
let names = 0;

/**
 * PGlite's query() asks PostgreSQL for the parameters' types first and sends each protocol message in its own call
 * into WebAssembly (six a statement). With parameters already in text form, as node-postgres sends them,
 * PostgreSQL infers their types itself, so one call carries the whole statement: about a third less CPU a statement.
 * A text run again is parsed and planned once, as a named prepared statement (about half the CPU of parsing it).
 * @param {string} text
 * @param {unknown[]} parameters
 * @returns {Promise<{ rows: unknown[], affectedRows?: number }>}
 */
async function run(text, parameters) {
  const values = parameters.map(textParameter);
  if (values.includes(undefined)) return pglite.query(text, parameters);
  const texts = /** @type {(string | null)[]} */ (values);
  try {
    return await execute(text, texts);
  } catch (error) {
    const name = prepared.get(text);
    if (!name || !staleStatement(error)) throw error;
    // Planned before its tables changed (a migration): dropped, and outside a transaction parsed again under a new
    // name (it did not run). Inside one, the error has aborted the transaction: it stands.
    prepared.delete(text);
    await close(name);
    if (pglite.isInTransaction()) throw error;
    return execute(text, texts);
  }
}

/**
 * @param {string} text
 * @param {(string | null)[]} values
 * @returns {Promise<{ rows: Record<string, unknown>[], affectedRows: number }>}
 */
async function execute(text, values) {
  let name = prepared.get(text);
  const fresh = name === undefined && seenOnce.has(text) && prepared.size < MAX_PREPARED;
  if (fresh) {
    name = `ae_${++names}`;
    seenOnce.delete(text);
  } else if (name === undefined) {
    if (seenOnce.size >= MAX_SEEN_ONCE) seenOnce.clear();
    seenOnce.add(text);
  }
  const message = statementMessage(text, name ?? '', name === undefined || fresh, values);
  if (fresh) prepared.set(text, /** @type {string} */ (name));
  try {
    /** @type {Buffer[]} */
    const chunks = [];
    // The raw answer, read here: PGlite's own reading parses every message into objects and copies the bytes twice
    // (a sixth of this thread's time on a paid call). Its file systems here (the node one, memory) have nothing to
    // sync after a statement: syncToFs only added a lock and promises.
    await pglite.execProtocolRawStream(message, {
      syncToFs: false,
      // A view of WebAssembly memory, reused by the next write: copied.
      onRawData: (chunk) => void chunks.push(Buffer.from(chunk)),
    });
    return readResult(chunks.length === 1 ? /** @type {Buffer} */ (chunks[0]) : Buffer.concat(chunks));
  } catch (error) {
    // A failed first run: the statement may have been parsed before it failed (a duplicate key), or not (a syntax
    // error); it is closed either way (closing a name that does not exist is no error) and prepared next time.
    if (fresh) {
      prepared.delete(text);
      await close(/** @type {string} */ (name));
    }
    throw error;
  }
}

// PostgreSQL's extended query protocol (frontend/backend protocol 3.0), the messages this thread sends: Parse (when
// the statement is new), Bind with text parameters, Describe the portal, Execute, Sync. Written with Node's Buffer
// (native UTF-8) rather than PGlite's serializer, which counts each string's UTF-8 length in JavaScript a character at
// a time: a paid call binds a few KB of JSON.
const DESCRIBE_PORTAL = Buffer.from([0x44, 0, 0, 0, 6, 0x50, 0]);
const EXECUTE = Buffer.from([0x45, 0, 0, 0, 9, 0, 0, 0, 0, 0]);
const SYNC = Buffer.from([0x53, 0, 0, 0, 4]);

/**
 * @param {string} text
 * @param {string} name the prepared statement's name; '' for the unnamed one
 * @param {boolean} parse whether to send the text (a statement not prepared yet)
 * @param {(string | null)[]} values
 */
function statementMessage(text, name, parse, values) {
  const nameBytes = Buffer.byteLength(name);
  const textBytes = parse ? Buffer.byteLength(text) : 0;
  const parseLength = 4 + nameBytes + 1 + textBytes + 1 + 2;
  const lengths = values.map((v) => (v === null ? -1 : Buffer.byteLength(v)));
  // Length, portal '', statement name, no parameter format codes (all text), the parameters, no result format codes.
  let bindLength = 4 + 1 + nameBytes + 1 + 2 + 2 + 2;
  for (const length of lengths) bindLength += 4 + Math.max(length, 0);
  const out = Buffer.allocUnsafe(
    (parse ? 1 + parseLength : 0) + 1 + bindLength + DESCRIBE_PORTAL.length + EXECUTE.length + SYNC.length,
  );
  let at = 0;
  if (parse) {
    out[at++] = 0x50;
    at = out.writeInt32BE(parseLength, at);
    at += out.write(name, at);
    out[at++] = 0;
    at += out.write(text, at);
    out[at++] = 0;
    at = out.writeInt16BE(0, at);
  }
  out[at++] = 0x42;
  at = out.writeInt32BE(bindLength, at);
  out[at++] = 0;
  at += out.write(name, at);
  out[at++] = 0;
  at = out.writeInt16BE(0, at);
  at = out.writeInt16BE(values.length, at);
  values.forEach((value, i) => {
    at = out.writeInt32BE(/** @type {number} */ (lengths[i]), at);
    if (value !== null) at += out.write(value, at);
  });
  at = out.writeInt16BE(0, at);
  at += DESCRIBE_PORTAL.copy(out, at);
  at += EXECUTE.copy(out, at);
  SYNC.copy(out, at);
  return out;
}

/** Commands whose tag counts rows changed (PGlite's affectedRows counts these). */
const COUNTED = new Set(['INSERT', 'UPDATE', 'DELETE', 'COPY', 'MERGE']);
/** ErrorResponse field codes, by the property PGlite's DatabaseError names them. */
const ERROR_FIELDS = /** @type {Record<string, string>} */ ({
  S: 'severity',
  C: 'code',
  D: 'detail',
  H: 'hint',
  P: 'position',
  p: 'internalPosition',
  q: 'internalQuery',
  W: 'where',
  s: 'schema',
  t: 'table',
  c: 'column',
  d: 'dataType',
  n: 'constraint',
  F: 'file',
  L: 'line',
  R: 'routine',
});

/**
 * The rows and the rows changed of one statement's answer (RowDescription, DataRows, CommandComplete); its error,
 * thrown with PostgreSQL's fields, when it has one. Values are text, read by PGlite's parsers for their types.
 * @param {Buffer} data
 */
function readResult(data) {
  /** @type {Record<string, unknown>[]} */
  const rows = [];
  /** @type {string[]} */
  let names = [];
  /** @type {(((value: string, type: number) => unknown) | undefined)[]} */
  let parsers = [];
  /** @type {number[]} */
  let types = [];
  let affectedRows = 0;
  /** @type {Error | undefined} */
  let error;
  for (let at = 0; at + 5 <= data.length;) {
    const type = data[at];
    const end = at + 1 + data.readInt32BE(at + 1);
    let i = at + 5;
    if (type === 0x54) {
      // RowDescription: per field its name, table, column, type, size, modifier and format.
      const count = data.readInt16BE(i);
      i += 2;
      names = [];
      types = [];
      for (let f = 0; f < count; f++) {
        const zero = data.indexOf(0, i);
        names.push(data.toString('utf8', i, zero));
        types.push(data.readInt32BE(zero + 7));
        i = zero + 19;
      }
      parsers = types.map((oid) => pglite.parsers[oid]);
    } else if (type === 0x44) {
      const count = data.readInt16BE(i);
      i += 2;
      /** @type {Record<string, unknown>} */
      const row = {};
      for (let f = 0; f < count; f++) {
        const length = data.readInt32BE(i);
        i += 4;
        if (length < 0) {
          row[/** @type {string} */ (names[f])] = null;
          continue;
        }
        const value = data.toString('utf8', i, i + length);
        i += length;
        const parser = parsers[f];
        row[/** @type {string} */ (names[f])] = parser ? parser(value, /** @type {number} */ (types[f])) : value;
      }
      rows.push(row);
    } else if (type === 0x43) {
      const tag = data.toString('utf8', i, end - 1).split(' ');
      const changed = Number.parseInt(/** @type {string} */ (tag[tag.length - 1]), 10);
      if (COUNTED.has(/** @type {string} */ (tag[0])) && !Number.isNaN(changed)) affectedRows += changed;
    } else if (type === 0x45 && !error) {
      /** @type {Record<string, string>} */
      const fields = {};
      while (i < end && data[i] !== 0) {
        const code = String.fromCharCode(/** @type {number} */ (data[i]));
        const zero = data.indexOf(0, i + 1);
        fields[code] = data.toString('utf8', i + 1, zero);
        i = zero + 1;
      }
      error = Object.assign(new Error(fields.M ?? 'the database refused the statement'), { name: 'error' });
      for (const [code, property] of Object.entries(ERROR_FIELDS))
        if (fields[code] !== undefined) Object.assign(error, { [property]: fields[code] });
    }
    at = end;
  }
  if (error) throw error;
  return { rows, affectedRows };
}

/**
 * Drops a prepared statement; best effort (a failure leaves one unused plan behind).
 * @param {string} name
 */
async function close(name) {
  const { serialize } = protocol;
  await pglite.execProtocol(Buffer.concat([serialize.close({ type: 'S', name }), serialize.sync()])).catch(() => {});
}

/**
 * An error as plain fields (PostgreSQL's code, detail, constraint …), which cross to the event loop intact where an
 * Error's own properties would not. Only plain values: anything else an error carries (PGlite adds the query's
 * options, with functions) could not be posted, and a failed post would end the thread.
 * @param {unknown} error
 */
function plain(error) {
  if (!(error instanceof Error)) return { message: String(error) };
  /** @type {Record<string, unknown>} */
  const fields = { name: error.name, message: error.message, stack: error.stack };
  for (const [name, value] of Object.entries(error))
    if (value === null || ['string', 'number', 'boolean', 'bigint'].includes(typeof value)) fields[name] = value;
  return fields;
}

/** @param {{ id: number, sql?: string, parameters?: unknown[], close?: true }} m */
async function answer(m) {
  try {
    if (m.close) {
      await pglite.close();
      port.postMessage({ id: m.id });
      port.close();
      return;
    }
    const result = await run(/** @type {string} */ (m.sql), m.parameters ?? []);
    port.postMessage({ id: m.id, rows: result.rows, affectedRows: result.affectedRows });
  } catch (error) {
    port.postMessage({ id: m.id, error: plain(error) });
  }
}

/**
 * Planner statistics, as PostgreSQL's autovacuum keeps them: PGlite runs no autovacuum, and without statistics the
 * planner takes an equality to match 0.5 % of a table. It read `state = 'open'` as a few rows when it is nearly all of
 * them, and preferred that index to the primary key: each voucher's update scanned every open session of every seller
 * (1.5 ms for three vouchers among 2,000 open sessions, 0.3 ms by the key). At most once every `analyzeEveryMs`, between
 * statements and outside any transaction, the thread analyzes the table whose rows changed most past autovacuum's
 * threshold (50 rows and a tenth of the table); one table a turn, a few milliseconds, so statements barely wait.
 */
const ANALYZE_EVERY_MS = options.analyzeEveryMs ?? 10_000;
let analyzeDue = Date.now() + ANALYZE_EVERY_MS;
let closing = false;
async function analyzeOne() {
  if (closing || pglite.isInTransaction()) return;
  try {
    const { rows } = await pglite.query(
      `select format('%I.%I', s.schemaname, s.relname) as name
         from pg_stat_user_tables s join pg_class c on c.oid = s.relid
        where s.n_mod_since_analyze > 50 + 0.1 * greatest(c.reltuples, 0)
        order by s.n_mod_since_analyze desc limit 1`,
    );
    const name = /** @type {{ name?: string } | undefined} */ (rows[0])?.name;
    if (name) await pglite.exec(`analyze ${name}`);
  } catch {
    // A table dropped meanwhile (a test's schema): the next turn looks again.
  }
}

// One statement at a time, in the order sent: a statement never starts inside another's await.
let queue = Promise.resolve();
port.on('message', (m) => {
  if (m.close) closing = true;
  queue = queue.then(() => answer(m));
  if (!closing && Date.now() >= analyzeDue) {
    analyzeDue = Date.now() + ANALYZE_EVERY_MS;
    queue = queue.then(analyzeOne);
  }
});

pglite.waitReady.then(
  () => port.postMessage({ ready: true }),
  (error) => port.postMessage({ failed: plain(error) }),
);
