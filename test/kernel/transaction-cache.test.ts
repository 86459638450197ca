import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TableCache } from '../../src/kernel/db/table-cache.js';
import { freshStore, STORE, type TestStore } from '../helpers.js';

// On PostgreSQL a table without change notifications (here cache_probe; the service's
// cached tables have them, test/kernel/pg-change-watch.test.ts) is cached for one database
// transaction only (issue 15: a payment read its customer four times, each a round trip),
// and dropped when that process writes it; outside a transaction it is always read.
// SQLite keeps values across requests (its own watch, tested in store-tuning).

describe.runIf(STORE === 'postgres')('TableCache within a PostgreSQL transaction', () => {
  let ts: TestStore;
  beforeEach(async () => {
    ts = await freshStore();
    await sql`create table cache_probe (id text primary key, v integer not null)`.execute(ts.store.db);
    await sql`insert into cache_probe values ('a', 1)`.execute(ts.store.db);
  });
  afterEach(async () => {
    await ts.store.close();
    await ts.drop();
  });

  it('reads once per transaction, again after a write, and never keeps a value past the transaction', async () => {
    const cache = new TableCache<string, number>(['cache_probe']);
    let loads = 0;
    const read = (db: Parameters<typeof cache.get>[0]) =>
      cache.get(db, 'a', async () => {
        loads += 1;
        return Number((await sql<{ v: number }>`select v from cache_probe where id = 'a'`.execute(db)).rows[0]!.v);
      });
    await ts.store.db.transaction().execute(async (trx) => {
      expect(await read(trx)).toBe(1);
      expect(await read(trx)).toBe(1);
      expect(loads).toBe(1);
      await sql`update cache_probe set v = 2 where id = 'a'`.execute(trx);
      expect(await read(trx)).toBe(2);
      expect(loads).toBe(2);
      // A rollback to a savepoint undoes writes: read again.
      await sql`savepoint s`.execute(trx);
      await sql`update cache_probe set v = 3 where id = 'a'`.execute(trx);
      expect(await read(trx)).toBe(3);
      await sql`rollback to savepoint s`.execute(trx);
      expect(await read(trx)).toBe(2);
      expect(loads).toBe(4);
    });
    // Another transaction starts empty; outside any transaction every get reads.
    await ts.store.db.transaction().execute(async (trx) => {
      expect(await read(trx)).toBe(2);
    });
    expect(loads).toBe(5);
    await read(ts.store.db);
    await read(ts.store.db);
    expect(loads).toBe(7);
  });
});
