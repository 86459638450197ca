import { CompiledQuery, type Kysely, sql } from 'kysely';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore, withNextStatement, type Store } from '../../src/kernel/db/connect.js';
import { freshStore, STORE, type TestStore } from '../helpers.js';

// PostgreSQL (issue 35): a transaction's `begin` goes with its first statement, and the
// inserts held back for the next statement go with the `commit` (kernel/db/pg-pipeline.ts):
// one round trip each instead of one per statement, with the same outcome, errors included.

describe.runIf(STORE === 'postgres')('pipelined statements (postgres)', () => {
  let ts: TestStore;
  let one: Store;
  let roundTrips = 0;
  const query = pg.Client.prototype.query;
  beforeEach(async () => {
    ts = await freshStore();
    // Every query a node-postgres client is asked is one round trip (counted before the
    // store's connection takes its own reference to the method).
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      roundTrips += 1;
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    // One connection: the statements prepared on it are the ones the pipeline may use.
    one = await openStore({ kind: 'postgres', location: process.env.TEST_DATABASE_URL! }, { schema: ts.schema!, poolSize: 1 });
    await sql`create table t (x integer primary key, note text)`.execute(one.db);
    // A table whose plain inserts the store holds back (connect.ts DEFERRED_INSERTS).
    await sql`create table jobs (id text primary key, kind text not null)`.execute(one.db);
  });
  afterEach(async () => {
    pg.Client.prototype.query = query;
    await one.close();
    await ts.store.close();
    await ts.drop();
  });

  type Jobs = Kysely<{ jobs: { id: string; kind: string } }>;
  const jobs = (db: unknown) => (db as Jobs).insertInto('jobs');
  const job = (id: string) => ({ id, kind: 'test' });
  const jobIds = async () => (await (one.db as unknown as Jobs).selectFrom('jobs').select('id').orderBy('id').execute()).map((r) => r.id);
  /** Round trips and statements of `fn`. */
  const measure = async (fn: () => Promise<unknown>) => {
    const [r0, s0] = [roundTrips, one.statements()];
    await fn();
    return { roundTrips: roundTrips - r0, statements: one.statements() - s0 };
  };
  const transaction = () =>
    one.db.transaction().execute(async (trx) => {
      await sql`insert into t values (${1}, ${'a'})`.execute(trx);
      await jobs(trx).values(job('Job:a')).execute();
      await jobs(trx).values(job('Job:b')).execute();
    });

  it('writes begin with the first statement and the held inserts with the commit', async () => {
    await transaction(); // prepares each statement on the connection (one by one)
    await sql`delete from t`.execute(one.db);
    await sql`delete from jobs`.execute(one.db);
    // begin + insert into t, then the two held inserts (two statements: one table) + commit.
    expect(await measure(transaction)).toEqual({ roundTrips: 2, statements: 5 });
    expect((await sql<{ x: number; note: string }>`select x, note from t`.execute(one.db)).rows).toEqual([{ x: 1, note: 'a' }]);
    expect(await jobIds()).toEqual(['Job:a', 'Job:b']);
  });

  it('a held insert that fails stops the commit written after it: the error, nothing committed, the connection usable', async () => {
    await transaction();
    await sql`delete from t`.execute(one.db);
    await sql`delete from jobs`.execute(one.db);
    await transaction(); // Job:a and Job:b exist now
    await sql`delete from t`.execute(one.db);
    const err = await one.db
      .transaction()
      .execute(async (trx) => {
        await sql`insert into t values (${2}, ${'b'})`.execute(trx);
        await jobs(trx).values(job('Job:c')).execute();
        await jobs(trx).values(job('Job:a')).execute(); // a duplicate: fails at commit
      })
      .then(
        () => undefined,
        (e: unknown) => e as { code?: string },
      );
    expect(err?.code).toBe('23505');
    expect((await sql`select x from t`.execute(one.db)).rows).toEqual([]);
    expect(await jobIds()).toEqual(['Job:a', 'Job:b']);
    // The connection goes on: a new transaction commits.
    await one.db.transaction().execute(async (trx) => {
      await sql`insert into t values (${3}, ${'c'})`.execute(trx);
    });
    expect((await sql`select x from t`.execute(one.db)).rows).toEqual([{ x: 3 }]);
  });

  it('a statement that fails after begin ends the transaction on rollback; an empty transaction costs no round trip', async () => {
    await sql`insert into t values (${1}, ${'a'})`.execute(one.db);
    const err = await one.db
      .transaction()
      .execute(async (trx) => {
        await sql`insert into t values (${1}, ${'again'})`.execute(trx);
      })
      .then(
        () => undefined,
        (e: unknown) => e as { code?: string },
      );
    expect(err?.code).toBe('23505');
    expect(await measure(() => one.db.transaction().execute(async () => {}))).toEqual({ roundTrips: 0, statements: 0 });
    expect((await sql<{ note: string }>`select note from t`.execute(one.db)).rows).toEqual([{ note: 'a' }]);
    // Not in a transaction any more: a statement outside one commits on its own.
    await sql`insert into t values (${2}, ${'b'})`.execute(one.db);
    expect((await sql`select count(*)::int as n from t`.execute(one.db)).rows).toEqual([{ n: 2 }]);
  });

  it('a savepoint released with nothing held goes with the next statement; with held inserts, after them', async () => {
    const withSavepoint = (heldInsert: boolean) =>
      one.db.transaction().execute(async (trx) => {
        await sql`insert into t values (${1}, ${'a'})`.execute(trx);
        await sql`savepoint s1`.execute(trx);
        await sql`insert into t values (${2}, ${'b'})`.execute(trx);
        if (heldInsert) await jobs(trx).values(job('Job:s')).execute();
        await sql`release savepoint s1`.execute(trx);
      });
    await withSavepoint(true); // prepares each statement on the connection
    await sql`delete from t`.execute(one.db);
    await sql`delete from jobs`.execute(one.db);
    // begin + insert; savepoint; insert; release + commit.
    expect(await measure(() => withSavepoint(false))).toEqual({ roundTrips: 4, statements: 6 });
    expect((await sql`select x from t order by x`.execute(one.db)).rows).toEqual([{ x: 1 }, { x: 2 }]);
    await sql`delete from t`.execute(one.db);
    // The held insert and the release go together, then the commit on its own.
    expect(await measure(() => withSavepoint(true))).toEqual({ roundTrips: 5, statements: 7 });
    expect(await jobIds()).toEqual(['Job:s']);
    // A rollback to an outer savepoint after a held release: both run, in order.
    await sql`delete from t`.execute(one.db);
    await one.db.transaction().execute(async (trx) => {
      await sql`insert into t values (${1}, ${'a'})`.execute(trx);
      await sql`savepoint outer_sp`.execute(trx);
      await sql`savepoint inner_sp`.execute(trx);
      await sql`insert into t values (${2}, ${'b'})`.execute(trx);
      await sql`release savepoint inner_sp`.execute(trx);
      await sql`rollback to savepoint outer_sp`.execute(trx);
    });
    expect((await sql`select x from t`.execute(one.db)).rows).toEqual([{ x: 1 }]);
  });

  it('a statement not yet prepared on the connection runs one by one, then pipelined', async () => {
    const select = () =>
      one.db.transaction().execute(async (trx) => {
        return (await sql<{ note: string }>`select note from t where x = ${5}`.execute(trx)).rows;
      });
    await sql`insert into t values (${5}, ${'e'})`.execute(one.db);
    // First: begin, then the select (prepared now), then commit.
    expect(await measure(select)).toEqual({ roundTrips: 3, statements: 3 });
    expect(await select()).toEqual([{ note: 'e' }]);
    expect(await measure(select)).toEqual({ roundTrips: 2, statements: 3 });
  });

  it('a transaction-local setting costs no round trip: written in front of the next statement, whose rows alone are the answer', async () => {
    const read = () =>
      one.db.transaction().execute(async (trx) => {
        await trx.executeQuery(CompiledQuery.raw(withNextStatement('select set_config($1, $2, true)'), ['payments.pipeline_test', 'armed']));
        return (await sql<{ v: string }>`select current_setting(${'payments.pipeline_test'}, true) as v`.execute(trx)).rows;
      });
    await read(); // prepares both on the connection
    // begin, the setting (a row of its own, not the answer) and the read, then commit.
    expect(await measure(read)).toEqual({ roundTrips: 2, statements: 4 });
    expect(await read()).toEqual([{ v: 'armed' }]);
    // Transaction-local: gone after the commit.
    expect((await sql<{ v: string | null }>`select nullif(current_setting(${'payments.pipeline_test'}, true), '') as v`.execute(one.db)).rows).toEqual([{ v: null }]);
  });

  it('a statement written with the next one that fails: the next one fails with its error, nothing committed, the connection usable', async () => {
    await sql`create or replace function pipeline_test_refuse() returns text language plpgsql as $$ begin raise exception using errcode = 'P0001', message = 'refused'; end $$`.execute(one.db);
    const err = await one.db
      .transaction()
      .execute(async (trx) => {
        await trx.executeQuery(CompiledQuery.raw(withNextStatement('select case when $1::int > 0 then pipeline_test_refuse() end'), [1]));
        await sql`insert into t values (${9}, ${'z'})`.execute(trx);
      })
      .then(
        () => undefined,
        (e: unknown) => e as { code?: string; message?: string },
      );
    expect(err).toMatchObject({ code: 'P0001', message: 'refused' });
    expect((await sql`select x from t where x = 9`.execute(one.db)).rows).toEqual([]);
    // Alone in its transaction (nothing else before the commit), it is written with the commit.
    const alone = await one.db
      .transaction()
      .execute(async (trx) => {
        await trx.executeQuery(CompiledQuery.raw(withNextStatement('select case when $1::int > 0 then pipeline_test_refuse() end'), [1]));
      })
      .then(
        () => undefined,
        (e: unknown) => e as { code?: string },
      );
    expect(alone?.code).toBe('P0001');
    expect((await sql<{ one: number }>`select 1 as one`.execute(one.db)).rows).toEqual([{ one: 1 }]);
  });
});
