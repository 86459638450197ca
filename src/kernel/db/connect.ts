import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, PostgresDialect, type PostgresPoolClient, SqliteDialect, type SqliteDatabase, sql } from 'kysely';
import type pgTypes from 'pg';
import { PgChangeWatch } from './pg-change-watch.js';
import { pipelinedQueryClass, preparedOn, type PipelineStep } from './pg-pipeline.js';
import { PriorityPool } from './priority-pool.js';
import { GroupCommitSqliteDialect } from './group-commit.js';
import { type Checkpointer, startCheckpointer, WAL_AUTOCHECKPOINT_PAGES, WAL_SIZE_LIMIT_BYTES } from './checkpointer.js';
import type { DB } from './schema.js';
import type { ChangeWatch } from './change-watch.js';

export type StoreKind = 'sqlite' | 'postgres';

/** The database the service runs on, whichever it is. */
export interface Store {
  db: Kysely<DB>;
  /**
   * PostgreSQL only: the same store, its connections lent before those of every caller of
   * `db` that waits for one (db/priority-pool.ts): the job worker's transactions. Absent on
   * SQLite (one connection, no queue to put anyone first in).
   */
  priorityDb?: Kysely<DB>;
  kind: StoreKind;
  /** Where the data lives, for the start-up banner (no password). */
  describe: string;
  /** SQLite file stores only: the database file's absolute path (its folder is the data directory). */
  file?: string;
  /**
   * SQLite only (absent on PostgreSQL, where other processes write without telling this
   * one): a watch on some tables for in-memory caches of their rows. See `ChangeWatch`.
   */
  watch?: (tables: readonly string[]) => ChangeWatch;
  /**
   * PostgreSQL only: a watch on writes to some tables made through this process's
   * connections (any transaction of this store), for caches that live no longer than one
   * database transaction (TableCache). Other processes' writes are not seen: such a cache
   * answers what the transaction read first, as a repeatable read would.
   */
  localWatch?: (tables: readonly string[]) => ChangeWatch;
  /**
   * SQLite file stores with background checkpoints: how many times the checkpoint worker
   * paused this store's writes to copy the WAL's end and rewind it (db/checkpointer.ts).
   */
  walPauses?: () => number;
  /** How many SQL statements this store has run since it opened (tests and the bench count them per request). */
  statements(): number;
  /** PostgreSQL: round trips to the server so far (statements written together count once, pg-pipeline.ts). */
  roundTrips?: () => number;
  close(): Promise<void>;
}

export const DEFAULT_SQLITE_PATH = './data/payments.sqlite';

export interface StoreTarget {
  kind: StoreKind;
  /** File path or ':memory:' for SQLite; connection string for PostgreSQL. */
  location: string;
}

/** Parse DATABASE_URL as the runtime contract says. */
export function parseDatabaseUrl(url: string | undefined): StoreTarget {
  if (!url) return { kind: 'sqlite', location: DEFAULT_SQLITE_PATH };
  if (url === 'sqlite::memory:' || url === 'sqlite://:memory:') return { kind: 'sqlite', location: ':memory:' };
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length).replace(/^\/\//, '');
    if (!path) throw new Error('DATABASE_URL sqlite: needs a path, e.g. sqlite:./data/payments.sqlite');
    return { kind: 'sqlite', location: path };
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) return { kind: 'postgres', location: url };
  throw new Error(`DATABASE_URL must be unset, sqlite::memory:, sqlite:<path> or postgres://…; got "${url.replace(/\/\/[^@]*@/, '//***@')}"`);
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@]*@/, '//$1:***@');
}

export interface OpenOptions {
  /** PostgreSQL only: run inside this schema (created when missing). Tests use one per app. */
  schema?: string;
  /** PostgreSQL pool size. */
  poolSize?: number;
  /**
   * SQLite file: checkpoint the WAL from a worker thread (db/checkpointer.ts) rather than
   * in the connection that commits. The server turns it on; short-lived commands need not.
   */
  backgroundCheckpoints?: boolean;
  /**
   * PostgreSQL: the longest one statement may run, in ms (the server's `statement_timeout`;
   * a statement still unanswered PG_STATEMENT_GRACE_MS later has its connection dropped);
   * 0 or absent: no limit. The server passes PAYMENTS_DB_STATEMENT_TIMEOUT_MS.
   */
  statementTimeoutMs?: number;
  /** PostgreSQL: the longest a caller waits for a pool connection, in ms; 0 or absent: no limit (PAYMENTS_DB_ACQUIRE_TIMEOUT_MS). */
  acquireTimeoutMs?: number;
}

/** SQLite files the stores of this process have open, with how many stores each. */
const openFiles = new Map<string, number>();

export async function openStore(target: StoreTarget, opts: OpenOptions = {}): Promise<Store> {
  if (target.kind === 'sqlite') {
    const file = target.location;
    if (file !== ':memory:') mkdirSync(dirname(resolve(file)), { recursive: true });
    const database = new Database(file);
    if (file !== ':memory:') database.pragma('journal_mode = WAL');
    database.pragma('busy_timeout = 5000');
    database.pragma('foreign_keys = ON');
    database.pragma('synchronous = NORMAL');
    // Statement journals (a savepoint's, a statement that fires a trigger or writes several
    // rows inside a transaction) and temporary tables in memory, not in files created and
    // unlinked in the temp directory for each one. They only serve rollbacks inside an open
    // transaction: durability is the WAL's, unchanged.
    database.pragma('temp_store = MEMORY');
    let checkpointer: Checkpointer | undefined;
    if (file !== ':memory:' && opts.backgroundCheckpoints) {
      // The WAL's bound (checkpointer.ts): this connection checkpoints past the threshold,
      // between two transactions, and a rewound WAL is truncated to the limit.
      database.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
      database.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
    }
    const writes = new WriteCounter(database);
    const counted = { n: 0 };
    // Group commit (group-commit.ts) keeps a group open until the next turn of the event
    // loop only while no other store of this process has the same file open (tests run two
    // servers on one file; two processes wait for each other's commits without blocking).
    const key = file === ':memory:' ? null : resolve(file);
    if (key) openFiles.set(key, (openFiles.get(key) ?? 0) + 1);
    const alone = () => key === null || openFiles.get(key) === 1;
    const dialect = new GroupCommitSqliteDialect(withStatementCache(database, STATEMENT_CACHE_SIZE, writes, counted), () => database.inTransaction, () => writes.count('*'), alone);
    const db = new Kysely<DB>({ dialect });
    if (file !== ':memory:' && opts.backgroundCheckpoints) {
      const driver = dialect.driver;
      checkpointer = startCheckpointer(resolve(file), driver ? { pause: (fn) => driver.exclusive(fn) } : {});
    }
    return registered({
      db,
      kind: 'sqlite',
      statements: () => counted.n,
      watch: (tables) => writes.watch(tables),
      describe: file === ':memory:' ? 'SQLite (in memory)' : `SQLite ${resolve(file)}`,
      ...(file === ':memory:' ? {} : { file: resolve(file) }),
      ...(checkpointer ? { walPauses: checkpointer.pauses } : {}),
      close: async () => {
        await checkpointer?.stop();
        await db.destroy();
        if (key) {
          const n = (openFiles.get(key) ?? 1) - 1;
          if (n > 0) openFiles.set(key, n);
          else openFiles.delete(key);
        }
      },
    });
  }

  // Loaded only for PostgreSQL: a SQLite server starts without it.
  const pg = ((await import('pg')) as unknown as { default: typeof pgTypes }).default;
  const pgUtils = (await import('pg/lib/utils.js' as string)) as { default?: { prepareValue: (v: unknown) => unknown }; prepareValue?: (v: unknown) => unknown };
  const PipelinedQuery = pipelinedQueryClass(pg, (pgUtils.prepareValue ?? pgUtils.default!.prepareValue));
  const int8 = 20;
  const numeric = 1700;
  const poolSize = opts.poolSize ?? 10;
  const statementTimeoutMs = opts.statementTimeoutMs ?? 0;
  const pool = new pg.Pool({
    connectionString: target.location,
    max: poolSize,
    // A connection that cannot be made within this fails (503 to the request waiting for it)
    // instead of leaving the request waiting while the database is unreachable.
    connectionTimeoutMillis: PG_CONNECT_TIMEOUT_MS,
    // A statement that runs too long is cancelled by the server (57014, answered 503).
    ...(statementTimeoutMs > 0 ? { statement_timeout: statementTimeoutMs } : {}),
    ...(opts.schema ? { options: `-c search_path=${opts.schema}` } : {}),
    types: {
      // bigint columns hold minor units and epoch milliseconds: safe integers.
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === int8 || oid === numeric ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  // Count the statements of every connection of the pool (one increment per query), and the
  // writes per table (localWatch).
  const counted = { n: 0, trips: 0 };
  const names = new StatementNames();
  const localWrites = new TableWrites();
  // Row caches across requests (pg-change-watch.ts): this process's writes, and other
  // connections' commits as notified to a connection of its own.
  const changes = new PgChangeWatch(
    () =>
      new pg.Client({
        connectionString: target.location,
        application_name: opts.schema ? `payments-change-watch ${opts.schema}` : 'payments-change-watch',
        ...(opts.schema ? { options: `-c search_path=${opts.schema}` } : {}),
      }),
  );
  // A connection lost while idle in the pool (the server stopped, a backend terminated) is an
  // `error` of the pool: the pool drops that connection and opens a new one when one is needed.
  // Unhandled, it would end the process.
  pool.on('error', () => {});
  pool.on('connect', (client) => {
    // The same for a connection taken from the pool between two statements (a transaction's):
    // the statement that uses it next fails, and the pool drops it when it is released.
    client.on('error', () => {});
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    // Tables this connection wrote in its open transaction (or in the statement running
    // outside one): counted again when it ends, and uncommitted until then.
    const written = new Set<string>();
    let inTransaction = false;
    const settled = (text: string | undefined) => {
      if (text !== undefined && TRANSACTION_END.test(text)) inTransaction = false;
      if (inTransaction || written.size === 0) return;
      for (const t of written) changes.ended(t);
      written.clear();
    };
    client.on('end', () => {
      inTransaction = false;
      settled(undefined);
    });
    // Inserts held back to ride on the transaction's next statement (issue 35, DEFERRED_INSERTS).
    let pending: Deferred[] = [];
    // Statements answered at once and written in front of the transaction's next one
    // (pg-pipeline.ts): its `begin`, and a `release savepoint` with nothing held before it.
    let prefix: PipelineStep[] = [];
    /** One statement to the server (a round trip): counted, named when it has parameters. */
    const send = (args: unknown[]): Promise<unknown> => {
      counted.n += 1;
      counted.trips += 1;
      const first = args[0];
      let run: Promise<unknown> | undefined;
      // A statement with parameters runs as a named prepared statement (see StatementNames).
      if (args.length === 2 && typeof first === 'string' && Array.isArray(args[1]) && args[1].length > 0) {
        const name = names.nameOf(first);
        if (name !== undefined) {
          run = (query({ name, text: first, values: args[1] }) as Promise<unknown>).catch((err: unknown) => {
            if (isStalePlan(err)) names.renew();
            throw err;
          });
        }
      }
      run ??= query(...args) as Promise<unknown>;
      if (statementTimeoutMs > 0) run = unansweredDrops(client, run, statementTimeoutMs + PG_STATEMENT_GRACE_MS);
      return run;
    };
    /**
     * Steps written together, answered with the last one's answer (pg-pipeline.ts); one by one
     * when a step's prepared statement is not on this connection yet.
     */
    const pipeline = (steps: PipelineStep[]): Promise<unknown> => {
      if (steps.length === 1) return send([steps[0]!.text, steps[0]!.values]);
      for (const st of steps) if (st.values.length > 0) st.name = names.nameOf(st.text);
      if (!preparedOn(client, steps)) {
        return (async () => {
          let r: unknown;
          for (const st of steps) r = await send([st.text, st.values]);
          return r;
        })();
      }
      counted.n += steps.length;
      counted.trips += 1;
      let run = new Promise<unknown>((resolve, reject) => {
        query(new PipelinedQuery(steps, (err, res) => (err ? reject(err) : resolve(res))));
      }).catch((err: unknown) => {
        if (isStalePlan(err)) names.renew();
        throw err;
      });
      if (statementTimeoutMs > 0) run = unansweredDrops(client, run, statementTimeoutMs + PG_STATEMENT_GRACE_MS);
      return run;
    };
    const stepOf = (d: { text: string; values: readonly unknown[] }): PipelineStep => ({ text: d.text, values: d.values });
    const noteWrite = (target: string) => {
      localWrites.count(target);
      changes.count(target);
      if (!written.has(target)) {
        written.add(target);
        changes.began(target);
      }
    };
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const first = args[0] as string | { text?: unknown } | undefined;
      const text = typeof first === 'string' ? first : typeof first?.text === 'string' ? first.text : undefined;
      const values = args.length === 2 && Array.isArray(args[1]) ? (args[1] as unknown[]) : undefined;
      if (text !== undefined && TRANSACTION_BEGIN.test(text)) {
        inTransaction = true;
        pending = [];
        if (typeof first === 'string' && args.length <= 2 && (values === undefined || values.length === 0)) {
          // Answered now, written with the transaction's first statement.
          prefix = [{ text: first, values: [] }];
          return Promise.resolve({ command: 'BEGIN', rowCount: null, rows: [], fields: [] });
        }
      }
      if (inTransaction && typeof first === 'string' && first.startsWith(NEXT_MARK)) {
        // A statement written in front of the next one (`withNextStatement`): answered now.
        prefix.push({ text: first, values: values ?? [] });
        return Promise.resolve({ command: 'SELECT', rowCount: 1, rows: [], fields: [] });
      }
      if (inTransaction && pending.length === 0 && typeof first === 'string' && (values === undefined || values.length === 0) && RELEASE_SAVEPOINT.test(first)) {
        // Releasing a savepoint with nothing held before it cannot fail: answered now, written
        // with the next statement (a job batch's release with its commit: one round trip less
        // while it holds the payers' balance rows).
        prefix.push({ text: first, values: [] });
        return Promise.resolve({ command: 'RELEASE', rowCount: null, rows: [], fields: [] });
      }
      if (inTransaction && typeof first === 'string' && values !== undefined) {
        // An insert of DEFERRED_INSERTS: answered at once (its row count), sent with the next statement.
        const deferred = deferredInsertOf(first, values);
        if (deferred) {
          for (const t of deferred.tables) noteWrite(t);
          pending.push(deferred);
          return Promise.resolve({ command: 'INSERT', rowCount: deferred.rows, rows: [], fields: [] });
        }
      }
      const target = text === undefined ? '*' : writeTargetOf(text);
      if (target !== null) noteWrite(target);
      // A schema change (migrations) may change what a prepared statement returns: new names.
      if (text !== undefined && DDL.test(text)) {
        names.renew();
        changes.schemaChanged();
      }
      let run: Promise<unknown>;
      let merged: string | null;
      const before = prefix;
      prefix = [];
      // The server has not seen the transaction yet (its `begin` is still held).
      const unbegun = before.length > 0 && TRANSACTION_BEGIN.test(before[0]!.text);
      const held = pending;
      pending = [];
      if (unbegun && held.length === 0 && before.length === 1 && text !== undefined && TRANSACTION_END.test(text)) {
        // A transaction that ran no statement: nothing to write or end.
        run = Promise.resolve({ command: /^\s*(commit|end)\b/i.test(text) ? 'COMMIT' : 'ROLLBACK', rowCount: null, rows: [], fields: [] });
      } else if (typeof first !== 'string' || args.length > 2 || (args.length === 2 && values === undefined)) {
        // Not a text with parameters (a query object): everything before it first, in order.
        run = (async () => {
          for (const b of before) await send(b.values.length > 0 ? [b.text, b.values] : [b.text]);
          for (const d of held) await send([d.text, d.values]);
          return send(args);
        })();
      } else if ((held.length > 0 || before.length > 0) && text !== undefined && TRANSACTION_ROLLBACK.test(text)) {
        // What was held goes with the rest of the transaction; one whose `begin` is still held had nothing after it.
        run = unbegun ? Promise.resolve({ command: 'ROLLBACK', rowCount: null, rows: [], fields: [] }) : send(args);
      } else {
        const steps: PipelineStep[] = [...before];
        if (held.length > 0 && values !== undefined && values.length > 0 && (merged = mergedText(held, first)) !== null) {
          steps.push({ text: merged, values: mergedValues(held, values) });
        } else {
          // Before a savepoint, a commit, or a statement naming their table: in order, in one
          // round trip; as one statement when the last can carry the others. A held statement
          // with CTEs of its own (a late balance move, late-move.ts) goes on its own after the
          // others: it takes its row's lock, which is then held only for it and what follows.
          const own = held.length > 0 && /^\s*with\s/i.test(unmarked(held[held.length - 1]!.text)) ? held[held.length - 1]! : undefined;
          const plain = own !== undefined ? held.slice(0, -1) : held;
          const carrier = plain[plain.length - 1];
          const rest = plain.slice(0, -1);
          const together = carrier !== undefined && rest.length > 0 ? mergedText(rest, carrier.text) : null;
          if (together !== null) steps.push({ text: together, values: mergedValues(rest, carrier!.values) });
          else for (const d of plain) steps.push(stepOf(d));
          if (own !== undefined) steps.push(stepOf(own));
          steps.push({ text: first, values: values ?? [] });
        }
        run = pipeline(steps);
      }
      if (target === null && !inTransaction && written.size === 0) return run;
      return run.then(
        (r) => {
          settled(text);
          return r;
        },
        (err: unknown) => {
          settled(text);
          throw err;
        },
      );
    };
  });
  // Kysely takes connections through PriorityPool; the job worker's through a second Kysely
  // instance over the same pool that asks first (priority-pool.ts).
  const lender = new PriorityPool<PostgresPoolClient>(pool, poolSize, opts.acquireTimeoutMs ?? 0);
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool: lender }) });
  const priorityDb = new Kysely<DB>({ dialect: new PostgresDialect({ pool: lender.first }) });
  try {
    if (opts.schema) {
      const c = await pool.connect();
      try {
        await c.query(`CREATE SCHEMA IF NOT EXISTS "${opts.schema}"`);
      } finally {
        c.release();
      }
    }
    await sql`select 1`.execute(db);
  } catch (err) {
    // Not opened: nothing of it stays (a caller may try again, server.ts).
    await changes.close();
    await priorityDb.destroy().catch(() => {});
    await db.destroy().catch(() => {});
    throw err;
  }
  return registered({
    db,
    priorityDb,
    kind: 'postgres',
    statements: () => counted.n,
    roundTrips: () => counted.trips,
    localWatch: (tables) => localWrites.watch(tables),
    watch: (tables) => changes.watch(tables),
    describe: `PostgreSQL ${redact(target.location)}${opts.schema ? ` (schema ${opts.schema})` : ''}`,
    close: async () => {
      await changes.close();
      await priorityDb.destroy();
      await db.destroy();
    },
  });
}

const TRANSACTION_BEGIN = /^\s*(begin|start\s+transaction)\b/i;
/** `release savepoint x` (or `release x`). */
const RELEASE_SAVEPOINT = /^\s*release\s+(savepoint\s+)?"?\w+"?\s*$/i;
/** The end of a transaction by rollback (not `rollback to savepoint`). */
const TRANSACTION_ROLLBACK = /^\s*(abort|rollback(?!\s+to\b))\b/i;

/**
 * PostgreSQL, issue 35: the tables whose plain inserts (no `returning`, no `on conflict`) inside
 * a transaction are not sent at once but with the transaction's next statement, as
 * data-modifying CTEs in front of it (`with d0 as (insert …) <statement>`): one round trip
 * instead of two or three. A payment writes its quote and its transaction before reading the
 * day's volume, and its ledger entry and postings before updating the balances: 13 → 9
 * round trips. What holds this safe:
 * - the carrying statement must not name the held table (a statement's CTEs are not visible
 *   to the statement itself); otherwise, and before any statement without parameters
 *   (savepoints, commit), the held inserts are sent on their own first, in order. A rollback
 *   drops them. So every insert still runs, in order, inside its transaction and savepoint;
 * - foreign keys and triggers fire at the end of the carrying statement, which sees the rows
 *   of its CTEs;
 * - nothing catches an error of these inserts (their ids are generated; a violation is a bug):
 *   it arrives with the carrying statement, and the transaction fails as it would have;
 * - the insert is answered with its row count, which is all their callers read.
 */
const DEFERRED_INSERTS = new Set(['quotes', 'transactions', 'ledger_entries', 'ledger_postings', 'jobs', 'events']);
const DEFERRABLE = /^insert into "(\w+)" \([^)]*\) values \(/;

interface Deferred {
  /** The tables it writes (a statement naming one of them cannot carry it). */
  tables: string[];
  text: string;
  values: unknown[];
  rows: number;
}

/**
 * The mark of a statement the service's own code declares safe to hold like a deferred insert
 * (`heldStatement`): it answers nothing its caller reads, and names its tables in the mark.
 */
const HELD_MARK = '/* held: ';
const HELD_MARK_END = ' */ ';

/** The mark of a statement written in front of the transaction's next one (`withNextStatement`). */
const NEXT_MARK = '/* with next */ ';

/**
 * `text` marked to be written in front of the transaction's next statement (the commit, at
 * the latest), answered at once with no rows: for a statement whose answer nobody reads and
 * whose effect nothing before the commit depends on, like a held `begin` (limits/store.ts:
 * the daily volume's check, which arms its trigger or fails). If it fails, that next
 * statement fails with its error, and the transaction with it: only for a caller that runs
 * the transaction again then (db/late-move.ts `noteCheckAtCommit`).
 */
export function withNextStatement(text: string): string {
  return `${NEXT_MARK}${text}`;
}

/**
 * `text` marked to be held for the transaction's next statement (or its commit), like the
 * plain inserts of DEFERRED_INSERTS: for a statement whose answer nobody reads, which writes
 * only `tables` (events.ts: the events' insert with a balance row's move, issue 35). It may
 * begin with `with`: its CTEs then follow the held inserts' when it carries them.
 */
export function heldStatement(tables: readonly string[], text: string): string {
  return `${HELD_MARK}${tables.join(' ')}${HELD_MARK_END}${text}`;
}

function deferredInsertOf(text: string, values: unknown[]): Deferred | undefined {
  if (text.startsWith(HELD_MARK)) {
    const end = text.indexOf(HELD_MARK_END);
    return { tables: text.slice(HELD_MARK.length, end).split(' '), text, values, rows: 0 };
  }
  const m = DEFERRABLE.exec(text);
  if (!m || !DEFERRED_INSERTS.has(m[1]!) || /\breturning\b|\bon conflict\b|\bselect\b/i.test(text)) return undefined;
  return { tables: [m[1]!], text, values, rows: text.split('), (').length };
}

/** The statement of `text` without its held mark. */
function unmarked(text: string): string {
  return text.startsWith(HELD_MARK) ? text.slice(text.indexOf(HELD_MARK_END) + HELD_MARK_END.length) : text;
}

/** Whether `text` may carry the held inserts: it has parameters, starts as a plain statement (or `with`) and names none of their tables. */
function canCarry(text: string, held: readonly Deferred[]): boolean {
  if (!/^\s*(with|select|insert|update|delete)\b/i.test(unmarked(text))) return false;
  // A held statement with CTEs of its own cannot be a CTE (PostgreSQL keeps data-modifying
  // CTEs at the top level): it only carries.
  return held.every((d) => !/^\s*with\s/i.test(unmarked(d.text)) && d.tables.every((t) => !new RegExp(`\\b${t}\\b`).test(text)));
}

/** The held inserts as CTEs in front of `text` (or of its own CTEs), their parameters renumbered to come first (mergedValues). */
function withDeferred(held: readonly Deferred[], text: string): string {
  let offset = 0;
  const ctes = held.map((d, i) => {
    const at = offset;
    offset += d.values.length;
    const own = unmarked(d.text);
    return `d${i} as (${at === 0 ? own : own.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + at}`)})`;
  });
  const body = unmarked(text).replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`);
  const own = /^\s*with\s/i.exec(body);
  return own ? `with ${ctes.join(', ')}, ${body.slice(own[0].length)}` : `with ${ctes.join(', ')} ${body}`;
}

/** The parameters of withDeferred's text: the held inserts', in order, then the carrying statement's. */
function mergedValues(held: readonly Deferred[], values: readonly unknown[]): unknown[] {
  const all: unknown[] = [];
  for (const d of held) for (const v of d.values) all.push(v);
  for (const v of values) all.push(v);
  return all;
}

/**
 * The merged text of `held` carried by `text` (withDeferred), or null when `text` cannot
 * carry them (canCarry), decided once per combination of texts. The texts are the service's
 * own and their combinations few (a payment's two or three), but the merge (a regular
 * expression per held table, the renumbering) ran for every payment, and each new merged
 * string was hashed again to find its prepared name and compared in full with the prepared
 * one by node-postgres: 1.5 % of the server's profile under the payment load (issue 35,
 * decisions/performance.md: the job worker's priority without AsyncLocalStorage). Kept here,
 * the merged text is the same string object every time (its hash computed once). A tree
 * keyed by the texts themselves (each already hashed): carrying text, then each held text
 * (a text decides its number of parameters, one per placeholder, so the renumbering too).
 * Past MERGES_MAX combinations the rest are merged on every run, as before.
 */
function mergedText(held: readonly Deferred[], text: string): string | null {
  let node: MergeNode = merges;
  for (let i = -1; i < held.length; i += 1) {
    const key = i < 0 ? text : held[i]!.text;
    let next = node.next.get(key);
    if (next === undefined) {
      if (mergeCount >= MERGES_MAX) return canCarry(text, held) ? withDeferred(held, text) : null;
      next = { next: new Map() };
      node.next.set(key, next);
      mergeCount += 1;
    }
    node = next;
  }
  if (node.merged === undefined) node.merged = canCarry(text, held) ? withDeferred(held, text) : null;
  return node.merged;
}

interface MergeNode {
  next: Map<string, MergeNode>;
  /** The merged text of the path's held texts carried by its first text; null: cannot carry; undefined: not decided yet. */
  merged?: string | null;
}
const merges: MergeNode = { next: new Map() };
let mergeCount = 0;
/** Nodes of the merge tree at most (combinations of texts; the service has a handful). */
const MERGES_MAX = 2_000;
/** The end of a transaction: not `rollback to savepoint`, which leaves it open. */
const TRANSACTION_END = /^\s*(commit|end|abort|rollback(?!\s+to\b))\b/i;

/**
 * How long past the statement timeout a statement may stay unanswered before its connection
 * is dropped: the server cancels a long statement itself at statement_timeout (an answer);
 * silence beyond that means the server or the network is gone (a partition, a stopped host).
 */
export const PG_STATEMENT_GRACE_MS = 1_000;

/**
 * `run` (a statement of `client`), failing with a connection error once `ms` pass without an
 * answer: the connection is destroyed, so the statement fails ("Connection terminated
 * unexpectedly", 503) and the pool drops the connection when it is released instead of
 * lending it again with a statement stuck on it.
 */
function unansweredDrops(client: pgTypes.PoolClient, run: Promise<unknown>, ms: number): Promise<unknown> {
  const timer = setTimeout(() => {
    const stream = (client as unknown as { connection?: { stream?: { destroy?: (err?: Error) => void } } }).connection?.stream;
    stream?.destroy?.();
  }, ms);
  return run.finally(() => clearTimeout(timer));
}

/** How long a PostgreSQL connection may take to open before the statement waiting for it fails. */
export const PG_CONNECT_TIMEOUT_MS = 3_000;

/** Most SQL texts a PostgreSQL store runs as named prepared statements (each connection prepares a text once, when it first runs it). */
export const PG_NAMED_STATEMENTS_MAX = 2_000;

/**
 * Names of PostgreSQL prepared statements, by SQL text. Kysely sends every query as text with
 * its parameters, which PostgreSQL parses and plans again on every run: for the service's
 * short queries that was most of the database server's work (issue 15: reads 4-9 times
 * slower than SQLite on the same machine). A text with parameters gets a name the first time
 * it runs; node-postgres then parses it once per connection and afterwards only binds and
 * executes it. The texts are the service's own (values are always parameters), so they are
 * few; past PG_NAMED_STATEMENTS_MAX distinct texts the rest run unnamed. A statement without
 * parameters (`begin`, `commit`) keeps the simple protocol.
 *
 * A schema change this store runs (a migration) gives every text a new name. When another
 * process changes the schema under a prepared `select *` (a newer version migrating a
 * shared database), PostgreSQL refuses the old plan ("cached plan must not
 * change result type"): that one statement fails, and every text gets a new name, so each
 * connection prepares it afresh on its next run.
 */
export class StatementNames {
  private readonly byText = new Map<string, string>();
  private generation = 0;

  nameOf(text: string): string | undefined {
    let name = this.byText.get(text);
    if (name === undefined && this.byText.size < PG_NAMED_STATEMENTS_MAX) this.byText.set(text, (name = `payments_${this.generation}_${this.byText.size}`));
    return name;
  }

  /** Forget every name: texts get new ones (the old statements stay prepared, unused, until their connection closes). */
  renew(): void {
    this.byText.clear();
    this.generation += 1;
  }
}

const DDL = /^\s*(create|alter|drop|truncate|comment)\b/i;

/** PostgreSQL refused a prepared statement whose result columns changed since it was prepared. */
export function isStalePlan(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return e?.code === '0A000' && /cached plan must not change result type/i.test(e.message ?? '');
}

/** Stores by their Kysely instance's adapter, which its transactions share. */
const storesByAdapter = new WeakMap<object, Store>();

function registered(store: Store): Store {
  storesByAdapter.set(store.db.getExecutor().adapter, store);
  if (store.priorityDb) storesByAdapter.set(store.priorityDb.getExecutor().adapter, store);
  return store;
}

/** The store a Kysely handle (the store's own, or one of its transactions) belongs to. */
export function storeOf(db: Kysely<DB>): Store | undefined {
  return storesByAdapter.get(db.getExecutor().adapter);
}

/** How many prepared statements the SQLite store keeps (by SQL text, least recently used out). */
export const STATEMENT_CACHE_SIZE = 1_000;

/**
 * The better-sqlite3 database as Kysely's SQLite driver sees it, with a prepared-statement
 * cache: the driver calls `prepare(sql)` for every execution, and preparing (parsing and
 * planning the SQL) cost more than running most of the service's queries. A statement is
 * reused by its SQL text; the driver binds fresh parameters on each run (`all` / `run`), and
 * SQLite re-prepares a statement by itself when the schema changes. The one connection is
 * used by one query at a time (the driver's mutex), so a cached statement is never run twice
 * at once; a statement still busy (a stream left open) is not shared: a fresh one is
 * prepared for that call. Transactions and savepoints are plain statements too
 * (`begin`, `savepoint x`, …) and are cached like any other.
 */
export function withStatementCache(database: Database.Database, max = STATEMENT_CACHE_SIZE, writes?: WriteCounter, counted?: { n: number }): SqliteDatabase {
  const cache = new Map<string, { stmt: Database.Statement; writes: WriteTarget }>();
  return {
    prepare(sqlText: string) {
      // The driver prepares once per execution: one statement run.
      if (counted) counted.n += 1;
      // Kysely opens a transaction with a plain (deferred) `begin`: it would take the write
      // lock only at its first write, and a transaction that read first could then fail
      // with SQLITE_BUSY_SNAPSHOT when another connection to the file (the CLI, a second
      // store) committed in between. `begin immediate` takes the lock up front, waiting
      // busy_timeout for it: transactions of every connection run one after the other.
      const text = sqlText === 'begin' ? 'begin immediate' : sqlText;
      let entry = cache.get(text);
      if (entry !== undefined) {
        // Most recently used last: re-insert (Map keeps insertion order).
        cache.delete(text);
        cache.set(text, entry);
      } else {
        entry = { stmt: database.prepare(text), writes: writeTargetOf(text) };
        if (cache.size >= max) cache.delete(cache.keys().next().value!);
        cache.set(text, entry);
      }
      // The driver runs the statement right after preparing it: count its write now.
      if (writes && entry.writes !== null) writes.count(entry.writes);
      return entry.stmt.busy ? database.prepare(text) : entry.stmt;
    },
    close() {
      cache.clear();
      database.close();
    },
  };
}

/** What a statement may write: nothing (null), one table, or anything ('*'). */
type WriteTarget = string | null;

// A rollback (of a transaction or to a savepoint) undoes writes whose rows a cache may have
// read meanwhile, and a delete (or a replace) may cascade to other tables through foreign
// keys: both count as a write of every table ('*', below), except a delete from a table
// nothing cascades from (LEAF_TABLES). An insert or an update writes
// its own table only (no foreign key cascades on update).
const READ_ONLY = /^\s*(select|begin|commit|end|savepoint|release)\b/i;
const WRITE_ONE = /^\s*(?:insert(?:\s+or\s+(?:abort|fail|ignore|rollback))?\s+into|update(?:\s+or\s+(?:abort|fail|ignore|rollback))?)\s+"?([A-Za-z_][A-Za-z0-9_]*)"?[\s(]/i;

const DELETE_FROM = /^\s*delete\s+from\s+"?([A-Za-z_][A-Za-z0-9_]*)"?[\s;]/i;
/**
 * Tables a delete cannot cascade from: no foreign key names them and no trigger runs on them
 * (test/kernel/store-tuning.test.ts checks the schema). A job that ran is deleted (issue 15),
 * and that must not drop every cache at each job.
 */
export const LEAF_TABLES: ReadonlySet<string> = new Set(['jobs']);

/** The table a statement writes, from its SQL text; '*' when it cannot tell (DDL, a CTE, a pragma, a rollback). */
export function writeTargetOf(text: string): WriteTarget {
  if (READ_ONLY.test(text)) return null;
  const m = WRITE_ONE.exec(text);
  if (m) return m[1]!.toLowerCase();
  const d = DELETE_FROM.exec(text);
  if (d && LEAF_TABLES.has(d[1]!.toLowerCase())) return d[1]!.toLowerCase();
  return '*';
}

/**
 * How long a read of `PRAGMA data_version` (another connection committed?) is reused. The
 * pragma takes the file's locks, so reading it for every cache look-up would cost more
 * than some of the reads it saves; within this window a change another process committed
 * is seen as if it had been committed a moment later (that process is not answering
 * anyone in the meantime: its own commit is all it does).
 */
export const EXTERNAL_CHECK_MS = 1;

/**
 * Writes per table made through this process's connections (a '*' write counts for every
 * table). PostgreSQL's `localWatch` is its sum over some tables; SQLite's WriteCounter adds
 * the file's data_version.
 */
class TableWrites {
  private readonly perTable = new Map<string, number>();
  private any = 0;

  count(table: string): void {
    if (table === '*') this.any += 1;
    else this.perTable.set(table, (this.perTable.get(table) ?? 0) + 1);
  }

  /** A number that changes whenever one of `tables` (lower case) is written. */
  sum(tables: readonly string[]): number {
    let sum = this.any;
    for (const t of tables) sum += this.perTable.get(t) ?? 0;
    return sum;
  }

  watch(tables: readonly string[]): ChangeWatch {
    const names = tables.map((t) => t.toLowerCase());
    return { version: () => this.sum(names) };
  }
}

/** Counts writes per table on the SQLite store, for ChangeWatch, with other connections' commits. */
class WriteCounter extends TableWrites {
  private readonly dataVersion: Database.Statement;
  private external: unknown;
  private externalReadAt = -Infinity;

  constructor(database: Database.Database) {
    super();
    this.dataVersion = database.prepare('pragma data_version').pluck();
  }

  /** The data_version of the file (changes when another connection commits), read at most once per EXTERNAL_CHECK_MS. */
  private externalVersion(): unknown {
    const now = performance.now();
    if (now - this.externalReadAt >= EXTERNAL_CHECK_MS) {
      this.external = this.dataVersion.get();
      this.externalReadAt = now;
    }
    return this.external;
  }

  override watch(tables: readonly string[]): ChangeWatch {
    const names = tables.map((t) => t.toLowerCase());
    let version = 0;
    let seen = -1;
    let external: unknown;
    return {
      version: () => {
        const sum = this.sum(names);
        const dv = this.externalVersion();
        if (sum !== seen || dv !== external) {
          seen = sum;
          external = dv;
          version += 1;
        }
        return version;
      },
    };
  }
}

/** True when a database error is a unique-constraint violation, on either store. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string };
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
