import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import type { DB } from './schema.js';

export type StoreKind = 'sqlite' | 'postgres';

/** The database the service runs on, whichever it is. */
export interface Store {
  db: Kysely<DB>;
  kind: StoreKind;
  /** Where the data lives, for the start-up banner (no password). */
  describe: string;
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
}

export async function openStore(target: StoreTarget, opts: OpenOptions = {}): Promise<Store> {
  if (target.kind === 'sqlite') {
    const file = target.location;
    if (file !== ':memory:') mkdirSync(dirname(resolve(file)), { recursive: true });
    const database = new Database(file);
    if (file !== ':memory:') database.pragma('journal_mode = WAL');
    database.pragma('busy_timeout = 5000');
    database.pragma('foreign_keys = ON');
    database.pragma('synchronous = NORMAL');
    const db = new Kysely<DB>({ dialect: new SqliteDialect({ database }) });
    return {
      db,
      kind: 'sqlite',
      describe: file === ':memory:' ? 'SQLite (in memory)' : `SQLite ${resolve(file)}`,
      close: () => db.destroy(),
    };
  }

  const int8 = 20;
  const numeric = 1700;
  const pool = new pg.Pool({
    connectionString: target.location,
    max: opts.poolSize ?? 10,
    ...(opts.schema ? { options: `-c search_path=${opts.schema}` } : {}),
    types: {
      // bigint columns hold minor units and epoch milliseconds: safe integers.
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === int8 || oid === numeric ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  if (opts.schema) {
    const c = await pool.connect();
    try {
      await c.query(`CREATE SCHEMA IF NOT EXISTS "${opts.schema}"`);
    } finally {
      c.release();
    }
  }
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  await sql`select 1`.execute(db);
  return {
    db,
    kind: 'postgres',
    describe: `PostgreSQL ${redact(target.location)}${opts.schema ? ` (schema ${opts.schema})` : ''}`,
    close: () => db.destroy(),
  };
}

/** True when a database error is a unique-constraint violation, on either store. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string };
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
