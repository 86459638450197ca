import { sql } from 'kysely';
import { type AnyDb, storeKind } from './support.js';

/**
 * Statuses of an OUTGOING transaction whose money does not use the day's volume, as
 * migration 0009's triggers have them (src/api/limits/store.ts checks it is its list).
 * Changing the list means a new migration that recreates the triggers.
 */
export const VOLUME_STATUSES_NOT_COUNTED = ['PENDING', 'FAILED', 'REFUNDED', 'REJECTED', 'EXPIRED'] as const;

// SQLite only: each corridor's day of counted OUTGOING volume, kept by triggers on
// transactions, so the daily-volume check reads one row instead of summing the day's
// transactions (src/api/limits/store.ts). "Counted" mirrors STATUSES_NOT_COUNTED
// there; a test checks the two agree. PostgreSQL sums with an index, as before: there,
// concurrent writers of one corridor would queue on its row.
export async function up(db: AnyDb): Promise<void> {
  const kind = storeKind(db);
  if (kind !== 'sqlite') return;
  await sql`create table transaction_volumes (
    platform_id text not null,
    sent_currency text not null,
    received_currency text not null,
    day text not null,
    total bigint not null,
    primary key (platform_id, sent_currency, received_currency, day)
  ) without rowid`.execute(db);
  const counted = (r: string) =>
    `(${r}.type = 'OUTGOING' and ${r}.received_currency is not null and ${r}.status not in (${VOLUME_STATUSES_NOT_COUNTED.map((x) => `'${x}'`).join(', ')}))`;
  const key = (r: 'new' | 'old') => `${r}.platform_id, ${r}.sent_currency, ${r}.received_currency, substr(${r}.created_at, 1, 10)`;
  const add = (r: 'new' | 'old') =>
    `insert into transaction_volumes (platform_id, sent_currency, received_currency, day, total) select ${key(r)}, ${r}.sent_amount where ${counted(r)}
     on conflict (platform_id, sent_currency, received_currency, day) do update set total = total + excluded.total;`;
  const subtract = (r: 'new' | 'old') =>
    `update transaction_volumes set total = total - ${r}.sent_amount where ${counted(r)} and platform_id = ${r}.platform_id
     and sent_currency = ${r}.sent_currency and received_currency = ${r}.received_currency and day = substr(${r}.created_at, 1, 10);`;
  await sql.raw(`create trigger transaction_volumes_insert after insert on transactions when ${counted('new')} begin ${add('new')} end`).execute(db);
  await sql.raw(`create trigger transaction_volumes_delete after delete on transactions when ${counted('old')} begin ${subtract('old')} end`).execute(db);
  // An update that leaves the row counted as it was (most do: PROCESSING → COMPLETED) does nothing.
  const changed = `(${counted('old')} != ${counted('new')} or (${counted('new')} and (old.sent_amount != new.sent_amount or old.platform_id != new.platform_id
    or old.sent_currency != new.sent_currency or old.received_currency != new.received_currency or substr(old.created_at, 1, 10) != substr(new.created_at, 1, 10))))`;
  await sql.raw(`create trigger transaction_volumes_update after update on transactions when ${changed} begin ${subtract('old')} ${add('new')} end`).execute(db);
  await sql.raw(`insert into transaction_volumes (platform_id, sent_currency, received_currency, day, total)
    select platform_id, sent_currency, received_currency, substr(created_at, 1, 10), sum(sent_amount) from transactions t where ${counted('t')}
    group by platform_id, sent_currency, received_currency, substr(created_at, 1, 10)`).execute(db);
}
