import { sql, type Kysely, type Migration } from 'kysely';
import { json } from '../../db/camel-case';
import type { CognitiveState, CognitiveStateRecord, StateGroup } from '@agent-economy/contracts';
import { conflict } from '../../runtime/errors';
import type { SharedDb } from '../../db';

export const STATE_GROUPS: readonly StateGroup[] = ['compute', 'memory', 'reasoning', 'performance', 'tasks'];

export const migrations: Record<string, Migration> = {
  '001_states': {
    async up(db) {
      // One row per (wallet, agent): agent ids live in the calling wallet's own namespace.
      await db.schema
        .createTable('cognition_states')
        .addColumn('owner', 'text', (c) => c.notNull())
        .addColumn('agent_id', 'text', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('state', 'jsonb', (c) => c.notNull())
        .addColumn('group_updated_at', 'jsonb', (c) => c.notNull())
        .addColumn('created_at', 'timestamptz', (c) => c.notNull())
        .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
        .addPrimaryKeyConstraint('cognition_states_pk', ['owner', 'agent_id'])
        .execute();
    },
  },
};

interface StateRow {
  owner: string;
  agent_id: string;
  version: number;
  state: CognitiveState;
  group_updated_at: Partial<Record<StateGroup, string>>;
  created_at: Date;
  updated_at: Date;
}
interface Tables {
  cognition_states: StateRow;
}

const toRecord = (row: StateRow): CognitiveStateRecord => ({
  agentId: row.agent_id,
  owner: row.owner,
  version: row.version,
  state: row.state,
  groupUpdatedAt: row.group_updated_at,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});
const versionConflict = (agentId: string, expected: number | undefined, actual: number | null) =>
  conflict(
    'version_conflict',
    actual === null
      ? `There is no state for agent "${agentId}" yet, so it has no version ${expected}`
      : `The state of agent "${agentId}" is at version ${actual}${expected === undefined ? ' (it changed during this write)' : `, not ${expected}`}`,
    { expectedVersion: expected ?? null, currentVersion: actual },
  );

export function cognitionStore(database: SharedDb) {
  const db = database as Kysely<Tables>;
  const find = async (owner: string, agentId: string) =>
    db
      .selectFrom('cognition_states')
      .selectAll()
      .where('owner', '=', owner)
      .where('agent_id', '=', agentId)
      .executeTakeFirst();

  return {
    async get(owner: string, agentId: string): Promise<CognitiveStateRecord | undefined> {
      const row = await find(owner, agentId);
      return row && toRecord(row);
    },

    /** 409 version_conflict unless expectedVersion (when given) is the stored version (before paying). */
    async checkVersion(owner: string, agentId: string, expectedVersion: number | undefined): Promise<void> {
      if (expectedVersion === undefined) return;
      const row = await find(owner, agentId);
      if (row?.version !== expectedVersion) throw versionConflict(agentId, expectedVersion, row?.version ?? null);
    },

    /**
     * Writes the groups sent (each replaces the stored group whole). Optimistic: the update only applies
     * to the version that was read, so two concurrent writers cannot both win; the loser gets 409.
     */
    async write(
      owner: string,
      agentId: string,
      groups: CognitiveState,
      expectedVersion: number | undefined,
      now: Date,
    ): Promise<CognitiveStateRecord> {
      const sent = STATE_GROUPS.filter((g) => groups[g] !== undefined);
      const stamp = Object.fromEntries(sent.map((g) => [g, now.toISOString()]));
      const current = await find(owner, agentId);
      if (expectedVersion !== undefined && current?.version !== expectedVersion)
        throw versionConflict(agentId, expectedVersion, current?.version ?? null);
      if (!current) {
        const state = Object.fromEntries(sent.map((g) => [g, groups[g]]));
        const inserted = await db
          .insertInto('cognition_states')
          .values({
            owner,
            agent_id: agentId,
            version: 1,
            state: json(state),
            group_updated_at: json(stamp),
            created_at: now,
            updated_at: now,
          })
          .onConflict((oc) => oc.columns(['owner', 'agent_id']).doNothing())
          .returningAll()
          .executeTakeFirst();
        if (!inserted) throw versionConflict(agentId, expectedVersion, (await find(owner, agentId))?.version ?? null);
        return toRecord(inserted);
      }
      const state = { ...current.state, ...Object.fromEntries(sent.map((g) => [g, groups[g]])) };
      const updated = await db
        .updateTable('cognition_states')
        .set({
          version: current.version + 1,
          state: json(state),
          group_updated_at: json({ ...current.group_updated_at, ...stamp }),
          updated_at: now,
        })
        .where('owner', '=', owner)
        .where('agent_id', '=', agentId)
        .where('version', '=', current.version)
        .returningAll()
        .executeTakeFirst();
      if (!updated) throw versionConflict(agentId, expectedVersion, (await find(owner, agentId))?.version ?? null);
      return toRecord(updated);
    },
  };
}

export type CognitionStore = ReturnType<typeof cognitionStore>;
