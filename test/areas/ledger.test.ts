import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Transaction } from 'kysely';
import type { DB } from '../../src/kernel/db/schema.js';
import {
  auditBalances,
  balancesOf,
  type EntryInput,
  ensureWorldAccount,
  InsufficientFundsError,
  LedgerError,
  openInternalLedgerAccounts,
  postEntry,
  UnbalancedEntryError,
  worldAccountId,
} from '../../src/api/ledger/service.js';
import { insertEntry, insertPostings, lockBalanceRows } from '../../src/api/ledger/store.js';
import { newId } from '../../src/kernel/ids.js';
import { sql } from 'kysely';
import { ADMIN_KEY, makeApp, sleep, STORE, type TestApp } from '../helpers.js';

// The ledger, through its service on a real store: entries that do not sum to zero are
// refused; postings move balances and the balance rows always equal the sum of their
// postings; an internal account never goes below zero (refused, nothing written); and two
// concurrent entries against a balance that affords only one: exactly one commits.


describe(`ledger (${STORE})`, () => {
  let t: TestApp;
  let platformId: string;
  let otherPlatformId: string;
  const at = () => new Date(t.clock.nowMs()).toISOString();

  beforeAll(async () => {
    t = await makeApp();
    platformId = t.running.bootstrap.platform.id;
    const res = await t.call('POST', '/admin/platforms', { name: 'Other' }, { authorization: `Bearer ${ADMIN_KEY}` });
    otherPlatformId = res.json().platform.id;
  });
  afterAll(async () => t.close());

  /** Fresh internal ledger accounts in a currency. */
  async function accounts(currency: string, n: number, platform = platformId): Promise<string[]> {
    const list = Array.from({ length: n }, () => ({ id: newId('InternalAccount'), currency }));
    await openInternalLedgerAccounts(t.store.db, platform, list, at());
    return list.map((a) => a.id);
  }

  async function post(input: Omit<EntryInput, 'platformId' | 'at'> & { platformId?: string }) {
    return t.store.db.transaction().execute((trx) => postEntry(trx, t.store, { platformId, at: at(), ...input }));
  }

  async function fund(accountId: string, currency: string, amount: number) {
    const world = await ensureWorldAccount(t.store.db, platformId, currency, at());
    return post({ kind: 'FUNDING', postings: [{ accountId: world, currency, amount: -amount }, { accountId, currency, amount }] });
  }

  async function available(id: string): Promise<number> {
    return (await balancesOf(t.store.db, [id])).get(id)!.available;
  }

  const count = async (table: 'ledger_entries' | 'ledger_postings') =>
    Number((await t.store.db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);

  it('refuses an entry that does not sum to zero, per currency, and writes nothing', async () => {
    const [a, b] = await accounts('USD', 2);
    const [e] = await accounts('EUR', 1);
    const before = [await count('ledger_entries'), await count('ledger_postings')];
    await expect(post({ kind: 'TEST', postings: [{ accountId: a!, currency: 'USD', amount: 100 }, { accountId: b!, currency: 'USD', amount: -99 }] })).rejects.toBeInstanceOf(
      UnbalancedEntryError,
    );
    // Summing to zero across currencies is not enough.
    const err = await post({ kind: 'TEST', postings: [{ accountId: a!, currency: 'USD', amount: 100 }, { accountId: e!, currency: 'EUR', amount: -100 }] }).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(UnbalancedEntryError);
    expect((err as UnbalancedEntryError).sums).toEqual({ USD: 100, EUR: -100 });
    expect((err as LedgerError).code).toBe('UNBALANCED_ENTRY');
    expect([await count('ledger_entries'), await count('ledger_postings')]).toEqual(before);
  });

  it('refuses malformed postings: one leg, zero or fractional amounts, a wrong currency, an unknown or foreign account', async () => {
    const [a, b] = await accounts('USD', 2);
    const [foreign] = await accounts('USD', 1, otherPlatformId);
    const code = (p: Promise<unknown>) => p.then(() => 'posted', (e: unknown) => (e instanceof LedgerError ? e.code : String(e)));
    expect(await code(post({ kind: 'T', postings: [{ accountId: a!, currency: 'USD', amount: 0 }] }))).toBe('INVALID_POSTING');
    expect(await code(post({ kind: 'T', postings: [{ accountId: a!, currency: 'USD', amount: 0 }, { accountId: b!, currency: 'USD', amount: 0 }] }))).toBe('INVALID_POSTING');
    expect(await code(post({ kind: 'T', postings: [{ accountId: a!, currency: 'USD', amount: 1.5 }, { accountId: b!, currency: 'USD', amount: -1.5 }] }))).toBe('INVALID_POSTING');
    expect(await code(post({ kind: 'T', postings: [{ accountId: a!, currency: 'EUR', amount: 5 }, { accountId: b!, currency: 'EUR', amount: -5 }] }))).toBe('CURRENCY_MISMATCH');
    const world = await ensureWorldAccount(t.store.db, platformId, 'USD', at());
    expect(await code(post({ kind: 'T', postings: [{ accountId: world, currency: 'USD', amount: -5 }, { accountId: 'InternalAccount:nope', currency: 'USD', amount: 5 }] }))).toBe('UNKNOWN_ACCOUNT');
    // Another platform's account is as unknown as a missing one.
    expect(await code(post({ kind: 'T', postings: [{ accountId: world, currency: 'USD', amount: -5 }, { accountId: foreign!, currency: 'USD', amount: 5 }] }))).toBe('UNKNOWN_ACCOUNT');
    expect(await available(a!)).toBe(0);
  });

  it('moves balances: funding from the outside world, a transfer, a hold and its release; rows equal the sum of postings', async () => {
    const [a, b] = await accounts('USD', 2);
    const world = worldAccountId(platformId, 'USD');
    const worldBefore = (await balancesOf(t.store.db, [world])).get(world)?.available ?? 0;

    const funded = await fund(a!, 'USD', 10_000);
    expect(funded.replayed).toBe(false);
    expect(funded.balances.find((x) => x.accountId === a)).toMatchObject({ available: 10_000, pending: 0, held: 0, total: 10_000 });

    await post({ kind: 'TRANSFER', postings: [{ accountId: a!, currency: 'USD', amount: -2_500 }, { accountId: b!, currency: 'USD', amount: 2_500 }] });
    const hold = await post({
      kind: 'HOLD',
      referenceId: 'Transaction:01950000-0000-7000-8000-000000000001',
      postings: [
        { accountId: a!, currency: 'USD', amount: -1_000 },
        { accountId: a!, currency: 'USD', amount: 1_000, bucket: 'held' },
      ],
    });
    let bal = await balancesOf(t.store.db, [a!, b!, world]);
    expect(bal.get(a!)).toMatchObject({ available: 6_500, held: 1_000, pending: 0, total: 7_500 });
    expect(bal.get(b!)).toMatchObject({ available: 2_500, total: 2_500 });
    // The world account may go negative: minus what came in.
    expect(bal.get(world)!.available).toBe(worldBefore - 10_000);

    await post({
      kind: 'RELEASE',
      relatedEntryId: hold.id,
      postings: [
        { accountId: a!, currency: 'USD', amount: -1_000, bucket: 'held' },
        { accountId: a!, currency: 'USD', amount: 1_000 },
      ],
    });
    bal = await balancesOf(t.store.db, [a!]);
    expect(bal.get(a!)).toMatchObject({ available: 7_500, held: 0, total: 7_500 });
    expect(await auditBalances(t.store.db, [a!, b!, world])).toEqual([]);

    const entry = await t.store.db.selectFrom('ledger_entries').selectAll().where('id', '=', hold.id).executeTakeFirstOrThrow();
    expect(entry).toMatchObject({ platform_id: platformId, kind: 'HOLD', reference_id: 'Transaction:01950000-0000-7000-8000-000000000001' });
  });

  it('posts an entry across currencies when each currency sums to zero (an FX conversion)', async () => {
    const [usd] = await accounts('USD', 1);
    const [eur] = await accounts('EUR', 1);
    await fund(usd!, 'USD', 1_000);
    const worldUsd = await ensureWorldAccount(t.store.db, platformId, 'USD', at());
    const worldEur = await ensureWorldAccount(t.store.db, platformId, 'EUR', at());
    await post({
      kind: 'CONVERSION',
      postings: [
        { accountId: usd!, currency: 'USD', amount: -1_000 },
        { accountId: worldUsd, currency: 'USD', amount: 1_000 },
        { accountId: worldEur, currency: 'EUR', amount: -920 },
        { accountId: eur!, currency: 'EUR', amount: 920 },
      ],
    });
    expect(await available(usd!)).toBe(0);
    expect(await available(eur!)).toBe(920);
  });

  it('never takes an available balance below zero: refused with InsufficientFundsError, nothing written', async () => {
    const [a, b] = await accounts('USD', 2);
    await fund(a!, 'USD', 100);
    const before = [await count('ledger_entries'), await count('ledger_postings')];
    const err = await post({ kind: 'TRANSFER', postings: [{ accountId: a!, currency: 'USD', amount: -150 }, { accountId: b!, currency: 'USD', amount: 150 }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InsufficientFundsError);
    const f = err as InsufficientFundsError;
    expect({ code: f.code, accountId: f.accountId, currency: f.currency, bucket: f.bucket, balance: f.balance, change: f.change, shortfall: f.shortfall }).toEqual({
      code: 'INSUFFICIENT_FUNDS', accountId: a, currency: 'USD', bucket: 'available', balance: 100, change: -150, shortfall: 50,
    });
    // Even a caller that catches the error and commits its transaction has nothing of the entry.
    await t.store.db.transaction().execute(async (trx) => {
      await postEntry(trx, t.store, { platformId, kind: 'TRANSFER', at: at(), postings: [{ accountId: a!, currency: 'USD', amount: -101 }, { accountId: b!, currency: 'USD', amount: 101 }] }).catch(() => undefined);
    });
    expect([await count('ledger_entries'), await count('ledger_postings')]).toEqual(before);
    expect(await available(a!)).toBe(100);
    expect(await available(b!)).toBe(0);
    // Exactly the balance is fine.
    await post({ kind: 'TRANSFER', postings: [{ accountId: a!, currency: 'USD', amount: -100 }, { accountId: b!, currency: 'USD', amount: 100 }] });
    expect(await available(a!)).toBe(0);
  });

  it('never takes held or pending below zero either', async () => {
    const [a] = await accounts('USD', 1);
    await fund(a!, 'USD', 500);
    const err = await post({ kind: 'RELEASE', postings: [{ accountId: a!, currency: 'USD', amount: -1, bucket: 'held' }, { accountId: a!, currency: 'USD', amount: 1 }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InsufficientFundsError);
    expect((err as InsufficientFundsError).bucket).toBe('held');
  });

  it('an entry on one account (a hold) is one statement with the same checks: refused, it leaves nothing, even to a caller that commits', async () => {
    const [a] = await accounts('USD', 1);
    const [foreign] = await accounts('USD', 1, otherPlatformId);
    await fund(a!, 'USD', 100);
    const hold = (amount: number, accountId = a!, currency = 'USD') => [
      { accountId, currency, amount: -amount },
      { accountId, currency, amount, bucket: 'held' as const },
    ];
    const before = [await count('ledger_entries'), await count('ledger_postings')];
    // (Its statements are counted in test/areas/payment-write-path.test.ts: one fewer than a locking read and a write.)
    const held = await post({ kind: 'HOLD', postings: hold(60) });
    expect(held.balances).toEqual([{ accountId: a, currency: 'USD', available: 40, pending: 0, held: 60, total: 100 }]);
    expect([await count('ledger_entries'), await count('ledger_postings')]).toEqual([before[0]! + 1, before[1]! + 2]);

    const err = await post({ kind: 'HOLD', postings: hold(41) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InsufficientFundsError);
    const f = err as InsufficientFundsError;
    expect({ accountId: f.accountId, currency: f.currency, bucket: f.bucket, balance: f.balance, change: f.change, shortfall: f.shortfall }).toEqual({
      accountId: a, currency: 'USD', bucket: 'available', balance: 40, change: -41, shortfall: 1,
    });
    const version = async () => Number((await t.store.db.selectFrom('ledger_balances').select('version').where('account_id', '=', a!).executeTakeFirstOrThrow()).version);
    const versionBefore = await version();
    await t.store.db.transaction().execute(async (trx) => {
      await postEntry(trx, t.store, { platformId, kind: 'HOLD', at: at(), postings: hold(41) }).catch(() => undefined);
    });
    expect([await count('ledger_entries'), await count('ledger_postings')]).toEqual([before[0]! + 1, before[1]! + 2]);
    expect(await version()).toBe(versionBefore);
    expect((await balancesOf(t.store.db, [a!])).get(a!)).toMatchObject({ available: 40, held: 60 });

    const code = (p: Promise<unknown>) => p.then(() => 'posted', (e: unknown) => (e instanceof LedgerError ? e.code : String(e)));
    expect(await code(post({ kind: 'HOLD', postings: hold(5, 'InternalAccount:nope') }))).toBe('UNKNOWN_ACCOUNT');
    expect(await code(post({ kind: 'HOLD', postings: hold(5, foreign!) }))).toBe('UNKNOWN_ACCOUNT');
    expect(await code(post({ kind: 'HOLD', postings: hold(5, a!, 'EUR') }))).toBe('CURRENCY_MISMATCH');
    expect(await auditBalances(t.store.db, [a!])).toEqual([]);

    // Two holds at once that the balance affords only one of: exactly one commits.
    const holdSlowly = () =>
      t.store.db.transaction().execute(async (trx: Transaction<DB>) => {
        const e = await postEntry(trx, t.store, { platformId, kind: 'HOLD', at: at(), postings: hold(30) });
        await sleep(50);
        return e;
      });
    const results = await Promise.allSettled([holdSlowly(), holdSlowly()]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(results.filter((r) => r.status === 'rejected' && r.reason instanceof InsufficientFundsError)).toHaveLength(1);
    expect((await balancesOf(t.store.db, [a!])).get(a!)).toMatchObject({ available: 10, held: 90 });
    expect(await auditBalances(t.store.db, [a!])).toEqual([]);
  });

  it('posts an entry once per idempotency key', async () => {
    const [a] = await accounts('USD', 1);
    const world = await ensureWorldAccount(t.store.db, platformId, 'USD', at());
    const input = { kind: 'FUNDING', idempotencyKey: `fund-${a}`, postings: [{ accountId: world, currency: 'USD', amount: -300 }, { accountId: a!, currency: 'USD', amount: 300 }] };
    const first = await post(input);
    const second = await post(input);
    expect(second.replayed).toBe(true);
    expect(second.id).toBe(first.id);
    expect(await available(a!)).toBe(300);
  });

  it('of two concurrent entries that the balance affords only one of, exactly one commits', async () => {
    const [a, b, c] = await accounts('USD', 3);
    await fund(a!, 'USD', 100);
    const debit = (to: string) =>
      t.store.db.transaction().execute(async (trx: Transaction<DB>) => {
        const e = await postEntry(trx, t.store, { platformId, kind: 'TRANSFER', at: at(), postings: [{ accountId: a!, currency: 'USD', amount: -80 }, { accountId: to, currency: 'USD', amount: 80 }] });
        await sleep(50); // hold the lock a while before committing
        return e;
      });
    const results = await Promise.allSettled([debit(b!), debit(c!)]);
    const ok = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(ok).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(refused[0]!.reason).toBeInstanceOf(InsufficientFundsError);
    expect(await available(a!)).toBe(20);
    expect((await available(b!)) + (await available(c!))).toBe(80);
    expect(await auditBalances(t.store.db, [a!, b!, c!])).toEqual([]);
  });

  it('many concurrent debits: exactly as many commit as the balance affords, and opposite transfers do not deadlock', async () => {
    const [a, b, sink] = await accounts('USD', 3);
    await fund(a!, 'USD', 100);
    await fund(b!, 'USD', 1_000);
    const move = (from: string, to: string, amount: number) =>
      t.store.db.transaction().execute(async (trx) => {
        await postEntry(trx, t.store, { platformId, kind: 'TRANSFER', at: at(), postings: [{ accountId: from, currency: 'USD', amount: -amount }, { accountId: to, currency: 'USD', amount }] });
        await sleep(5);
      });
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => move(a!, sink!, 30)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    expect(results.filter((r) => r.status === 'rejected' && r.reason instanceof InsufficientFundsError)).toHaveLength(7);
    expect(await available(a!)).toBe(10);
    expect(await available(sink!)).toBe(90);

    // A→B and B→A at once: locks are taken in account order, so neither waits on the other forever.
    const cross = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? move(b!, a!, 10) : move(a!, b!, 5))));
    expect(cross.every((r) => r.status === 'fulfilled')).toBe(true);
    expect(await available(a!)).toBe(10 + 30 - 15);
    expect(await auditBalances(t.store.db, [a!, b!, sink!])).toEqual([]);
  });

  // PostgreSQL: a mover of several rows (a settlement batch) locks them FOR NO KEY UPDATE, the
  // lock its own update takes. A posting inserted meanwhile by another transaction references
  // the row (its foreign key takes FOR KEY SHARE), which that lock lets through: the payment
  // that inserts it does not wait for the whole batch. FOR UPDATE would make it wait.
  it.runIf(STORE === 'postgres')('a posting may reference a balance row another transaction has locked to move it (no wait)', async () => {
    const [a] = await accounts('USD', 1);
    await fund(a!, 'USD', 100);
    const outcome = await t.store.db.transaction().execute(async (mover) => {
      expect((await lockBalanceRows(mover, platformId, [a!], true)).map((r) => r.account_id)).toEqual([a]);
      return t.store.db.transaction().execute(async (other) => {
        await sql`set local lock_timeout = '2s'`.execute(other);
        const entryId = newId('LedgerEntry');
        await insertEntry(other, { id: entryId, platform_id: platformId, kind: 'TEST', reference_id: null, related_entry_id: null, idempotency_key: null, memo: null, created_at: at() });
        await insertPostings(other, [
          { entry_id: entryId, line: 0, account_id: a!, currency: 'USD', bucket: 'pending', amount: 5 },
          { entry_id: entryId, line: 1, account_id: a!, currency: 'USD', bucket: 'pending', amount: -5 },
        ]);
        // The held inserts are written here, at the latest: a statement naming their table.
        return Number((await sql<{ n: string }>`select count(*) as n from ledger_postings where entry_id = ${entryId}`.execute(other)).rows[0]!.n);
      }).then(
        (n) => ({ n }),
        (err: unknown) => ({ code: (err as { code?: string }).code }),
      );
    });
    expect(outcome).toEqual({ n: 2 });
  });
});
