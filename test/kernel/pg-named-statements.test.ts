import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isStalePlan, openStore, PG_NAMED_STATEMENTS_MAX, type Store, StatementNames } from '../../src/kernel/db/connect.js';
import { freshStore, STORE, type TestStore } from '../helpers.js';

// PostgreSQL runs the service's statements as named prepared statements (kernel/db/connect.ts,
// StatementNames): parsed once per connection, then only bound and executed.

describe('statement names', () => {
  it('names a text once, the same name every time, up to the limit; renew gives new names', () => {
    const n = new StatementNames();
    const a = n.nameOf('select $1');
    expect(a).toBe(n.nameOf('select $1'));
    expect(n.nameOf('select $1, $2')).not.toBe(a);
    for (let i = 0; i < PG_NAMED_STATEMENTS_MAX; i++) n.nameOf(`select ${i}, $1`);
    expect(n.nameOf('select "past the limit", $1')).toBeUndefined();
    expect(n.nameOf('select $1')).toBe(a); // a known text keeps its name
    n.renew();
    const b = n.nameOf('select $1');
    expect(b).toBeDefined();
    expect(b).not.toBe(a);
  });

  it('tells a stale plan from other errors', () => {
    expect(isStalePlan({ code: '0A000', message: 'cached plan must not change result type' })).toBe(true);
    expect(isStalePlan({ code: '0A000', message: 'something else' })).toBe(false);
    expect(isStalePlan(new Error('cached plan must not change result type'))).toBe(false);
  });
});

describe.runIf(STORE === 'postgres')('named prepared statements (postgres)', () => {
  let ts: TestStore;
  let one: Store;
  beforeEach(async () => {
    ts = await freshStore();
    // One connection, so the session the statements were prepared in is the one asked.
    one = await openStore({ kind: 'postgres', location: process.env.TEST_DATABASE_URL! }, { schema: ts.schema!, poolSize: 1 });
    await sql`create table t (x integer primary key, note text)`.execute(one.db);
    await sql`insert into t values (1, 'a'), (2, 'b')`.execute(one.db);
  });
  afterEach(async () => {
    await one.close();
    await ts.store.close();
    await ts.drop();
  });

  const prepared = async () => (await sql<{ statement: string }>`select statement from pg_prepared_statements where statement not like '%pg_prepared_statements%' order by prepare_time`.execute(one.db)).rows.map((r) => r.statement);

  it('prepares a statement with parameters once per connection and reuses it; one without runs unprepared', async () => {
    for (let i = 0; i < 3; i++) expect((await sql<{ note: string }>`select note from t where x = ${1}`.execute(one.db)).rows).toEqual([{ note: 'a' }]);
    expect(await sql<{ n: number }>`select count(*)::int as n from t`.execute(one.db).then((r) => r.rows)).toEqual([{ n: 2 }]);
    expect(await prepared()).toEqual(['select note from t where x = $1']);
    // In a transaction too, with the same name.
    await one.db.transaction().execute(async (trx) => {
      expect((await sql<{ note: string }>`select note from t where x = ${2}`.execute(trx)).rows).toEqual([{ note: 'b' }]);
    });
    expect(await prepared()).toEqual(['select note from t where x = $1']);
  });

  it('gives every text a new name after a schema change of its own (a migration), so nothing runs on an old plan', async () => {
    const select = () => sql<Record<string, unknown>>`select * from t where x = ${2}`.execute(one.db);
    expect((await select()).rows).toEqual([{ x: 2, note: 'b' }]);
    await sql`alter table t add column extra text default 'y'`.execute(one.db);
    expect((await select()).rows).toEqual([{ x: 2, note: 'b', extra: 'y' }]);
    expect(await prepared()).toEqual(['select * from t where x = $1', 'select * from t where x = $1']);
  });

  it('after another connection changes the result columns, one statement fails and the next ones prepare afresh', async () => {
    const select = () => sql<Record<string, unknown>>`select * from t where x = ${1}`.execute(one.db);
    expect((await select()).rows).toEqual([{ x: 1, note: 'a' }]);
    // Another process (a newer version's migration) adds a column.
    const other = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL!, options: `-c search_path=${ts.schema}` });
    await other.connect();
    try {
      await other.query(`alter table t add column extra text default 'z'`);
    } finally {
      await other.end();
    }
    const failed = await select().then(
      () => null,
      (err: unknown) => err,
    );
    // PostgreSQL refuses the old plan: only this statement fails.
    expect(isStalePlan(failed)).toBe(true);
    expect((await select()).rows).toEqual([{ x: 1, note: 'a', extra: 'z' }]);
    expect((await select()).rows).toEqual([{ x: 1, note: 'a', extra: 'z' }]);
  });
});
