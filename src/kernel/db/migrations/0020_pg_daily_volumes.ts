import { sql } from 'kysely';
import { type AnyDb, storeKind } from './support.js';
import { VOLUME_STATUSES_NOT_COUNTED } from './0009_transaction_volumes.js';

// Issue 15, PostgreSQL: each corridor's day of counted OUTGOING volume in
// transaction_volumes, as SQLite has had since 0009, kept by a trigger deferred to
// commit: the counter row is locked only while its transaction commits, so a
// platform's payments no longer queue on one row (before: the platform row, locked
// from the volume check to the commit). The daily-volume check (limits/store.ts) reads
// the row, and arms the trigger with the limit (a transaction-local setting,
// payments.dvl_<sending>_<receiving> = '<limit>|<source>|<day>'): at commit, a total
// over that limit raises SQLSTATE LV429 and the transaction rolls back; the limits area
// answers it 429 DAILY_VOLUME_LIMIT_EXCEEDED. Exact across processes, no lock held
// while a request runs.
export async function up(db: AnyDb): Promise<void> {
  const kind = storeKind(db);
  if (kind !== 'postgres') return;
  await sql`create table transaction_volumes (
    platform_id text not null,
    sent_currency text not null,
    received_currency text not null,
    day text not null,
    total bigint not null,
    primary key (platform_id, sent_currency, received_currency, day)
  )`.execute(db);
  const notCounted = VOLUME_STATUSES_NOT_COUNTED.map((x) => `'${x}'`).join(', ');
  const counted = (r: string) => `(${r}.type = 'OUTGOING' and ${r}.received_currency is not null and ${r}.status not in (${notCounted}))`;
  await sql.raw(`create function transaction_volumes_keep() returns trigger as $$
    declare
      c_old boolean := tg_op <> 'INSERT' and ${counted('old')};
      c_new boolean := tg_op <> 'DELETE' and ${counted('new')};
      kept bigint;
      armed text;
    begin
      if tg_op = 'UPDATE' and c_old = c_new and (not c_new or (old.sent_amount = new.sent_amount and old.platform_id = new.platform_id
          and old.sent_currency = new.sent_currency and old.received_currency = new.received_currency
          and substr(old.created_at, 1, 10) = substr(new.created_at, 1, 10))) then
        return null;
      end if;
      if c_old then
        update transaction_volumes set total = total - old.sent_amount where platform_id = old.platform_id and sent_currency = old.sent_currency
          and received_currency = old.received_currency and day = substr(old.created_at, 1, 10);
      end if;
      if c_new then
        insert into transaction_volumes (platform_id, sent_currency, received_currency, day, total)
          values (new.platform_id, new.sent_currency, new.received_currency, substr(new.created_at, 1, 10), new.sent_amount)
          on conflict (platform_id, sent_currency, received_currency, day) do update set total = transaction_volumes.total + excluded.total
          returning total into kept;
        armed := current_setting('payments.dvl_' || lower(new.sent_currency) || '_' || lower(new.received_currency), true);
        if armed is not null and armed <> '' and split_part(armed, '|', 3) = substr(new.created_at, 1, 10)
            and kept > split_part(armed, '|', 1)::bigint then
          raise exception 'daily volume limit exceeded' using errcode = 'LV429',
            detail = json_build_object('total', kept, 'amount', new.sent_amount, 'limit', split_part(armed, '|', 1),
              'source', split_part(armed, '|', 2), 'day', split_part(armed, '|', 3),
              'sendingCurrency', new.sent_currency, 'receivingCurrency', new.received_currency)::text;
        end if;
      end if;
      return null;
    end $$ language plpgsql`).execute(db);
  await sql`create constraint trigger transaction_volumes_keep
    after insert or delete or update of type, status, sent_amount, platform_id, sent_currency, received_currency, created_at on transactions
    deferrable initially deferred for each row execute function transaction_volumes_keep()`.execute(db);
  await sql.raw(`insert into transaction_volumes (platform_id, sent_currency, received_currency, day, total)
    select platform_id, sent_currency, received_currency, substr(created_at, 1, 10), sum(sent_amount) from transactions t where ${counted('t')}
    group by platform_id, sent_currency, received_currency, substr(created_at, 1, 10)`).execute(db);
}
