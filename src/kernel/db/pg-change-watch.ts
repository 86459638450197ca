import { randomUUID } from 'node:crypto';
import type pgTypes from 'pg';
import type { ChangeWatch } from './change-watch.js';

// PostgreSQL: when a row of a cached table may have changed, for the in-memory row caches
// (TableCache) across requests, as SQLite's `PRAGMA data_version` does there (issue 15: on
// PostgreSQL every cached read was a round trip, and authentication alone is one per request).
//
// Two sources of change:
// - writes through this process's own connections, counted when the statement is sent and
//   counted again when its transaction ends (commit or rollback), so a value read by another
//   connection while that transaction was open (the old row) is not trusted after it commits;
// - commits of every other connection (other server processes, the `payments-service token`
//   commands): each table in CHANGE_NOTIFIED_TABLES has a statement trigger (migration 0031)
//   that sends `pg_notify('payments_changes', '<schema>.<table>')`, delivered at commit to the
//   connection this watch keeps listening. A change another process committed is seen when
//   its notification arrives, a moment after that commit (as SQLite's watch sees another
//   connection's commit within EXTERNAL_CHECK_MS).
//
// Caching is on for a table only while the listening connection is up and the table has its
// trigger in the store's schema (checked when listening starts, and again after any schema
// change this store runs); otherwise every version() call answers a new number, so every
// read goes to the database. When the listening connection fails, notifications may have
// been lost: everything cached is dropped, and the watch listens again on the next use. A
// new listening connection counts only once a notification it sent itself came back (a
// transaction pooler accepts LISTEN and then delivers nothing).

export const CHANGE_CHANNEL = 'payments_changes';
/** The trigger each notified table has (migration 0031_pg_change_notify). */
export const CHANGE_TRIGGER = 'payments_changed';

/** The tables migration 0031 gave the trigger (fixed: that migration must do the same on every store). */
export const CHANGE_NOTIFIED_TABLES_0031 = ['api_tokens', 'platforms', 'platform_configs', 'fee_configs', 'customers', 'internal_accounts', 'external_accounts'] as const;
/** Tables whose writes are notified: the tables of the service's row caches (0031's, and later migrations' such as 0034 sandbox_faults). */
export const CHANGE_NOTIFIED_TABLES = [...CHANGE_NOTIFIED_TABLES_0031, 'sandbox_faults'] as const;

type PgClient = pgTypes.Client;

/** After the listening connection failed to open, how long before the next attempt (doubling after each failure in a row, up to RETRY_MAX_MS: caching resumes within seconds of the database's return). */
const RETRY_MS = 1_000;
const RETRY_MAX_MS = 4_000;
/** How long the listening connection waits for its own probe notification. */
export const PROBE_MS = 2_000;

export class PgChangeWatch {
  /** Changes per table: local writes (twice each) and notifications. */
  private readonly changes = new Map<string, number>();
  /** Per table, this process's transactions that wrote it and have not ended. */
  private readonly open = new Map<string, number>();
  /** Bumped whenever caching may have missed a change (listener lost, schema changed). */
  private epoch = 0;
  private listener: PgClient | null = null;
  private starting: Promise<void> | null = null;
  /** Tables with the trigger in this schema, while listening; null when not listening. */
  private notified: Set<string> | null = null;
  private schema = '';
  private closed = false;
  /** Always-new numbers for a table that cannot be cached now. */
  private uncached = 0;
  /** Bumped when what a listen() in progress reads may be out of date. */
  private generation = 0;
  /** After a failed attempt, the next is not before this (performance.now()). */
  private retryAt = 0;
  /** Failed attempts in a row. */
  private failures = 0;
  /** Probe notifications awaited, by payload. */
  private readonly probes = new Map<string, () => void>();

  constructor(private readonly connect: () => PgClient) {}

  /** A local write of `table` ('*': any table), when it is sent and when its transaction ends. */
  count(table: string): void {
    if (table === '*') this.epoch += 1;
    else this.changes.set(table, (this.changes.get(table) ?? 0) + 1);
  }

  /** A connection of this process wrote `table` ('*': any) in a transaction still open (or a statement still running). */
  began(table: string): void {
    this.open.set(table, (this.open.get(table) ?? 0) + 1);
  }

  /** That transaction (or statement) ended: its writes are committed or undone. */
  ended(table: string): void {
    const n = (this.open.get(table) ?? 1) - 1;
    if (n > 0) this.open.set(table, n);
    else this.open.delete(table);
    this.count(table);
  }

  /** Whether some open transaction of this process has written one of `tables` (not yet committed). */
  private uncommitted(tables: readonly string[]): boolean {
    if (this.open.size === 0) return false;
    if (this.open.has('*')) return true;
    return tables.some((t) => this.open.has(t));
  }

  /** A schema change through this store: which tables have triggers must be read again. */
  schemaChanged(): void {
    this.epoch += 1;
    this.generation += 1;
    this.notified = null;
    if (this.listener) this.starting = null;
  }

  watch(tables: readonly string[]): ChangeWatch {
    const names = tables.map((t) => t.toLowerCase());
    return {
      version: () => {
        const notified = this.notified;
        if (notified === null || !names.every((t) => notified.has(t))) {
          this.start();
          this.uncached += 1;
          return -this.uncached;
        }
        let sum = this.epoch * 1_000_003;
        for (const t of names) sum += this.changes.get(t) ?? 0;
        return sum;
      },
      sharedInTransaction: () => {
        const notified = this.notified;
        return notified !== null && names.every((t) => notified.has(t)) && !this.uncommitted(names);
      },
    };
  }

  /** Start listening (once at a time); resolves when the watch is listening or has failed to. */
  start(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.starting) return this.starting;
    if (performance.now() < this.retryAt) return Promise.resolve();
    const run = this.listen().catch(() => {
      this.failures += 1;
      this.retryAt = performance.now() + Math.min(RETRY_MAX_MS, RETRY_MS * 2 ** (this.failures - 1));
      this.lost();
    });
    this.starting = run;
    return run;
  }

  private async listen(): Promise<void> {
    const generation = this.generation;
    let client = this.listener;
    if (!client) {
      client = this.connect();
      this.listener = client;
      client.on('notification', (m) => this.notification(m.channel, m.payload));
      client.on('error', () => this.lost(client!));
      client.on('end', () => this.lost(client!));
      await client.connect();
      await client.query(`listen ${CHANGE_CHANNEL}`);
      // A notification of its own must come back: through a pooler that hands each
      // transaction to any server connection (PgBouncer's transaction mode), LISTEN
      // succeeds but nothing is ever delivered, and caching would never hear of a change.
      await this.probe(client);
    }
    const schema = await client.query<{ s: string }>('select current_schema() as s');
    const triggers = await client.query<{ t: string }>(
      `select c.relname as t from pg_trigger g join pg_class c on c.oid = g.tgrelid join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = current_schema() and g.tgname = $1`,
      [CHANGE_TRIGGER],
    );
    if (this.listener !== client || this.closed || this.generation !== generation) return;
    this.schema = schema.rows[0]?.s ?? '';
    // Anything read before now was read without listening: not trusted.
    this.epoch += 1;
    this.failures = 0;
    this.notified = new Set(triggers.rows.map((r) => r.t));
  }

  /** Send a notification and wait for it on `client`; fails after PROBE_MS. */
  private async probe(client: PgClient): Promise<void> {
    const payload = `probe:${randomUUID()}`;
    let timer: NodeJS.Timeout | undefined;
    const arrived = new Promise<void>((resolve, reject) => {
      this.probes.set(payload, resolve);
      timer = setTimeout(() => reject(new Error(`no notification arrived on ${CHANGE_CHANNEL} within ${PROBE_MS} ms`)), PROBE_MS);
      timer.unref();
    });
    try {
      await client.query('select pg_notify($1, $2)', [CHANGE_CHANNEL, payload]);
      await arrived;
    } finally {
      clearTimeout(timer);
      this.probes.delete(payload);
    }
  }

  private notification(channel: string, payload: string | undefined): void {
    if (channel !== CHANGE_CHANNEL || !payload) return;
    const probe = this.probes.get(payload);
    if (probe) return probe();
    const dot = payload.lastIndexOf('.');
    if (payload.slice(0, dot) !== this.schema) return;
    this.count(payload.slice(dot + 1));
  }

  /** The listening connection failed (or never connected): stop caching; listen again on next use. */
  private lost(client?: PgClient): void {
    if (client && client !== this.listener) return;
    const old = this.listener;
    this.listener = null;
    this.notified = null;
    this.starting = null;
    this.generation += 1;
    this.epoch += 1;
    if (old) void old.end().catch(() => {});
  }

  async close(): Promise<void> {
    this.closed = true;
    const old = this.listener;
    this.listener = null;
    this.notified = null;
    if (old) {
      old.removeAllListeners('end');
      old.on('error', () => {});
      await old.end().catch(() => {});
    }
  }
}
