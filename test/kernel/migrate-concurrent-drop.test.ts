import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src/kernel/db/connect.js';
import { isOtherSchemaGone, migrate } from '../../src/kernel/db/migrations.js';

// Kysely's migrator looks at every table of every schema of the database (its introspection
// asks has_schema_privilege and pg_get_serial_sequence of each) before it migrates. On a shared
// database another process dropping its own schema at that moment made the migration fail with
// `schema "…" does not exist` (the test suite's PostgreSQL flake: test schemas are created
// and dropped concurrently). Another schema's drop must never fail this store's start.

const url = process.env.TEST_DATABASE_URL;
const onPostgres = process.env.TEST_STORE === 'postgres' && !!url;

/** Six new stores migrated one after another while the churn goes on (their schemas added to `schemas`, for the clean-up). */
async function migrateSixStores(schemas: string[]): Promise<void> {
  for (let round = 0; round < 6; round++) {
    const schema = `t_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
    schemas.push(schema);
    const store = await openStore({ kind: 'postgres', location: url! }, { schema, poolSize: 2 });
    try {
      expect((await migrate(store)).length).toBeGreaterThan(30);
      // A second migrate also introspects every schema: it applies nothing and does not fail.
      expect(await migrate(store)).toEqual([]);
    } finally {
      await store.close();
    }
  }
}

/**
 * migrateSixStores while `round` (its number from 1) runs again and again on a connection of
 * its own; then the churn stops, and the schemas (`schemas`, and the stores') are dropped.
 */
async function migrateWhileChurning(schemas: string[], round: (churn: pg.Client, n: number) => Promise<void>, setUp?: (churn: pg.Client) => Promise<void>): Promise<void> {
  const churn = new pg.Client({ connectionString: url });
  await churn.connect();
  let stop = false;
  let churning: Promise<void> = Promise.resolve();
  try {
    await setUp?.(churn);
    churning = (async () => {
      for (let n = 1; !stop; n++) await round(churn, n);
    })();
    await migrateSixStores(schemas);
  } finally {
    stop = true;
    await churning;
    for (const s of schemas) await churn.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
    await churn.end();
  }
}

describe.runIf(onPostgres)('migrating while other schemas are dropped (PostgreSQL)', () => {
  it('another schema created and dropped meanwhile never fails the migration', async () => {
    await migrateWhileChurning([], async (churn) => {
      const name = `t_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
      await churn.query(`CREATE SCHEMA "${name}"`);
      await churn.query(`CREATE TABLE "${name}".a (id bigserial primary key, v text)`);
      await churn.query(`CREATE TABLE "${name}".b (id bigserial primary key, v text)`);
      await churn.query(`DROP SCHEMA "${name}" CASCADE`);
      // About the pace of a busy test run's schema drops (each test app drops its own).
      await new Promise<void>((r) => setTimeout(r, 50));
    });
  }, 120_000);
  it('a column another schema drops meanwhile never fails the migration (42703 during the look at the catalogue)', async () => {
    const other = `t_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
    const table = `CREATE TABLE "${other}".transactions (id bigserial primary key, platform_id text, v text)`;
    // A column dropped and added again and again, as a migration that rebuilds a table does.
    // Dropped columns still count towards PostgreSQL's 1,600 per table: the table is made
    // anew (in one transaction) every thousand rounds.
    await migrateWhileChurning(
      [other],
      async (churn, n) => {
        await churn.query(`ALTER TABLE "${other}".transactions DROP COLUMN platform_id`);
        await churn.query(`ALTER TABLE "${other}".transactions ADD COLUMN platform_id text`);
        // A short pause: other test files migrate on this database meanwhile (they retry too, but need not wait long).
        await new Promise<void>((r) => setTimeout(r, 2));
        if (n % 1000 === 0) await churn.query(`BEGIN; DROP TABLE "${other}".transactions; ${table}; COMMIT`);
      },
      async (churn) => {
        await churn.query(`CREATE SCHEMA "${other}"`);
        await churn.query(table);
      },
    );
  }, 120_000);
});

describe('which migration failures are another schema\'s', () => {
  const err = (code: string, message: string) => Object.assign(new Error(message), { code });
  it('a dropped column counts only before any migration ran; a relation or schema only when it is not this store\'s', () => {
    const column = err('42703', 'column "platform_id" of relation "transactions" does not exist');
    expect(isOtherSchemaGone(column, 't_mine', true)).toBe(true);
    expect(isOtherSchemaGone(column, 't_mine', false)).toBe(false);
    expect(isOtherSchemaGone(err('3F000', 'schema "t_other" does not exist'), 't_mine')).toBe(true);
    expect(isOtherSchemaGone(err('42P01', 'relation "t_mine.quotes" does not exist'), 't_mine')).toBe(false);
    expect(isOtherSchemaGone(err('23505', 'duplicate key value'), 't_mine', true)).toBe(false);
  });
});
