import type { Kysely, Transaction } from 'kysely';
import { storeOf } from '../../kernel/db/connect.js';
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
  // SQLite keeps each corridor's day in transaction_volumes (migration 0009, by triggers):
  // one row to read instead of the day's transactions to sum.
  const day = wholeDay(w);
  if (day !== undefined && storeOf(db)?.kind === 'sqlite') {
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
 * Lock the platform's row until the caller's transaction ends (a no-op update: a row lock on
 * PostgreSQL; SQLite has one writer anyway), so two executions of the same platform read
 * the day's volume one after the other and cannot both pass a limit only one of them fits in.
 */
export async function lockPlatformVolume(db: Db, platformId: string): Promise<void> {
  // SQLite: the store's one connection runs one transaction at a time, and a transaction
  // that read the volume cannot commit a write over another connection's newer commit
  // (SQLITE_BUSY_SNAPSHOT), so there is nothing to lock; the no-op write would only count
  // as a change of the platform and empty the caches that watch it (db/table-cache.ts).
  if (storeOf(db)?.kind === 'sqlite') return;
  await db
    .updateTable('platforms')
    .set((eb) => ({ clock_offset_ms: eb.ref('clock_offset_ms') }))
    .where('id', '=', platformId)
    .execute();
}
