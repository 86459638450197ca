import type { Kysely, Transaction } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';

// The limits area's SQL: a corridor's outgoing volume over a time window, and the lock that
// serialises daily-volume checks of one platform.

type Db = Kysely<DB> | Transaction<DB>;

/** Statuses whose money did not (or no longer, or not yet) leave: they do not use the day's volume (PENDING: a quote not executed). */
export const STATUSES_NOT_COUNTED = ['PENDING', 'FAILED', 'REFUNDED', 'REJECTED', 'EXPIRED'] as const;

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

/**
 * Lock the platform's row until the caller's transaction ends (a no-op update: a row lock on
 * PostgreSQL, and SQLite has one writer anyway), so two executions of the same platform read
 * the day's volume one after the other and cannot both pass a limit only one of them fits in.
 */
export async function lockPlatformVolume(db: Db, platformId: string): Promise<void> {
  await db
    .updateTable('platforms')
    .set((eb) => ({ clock_offset_ms: eb.ref('clock_offset_ms') }))
    .where('id', '=', platformId)
    .execute();
}
