import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhookSignature } from '../../src/index.js';
import { balancesOf, postEntry } from '../../src/api/ledger/service.js';
import { emitEventsTogether, listEvents } from '../../src/kernel/events.js';
import { effectTransaction } from '../../src/kernel/idempotency.js';
import { makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { fund, newCustomer, quoteRequest, type QuoteBody, usdExternal } from '../money-helpers.js';
import { Receiver } from '../webhook-receiver.js';

// Issue 35: on PostgreSQL a payment's hold moves the payer's balance row with the commit
// (kernel/db/late-move.ts), its INTERNAL_ACCOUNT.BALANCE_UPDATED filled in by the database
// as it is written; a hold refused there runs the request again with the move sent at once.
// What a platform sees must be what it saw before on either store: the balance event's
// figures, the events' order, the refusal's answer, and exactly the payments the balance
// covers when many race for it.

describe(`a payment's hold and its balance event (${STORE})`, () => {
  let t: TestApp;
  let platformId: string;

  beforeAll(async () => {
    t = await makeApp({ worker: false });
    platformId = (await t.store.db.selectFrom('platforms').select('id').where('is_default', '=', 1).executeTakeFirstOrThrow()).id;
  });
  afterAll(async () => t.close());

  const payer = async (amount: number, suffix: string) => {
    const c = await newCustomer(t, ['USD']);
    const src = c.accounts.USD!.id;
    await fund(t, src, amount);
    return { customerId: c.id, src, ext: await usdExternal(t, c.id, `55500${suffix}`) };
  };
  const pay = (src: string, ext: string, amount: number) => t.call('POST', '/quotes', quoteRequest(src, ext, amount, { immediatelyExecute: true }));
  /** The account's balance events, oldest first: [available, total]. */
  const balanceEvents = async (accountId: string) =>
    (await listEvents(t.store.db, platformId, { resourceId: accountId })).map((e) => {
      const d = e.payload.data as { balance: { amount: number }; totalBalance: { amount: number } };
      return [d.balance.amount, d.totalBalance.amount];
    });
  const account = async (customerId: string) =>
    ((await t.call('GET', `/customers/internal-accounts?customerId=${encodeURIComponent(customerId)}`)).json() as { data: Array<{ balance: { amount: number }; totalBalance: { amount: number } }> }).data[0]!;

  it('the balance event shows the account after the hold, between PENDING and PROCESSING', async () => {
    const p = await payer(100_000, '001');
    const res = await pay(p.src, p.ext, 5_000);
    expect(res.statusCode, res.body).toBe(201);
    const q = res.json() as QuoteBody;
    const total = q.totalSendingAmount;
    expect(await balanceEvents(p.src)).toEqual([
      [100_000, 100_000], // the funding
      [100_000 - total, 100_000], // the hold: available down, the total unchanged (held)
    ]);
    const a = await account(p.customerId);
    expect([a.balance.amount, a.totalBalance.amount]).toEqual([100_000 - total, 100_000]);
    // The payment's three events in their order.
    const seqOf = async (resourceId: string) => (await listEvents(t.store.db, platformId, { resourceId })).map((e) => [e.type, e.seq] as const);
    const tx = await seqOf(q.transactionId);
    const hold = (await seqOf(p.src)).at(-1)!;
    expect(tx.map((e) => e[0])).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING']);
    expect(tx[0]![1]).toBeLessThan(hold[1]);
    expect(hold[1]).toBeLessThan(tx[1]![1]);
    await assertLedgerInvariants(t.store);
  });

  it("another event holding a stand-in's digits keeps them: only the account's own event is filled in", async () => {
    const p = await payer(20_000, '006');
    const description = 'invoice -9007199254740991 / -9007199254740990';
    const res = await t.call('POST', '/quotes', quoteRequest(p.src, p.ext, 1_000, { immediatelyExecute: true, description }));
    expect(res.statusCode, res.body).toBe(201);
    const q = res.json() as QuoteBody;
    const events = await listEvents(t.store.db, platformId, { resourceId: q.transactionId });
    expect(events.map((e) => (e.payload.data as { description?: string }).description)).toEqual([description, description]);
    expect((await balanceEvents(p.src)).at(-1)).toEqual([20_000 - q.totalSendingAmount, 20_000]);
  });

  it('not enough available: 400 INVALID_AMOUNT with the figures, nothing written', async () => {
    const p = await payer(1_000, '002');
    const events = await balanceEvents(p.src);
    const before = await t.store.db.selectFrom('transactions').select((e) => e.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    const res = await pay(p.src, p.ext, 5_000);
    expect(res.statusCode, res.body).toBe(400);
    const body = res.json() as { code: string; details: Record<string, unknown> };
    expect(body.code).toBe('INVALID_AMOUNT');
    expect(body.details).toMatchObject({ reason: 'INSUFFICIENT_BALANCE', accountId: p.src, currency: 'USD', available: 1_000 });
    expect(await balanceEvents(p.src)).toEqual(events);
    const after = await t.store.db.selectFrom('transactions').select((e) => e.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    expect(Number(after.n)).toBe(Number(before.n));
    const a = await account(p.customerId);
    expect([a.balance.amount, a.totalBalance.amount]).toEqual([1_000, 1_000]);
    // The account goes on: a payment it covers is taken.
    expect((await pay(p.src, p.ext, 500)).statusCode).toBe(201);
    await assertLedgerInvariants(t.store);
  });

  it('payments racing for one balance: exactly those it covers are taken, each event with its own figures', async () => {
    const p = await payer(10_000, '003');
    const answers = await Promise.all(Array.from({ length: 20 }, () => pay(p.src, p.ext, 1_000)));
    const taken = answers.filter((r) => r.statusCode === 201).map((r) => r.json() as QuoteBody);
    const refused = answers.filter((r) => r.statusCode === 400);
    expect(taken.length + refused.length).toBe(20);
    const each = taken[0]!.totalSendingAmount;
    expect(taken.every((q) => q.totalSendingAmount === each)).toBe(true);
    expect(taken.length).toBe(Math.floor(10_000 / each));
    for (const r of refused) expect((r.json() as { code: string }).code).toBe('INVALID_AMOUNT');
    // One balance event per hold, each showing the balance its own hold left, in seq order.
    const holds = (await balanceEvents(p.src)).slice(1);
    expect(holds).toEqual(taken.map((_, i) => [10_000 - (i + 1) * each, 10_000]));
    const a = await account(p.customerId);
    expect([a.balance.amount, a.totalBalance.amount]).toEqual([10_000 - taken.length * each, 10_000]);
    await assertLedgerInvariants(t.store);
  });

  it('a balance read again after a late hold in the same transaction: the transaction runs again, the hold sent at once', async () => {
    const p = await payer(7_000, '005');
    let runs = 0;
    const at = new Date(t.clock.nowMs()).toISOString();
    const seen = await effectTransaction(t.store.db, (trx) =>
      emitEventsTogether(trx, async () => {
        runs += 1;
        await postEntry(trx, t.store, {
          platformId,
          kind: 'HOLD',
          at,
          balancesForEventsOnly: true,
          postings: [
            { accountId: p.src, currency: 'USD', amount: -700 },
            { accountId: p.src, currency: 'USD', amount: 700, bucket: 'held' },
          ],
        });
        // On PostgreSQL the first run's hold waits for the commit: this read would not see it.
        return (await balancesOf(trx, [p.src])).get(p.src)!;
      }),
    );
    expect(runs).toBe(STORE === 'postgres' ? 2 : 1);
    expect([seen.available, seen.held, seen.total]).toEqual([6_300, 700, 7_000]);
    const a = await account(p.customerId);
    expect([a.balance.amount, a.totalBalance.amount]).toEqual([6_300, 7_000]);
    await assertLedgerInvariants(t.store);
  });

  it('with a webhook endpoint: the same figures, signed as delivered', async () => {
    const receiver = await new Receiver().start();
    try {
      expect((await t.call('PATCH', '/config', { webhookEndpoint: receiver.url })).statusCode).toBe(200);
      const publicKey = ((await t.call('GET', '/sandbox/webhooks/public-key')).json() as { publicKey: string }).publicKey;
      const p = await payer(50_000, '004');
      const res = await pay(p.src, p.ext, 2_000);
      expect(res.statusCode, res.body).toBe(201);
      const total = (res.json() as QuoteBody).totalSendingAmount;
      expect((await pay(p.src, p.ext, 60_000)).statusCode).toBe(400);
      await t.running.webhooks.runDue();
      const hooks = receiver.got.filter((r) => r.json.type === 'INTERNAL_ACCOUNT.BALANCE_UPDATED' && (r.json.data as { id: string }).id === p.src);
      expect(hooks.map((r) => [(r.json.data as { balance: { amount: number } }).balance.amount, (r.json.data as { totalBalance: { amount: number } }).totalBalance.amount])).toEqual([
        [50_000, 50_000],
        [50_000 - total, 50_000],
      ]);
      for (const r of hooks) expect(verifyWebhookSignature(r.body, String(r.headers['x-service-signature']), publicKey)).toBe(true);
      expect(await balanceEvents(p.src)).toEqual([
        [50_000, 50_000],
        [50_000 - total, 50_000],
      ]);
      await assertLedgerInvariants(t.store);
    } finally {
      await t.call('PATCH', '/config', { webhookEndpoint: null });
      await receiver.stop();
    }
  });
});
