import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/kernel/clock.js';
import { EventEmitter } from 'node:events';
import { CHANGE_CHANNEL, CHANGE_NOTIFIED_TABLES, PgChangeWatch, PROBE_MS } from '../../src/kernel/db/pg-change-watch.js';
import { TableCache } from '../../src/kernel/db/table-cache.js';
import { findCustomer } from '../../src/api/customers/store.js';
import { basic, freshStore, makeApp, openSameSchema, STORE, type TestApp, type TestStore, waitFor } from '../helpers.js';

// PostgreSQL row caches across requests (issue 15; kernel/db/pg-change-watch.ts): a value
// read outside a transaction is kept until this process writes its table (again when that
// transaction ends) or another connection commits a change to it (NOTIFY from migration
// 0031's triggers). Two apps on one schema stand for two server processes.

describe('every row cache is of a table PostgreSQL notifies', () => {
  it('TableCache tables are all in CHANGE_NOTIFIED_TABLES', async () => {
    const t = await makeApp();
    try {
      // Building the app loads every area, and with it every TableCache.
      const tables = [...TableCache.tables].sort();
      expect(tables.length).toBeGreaterThanOrEqual(7);
      for (const table of tables) expect(CHANGE_NOTIFIED_TABLES, table).toContain(table);
      if (STORE === 'postgres') {
        const triggers = await sql<{ t: string }>`select c.relname as t from pg_trigger g join pg_class c on c.oid = g.tgrelid join pg_namespace n on n.oid = c.relnamespace where n.nspname = current_schema() and g.tgname = 'payments_changed'`.execute(t.store.db);
        expect(triggers.rows.map((r) => r.t).sort()).toEqual([...CHANGE_NOTIFIED_TABLES].sort());
      }
    } finally {
      await t.close();
    }
  });
});

/** A stand-in for the listening pg.Client: it delivers notifications, or (a pooler) swallows them. */
class FakeListener extends EventEmitter {
  constructor(private readonly deliver: boolean) {
    super();
  }
  async connect(): Promise<void> {}
  async query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }> {
    if (text.startsWith('select pg_notify')) {
      if (this.deliver) setImmediate(() => this.emit('notification', { channel: values![0], payload: values![1] }));
      return { rows: [] };
    }
    if (text.includes('current_schema() as s')) return { rows: [{ s: 'app' }] };
    if (text.includes('pg_trigger')) return { rows: [{ t: 'customers' }] };
    return { rows: [] };
  }
  async end(): Promise<void> {}
}

describe('PgChangeWatch', () => {
  it('caches once its own probe notification came back, and drops a table when notified', async () => {
    let opened = 0;
    const w = new PgChangeWatch(() => {
      opened += 1;
      return new FakeListener(true) as never;
    });
    const customers = w.watch(['customers']);
    expect(customers.version()).not.toBe(customers.version()); // not listening yet
    await w.start();
    const v = customers.version();
    expect(customers.version()).toBe(v);
    expect(customers.sharedInTransaction?.()).toBe(true);
    // Another schema's change, and another channel, are not this store's.
    const client = (w as unknown as { listener: FakeListener }).listener;
    client.emit('notification', { channel: CHANGE_CHANNEL, payload: 'other.customers' });
    client.emit('notification', { channel: 'elsewhere', payload: 'app.customers' });
    expect(customers.version()).toBe(v);
    client.emit('notification', { channel: CHANGE_CHANNEL, payload: 'app.customers' });
    expect(customers.version()).not.toBe(v);
    // A table without its trigger is never cached.
    const other = w.watch(['lookups']);
    expect(other.version()).not.toBe(other.version());
    expect(other.sharedInTransaction?.()).toBe(false);
    expect(opened).toBe(1);
    await w.close();
  });

  it('never caches through a connection that receives no notifications (a transaction pooler)', async () => {
    let opened = 0;
    const w = new PgChangeWatch(() => {
      opened += 1;
      return new FakeListener(false) as never;
    });
    const started = Date.now();
    await w.start();
    expect(Date.now() - started).toBeGreaterThanOrEqual(PROBE_MS - 50);
    const customers = w.watch(['customers']);
    expect(customers.version()).not.toBe(customers.version());
    expect(customers.sharedInTransaction?.()).toBe(false);
    // Not tried again at every read: after a failure the next attempt waits.
    expect(opened).toBe(1);
    await w.close();
  });
});

describe.runIf(STORE === 'postgres')('PostgreSQL row caches across requests', () => {
  let ts: TestStore;
  let a: TestApp;
  let b: TestApp;
  let customerId: string;

  beforeEach(async () => {
    ts = await freshStore();
    const clock = new ManualClock(Date.now());
    a = await makeApp({ testStore: ts, clock });
    b = await makeApp({ testStore: { store: await openSameSchema(ts.schema!), drop: async () => {} }, clock });
    const res = await a.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Ada Before', platformCustomerId: 'cache-1' });
    expect(res.statusCode).toBe(201);
    customerId = res.json().id;
  });
  afterEach(async () => {
    await b.close();
    await b.store.close();
    await a.close();
  });

  /** Statements app `t` runs for one request. */
  async function statementsOf(t: TestApp, fn: () => Promise<unknown>): Promise<number> {
    const before = t.store.statements();
    await fn();
    return t.store.statements() - before;
  }
  const nameIn = async (t: TestApp) => (await t.call('GET', `/customers/${customerId}`)).json().fullName as string;
  const emailIn = async (t: TestApp) => (await t.call('GET', `/customers/${customerId}`)).json().email as string | undefined;

  it('a repeated read is answered from memory, and another process\u2019s change is seen once notified', async () => {
    await nameIn(a);
    await waitFor(async () => (await statementsOf(a, () => nameIn(a))) === 0);
    expect(await nameIn(a)).toBe('Ada Before');

    const patched = await b.call('PATCH', `/customers/${customerId}`, { customerType: 'INDIVIDUAL', fullName: 'Ada After' });
    expect(patched.statusCode).toBe(200);
    await waitFor(async () => (await nameIn(a)) === 'Ada After');
    // And cached again afterwards.
    await waitFor(async () => (await statementsOf(a, () => nameIn(a))) === 0);
    expect(await nameIn(a)).toBe('Ada After');
  });

  it('a token revoked through another process stops working there', async () => {
    const created = await a.call('POST', '/tokens', { name: 'short lived', permissions: ['VIEW'] });
    expect(created.statusCode).toBe(201);
    const tok = created.json();
    const auth = { authorization: basic(tok.clientId, tok.clientSecret) };
    expect((await a.call('GET', '/customers', undefined, auth)).statusCode).toBe(200);
    expect((await a.call('GET', '/customers', undefined, auth)).statusCode).toBe(200);
    expect((await b.call('DELETE', `/tokens/${tok.id}`)).statusCode).toBe(204);
    await waitFor(async () => (await a.call('GET', '/customers', undefined, auth)).statusCode === 401);
  });

  it('a change this process commits is seen at once, even without its notification', async () => {
    expect(await emailIn(a)).toBeUndefined();
    await a.store.db.transaction().execute(async (trx) => {
      // No trigger fires in this transaction: only this process's own counting can tell.
      await sql`set local session_replication_role = replica`.execute(trx);
      await sql`update customers set email = 'quiet@example.com' where id = ${customerId}`.execute(trx);
      // Read by another connection meanwhile: the committed row, which must not outlive the commit.
      expect(await emailIn(a)).toBeUndefined();
      expect(await emailIn(a)).toBeUndefined();
    });
    expect(await emailIn(a)).toBe('quiet@example.com');
  });

  it('a transaction reads through the cache unless this process has uncommitted writes to the table', async () => {
    const platformId = (await sql<{ p: string }>`select platform_id as p from customers where id = ${customerId}`.execute(a.store.db)).rows[0]!.p;
    await nameIn(a);
    await waitFor(async () => (await statementsOf(a, () => nameIn(a))) === 0);
    // Nothing written: the cached row, without a statement.
    await a.store.db.transaction().execute(async (trx) => {
      const n = await statementsOf(a, () => findCustomer(trx, platformId, customerId));
      expect(n).toBe(0);
    });
    // This transaction wrote the row: it reads its own write; nobody else sees it before the
    // commit, however often it is read.
    await a.store.db.transaction().execute(async (trx) => {
      await sql`update customers set email = 'mine@example.com' where id = ${customerId}`.execute(trx);
      expect((await findCustomer(trx, platformId, customerId))?.email).toBe('mine@example.com');
      expect((await findCustomer(trx, platformId, customerId))?.email).toBe('mine@example.com');
      expect(await emailIn(a)).toBeUndefined();
      expect(await emailIn(a)).toBeUndefined();
      // Another transaction meanwhile reads the committed row.
      await a.store.db.transaction().execute(async (other) => {
        expect((await findCustomer(other, platformId, customerId))?.email ?? null).toBeNull();
      });
    });
    expect(await emailIn(a)).toBe('mine@example.com');
    await a.store.db.transaction().execute(async (trx) => {
      expect((await findCustomer(trx, platformId, customerId))?.email).toBe('mine@example.com');
    });
  });

  it('without its listening connection a process reads every time, listens again, and trusts nothing it kept from before', async () => {
    await nameIn(a);
    await waitFor(async () => (await statementsOf(a, () => nameIn(a))) === 0);
    const killed = await sql<{ n: number }>`select count(pg_terminate_backend(pid))::int as n from pg_stat_activity where application_name = ${`payments-change-watch ${ts.schema!}`}`.execute(b.store.db);
    expect(killed.rows[0]!.n).toBeGreaterThanOrEqual(1);
    // A change no notification announces (triggers off), made while nobody listens.
    await b.store.db.transaction().execute(async (trx) => {
      await sql`set local session_replication_role = replica`.execute(trx);
      await sql`update customers set email = 'unannounced@example.com' where id = ${customerId}`.execute(trx);
    });
    // Requests that do not read customers (auth, the fee schedule): while the connection is lost they read every
    // time; then the process listens again and caches again.
    const config = () => statementsOf(a, () => a.call('GET', '/exchange-rates?sourceCurrency=USD'));
    await waitFor(async () => (await config()) > 0);
    await waitFor(async () => (await config()) === 0);
    // The customer's row cached before the connection was lost is not trusted.
    expect(await emailIn(a)).toBe('unannounced@example.com');
    await waitFor(async () => (await statementsOf(a, () => nameIn(a))) === 0);
    expect(await emailIn(a)).toBe('unannounced@example.com');
  });
});
