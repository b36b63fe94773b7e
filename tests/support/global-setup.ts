import { openDatabase } from '../../servers/src/db';

// Makes the in-memory database template once, before the test files start in parallel.
export default async function setup() {
  const database = await openDatabase();
  await database.close();
}
