import { type RawBuilder, sql } from 'kysely';

/**
 * A LIMIT written into the SQL instead of bound. SQLite (3.47 and later) reads a bound LIMIT's
 * value while planning and then marks the statement to be compiled again whenever that
 * parameter is bound, that is on every run: a `select *` of the transactions (47 columns,
 * eleven indexes) spent about 70 µs compiling per page, a one-row probe about 3 µs. A
 * literal keeps one compiled statement per distinct limit (lists take 1–100). `n` is a
 * count the caller computed from validated input; anything but a non-negative safe integer
 * is a programming error.
 */
export function literalLimit(n: number): RawBuilder<number> {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`a LIMIT must be a non-negative safe integer, not ${String(n)}`);
  return sql.lit(n);
}
