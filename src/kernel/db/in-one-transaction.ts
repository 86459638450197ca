import type { Kysely } from 'kysely';

/**
 * Runs `fn` in one database transaction: the caller's when `db` already is one (Kysely opens
 * no transaction inside another), else a new one. For work that must be one transaction
 * whether or not its caller has one: a migration inside the run's transaction, a platform
 * made inside the default platform's bootstrap.
 */
export function inOneTransaction<D, T>(db: Kysely<D>, fn: (trx: Kysely<D>) => Promise<T>): Promise<T> {
  return db.isTransaction ? fn(db) : db.transaction().execute(fn);
}
