// @ts-check
// PGlite (PostgreSQL in WebAssembly) on a thread of its own: the statements of every service run here, off the event
// loop that serves requests (db/pglite-dialect.ts is the other side). Plain JavaScript, so that a worker loads it under
// any runner (tsx, vitest, a compiled build) without a TypeScript loader of its own.
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite, parse, protocol } from '@electric-sql/pglite';

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

/** @type {{ dataDir?: string, template?: Uint8Array<ArrayBuffer>, wasm?: WebAssembly.Module }} */
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
const pglite = options.dataDir
  ? new PGlite(options.dataDir, settings)
  : new PGlite({ loadDataDir: new Blob([/** @type {Uint8Array<ArrayBuffer>} */ (options.template)]), ...settings });

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
 * @returns {Promise<import('@electric-sql/pglite').Results>}
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
 */
async function execute(text, values) {
  const { serialize } = protocol;
  let name = prepared.get(text);
  const fresh = name === undefined && seenOnce.has(text) && prepared.size < MAX_PREPARED;
  if (fresh) {
    name = `ae_${++names}`;
    seenOnce.delete(text);
  } else if (name === undefined) {
    if (seenOnce.size >= MAX_SEEN_ONCE) seenOnce.clear();
    seenOnce.add(text);
  }
  const message = Buffer.concat([
    ...(name === undefined || fresh ? [serialize.parse({ text, ...(name ? { name } : {}) })] : []),
    serialize.bind({ values, ...(name ? { statement: name } : {}) }),
    serialize.describe({ type: 'P' }),
    serialize.execute({}),
    serialize.sync(),
  ]);
  if (fresh) prepared.set(text, /** @type {string} */ (name));
  try {
    const { messages } = await pglite.execProtocol(message);
    const [result] = parse.parseResults(messages, pglite.parsers);
    if (!result) throw new Error('PGlite answered the statement with no result');
    return result;
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

// One statement at a time, in the order sent: a statement never starts inside another's await.
let queue = Promise.resolve();
port.on('message', (m) => (queue = queue.then(() => answer(m))));

pglite.waitReady.then(
  () => port.postMessage({ ready: true }),
  (error) => port.postMessage({ failed: plain(error) }),
);
