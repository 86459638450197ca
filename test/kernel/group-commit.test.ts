import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore, withStatementCache } from '../../src/kernel/db/connect.js';
import { GROUP_MAX_MEMBERS, GroupCommitSqliteDialect } from '../../src/kernel/db/group-commit.js';
import { isStoreUnavailable } from '../../src/kernel/db/unavailable.js';
import { makeApp, STORE } from '../helpers.js';

// Group commit (src/kernel/db/group-commit.ts): SQLite transactions that run in the same
// moment share one commit, and nobody can tell: each resolves only once its writes are
// committed, a failing one rolls back alone, and a read never sees what is not committed.

interface T {
  db: Kysely<{ t: { x: number; note: string | null }; child: { pid: number } }>;
  dialect: GroupCommitSqliteDialect;
  statements: string[];
  other: Database.Database;
  lost: number;
  raw: Database.Database;
  /** Statements (by SQL text) that fail as a full disk or an I/O error would: the fault runs instead of the statement, once. */
  faults: Map<string, () => never>;
}

function sqliteError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

describe.runIf(STORE === 'sqlite')('SQLite group commit', () => {
  let dir: string;
  let t: T;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'payments-group-'));
    const file = join(dir, 'g.sqlite');
    const raw = new Database(file);
    raw.pragma('journal_mode = WAL');
    raw.pragma('foreign_keys = ON');
    raw.exec('create table t (x integer primary key, note text)');
    raw.exec('create table p (id integer primary key)');
    raw.exec('create table child (pid integer references p (id) deferrable initially deferred)');
    const statements: string[] = [];
    const cached = withStatementCache(raw);
    const faults = new Map<string, () => never>();
    const counting = {
      prepare: (text: string) => {
        statements.push(text);
        const fault = faults.get(text);
        if (!fault) return cached.prepare(text);
        faults.delete(text);
        return { reader: false, busy: false, run: fault, all: fault, iterate: fault } as unknown as ReturnType<typeof cached.prepare>;
      },
      close: () => cached.close(),
    };
    const state = { lost: 0 };
    const dialect = new GroupCommitSqliteDialect(counting, () => raw.inTransaction, () => (state.lost += 1));
    const db = new Kysely<T['db'] extends Kysely<infer D> ? D : never>({ dialect });
    t = {
      db,
      dialect,
      statements,
      other: new Database(file),
      raw,
      faults,
      get lost() {
        return state.lost;
      },
    };
  });
  afterEach(async () => {
    t.other.close();
    await t.db.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  const committed = () => (t.other.prepare('select x from t order by x').all() as Array<{ x: number }>).map((r) => r.x);
  const insert = (x: number) => t.db.transaction().execute(async (trx) => {
    await trx.insertInto('t').values({ x, note: null }).execute();
  });
  const count = (re: RegExp) => t.statements.filter((s) => re.test(s)).length;

  it('runs a transaction alone as begin … commit, committed when it resolves', async () => {
    await insert(1);
    expect(t.statements).toEqual(['begin immediate', 'insert into "t" ("x", "note") values (?, ?)', 'commit']);
    expect(committed()).toEqual([1]);
  });

  it('commits transactions of the same moment together, each resolving only once all are committed', async () => {
    const seen: number[][] = [];
    await Promise.all([1, 2, 3, 4, 5].map((x) => insert(x).then(() => seen.push(committed()))));
    expect(count(/^commit$/)).toBe(1);
    expect(count(/^begin immediate$/)).toBe(1);
    expect(count(/^savepoint /)).toBe(4);
    expect(count(/^release /)).toBe(4);
    // Every one, when it resolved, was already visible to another connection, with the others.
    expect(seen).toEqual(Array(5).fill([1, 2, 3, 4, 5]));
  });

  it('starts a new group after GROUP_MAX_MEMBERS transactions', async () => {
    const n = GROUP_MAX_MEMBERS + 10;
    await Promise.all(Array.from({ length: n }, (_, i) => insert(i + 1)));
    expect(count(/^commit$/)).toBe(2);
    expect(committed()).toHaveLength(n);
  });

  it('rolls a failing transaction back alone: the others of its group commit', async () => {
    const results = await Promise.allSettled([
      insert(1),
      t.db.transaction().execute(async (trx) => {
        await trx.insertInto('t').values({ x: 2, note: null }).execute();
        throw new Error('its own failure');
      }),
      // A constraint error inside a member: SQLite undoes the statement, the member rolls back.
      t.db.transaction().execute(async (trx) => {
        await trx.insertInto('t').values({ x: 4, note: null }).execute();
        await trx.insertInto('t').values({ x: 1, note: 'duplicate' }).execute();
      }),
      insert(3),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect(((results[1] as PromiseRejectedResult).reason as Error).message).toBe('its own failure');
    expect(((results[2] as PromiseRejectedResult).reason as { code?: string }).code).toBe('SQLITE_CONSTRAINT_PRIMARYKEY');
    expect(count(/^commit$/)).toBe(1);
    expect(committed()).toEqual([1, 3]);
  });

  it('runs a pause of the writes after the transactions before it, with their group committed, and the ones asked meanwhile after it (issue 35)', async () => {
    const driver = t.dialect.driver!;
    let letGo!: () => void;
    const held = new Promise<void>((resolve) => (letGo = resolve));
    // A transaction holding the connection: the pause queues behind it.
    const first = t.db.transaction().execute(async (trx) => {
      await trx.insertInto('t').values({ x: 1, note: null }).execute();
      await held;
    });
    while (count(/^insert/) < 1) await new Promise((resolve) => setImmediate(resolve));
    const seenInPause: unknown[] = [];
    let endPause!: () => void;
    let paused = false;
    const pause = driver.exclusive(async () => {
      paused = true;
      // The group before it is committed, and SQLite's write lock is free: another
      // connection (the checkpoint worker's) may write.
      seenInPause.push(committed(), t.raw.inTransaction);
      t.other.prepare('insert into t (x) values (100)').run();
      await new Promise<void>((resolve) => (endPause = resolve));
      return 'paused';
    });
    const second = insert(2);
    letGo();
    await first;
    while (!paused) await new Promise((resolve) => setImmediate(resolve));
    // The transaction asked during the pause has not started.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(count(/^insert/)).toBe(1);
    expect(seenInPause).toEqual([[1], false]);
    endPause();
    expect(await pause).toBe('paused');
    await second;
    expect(committed()).toEqual([1, 2, 100]);

    // A pause that fails hands its error on and lets the connection go.
    await expect(driver.exclusive(async () => Promise.reject(new Error('the worker is gone')))).rejects.toThrow('the worker is gone');
    await insert(3);
    expect(committed()).toEqual([1, 2, 3, 100]);
  });

  it('hands a statement outside a transaction its result only after the group it ran in committed', async () => {
    let visibleWhenRead: number[] | undefined;
    const tx = insert(7);
    const read = t.db
      .selectFrom('t')
      .select('x')
      .execute()
      .then((rows) => {
        visibleWhenRead = committed();
        return rows.map((r) => r.x);
      });
    expect(await read).toEqual([7]);
    expect(visibleWhenRead).toEqual([7]);
    await tx;
    expect(count(/^commit$/)).toBe(1);
  });

  it('fails every transaction of a group whose commit fails, and nothing of it stays', async () => {
    await t.db.insertInto('t').values({ x: 100, note: null }).execute();
    t.statements.length = 0;
    const results = await Promise.allSettled([
      insert(1),
      // A deferred foreign key is checked only at the commit, where it fails the group.
      t.db.transaction().execute(async (trx) => {
        await trx.insertInto('child').values({ pid: 42 }).execute();
      }),
      insert(2),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    for (const r of results) expect(((r as PromiseRejectedResult).reason as { code?: string }).code).toBe('SQLITE_CONSTRAINT_FOREIGNKEY');
    expect(t.statements.slice(-2)).toEqual(['commit', 'rollback']);
    expect(t.lost).toBe(1);
    expect(committed()).toEqual([100]);
    // The store goes on: the next transaction is a group of its own.
    await insert(3);
    expect(committed()).toEqual([3, 100]);
  });

  it('a full disk that makes SQLite roll the whole group back fails every member with an error answered 503; nothing of it stays; the connection goes on', async () => {
    // SQLite answers SQLITE_FULL (or an I/O error) and rolls the transaction back by itself.
    t.faults.set('insert into t (x) values (13)', () => {
      t.raw.exec('rollback');
      throw sqliteError('SQLITE_FULL', 'database or disk is full');
    });
    const results = await Promise.allSettled([
      insert(1),
      insert(2),
      t.db.transaction().execute(async (trx) => {
        await sql`insert into t (x) values (13)`.execute(trx);
      }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    // Each member's error is one the API answers 503 SERVICE_UNAVAILABLE, not a bug's 500.
    for (const r of results) expect(isStoreUnavailable((r as PromiseRejectedResult).reason), String((r as PromiseRejectedResult).reason)).toBe(true);
    expect(t.lost).toBe(1);
    expect(committed()).toEqual([]);
    expect(t.raw.inTransaction).toBe(false);
    await insert(3);
    expect(committed()).toEqual([3]);
  });

  it('a commit and its rollback that both fail (a full disk, then an I/O error): the transaction left open is rolled back before the next use', async () => {
    t.faults.set('commit', () => {
      throw sqliteError('SQLITE_FULL', 'database or disk is full');
    });
    t.faults.set('rollback', () => {
      throw sqliteError('SQLITE_IOERR_WRITE', 'disk I/O error');
    });
    const results = await Promise.allSettled([insert(1), insert(2)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    for (const r of results) expect(((r as PromiseRejectedResult).reason as { code?: string }).code).toBe('SQLITE_FULL');
    // SQLite still has the group's transaction open; nobody owns it.
    expect(t.raw.inTransaction).toBe(true);
    expect(committed()).toEqual([]);
    // The next transaction rolls it back first, and runs.
    await insert(3);
    expect(t.raw.inTransaction).toBe(false);
    expect(committed()).toEqual([3]);
    // So does a statement outside a transaction.
    t.faults.set('commit', () => {
      throw sqliteError('SQLITE_FULL', 'database or disk is full');
    });
    t.faults.set('rollback', () => {
      throw sqliteError('SQLITE_IOERR_WRITE', 'disk I/O error');
    });
    await expect(insert(4)).rejects.toMatchObject({ code: 'SQLITE_FULL' });
    await t.db.insertInto('t').values({ x: 5, note: null }).execute();
    expect(committed()).toEqual([3, 5]);
  });
});

describe.runIf(STORE === 'sqlite')('group commit through the API', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'payments-group-api-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers concurrent creates only once each is committed, in fewer commits than requests', async () => {
    const file = join(dir, 'api.sqlite');
    const store = await openStore({ kind: 'sqlite', location: file });
    const t = await makeApp({ worker: false, testStore: { store, drop: async () => {} } });
    // Count the commits the store runs (every statement of better-sqlite3 goes through run/all).
    const probe = new Database(':memory:');
    const Statement = Object.getPrototypeOf(probe.prepare('select 1')) as { run: (...a: unknown[]) => unknown };
    probe.close();
    const run = Statement.run;
    let commits = 0;
    Statement.run = function (this: { source: string }, ...args: unknown[]) {
      if (this.source === 'commit') commits += 1;
      return run.apply(this, args);
    };
    try {
      const other = new Database(file, { readonly: true });
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: `Group ${i}`, platformCustomerId: `group-${i}` }).then((r) => {
            // Already committed when it is answered: another connection reads it.
            const id = (r.json() as { id: string }).id;
            return { status: r.statusCode, stored: (other.prepare('select count(*) as n from customers where id = ?').get(id) as { n: number }).n };
          }),
        ),
      );
      other.close();
      expect(answers).toEqual(Array(20).fill({ status: 201, stored: 1 }));
      expect(commits).toBeGreaterThan(0);
      expect(commits).toBeLessThan(20);
      const list = await t.call('GET', '/customers?limit=100');
      expect((list.json() as { totalCount: number }).totalCount).toBe(20);
    } finally {
      Statement.run = run;
      await t.close();
    }
  });
});
