// Whether a store error means the store cannot serve now (a fault of the surroundings,
// answered 503 SERVICE_UNAVAILABLE with Retry-After), as opposed to a bug (500
// INTERNAL_ERROR). PostgreSQL: the errors of node-postgres and of the sockets under it while
// the server is stopped, restarting, crashed, or has terminated the backend. SQLite: the
// result codes of a file that cannot be written or opened now (a full disk, an I/O error, a
// read-only file system, a lock held past busy_timeout); see docs/reliability.md, "The disk
// fills (SQLite)", for the table.

/** Socket errors of a connection that could not be made or was cut. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND']);

/**
 * SQLSTATEs of a server that is going away or not yet accepting: admin_shutdown (57P01),
 * crash_shutdown (57P02), cannot_connect_now (57P03, starting up or recovering),
 * database_dropped excluded; any connection exception (class 08).
 */
const SERVER_CODES = new Set(['57P01', '57P02', '57P03']);

/**
 * SQLite result codes (better-sqlite3's `code`, with the extended codes under each: an
 * `SQLITE_IOERR_WRITE` is an `SQLITE_IOERR`) of a store that cannot write or be reached now.
 * Everything else (a constraint, SQLITE_CORRUPT, SQLITE_MISUSE, SQLITE_ERROR, …) is a bug or
 * damage: 500.
 */
export const SQLITE_UNAVAILABLE: Readonly<Record<string, 'full' | 'io' | 'read-only' | 'busy' | 'cannot-open'>> = {
  // The disk (or the file system's quota) is full: nothing can be appended to the WAL.
  SQLITE_FULL: 'full',
  // A read or write of the file, the WAL or its index failed (EIO, ENOSPC on some paths, a
  // file system gone away); SQLite rolls the transaction back.
  SQLITE_IOERR: 'io',
  // The file or its directory is read-only (a file system remounted read-only, permissions).
  SQLITE_READONLY: 'read-only',
  // Another process held the write lock past busy_timeout (5 s), or WAL recovery was running.
  SQLITE_BUSY: 'busy',
  // WAL-index locking raced with another process past SQLite's own retries.
  SQLITE_PROTOCOL: 'busy',
  // The file, its WAL or its shared-memory index cannot be opened (removed, permissions, no inodes).
  SQLITE_CANTOPEN: 'cannot-open',
};

const MESSAGES = [
  /connection terminated/i,
  /timeout exceeded when trying to connect/i,
  /not queryable/i,
  /cannot use a pool after calling end/i,
  /the database system is (starting up|shutting down|in recovery mode)/i,
  // Bounded waits (PostgreSQL): no pool connection in time (priority-pool.ts), a statement
  // cancelled by statement_timeout (57014 with this message; a cancel of another kind stays a bug).
  /waiting for a database connection/i,
  /canceling statement due to statement timeout/i,
];

/** What kind of SQLite failure `code` is (undefined: not one that makes the store unavailable). */
export function sqliteFailureOf(code: string): (typeof SQLITE_UNAVAILABLE)[string] | undefined {
  if (!code.startsWith('SQLITE_')) return undefined;
  const base = /^SQLITE_[A-Z]+/.exec(code)![0];
  return SQLITE_UNAVAILABLE[base];
}

export function isStoreUnavailable(err: unknown, depth = 0): boolean {
  if (err === null || typeof err !== 'object' || depth > 3) return false;
  const e = err as { code?: unknown; message?: unknown; errors?: unknown; cause?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  if (SOCKET_CODES.has(code) || SERVER_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return true;
  if (sqliteFailureOf(code) !== undefined) return true;
  const message = typeof e.message === 'string' ? e.message : '';
  if (MESSAGES.some((m) => m.test(message))) return true;
  // Node answers a refused connection to a name with several addresses with an AggregateError.
  if (Array.isArray(e.errors) && e.errors.some((x) => isStoreUnavailable(x, depth + 1))) return true;
  return e.cause !== undefined && isStoreUnavailable(e.cause, depth + 1);
}

/** The message of the 503 answer to an error isStoreUnavailable accepted. */
export function unavailableMessage(err: unknown, depth = 0): string {
  const e = (err ?? {}) as { code?: unknown; cause?: unknown };
  const kind = typeof e.code === 'string' ? sqliteFailureOf(e.code) : undefined;
  if (kind === undefined && e.cause !== undefined && depth < 3) return unavailableMessage(e.cause, depth + 1);
  switch (kind) {
    case 'full':
      return 'The store cannot write: its disk is full; retry the request later';
    case 'io':
      return 'The store cannot write: an I/O error; retry the request later';
    case 'read-only':
      return 'The store cannot write: its file is read-only; retry the request later';
    case 'busy':
      return 'The store is locked by another process; retry the request later';
    case 'cannot-open':
      return 'The store cannot open its file; retry the request later';
    default:
      return 'The store cannot be reached; retry the request later';
  }
}

/** Seconds a client is asked to wait before retrying while the store is unreachable. */
export const STORE_RETRY_AFTER_S = 1;
