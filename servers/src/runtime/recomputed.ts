import { sql } from 'kysely';
import type { SharedDb } from '../db';

/**
 * Figures over a whole table for a free route, which must not read the table on every call: computed again only when
 * the table's fingerprint (a cheap aggregate that changes with every write, read without loading any row) has changed,
 * or once they are older than `maxAgeMs` (figures that depend on the time, such as "in the last 24 hours"). Callers
 * meanwhile share one computation; a failed one is forgotten, so the next caller computes again.
 */
export function recomputed<T>(options: { maxAgeMs?: number } = {}) {
  let last: { fingerprint: string; at: number; value: Promise<T> } | undefined;
  return (fingerprint: string, now: Date, compute: () => Promise<T>): Promise<T> => {
    const at = now.getTime();
    // A clock set back counts as stale too.
    const fresh = (seen: { at: number }) =>
      options.maxAgeMs === undefined || (at >= seen.at && at - seen.at < options.maxAgeMs);
    if (last && last.fingerprint === fingerprint && fresh(last)) return last.value;
    const entry = { fingerprint, at, value: compute() };
    last = entry;
    entry.value.catch(() => {
      if (last === entry) last = undefined;
    });
    return entry.value;
  };
}

/**
 * The fingerprint of a table that loses no row and whose every write raises a row's `version`: its row count and the
 * sum of its versions, read without loading any row.
 */
export async function versionsFingerprint(db: SharedDb, table: string): Promise<string> {
  const { rows } = await sql<{ rows: string; versions: string }>`
    select count(*)::text as rows, coalesce(sum(version), 0)::text as versions from ${sql.table(table)}`.execute(db);
  return `${rows[0]!.rows}:${rows[0]!.versions}`;
}
