import { forgetRowShapes, type RawCapableStatement, readRows } from './row-shape.js';
import { CompiledQuery, type DatabaseConnection, type DialectAdapter, type Driver, type QueryResult, SqliteAdapter, SqliteDialect, type SqliteDatabase, SelectQueryNode } from 'kysely';

// Group commit for the SQLite store.
//
// SQLite has one writer, and every commit appends each page the transaction dirtied to the
// WAL: a payment touches some thirty pages (its tables' and indexes' leaves), so most of a
// commit's cost is writing pages the next payment dirties again. Under load, transactions
// that queue for the one connection therefore share one database transaction: the first
// opens it (`begin immediate`), each later one runs inside a savepoint of it, and a
// transaction that commits only releases its savepoint. The shared transaction commits when
// nobody is waiting for the connection (or the group is large or old enough), before any
// statement that runs outside a transaction, and when the store closes.
//
// What a caller sees does not change:
// - `db.transaction().execute(...)` resolves only after the shared transaction committed,
//   so no answer leaves, and no after-commit work starts, before its effects are durable;
//   when that commit fails, every transaction of the group fails with its error.
// - A transaction that fails rolls back to its own savepoint: the others of the group are
//   untouched. If SQLite itself rolled the whole transaction back (an I/O error, a full
//   disk), the whole group fails.
// - A statement outside a transaction runs after the group committed: it never reads a row
//   that is not committed yet.
// - Transactions still run one at a time, in the order they asked for the connection, each
//   seeing the writes of those before it, exactly as if each had committed.
//
// With no concurrency (a test, a quiet server) every transaction is its own group: `begin
// immediate` … `commit`, as before.

/** Most transactions in one group. */
export const GROUP_MAX_MEMBERS = 64;
/** Oldest a group may get (ms since its `begin`) before it commits even with transactions waiting. */
export const GROUP_MAX_AGE_MS = 25;

interface Group {
  members: number;
  openedAt: number;
  done: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** The connection as one acquirer holds it: the shared SQLite connection, plus what this holder did. */
class Holder implements DatabaseConnection {
  /** In a transaction of a group (`first`: the one that opened it, without a savepoint). */
  tx: 'none' | 'first' | 'member' = 'none';
  /** The group this holder's committed transaction waits for. */
  waitFor: Group | null = null;

  constructor(private readonly driver: GroupCommitDriver) {}

  executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    if (this.tx === 'none') return Promise.resolve(this.driver.runAlone(this, compiledQuery) as QueryResult<R>);
    return Promise.resolve(this.driver.run(compiledQuery) as QueryResult<R>);
  }

  async *streamQuery<R>(compiledQuery: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (this.tx === 'none') this.driver.flush();
    if (!SelectQueryNode.is(compiledQuery.query)) throw new Error('Sqlite driver only supports streaming of select queries');
    const stmt = this.driver.database.prepare(compiledQuery.sql);
    for (const row of stmt.iterate(compiledQuery.parameters as unknown[])) yield { rows: [row as R] };
  }
}

const SAVEPOINT = 'payments_group_member';
/** A statement that may change what a `select *` returns. */
const DDL = /^\s*(create|alter|drop)\b/i;

export class GroupCommitDriver implements Driver {
  private locked = false;
  private readonly waiters: Array<() => void> = [];
  private group: Group | null = null;

  constructor(
    readonly database: SqliteDatabase,
    /** Whether SQLite has a transaction open on the connection (better-sqlite3's `inTransaction`). */
    private readonly inTransaction: () => boolean,
    /** Told when SQLite rolled a group back by itself (no `rollback` statement ran): caches of its rows are stale. */
    private readonly onLost: () => void = () => {},
    /**
     * Whether a group may stay open until the event loop's next turn. Not while another
     * connection of this same process uses the file: its `begin immediate` would wait for
     * the lock synchronously, blocking the very event loop that is to commit the group.
     */
    private readonly mayDefer: () => boolean = () => true,
  ) {}

  async init(): Promise<void> {}

  /** The error of the last statement that failed: why SQLite rolled a group back by itself. */
  private lastError: unknown = undefined;

  run(q: CompiledQuery): QueryResult<unknown> {
    try {
      const stmt = this.database.prepare(q.sql);
      if (stmt.reader) return { rows: readRows(stmt as unknown as RawCapableStatement, q.parameters) };
      if (DDL.test(q.sql)) forgetRowShapes();
      const { changes, lastInsertRowid } = stmt.run(q.parameters as unknown[]);
      return {
        numAffectedRows: changes !== undefined && changes !== null ? BigInt(changes) : undefined,
        insertId: lastInsertRowid !== undefined && lastInsertRowid !== null ? BigInt(lastInsertRowid) : undefined,
        rows: [],
      };
    } catch (err) {
      this.lastError = err;
      throw err;
    }
  }

  /**
   * A transaction SQLite still has open that no group owns: left by a commit and a rollback
   * that both failed (an I/O error, a full disk). Rolled back before the connection is used
   * again, so one failure does not leave every later `begin` refused.
   */
  private settle(): void {
    if (this.group !== null || !this.inTransaction()) return;
    this.onLost();
    this.exec('rollback');
  }

  /**
   * A statement outside a transaction. With no group open it commits by itself. Inside an
   * open group it runs as part of it, and its holder waits for the group's commit before
   * its result is handed on (releaseConnection): nobody reads a row before it is committed.
   */
  runAlone(h: Holder, q: CompiledQuery): QueryResult<unknown> {
    const group = this.group;
    if (group === null) {
      this.settle();
      return this.run(q);
    }
    h.waitFor = group;
    try {
      return this.run(q);
    } catch (err) {
      if (!this.inTransaction()) this.lose(group, err);
      throw err;
    }
  }

  private exec(text: string): void {
    this.run(CompiledQuery.raw(text));
  }

  /** Take the connection: at once when nobody holds it (no promise), else when the returned promise resolves, after those waiting before. */
  private take(): Promise<void> | undefined {
    if (this.locked) return new Promise<void>((resolve) => this.waiters.push(resolve));
    this.locked = true;
    return undefined;
  }

  /** Let the connection go: to the next waiting, or free. */
  private handOn(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.locked = false;
  }

  /**
   * Run `fn` while nobody uses the connection: after the transactions queued before it, with
   * the open group committed first; the ones that ask meanwhile wait until it settles. The
   * event loop stays free meanwhile (answers of the group just committed go out). The WAL's
   * checkpoints use it (checkpointer.ts): a worker copies the WAL's last frames while nothing
   * writes, so the next write rewinds the WAL.
   */
  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const turn = this.take();
    if (turn) await turn;
    try {
      this.flush();
      return await fn();
    } finally {
      this.handOn();
    }
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const turn = this.take();
    if (turn) await turn;
    return new Holder(this);
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    const h = connection as Holder;
    if (this.group === null) {
      this.settle();
      this.exec('begin immediate');
      let resolve!: () => void;
      let reject!: (err: unknown) => void;
      const done = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      // A group nobody waits for (its only member rolled back) must not warn of an unhandled rejection.
      done.catch(() => {});
      this.group = { members: 1, openedAt: performance.now(), done, resolve, reject };
      h.tx = 'first';
    } else {
      this.exec(`savepoint ${SAVEPOINT}`);
      this.group.members += 1;
      h.tx = 'member';
    }
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const h = connection as Holder;
    if (h.tx === 'member') this.exec(`release ${SAVEPOINT}`);
    h.waitFor = this.group;
    h.tx = 'none';
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const h = connection as Holder;
    const group = this.group;
    const role = h.tx;
    h.tx = 'none';
    if (group === null) return;
    if (!this.inTransaction()) {
      // SQLite rolled the whole transaction back (a full disk, an I/O error): every
      // transaction of the group is lost, with the error that caused it (a 503 when the store
      // cannot write, kernel/db/unavailable.ts).
      this.lose(group, new Error('the database rolled back the shared transaction of this group', { cause: this.lastError }));
      return;
    }
    if (role === 'member') {
      try {
        this.exec(`rollback to ${SAVEPOINT}`);
        this.exec(`release ${SAVEPOINT}`);
      } catch (err) {
        // The savepoint could not be undone alone: the whole group goes.
        this.abandon(group, err);
        return;
      }
      group.members -= 1;
      return;
    }
    // The group's first transaction rolls back: it is the group's only one (the others join
    // only after it finished), so the whole transaction goes.
    this.group = null;
    try {
      this.exec('rollback');
    } catch (err) {
      this.abandon(group, err);
      return;
    }
    group.resolve();
  }

  /** Roll the group's transaction back after a failure, as far as SQLite lets, and fail its members with `err`. */
  private abandon(group: Group, err: unknown): void {
    try {
      if (this.inTransaction()) this.exec('rollback');
    } catch {
      // Rolled back before the connection's next use (settle), or SQLite did it already.
    }
    this.lose(group, err);
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    const h = connection as Holder;
    const waitFor = h.waitFor;
    h.waitFor = null;
    const group = this.group;
    if (group !== null) {
      if (group.members >= GROUP_MAX_MEMBERS || performance.now() - group.openedAt >= GROUP_MAX_AGE_MS) this.flush();
      else if (this.waiters.length === 0) {
        if (this.mayDefer()) this.flushSoon();
        else this.flush();
      }
    }
    this.handOn();
    if (waitFor) await waitFor.done;
  }

  private scheduled = false;

  /**
   * Commit the open group once the event loop has handled the I/O that is ready: requests
   * that arrived meanwhile join it. If one holds the connection then, it commits when it
   * lets go.
   */
  private flushSoon(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.group === null) return;
      if (this.locked) return; // its holder commits (or schedules) when it lets go
      this.flush();
    });
  }

  /** Commit the open group, if any (the caller holds the connection). */
  flush(): void {
    const group = this.group;
    if (group === null) return;
    this.group = null;
    try {
      this.exec('commit');
    } catch (err) {
      // A full disk, an I/O error: nothing of the group is committed (SQLite wrote no commit
      // frame to the WAL); every member fails with the commit's error.
      this.abandon(group, err);
      return;
    }
    group.resolve();
  }

  /** The group's transaction is gone (rolled back): its members fail with `err`. */
  private lose(group: Group, err: unknown): void {
    if (this.group === group) this.group = null;
    this.onLost();
    group.reject(err);
  }

  async destroy(): Promise<void> {
    this.flush();
    try {
      this.settle();
    } catch {
      // Closing rolls back whatever is still open.
    }
    this.database.close();
  }
}

/**
 * Kysely's SQLite adapter, but with DDL in transactions: Kysely's migrator then runs a whole
 * migration run in one database transaction, which this store opens with `begin immediate`
 * (the file's write lock). Its SQLite adapter has no lock of its own (it takes the one
 * connection for enough), so two processes starting together on one file both applied the
 * pending migrations, interleaved: all but one failed to start ("table … already exists",
 * "no such column"), and a schema could be left half made. In one transaction the second
 * process waits for the first's commit, then finds every migration recorded and applies
 * none; a migration that fails leaves nothing of the run behind. SQLite runs every
 * statement the migrations use inside a transaction (none is a `pragma` or `vacuum`).
 */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

/** Kysely's SQLite dialect with the group-commit driver. */
export class GroupCommitSqliteDialect extends SqliteDialect {
  constructor(
    private readonly database: SqliteDatabase,
    private readonly inTransaction: () => boolean,
    private readonly onLost?: () => void,
    private readonly mayDefer?: () => boolean,
  ) {
    super({ database });
  }

  /** The driver Kysely made (it makes one, when the Kysely instance is constructed). */
  driver: GroupCommitDriver | undefined;

  override createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }

  override createDriver(): Driver {
    this.driver = new GroupCommitDriver(this.database, this.inTransaction, this.onLost, this.mayDefer);
    return this.driver;
  }
}
