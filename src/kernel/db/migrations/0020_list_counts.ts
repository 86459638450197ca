import { sql } from 'kysely';
import { type AnyDb, storeKind } from './support.js';

// Issue 15: a list's totalCount without count(*) over the platform's rows. The counts of
// the common pages (all customers, live customers, all transactions of a platform) are
// kept by triggers, so they include rows written around the services. On PostgreSQL the
// triggers are deferred to commit (a counter row is locked only while its transaction
// commits, not while it runs) and spread over 8 stripes; SQLite has one writer.
export async function up(db: AnyDb): Promise<void> {
  const kind = storeKind(db);
  await sql.raw(`create table list_counts (
    platform_id text not null,
    list text not null,
    scope text not null,
    stripe integer not null,
    n bigint not null,
    primary key (platform_id, list, scope, stripe)
  )${kind === 'sqlite' ? ' without rowid' : ''}`).execute(db);
  if (kind === 'sqlite') {
    const bump = (p: string, list: string, scope: string, d: number, when = '1') =>
      `insert into list_counts (platform_id, list, scope, stripe, n) select ${p}, '${list}', '${scope}', 0, ${d} where ${when}
       on conflict (platform_id, list, scope, stripe) do update set n = n + excluded.n;`;
    await sql.raw(`create trigger list_counts_customers_insert after insert on customers begin
      ${bump('new.platform_id', 'customers', 'all', 1)} ${bump('new.platform_id', 'customers', 'live', 1, 'new.is_deleted = 0')} end`).execute(db);
    await sql.raw(`create trigger list_counts_customers_delete after delete on customers begin
      ${bump('old.platform_id', 'customers', 'all', -1)} ${bump('old.platform_id', 'customers', 'live', -1, 'old.is_deleted = 0')} end`).execute(db);
    await sql.raw(`create trigger list_counts_customers_live after update of is_deleted on customers when old.is_deleted != new.is_deleted begin
      ${bump('new.platform_id', 'customers', 'live', 1, 'new.is_deleted = 0')} ${bump('new.platform_id', 'customers', 'live', -1, 'new.is_deleted != 0')} end`).execute(db);
    await sql.raw(`create trigger list_counts_transactions_insert after insert on transactions begin ${bump('new.platform_id', 'transactions', 'all', 1)} end`).execute(db);
    await sql.raw(`create trigger list_counts_transactions_delete after delete on transactions begin ${bump('old.platform_id', 'transactions', 'all', -1)} end`).execute(db);
  } else {
    await sql`create function list_counts_bump(p text, l text, s text, d bigint) returns void as $$
      begin
        insert into list_counts (platform_id, list, scope, stripe, n) values (p, l, s, floor(random() * 8)::int, d)
        on conflict (platform_id, list, scope, stripe) do update set n = list_counts.n + excluded.n;
      end $$ language plpgsql`.execute(db);
    await sql`create function list_counts_customers() returns trigger as $$
      begin
        if tg_op = 'INSERT' then
          perform list_counts_bump(new.platform_id, 'customers', 'all', 1);
          if new.is_deleted = 0 then perform list_counts_bump(new.platform_id, 'customers', 'live', 1); end if;
        elsif tg_op = 'DELETE' then
          perform list_counts_bump(old.platform_id, 'customers', 'all', -1);
          if old.is_deleted = 0 then perform list_counts_bump(old.platform_id, 'customers', 'live', -1); end if;
        elsif old.is_deleted <> new.is_deleted then
          perform list_counts_bump(new.platform_id, 'customers', 'live', case when new.is_deleted = 0 then 1 else -1 end);
        end if;
        return null;
      end $$ language plpgsql`.execute(db);
    await sql`create function list_counts_transactions() returns trigger as $$
      begin
        if tg_op = 'INSERT' then perform list_counts_bump(new.platform_id, 'transactions', 'all', 1);
        else perform list_counts_bump(old.platform_id, 'transactions', 'all', -1);
        end if;
        return null;
      end $$ language plpgsql`.execute(db);
    await sql`create constraint trigger list_counts_customers after insert or delete or update of is_deleted on customers
      deferrable initially deferred for each row execute function list_counts_customers()`.execute(db);
    await sql`create constraint trigger list_counts_transactions after insert or delete on transactions
      deferrable initially deferred for each row execute function list_counts_transactions()`.execute(db);
  }
  await sql`insert into list_counts (platform_id, list, scope, stripe, n) select platform_id, 'customers', 'all', 0, count(*) from customers group by platform_id`.execute(db);
  await sql`insert into list_counts (platform_id, list, scope, stripe, n)
    select platform_id, 'customers', 'live', 0, count(*) from customers where is_deleted = 0 group by platform_id`.execute(db);
  await sql`insert into list_counts (platform_id, list, scope, stripe, n) select platform_id, 'transactions', 'all', 0, count(*) from transactions group by platform_id`.execute(db);
}
