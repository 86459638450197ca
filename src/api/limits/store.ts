import { CompiledQuery, type Kysely, sql, type Transaction } from 'kysely';
import { storeOf, withNextStatement } from '../../kernel/db/connect.js';
import { VOLUME_STATUSES_NOT_COUNTED } from '../../kernel/db/migrations.js';
import { prepared } from '../../kernel/db/prepared.js';
import type { DB } from '../../kernel/db/schema.js';

// The limits area's SQL: a corridor's outgoing volume over a time window, and the lock that
// serialises daily-volume checks of one platform.

type Db = Kysely<DB> | Transaction<DB>;

/** Statuses whose money did not (or no longer, or not yet) leave: they do not use the day's volume (PENDING: a quote not executed). */
export const STATUSES_NOT_COUNTED = VOLUME_STATUSES_NOT_COUNTED;

export interface VolumeWindow {
  platformId: string;
  sendingCurrency: string;
  receivingCurrency: string;
  /** ISO 8601 UTC, inclusive. */
  fromAt: string;
  /** ISO 8601 UTC, exclusive. */
  toAt: string;
}

/**
 * The sum of `sent_amount` (smallest unit of the sending currency) of the platform's OUTGOING
 * transactions in the corridor created in [fromAt, toAt), except those that failed. created_at is
 * ISO text of the platform clock in one fixed-width format, so text order is time order.
 */
export async function outgoingVolume(db: Db, w: VolumeWindow): Promise<bigint> {
  // Each corridor's day is kept in transaction_volumes (SQLite: migration 0009, PostgreSQL:
  // 0020_pg_daily_volumes, by triggers): one row to read instead of the day's transactions to sum.
  const day = wholeDay(w);
  if (day !== undefined) {
    const kept = await dayVolume.first(db, { platformId: w.platformId, sendingCurrency: w.sendingCurrency, receivingCurrency: w.receivingCurrency, day });
    return BigInt(kept?.total ?? 0);
  }
  const row = await db
    .selectFrom('transactions')
    .select((eb) => eb.fn.sum<number | string | bigint | null>('sent_amount').as('total'))
    .where('platform_id', '=', w.platformId)
    .where('type', '=', 'OUTGOING')
    .where('sent_currency', '=', w.sendingCurrency)
    .where('received_currency', '=', w.receivingCurrency)
    .where('status', 'not in', [...STATUSES_NOT_COUNTED])
    .where('created_at', '>=', w.fromAt)
    .where('created_at', '<', w.toAt)
    .executeTakeFirst();
  const total = row?.total;
  if (total === null || total === undefined) return 0n;
  if (typeof total === 'bigint') return total;
  // SQLite answers an integer, PostgreSQL a numeric the driver parses as a number.
  return BigInt(typeof total === 'number' ? Math.trunc(total) : String(total).split('.')[0]!);
}

const dayVolume = prepared<{ platformId: string; sendingCurrency: string; receivingCurrency: string; day: string }, { total: number }>((db, p) =>
  db
    .selectFrom('transaction_volumes')
    .select('total')
    .where('platform_id', '=', p('platformId'))
    .where('sent_currency', '=', p('sendingCurrency'))
    .where('received_currency', '=', p('receivingCurrency'))
    .where('day', '=', p('day')),
);

/** `YYYY-MM-DD` when the window is exactly one UTC day (midnight to midnight), else undefined. */
function wholeDay(w: VolumeWindow): string | undefined {
  const from = Date.parse(w.fromAt);
  if (!w.fromAt.endsWith('T00:00:00.000Z') || Date.parse(w.toAt) - from !== 86_400_000) return undefined;
  return w.fromAt.slice(0, 10);
}

/**
 * Make the day's volume limit hold at commit (PostgreSQL). The check before it read the
 * committed volume; payments of other processes may commit meanwhile. Instead of locking the
 * platform until this transaction ends (which queued every payment of the platform behind
 * the one in flight), this arms the deferred trigger of migration 0020_pg_daily_volumes with
 * the limit: when the transaction commits, the trigger adds its volume to the corridor's day
 * and, over the limit, raises LV429, which rolls the whole transaction back (the limits area
 * answers it 429). The counter row is locked only during the commit. SQLite needs nothing:
 * its transactions run one at a time (`begin immediate`), so the volume read is current.
 */
export async function armDailyVolumeLimit(db: Db, a: { sendingCurrency: string; receivingCurrency: string; limit: bigint; source: string; day: string }): Promise<void> {
  if (storeOf(db)?.kind === 'sqlite') return;
  const name = armName(a.sendingCurrency, a.receivingCurrency);
  if (name === undefined) return; // currency codes are letters and digits; never build another name
  await sql`select set_config(${name}, ${`${a.limit}|${a.source}|${a.day}`}, true)`.execute(db);
}

/**
 * dayVolumeArmedIfFits without its round trip (PostgreSQL, issue 35): the same read and
 * arming, written in front of the transaction's next statement (connect.ts
 * `withNextStatement`), and when the payment does not fit it fails (`payments_check_refused`,
 * migration 0042) instead of answering the volume: that statement and the transaction fail,
 * and the caller's run is repeated with the check made at once (db/late-move.ts). Answers
 * whether it was written (false on SQLite, or for a name that cannot be built).
 */
export async function dayVolumeArmedOrRefusedWithNext(
  db: Db,
  a: { platformId: string; sendingCurrency: string; receivingCurrency: string; day: string; requested: bigint; limit: bigint; source: string },
): Promise<boolean> {
  if (storeOf(db)?.kind !== 'postgres') return false;
  const name = armName(a.sendingCurrency, a.receivingCurrency);
  if (name === undefined) return false;
  await db.executeQuery(
    CompiledQuery.raw(DAY_VOLUME_ARMED_OR_REFUSED, [a.platformId, a.sendingCurrency, a.receivingCurrency, a.day, String(a.requested), String(a.limit), name, `${a.limit}|${a.source}|${a.day}`]),
  );
  return true;
}

const DAY_VOLUME_ARMED_OR_REFUSED = withNextStatement(
  'select case when coalesce((select total from transaction_volumes where platform_id = $1 and sent_currency = $2 and received_currency = $3 and day = $4), 0) + $5::bigint <= $6::bigint ' +
    "then set_config($7, $8, true) else payments_check_refused('daily volume') end as armed",
);

/** The name of a corridor's daily-volume setting, or undefined for codes that would build another name (never: codes are letters and digits). */
function armName(sendingCurrency: string, receivingCurrency: string): string | undefined {
  const name = `payments.dvl_${sendingCurrency.toLowerCase()}_${receivingCurrency.toLowerCase()}`;
  return /^payments\.dvl_[a-z0-9]+_[a-z0-9]+$/.test(name) ? name : undefined;
}

/**
 * PostgreSQL (issue 35: one round trip instead of two): the corridor's committed volume of
 * the day, and, in the same statement, the limit armed exactly when the payment fits (what
 * `outgoingVolume` then `armDailyVolumeLimit` do): `used + requested <= limit`, evaluated by
 * the database on the total it read. Answers the volume read, or undefined on SQLite (or for
 * a name that cannot be built), where the caller reads and arms as before.
 */
export async function dayVolumeArmedIfFits(
  db: Db,
  a: { platformId: string; sendingCurrency: string; receivingCurrency: string; day: string; requested: bigint; limit: bigint; source: string },
): Promise<bigint | undefined> {
  if (storeOf(db)?.kind !== 'postgres') return undefined;
  const name = armName(a.sendingCurrency, a.receivingCurrency);
  if (name === undefined) return undefined;
  const res = await db.executeQuery<{ total: string | number | null }>(
    CompiledQuery.raw(DAY_VOLUME_ARMED_IF_FITS, [a.platformId, a.sendingCurrency, a.receivingCurrency, a.day, String(a.requested), String(a.limit), name, `${a.limit}|${a.source}|${a.day}`]),
  );
  return BigInt(res.rows[0]?.total ?? 0);
}

const DAY_VOLUME_ARMED_IF_FITS =
  'select v.total, case when coalesce(v.total, 0) + $5::bigint <= $6::bigint then set_config($7, $8, true) end as armed ' +
  'from (select (select total from transaction_volumes where platform_id = $1 and sent_currency = $2 and received_currency = $3 and day = $4) as total) v';

/** SQLSTATE of the deferred daily-volume check (migration 0020_pg_daily_volumes). */
export const DAILY_VOLUME_SQLSTATE = 'LV429';
