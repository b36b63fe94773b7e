import { CamelCasePlugin, sql, type Kysely, type RawBuilder } from 'kysely';
import type { SharedDb } from '.';

const views = new WeakMap<SharedDb, SharedDb>();

/**
 * A store's view of the database with its tables declared in the entities' own camelCase shape: the plugin names
 * the migrations' snake_case columns in every query and gives result rows camelCase keys back, so a table's row type
 * is the entity (a Pick/Omit of it plus storage-only columns) and no field-by-field mapper is written. Raw `sql`
 * text is not rewritten (it names snake_case columns), and the contents of JSON columns are data, not column names:
 * their keys are left as stored.
 */
export function camelCaseDb<Tables>(db: SharedDb): Kysely<Tables> {
  // One view a handle (the row types are only the caller's): a paid call's statements each asked for one.
  let view = views.get(db);
  if (!view) views.set(db, (view = db.withPlugin(new CamelCasePlugin({ maintainNestedObjectKeys: true }))));
  return view as Kysely<Tables>;
}

/** A value for a jsonb column: the driver would send a JavaScript array as a PostgreSQL array. */
export const json = <T>(value: T): RawBuilder<T> => sql<T>`${JSON.stringify(value)}::jsonb`;
