// The change watch's interface, apart from connect.ts so that the PostgreSQL watch
// (pg-change-watch.ts), which connect.ts builds, does not import connect.ts back.

/**
 * A version of some tables' contents: it changes whenever a row of one of them may have
 * changed, through this store (counted before the statement runs, so also for a write that
 * is rolled back later) or through any other connection to the same database file (the
 * `payments-service token …` commands, another tool): SQLite's `PRAGMA data_version`. A
 * cache keeps the version it read a row under, and trusts the row only while `version()`
 * still answers the same number.
 */
export interface ChangeWatch {
  version(): number;
  /**
   * PostgreSQL: whether a transaction may read these tables through the process's cache now:
   * no open transaction of this process has written them, so what the cache holds is what a
   * statement of any transaction (read committed) would read. Absent: always (SQLite).
   */
  sharedInTransaction?(): boolean;
}
