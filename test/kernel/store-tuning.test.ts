import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { iso, ManualClock } from '../../src/kernel/clock.js';
import { PAUSE_PAGES, WAL_BOUND_BYTES, WAL_SIZE_LIMIT_BYTES } from '../../src/kernel/db/checkpointer.js';
import { EXTERNAL_CHECK_MS, LEAF_TABLES, openStore, type Store, withStatementCache, writeTargetOf } from '../../src/kernel/db/connect.js';
import { groupedInsert } from '../../src/kernel/db/grouped-insert.js';
import { VOLUME_STATUSES_NOT_COUNTED } from '../../src/kernel/db/migrations.js';
import { migrate } from '../../src/kernel/db/migrations.js';
import { prepared, preparedInsert, preparedUpdate } from '../../src/kernel/db/prepared.js';
import { TableCache } from '../../src/kernel/db/table-cache.js';
import { JobQueue } from '../../src/kernel/jobs.js';
import { PollingLoop } from '../../src/kernel/polling.js';
import { compileAllRouteSchemas } from '../../src/kernel/validation.js';
import { outgoingVolume, STATUSES_NOT_COUNTED } from '../../src/api/limits/store.js';
import { freshStore, makeApp, sleep, STORE, type TestApp, type TestStore, waitFor } from '../helpers.js';

// The machinery behind the hot paths (bench/README.md): the SQLite statement cache and
// change watch, table caches, prepared queries, grouped inserts, the transaction-volume
// triggers, job batches and wake-ups, and lazily compiled route schemas. Each must answer
// exactly what the plain code did.

describe('SQLite statement cache', () => {
  it('reuses a statement per SQL text, keeps at most `max`, and never shares a busy one', () => {
    const raw = new Database(':memory:');
    raw.exec('create table t (x integer)');
    const db = withStatementCache(raw, 2);
    const a = db.prepare('select x from t');
    expect(db.prepare('select x from t')).toBe(a);
    db.prepare('select 1');
    db.prepare('select 2'); // evicts the least recently used: 'select x from t'
    expect(db.prepare('select x from t')).not.toBe(a);

    raw.prepare('insert into t values (1), (2)').run();
    const s = db.prepare('select x from t');
    const it = s.iterate([]);
    it.next();
    const other = db.prepare('select x from t'); // s is still iterating
    expect(other).not.toBe(s);
    expect(other.all([])).toHaveLength(2);
    it.return?.();
    db.close();
  });

  it('tells which table a statement writes', () => {
    expect(writeTargetOf('select * from "jobs"')).toBeNull();
    expect(writeTargetOf('begin')).toBeNull();
    expect(writeTargetOf('savepoint job_run')).toBeNull();
    expect(writeTargetOf('insert into "api_tokens" ("id") values (?)')).toBe('api_tokens');
    expect(writeTargetOf('insert or ignore into platforms (id) values (?)')).toBe('platforms');
    expect(writeTargetOf('update "platforms" set "name" = ?')).toBe('platforms');
    expect(writeTargetOf('delete from "fee_configs" where "id" = ?')).toBe('*'); // may cascade
    expect(writeTargetOf('delete from "jobs" where "id" = ?')).toBe('jobs'); // nothing cascades from jobs
    expect(writeTargetOf('delete from jobs_archive where id = ?')).toBe('*');
    expect(writeTargetOf('insert or replace into platforms (id) values (?)')).toBe('*');
    expect(writeTargetOf('insert into "jobs" ("id") values (?) on conflict do nothing')).toBe('jobs');
    expect(writeTargetOf('with x as (select 1) update "platforms" set "name" = ?')).toBe('*');
    expect(writeTargetOf('alter table platforms add column x text')).toBe('*');
    expect(writeTargetOf('rollback')).toBe('*');
    expect(writeTargetOf('rollback to savepoint job_run')).toBe('*');
  });

  it('a delete from a leaf table cannot cascade: no foreign key names it, no trigger runs on it', async () => {
    const store = await openStore({ kind: 'sqlite', location: ':memory:' });
    try {
      await migrate(store);
      const tables = await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(store.db);
      expect(tables.rows.map((r) => r.name)).toEqual(expect.arrayContaining([...LEAF_TABLES]));
      for (const { name } of tables.rows) {
        const fks = await sql<{ table: string }>`select "table" from pragma_foreign_key_list(${name})`.execute(store.db);
        for (const fk of fks.rows) expect(LEAF_TABLES.has(fk.table.toLowerCase()), `${name} references ${fk.table}`).toBe(false);
      }
      const triggers = await sql<{ tbl_name: string }>`select tbl_name from sqlite_master where type = 'trigger'`.execute(store.db);
      for (const t of triggers.rows) expect(LEAF_TABLES.has(t.tbl_name.toLowerCase()), `trigger on ${t.tbl_name}`).toBe(false);
    } finally {
      await store.close();
    }
  });
});

describe.runIf(STORE === 'sqlite')('SQLite change watch and table caches', () => {
  let dir: string;
  let store: Store;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'payments-watch-'));
    store = await openStore({ kind: 'sqlite', location: join(dir, 'db.sqlite') });
    await migrate(store);
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('changes the version on a write to a watched table, through this store or another connection', async () => {
    const watch = store.watch!(['platforms']);
    const v0 = watch.version();
    expect(watch.version()).toBe(v0);
    await store.db.insertInto('jobs').values({ id: 'Job:1', platform_id: null, kind: 'k', payload: 'null', run_at_ms: 0, status: 'done', attempts: 0, max_attempts: 1, last_error: null, created_at: 'x', updated_at: 'x' }).execute();
    expect(watch.version()).toBe(v0); // another table
    await store.db.insertInto('platforms').values({ id: 'Platform:1', name: 'a', regulated: 0, is_default: 0, options: '{}', clock_offset_ms: 0, created_at: 'x', updated_at: 'x', webhook_private_key: null, webhook_public_key: null }).execute();
    const v1 = watch.version();
    expect(v1).not.toBe(v0);

    // A commit of another connection (the token commands of the CLI, another tool).
    const other = new Database(join(dir, 'db.sqlite'));
    other.prepare("update platforms set name = 'b' where id = 'Platform:1'").run();
    other.close();
    await sleep(EXTERNAL_CHECK_MS + 1);
    expect(watch.version()).not.toBe(v1);
  });

  it('a TableCache answers what a read would, and reads again after any change', async () => {
    const cache = new TableCache<string, string | undefined>(['platforms']);
    let reads = 0;
    const name = () =>
      cache.get(store.db, 'Platform:1', async () => {
        reads += 1;
        return (await store.db.selectFrom('platforms').select('name').where('id', '=', 'Platform:1').executeTakeFirst())?.name;
      });
    await store.db.insertInto('platforms').values({ id: 'Platform:1', name: 'a', regulated: 0, is_default: 0, options: '{}', clock_offset_ms: 0, created_at: 'x', updated_at: 'x', webhook_private_key: null, webhook_public_key: null }).execute();
    expect(await name()).toBe('a');
    expect(await name()).toBe('a');
    expect(reads).toBe(1);
    // A write inside a transaction that rolls back still empties the cache (the read then finds the old value).
    await store.db
      .transaction()
      .execute(async (trx) => {
        await trx.updateTable('platforms').set({ name: 'c' }).where('id', '=', 'Platform:1').execute();
        expect(await cache.get(trx, 'Platform:1', async () => (await trx.selectFrom('platforms').select('name').where('id', '=', 'Platform:1').executeTakeFirst())?.name)).toBe('c');
        throw new Error('roll back');
      })
      .catch(() => {});
    expect(await name()).toBe('a');
    expect(reads).toBe(2);
    const other = new Database(join(dir, 'db.sqlite'));
    other.prepare("update platforms set name = 'b' where id = 'Platform:1'").run();
    other.close();
    await sleep(EXTERNAL_CHECK_MS + 1);
    expect(await name()).toBe('b');
  });

  it('takes the write lock when a transaction begins, so a transaction that reads first cannot lose its snapshot', async () => {
    await store.db.insertInto('platforms').values({ id: 'Platform:1', name: 'a', regulated: 0, is_default: 0, options: '{}', clock_offset_ms: 0, created_at: 'x', updated_at: 'x', webhook_private_key: null, webhook_public_key: null }).execute();
    const other = new Database(join(dir, 'db.sqlite'));
    other.pragma('busy_timeout = 0');
    try {
      await store.db.transaction().execute(async (trx) => {
        expect((await trx.selectFrom('platforms').select('name').where('id', '=', 'Platform:1').executeTakeFirst())?.name).toBe('a');
        // With a deferred `begin` this commit would go through, and the write below would
        // then fail with SQLITE_BUSY_SNAPSHOT; here it has to wait for the transaction.
        expect(() => other.prepare("update platforms set name = 'b' where id = 'Platform:1'").run()).toThrow(/busy|locked/i);
        await trx.updateTable('platforms').set({ name: 'c' }).where('id', '=', 'Platform:1').execute();
      });
      other.prepare("update platforms set name = 'b' where id = 'Platform:1'").run();
    } finally {
      other.close();
    }
    expect((await store.db.selectFrom('platforms').select('name').where('id', '=', 'Platform:1').executeTakeFirst())?.name).toBe('b');
  });

  it('runs WAL checkpoints from a worker when asked, and closes cleanly', async () => {
    const file = join(dir, 'bg.sqlite');
    const bg = await openStore({ kind: 'sqlite', location: file }, { backgroundCheckpoints: true });
    await migrate(bg);
    for (let i = 0; i < 50; i += 1) await sql`insert into jobs (id, platform_id, kind, payload, run_at_ms, status, attempts, max_attempts, last_error, created_at, updated_at) values (${`Job:${i}`}, null, 'k', 'null', 0, 'done', 0, 1, null, 'x', 'x')`.execute(bg.db);
    await bg.close();
    const check = new Database(file, { readonly: true });
    expect(check.prepare('select count(*) as n from jobs').get()).toEqual({ n: 50 });
    check.close();
  });

  it('has the worker pause the writes to copy the WAL\'s end and rewind it, with nothing lost (issue 35)', async () => {
    const file = join(dir, 'pause.sqlite');
    const wal = `${file}-wal`;
    const bg = await openStore({ kind: 'sqlite', location: file }, { backgroundCheckpoints: true });
    let max = 0;
    let rows = 0;
    try {
      await sql`create table w (id integer primary key, body blob not null)`.execute(bg.db);
      // Pages from 4 writers at a steady pace (a load, not a burst), at least 4 × PAUSE_PAGES
      // and on until the worker has paused the writes once (10 s at most): its ticks find the
      // WAL past PAUSE_PAGES and ask for pauses.
      let id = 0;
      const deadline = Date.now() + 10_000;
      const writer = async () => {
        for (let i = 0; i < 25 || (bg.walPauses!() === 0 && Date.now() < deadline); i += 1) {
          await bg.db.transaction().execute(async (trx) => {
            for (let j = 0; j < 20; j += 1) {
              id += 1;
              await sql`insert into w (id, body) values (${id}, ${Buffer.alloc(4000, id % 256)})`.execute(trx);
            }
          });
          if (existsSync(wal)) max = Math.max(max, statSync(wal).size);
          await sleep(15);
        }
      };
      await Promise.all(Array.from({ length: 4 }, writer));
      rows = id;
      expect(rows).toBeGreaterThanOrEqual(4 * PAUSE_PAGES);
      // Reads and writes go on after the pauses, in the rewound WAL.
      await sql`update w set body = x'00' where id = 1`.execute(bg.db);
      console.log(`WAL under paced writers: at most ${(max / 2 ** 20).toFixed(1)} MiB, ${bg.walPauses!()} pauses, ${rows} rows`);
      expect(bg.walPauses!()).toBeGreaterThan(0);
      expect(max).toBeLessThanOrEqual(WAL_BOUND_BYTES);
    } finally {
      await bg.close();
    }
    const check = new Database(file, { readonly: true });
    expect(check.prepare('select count(*) as n, sum(length(body)) as bytes from w').get()).toEqual({ n: rows, bytes: 1 + (rows - 1) * 4000 });
    check.close();
  });

  it('keeps the WAL within its bound under writes that never pause, and truncates a WAL over its limit once writes pause (issue 33)', async () => {
    const file = join(dir, 'wal.sqlite');
    const wal = `${file}-wal`;
    const bg = await openStore({ kind: 'sqlite', location: file }, { backgroundCheckpoints: true });
    const walSize = () => (existsSync(wal) ? statSync(wal).size : 0);
    try {
      await sql`create table w (id integer primary key, body blob not null)`.execute(bg.db);
      // 24 MiB of rows from 8 writers with no pause between transactions (group commits
      // of several), while the worker checkpoints passively every 250 ms.
      let max = 0;
      let id = 0;
      const body = Buffer.alloc(4096, 7);
      const writer = async () => {
        for (let i = 0; i < 768; i += 1) {
          await bg.db.transaction().execute(async (trx) => {
            id += 1;
            await sql`insert into w (id, body) values (${id}, ${body})`.execute(trx);
          });
          max = Math.max(max, walSize());
        }
      };
      await Promise.all(Array.from({ length: 8 }, writer));
      expect(Number((await sql<{ n: number }>`select count(*) as n from w`.execute(bg.db)).rows[0]!.n)).toBe(8 * 768);
      console.log(`WAL under 8 writers that never pause: at most ${(max / 2 ** 20).toFixed(1)} MiB after 24 MiB written, ${bg.walPauses!()} pauses`);
      expect(max, `WAL reached ${max} bytes`).toBeLessThanOrEqual(WAL_BOUND_BYTES);

      // One transaction larger than the limit (as a WAL left long by checkpoints that failed
      // on a full disk): once nothing writes, the worker truncates it.
      await bg.db.transaction().execute(async (trx) => {
        for (let i = 0; i < 2_000; i += 1) await sql`update w set body = ${Buffer.alloc(4096, i % 256)} where id = ${i + 1}`.execute(trx);
      });
      expect(walSize()).toBeGreaterThan(WAL_SIZE_LIMIT_BYTES);
      await waitFor(() => walSize() <= WAL_SIZE_LIMIT_BYTES, 5_000);
    } finally {
      await bg.close();
    }
    // Nothing lost.
    const check = new Database(file, { readonly: true });
    expect(check.prepare('select count(*) as n from w').get()).toEqual({ n: 8 * 768 });
    check.close();
  });
});

describe(`prepared queries (${STORE})`, () => {
  let ts: TestStore;
  beforeEach(async () => {
    ts = await freshStore();
    await migrate(ts.store);
  });
  afterEach(async () => {
    await ts.store.close();
    await ts.drop();
  });

  const platform = (id: string) => ({ id, name: 'n', regulated: 0, is_default: 0, options: '{}', clock_offset_ms: 0, created_at: 'x', updated_at: 'x', webhook_private_key: null, webhook_public_key: null });

  it('compiles to the SQL the builder compiles, and binds the values by name', async () => {
    const byName = prepared<{ name: string }, { id: string }>((db, p) => db.selectFrom('platforms').select('id').where('name', '=', p('name')).where('regulated', '=', 0));
    const db = ts.store.db;
    await db.insertInto('platforms').values([platform('Platform:a'), { ...platform('Platform:b'), name: 'm' }]).execute();
    expect(await byName.all(db, { name: 'm' })).toEqual([{ id: 'Platform:b' }]);
    expect(await byName.first(db, { name: 'nope' })).toBeUndefined();
    await db.transaction().execute(async (trx) => expect(await byName.first(trx, { name: 'n' })).toEqual({ id: 'Platform:a' }));
  });

  it('inserts and updates as the builder does: columns whose value is undefined are left out', async () => {
    const db = ts.store.db;
    const insert = preparedInsert('platforms');
    const { options: _o, ...withoutOptions } = platform('Platform:c');
    await insert(db, { ...withoutOptions, options: undefined }); // the column default '{}'
    await insert(db, [platform('Platform:d'), platform('Platform:e')]);
    const update = preparedUpdate('platforms', ['id']);
    expect(await update(db, { name: 'renamed', regulated: undefined }, ['Platform:d'])).toBe(1);
    expect(await update(db, { name: 'x' }, ['Platform:none'])).toBe(0);
    const rows = await db.selectFrom('platforms').select(['id', 'name', 'options']).orderBy('id').execute();
    expect(rows).toEqual([
      { id: 'Platform:c', name: 'n', options: '{}' },
      { id: 'Platform:d', name: 'renamed', options: '{}' },
      { id: 'Platform:e', name: 'n', options: '{}' },
    ]);
  });

  it('groups the inserts of one event-loop turn, and a bad row fails alone', async () => {
    const db = ts.store.db;
    const insert = groupedInsert('platforms');
    await insert(db, platform('Platform:dup'));
    const results = await Promise.allSettled([insert(db, platform('Platform:1')), insert(db, platform('Platform:dup')), insert(db, platform('Platform:2'))]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const ids = (await db.selectFrom('platforms').select('id').orderBy('id').execute()).map((r) => r.id);
    expect(ids).toEqual(['Platform:1', 'Platform:2', 'Platform:dup']);
  });
});

describe(`transaction volumes (${STORE})`, () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await makeApp();
  });
  afterEach(async () => t.close());

  it('keeps the daily volume the limits read equal to the sum of the counted transactions', async () => {
    const db = t.store.db;
    const platformId = t.running.bootstrap.platform.id;
    const day = '2026-01-02';
    const row = (id: string, status: string, amount: number, at = `${day}T10:00:00.000Z`, received: string | null = 'MXN') => ({
      id,
      platform_id: platformId,
      customer_id: platformId,
      platform_customer_id: platformId,
      type: 'OUTGOING',
      direction: 'DEBIT',
      quote_id: null,
      source: '{}',
      source_account_id: null,
      destination: '{}',
      destination_account_id: null,
      sent_amount: amount,
      sent_currency: 'USD',
      received_amount: amount,
      received_currency: received,
      fees: 0,
      platform_fees: 0,
      exchange_rate: '1',
      rate_details: '{}',
      payment_rail: null,
      description: null,
      status,
      created_at: at,
      updated_at: at,
    });
    const window = { platformId, sendingCurrency: 'USD', receivingCurrency: 'MXN', fromAt: `${day}T00:00:00.000Z`, toAt: '2026-01-03T00:00:00.000Z' };
    const sum = async () => {
      const r = await db
        .selectFrom('transactions')
        .select((eb) => eb.fn.sum<number>('sent_amount').as('total'))
        .where('platform_id', '=', platformId)
        .where('type', '=', 'OUTGOING')
        .where('sent_currency', '=', 'USD')
        .where('received_currency', '=', 'MXN')
        .where('status', 'not in', [...STATUSES_NOT_COUNTED])
        .where('created_at', '>=', window.fromAt)
        .where('created_at', '<', window.toAt)
        .executeTakeFirst();
      return BigInt(Number(r?.total ?? 0));
    };
    const check = async () => expect(await outgoingVolume(db, window)).toBe(await sum());

    await db.insertInto('transactions').values([row('Transaction:1', 'PENDING', 100), row('Transaction:2', 'PROCESSING', 200), row('Transaction:3', 'COMPLETED', 400)]).execute();
    await db.insertInto('transactions').values([row('Transaction:4', 'COMPLETED', 800, '2026-01-03T00:00:00.000Z'), row('Transaction:5', 'COMPLETED', 1600, `${day}T23:59:59.999Z`, null)]).execute();
    await check();
    expect(await outgoingVolume(db, window)).toBe(600n);
    await db.updateTable('transactions').set({ status: 'PROCESSING' }).where('id', '=', 'Transaction:1').execute(); // now counted
    await db.updateTable('transactions').set({ status: 'COMPLETED' }).where('id', '=', 'Transaction:2').execute(); // still counted
    await db.updateTable('transactions').set({ status: 'FAILED' }).where('id', '=', 'Transaction:3').execute(); // no longer
    await check();
    await db.updateTable('transactions').set({ sent_amount: 150 }).where('id', '=', 'Transaction:1').execute();
    await db.updateTable('transactions').set({ created_at: `${day}T01:00:00.000Z` }).where('id', '=', 'Transaction:4').execute(); // moves into the day
    await check();
    await db.deleteFrom('transactions').where('id', '=', 'Transaction:2').execute();
    await check();
    expect(await outgoingVolume(db, window)).toBe(950n);
    // A window that is not one whole day is summed as before.
    expect(await outgoingVolume(db, { ...window, fromAt: `${day}T05:00:00.000Z` })).toBe(150n);
  });

  it.runIf(STORE === 'sqlite')('has triggers that count exactly the statuses the limits count', async () => {
    expect([...STATUSES_NOT_COUNTED]).toEqual([...VOLUME_STATUSES_NOT_COUNTED]);
    const triggers = await sql<{ sql: string }>`select sql from sqlite_master where type = 'trigger' and name like 'transaction_volumes_%'`.execute(t.store.db);
    expect(triggers.rows).toHaveLength(3);
    for (const tr of triggers.rows) for (const s of STATUSES_NOT_COUNTED) expect(tr.sql).toContain(`'${s}'`);
  });
});

describe(`job batches and wake-ups (${STORE})`, () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await makeApp();
  });
  afterEach(async () => t.close());

  it('runs several due jobs in one batch (on PostgreSQL one per claim), each in its own savepoint', async () => {
    const platformId = t.running.bootstrap.platform.id;
    const jobs = t.running.jobs;
    const ran: number[] = [];
    jobs.register('test.batch', async ({ job, trx, nowMs }) => {
      const n = job.payload as number;
      await trx.insertInto('events').values({ id: `Webhook:batch-${n}`, platform_id: platformId, type: 'TEST.BATCH', resource_id: String(n), payload: '{}', created_at: iso(nowMs) }).execute();
      if (n === 2) throw new Error('two fails');
      ran.push(n);
    });
    for (let n = 1; n <= 4; n += 1) await jobs.schedule(t.store.db, { platformId, kind: 'test.batch', payload: n, runAtMs: t.clock.nowMs(), at: iso(t.clock.nowMs()) });
    // SQLite: the four in one batch. PostgreSQL: a kind without a batch handler runs one job per
    // transaction (jobs.ts runPgClaim), so the four take four claims, with the same outcome.
    let total = await jobs.runBatch(10, { budgetMs: Infinity });
    if (STORE === 'sqlite') expect(total).toBe(4);
    for (let n = total; n > 0; ) {
      n = await jobs.runBatch(10, { budgetMs: Infinity });
      total += n;
    }
    expect(total).toBe(4);
    expect(ran).toEqual([1, 3, 4]);
    const events = await t.store.db.selectFrom('events').select('resource_id').where('type', '=', 'TEST.BATCH').orderBy('resource_id').execute();
    expect(events.map((e) => e.resource_id)).toEqual(['1', '3', '4']); // the failed one's write is rolled back
    const statuses = await t.store.db.selectFrom('jobs').select(['payload', 'status', 'attempts', 'last_error']).where('kind', '=', 'test.batch').orderBy('payload').execute();
    // The jobs that ran are deleted with the batch's commit; the failed one waits for its retry.
    expect(statuses).toEqual([{ payload: '2', status: 'pending', attempts: 1, last_error: 'two fails' }]);
  });

  it('wakes the worker when a scheduled job comes due, without waiting for a poll', async () => {
    const clock = new ManualClock(Date.now());
    const slow = new JobQueue(t.store, { nowMs: () => Date.now() } as typeof clock, undefined, 60_000); // polls once a minute
    const ran: number[] = [];
    slow.register('test.later', async () => {
      ran.push(Date.now());
    });
    slow.start();
    try {
      await sleep(50);
      const now = Date.now();
      await slow.schedule(t.store.db, { platformId: null, kind: 'test.later', payload: null, runAtMs: now + 150, at: iso(now) });
      await waitFor(() => ran.length === 1, 3_000);
      expect(ran[0]! - now).toBeGreaterThanOrEqual(150);
    } finally {
      await slow.stop();
    }
  });
});

describe('polling loop', () => {
  it('wakes at the times asked for, rounded up to its grain, and not after stop()', async () => {
    const passes: number[] = [];
    const loop = new PollingLoop(async () => (passes.push(Date.now()), false), { pollMs: () => 60_000, maxPerPass: 1, onError: () => {} });
    loop.start();
    await sleep(20);
    const t0 = Date.now();
    loop.wakeIn(60);
    loop.wakeIn(300);
    await waitFor(() => passes.length >= 2, 2_000);
    expect(passes[1]! - t0).toBeGreaterThanOrEqual(55);
    await waitFor(() => passes.length >= 3, 2_000);
    expect(passes[2]! - t0).toBeGreaterThanOrEqual(290);
    await loop.stop();
    loop.wakeIn(10);
    await sleep(60);
    expect(passes).toHaveLength(3);
  });
});

describe(`lazily compiled route schemas (${STORE})`, () => {
  it('every route schema of the app compiles', async () => {
    const t = await makeApp();
    try {
      expect(compileAllRouteSchemas()).toBeGreaterThan(100);
      expect((await t.call('GET', '/config')).statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });
});
