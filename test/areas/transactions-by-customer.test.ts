import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { type Account, fund, newCustomer, type QuoteBody, quoteRequest, type TxBody, usdExternal } from '../money-helpers.js';

// GET /transactions?customerId= / ?platformCustomerId=: a payment the platform makes on its
// own behalf (customerId shows the platform's id, as the reference says) to one of a
// customer's accounts — a reward — is listed under that customer too (hosted docs: the
// rewards sandbox page checks `GET /transactions?customerId=…` after a reward; listing
// transactions filters a customer's rewards by `platformCustomerId`).

interface TxList { data: TxBody[]; totalCount: number }

describe(`transactions of a customer include the platform's payments to it (${STORE})`, () => {
  let t: TestApp;
  let alice: { id: string; ref: string; usd: string; ext: string };
  let bob: { id: string; ref: string; usd: string };
  let platformId: string;
  const tx: Record<'rewardToWallet' | 'rewardToAccount' | 'alicePays' | 'toBob', string> = {} as never;

  const ids = async (query: string): Promise<string[]> => {
    const res = await t.call('GET', `/transactions${query}`);
    expect(res.statusCode, res.body).toBe(200);
    const page = res.json() as TxList;
    expect(page.totalCount).toBe(page.data.length);
    return page.data.map((x) => x.id);
  };
  const pay = async (source: string, destination: string, amount: number): Promise<string> => {
    const res = await t.call('POST', '/quotes', quoteRequest(source, destination, amount, { immediatelyExecute: true }));
    expect(res.statusCode, res.body).toBe(201);
    return (res.json() as QuoteBody).transactionId;
  };
  const refOf = async (id: string) => ((await t.call('GET', `/customers/${encodeURIComponent(id)}`)).json() as { platformCustomerId: string }).platformCustomerId;

  beforeAll(async () => {
    t = await makeApp();
    const a = await newCustomer(t, ['USD']);
    const b = await newCustomer(t, ['USD']);
    alice = { id: a.id, ref: await refOf(a.id), usd: a.accounts.USD!.id, ext: await usdExternal(t, a.id) };
    bob = { id: b.id, ref: await refOf(b.id), usd: b.accounts.USD!.id };
    const platform = ((await t.call('GET', '/platform/internal-accounts?currency=USD')).json() as { data: Account[] }).data[0]!;
    await fund(t, platform.id, 100_000);
    await fund(t, alice.usd, 100_000);
    tx.rewardToWallet = await pay(platform.id, alice.ext, 1_000);
    tx.rewardToAccount = await pay(platform.id, alice.usd, 2_000);
    tx.alicePays = await pay(alice.usd, alice.ext, 3_000);
    tx.toBob = await pay(platform.id, bob.usd, 4_000);
    platformId = ((await t.call('GET', `/transactions/${encodeURIComponent(tx.rewardToWallet)}`)).json() as TxBody).customerId;
  });
  afterAll(async () => {
    await assertLedgerInvariants(t.store);
    await t.close();
  });

  it('the platform’s payments show the platform as their customer, as the reference says', async () => {
    expect(platformId).toMatch(/^Platform:/);
    for (const id of [tx.rewardToWallet, tx.rewardToAccount, tx.toBob]) {
      const got = (await t.call('GET', `/transactions/${encodeURIComponent(id)}`)).json() as TxBody;
      expect(got.customerId).toBe(platformId);
    }
    expect(await ids(`?customerId=${encodeURIComponent(platformId)}`)).toEqual(expect.arrayContaining([tx.rewardToWallet, tx.rewardToAccount, tx.toBob]));
    expect(await ids(`?customerId=${encodeURIComponent(platformId)}`)).not.toContain(tx.alicePays);
  });

  it('customerId lists the customer’s own transactions and the platform’s payments to its accounts', async () => {
    const mine = await ids(`?customerId=${encodeURIComponent(alice.id)}`);
    expect(mine).toEqual(expect.arrayContaining([tx.rewardToWallet, tx.rewardToAccount, tx.alicePays]));
    expect(mine).not.toContain(tx.toBob);
    const bobs = await ids(`?customerId=${encodeURIComponent(bob.id)}`);
    expect(bobs).toContain(tx.toBob);
    expect(bobs).not.toContain(tx.rewardToWallet);
    expect(bobs).not.toContain(tx.alicePays);
  });

  it('platformCustomerId does the same, and combines with the other filters', async () => {
    const mine = await ids(`?platformCustomerId=${encodeURIComponent(alice.ref)}`);
    expect(mine).toEqual(expect.arrayContaining([tx.rewardToWallet, tx.rewardToAccount, tx.alicePays]));
    expect(mine).not.toContain(tx.toBob);
    expect(await ids(`?platformCustomerId=${encodeURIComponent(alice.ref)}&receiverAccountIdentifier=${encodeURIComponent(alice.ext)}`)).toEqual(
      [tx.alicePays, tx.rewardToWallet],
    );
    expect(await ids(`?customerId=${encodeURIComponent(bob.id)}&type=OUTGOING`)).toEqual([tx.toBob]);
    expect(await ids('?customerId=Customer:01890000-0000-7000-8000-000000000000')).toEqual([]);
  });
});
