import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { isStoreUnavailable, unavailableMessage } from '../../src/kernel/db/unavailable.js';
import { idempotencyFaults } from '../../src/kernel/idempotency.js';
import { envelope, makeApp, STORE, type TestApp } from '../helpers.js';

// Which store failures are answered 503 SERVICE_UNAVAILABLE with Retry-After (the store
// cannot be reached or cannot write now) and which stay 500 INTERNAL_ERROR (a bug, damage):
// kernel/db/unavailable.ts, the table in docs/reliability.md "The disk fills (SQLite)".

const sqliteError = (code: string, message = code) => Object.assign(new Error(message), { code });

describe('store failures: 503 or 500', () => {
  it('SQLite: a full disk, an I/O error, a read-only file, a lock past busy_timeout, a file that cannot be opened are 503', () => {
    for (const code of [
      'SQLITE_FULL',
      'SQLITE_IOERR',
      'SQLITE_IOERR_WRITE',
      'SQLITE_IOERR_FSYNC',
      'SQLITE_IOERR_SHMSIZE',
      'SQLITE_READONLY',
      'SQLITE_READONLY_DBMOVED',
      'SQLITE_BUSY',
      'SQLITE_BUSY_SNAPSHOT',
      'SQLITE_PROTOCOL',
      'SQLITE_CANTOPEN',
    ]) {
      expect(isStoreUnavailable(sqliteError(code)), code).toBe(true);
    }
    expect(unavailableMessage(sqliteError('SQLITE_FULL'))).toMatch(/disk is full/);
    expect(unavailableMessage(sqliteError('SQLITE_READONLY_DIRECTORY'))).toMatch(/read-only/);
    // Through a wrapper (the group commit's "rolled back the shared transaction", with its cause).
    expect(isStoreUnavailable(new Error('the database rolled back the shared transaction of this group', { cause: sqliteError('SQLITE_IOERR_WRITE') }))).toBe(true);
    expect(unavailableMessage(new Error('wrapped', { cause: sqliteError('SQLITE_FULL') }))).toMatch(/disk is full/);
  });

  it('SQLite: constraint violations, corruption, misuse and plain errors stay 500', () => {
    for (const code of ['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_FOREIGNKEY', 'SQLITE_CORRUPT', 'SQLITE_MISUSE', 'SQLITE_ERROR', 'SQLITE_LOCKED', 'SQLITE_TOOBIG', 'SQLITE_FULLISH']) {
      expect(isStoreUnavailable(sqliteError(code)), code).toBe(false);
    }
    expect(isStoreUnavailable(new Error('the database rolled back the shared transaction of this group', { cause: sqliteError('SQLITE_CONSTRAINT_FOREIGNKEY') }))).toBe(false);
  });
});

describe.runIf(STORE === 'sqlite')('SQLite: a store that cannot write answers 503 in the envelope', () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    delete idempotencyFaults.beforeEffectCommit;
    if (t) {
      await sql`pragma query_only = 0`.execute(t.store.db);
      await t.close();
      t = undefined;
    }
  });

  async function usdAccount(app: TestApp): Promise<{ id: string; balance: { amount: number } }> {
    const res = await app.call('GET', '/platform/internal-accounts?currency=USD');
    expect(res.statusCode).toBe(200);
    return (res.json() as { data: { id: string; balance: { amount: number } }[] }).data[0]!;
  }

  it('a keyed payment whose commit fails (a full disk) and whose claim cannot be released either: 503 with Retry-After, nothing moved', async () => {
    t = await makeApp();
    const app = t;
    const before = await usdAccount(app);
    const usd = before.id;
    // The effect fails at its commit as on a full disk; from then on the store refuses every
    // write (SQLITE_READONLY), so the release of the key's claim after the 503 fails too.
    idempotencyFaults.beforeEffectCommit = () => {
      delete idempotencyFaults.beforeEffectCommit;
      void sql`pragma query_only = 1`.execute(app.store.db);
      throw sqliteError('SQLITE_FULL', 'database or disk is full');
    };
    const key = randomUUID();
    const res = await app.call('POST', `/sandbox/internal-accounts/${usd}/fund`, { amount: 1234 }, { 'idempotency-key': key });
    const body = envelope(res, 503, 'SERVICE_UNAVAILABLE');
    expect(body.message).toMatch(/disk is full/);
    expect(res.headers['retry-after']).toMatch(/^\d+$/);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    // Any write now: 503 too (read-only), reads are served.
    const other = await app.call('POST', `/sandbox/internal-accounts/${usd}/fund`, { amount: 1 }, { 'idempotency-key': randomUUID() });
    envelope(other, 503, 'SERVICE_UNAVAILABLE');
    expect(other.headers['retry-after']).toMatch(/^\d+$/);
    expect((await usdAccount(app)).balance.amount).toBe(before.balance.amount);
    // The claim could not be released: it stays in progress until its lease runs out.
    const claim = await app.store.db.selectFrom('idempotency_keys').select(['state']).where('key', '=', key).executeTakeFirst();
    expect(claim?.state).toBe('in_progress');
    // Writable again: a new key pays once.
    await sql`pragma query_only = 0`.execute(app.store.db);
    const again = await app.call('POST', `/sandbox/internal-accounts/${usd}/fund`, { amount: 1 }, { 'idempotency-key': randomUUID() });
    expect(again.statusCode).toBe(200);
    expect((again.json() as { balance: { amount: number } }).balance.amount).toBe(before.balance.amount + 1);
  });
});
