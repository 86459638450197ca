import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WORLD_ACCOUNT_PARTS, worldAccountId, worldPartOf } from '../../src/api/ledger/service.js';
import { makeApp, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { fund, newCustomer, quoteRequest, usdExternal } from '../money-helpers.js';

// The outside world's ledger account is split in WORLD_ACCOUNT_PARTS parts per platform and
// currency (api/ledger/service.ts): each payment's money leaves through the part its
// transaction id falls on, so a platform's settlements do not all update (and, on
// PostgreSQL, lock) one balance row.

describe('world account parts', () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await makeApp({ worker: false });
  });
  afterEach(async () => {
    await t.close();
  });

  it('parts: stable per key, in range, spread; part 0 is the account a platform starts with', () => {
    const parts = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const p = worldPartOf(`Transaction:${i}`);
      expect(p).toBe(worldPartOf(`Transaction:${i}`));
      expect(p).toBeGreaterThanOrEqual(0);
      expect(p).toBeLessThan(WORLD_ACCOUNT_PARTS);
      parts.add(p);
    }
    expect(parts.size).toBe(WORLD_ACCOUNT_PARTS);
    expect(worldAccountId('Platform:x', 'USD')).toBe(worldAccountId('Platform:x', 'USD', 0));
    const ids = new Set(Array.from({ length: WORLD_ACCOUNT_PARTS }, (_, k) => worldAccountId('Platform:x', 'USD', k)));
    expect(ids.size).toBe(WORLD_ACCOUNT_PARTS);
    expect(worldAccountId('Platform:y', 'USD', 3)).not.toBe(worldAccountId('Platform:x', 'USD', 3));
  });

  it('settled payments and fundings post to the part of their own transaction; the ledger stays sound', async () => {
    const c = await newCustomer(t, ['USD']);
    const usd = c.accounts.USD!.id;
    const dest = await usdExternal(t, c.id, '000000456');
    await fund(t, usd, 1_000_000);
    const txIds: string[] = [];
    for (let i = 0; i < 12; i++) {
      const r = await t.call('POST', '/quotes', quoteRequest(usd, dest, 1_000 + i, { immediatelyExecute: true }));
      expect(r.statusCode, r.body).toBe(201);
      txIds.push((r.json() as { transactionId: string }).transactionId);
    }
    expect((await t.call('POST', '/sandbox/clock/advance', { seconds: 7 * 86_400 })).statusCode).toBe(200);

    const platformId = (await t.store.db.selectFrom('internal_accounts').select('platform_id').where('id', '=', usd).executeTakeFirstOrThrow()).platform_id;
    const captures = await t.store.db
      .selectFrom('ledger_entries as e')
      .innerJoin('ledger_postings as p', 'p.entry_id', 'e.id')
      .select(['e.reference_id', 'p.account_id', 'p.amount'])
      .where('e.kind', '=', 'CAPTURE')
      .where('p.account_id', 'not like', 'InternalAccount:%')
      .execute();
    expect(captures.map((r) => r.reference_id).sort()).toEqual([...txIds].sort());
    for (const r of captures) expect(r.account_id).toBe(worldAccountId(platformId, 'USD', worldPartOf(r.reference_id!)));
    expect(new Set(captures.map((r) => r.account_id)).size).toBeGreaterThan(1);

    // Every transaction is COMPLETED; the world's parts together paid out what left.
    for (const id of txIds) expect((await t.call('GET', `/transactions/${id}`)).json()).toMatchObject({ status: 'COMPLETED' });
    const worlds = await t.store.db.selectFrom('ledger_balances').select(['account_id', 'available']).where('platform_id', '=', platformId).where('kind', '=', 'WORLD').where('currency', '=', 'USD').execute();
    const paidOut = captures.reduce((s, r) => s + Number(r.amount), 0);
    expect(paidOut).toBe(txIds.reduce((s, _, i) => s + 1_000 + i, 0));
    // Funding came in through the world (−1,000,000) and the payouts went out to it (+paid out).
    expect(worlds.reduce((s, w) => s + Number(w.available), 0)).toBe(-1_000_000 + paidOut);
    await assertLedgerInvariants(t.store);
  });
});
