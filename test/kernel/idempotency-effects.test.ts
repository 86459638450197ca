import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { idempotencyFaults } from '../../src/kernel/idempotency.js';
import { makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { balanceOf, fund, newCustomer, quoteRequest, usdExternal } from '../money-helpers.js';

// Exactly once per Idempotency-Key (docs/reliability.md): a request whose effect committed
// but whose answer never left (the process died, or failed, right after the commit) is
// replayed on retry, never executed again; one that failed before its effect committed runs
// again on retry. The crash is simulated with the kernel's fault seams: a throw right after
// the effect's transaction committed (before the answer would have been stored by onSend),
// or inside it just before its commit. Each answers 500, as a crash loses the answer.

describe(`Idempotency-Key effects after a crash (${STORE})`, () => {
  let t: TestApp;
  let customer: { id: string; accounts: Record<string, { id: string }> };
  let usd: string;
  let external: string;

  const crashOnce = (point: 'afterEffectCommit' | 'beforeEffectCommit') => {
    idempotencyFaults[point] = () => {
      delete idempotencyFaults[point];
      throw new Error(`simulated crash ${point}`);
    };
  };
  const withKey = (key: string) => ({ 'idempotency-key': key });
  const count = async (table: 'transactions' | 'quotes' | 'ledger_entries') => Number((await t.store.db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);

  beforeAll(async () => {
    t = await makeApp();
    customer = await newCustomer(t, ['USD']);
    usd = customer.accounts.USD!.id;
    external = await usdExternal(t, customer.id);
    await fund(t, usd, 1_000_000);
  });
  afterEach(() => {
    delete idempotencyFaults.afterEffectCommit;
    delete idempotencyFaults.beforeEffectCommit;
  });
  afterAll(async () => t.close());

  it('sandbox fund: a crash after the commit is replayed on retry, the money credited once', async () => {
    const before = await balanceOf(t, usd);
    crashOnce('afterEffectCommit');
    const lost = await t.call('POST', `/sandbox/internal-accounts/${usd}/fund`, { amount: 5_000 }, withKey('fund-after'));
    expect(lost.statusCode, lost.body).toBe(500);
    const retry = await t.call('POST', `/sandbox/internal-accounts/${usd}/fund`, { amount: 5_000 }, withKey('fund-after'));
    expect(retry.statusCode, retry.body).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect((retry.json() as { balance: { amount: number } }).balance.amount).toBe(before.available + 5_000);
    expect((await balanceOf(t, usd)).available).toBe(before.available + 5_000);
    // A further retry replays the same answer.
    const again = await t.call('POST', `/sandbox/internal-accounts/${usd}/fund`, { amount: 5_000 }, withKey('fund-after'));
    expect(again.body).toBe(retry.body);
    await assertLedgerInvariants(t.store);
  });

  it('sandbox fund: a crash before the commit leaves a clean slate, the retry credits once', async () => {
    const before = await balanceOf(t, usd);
    const entries = await count('ledger_entries');
    crashOnce('beforeEffectCommit');
    const lost = await t.call('POST', `/sandbox/internal-accounts/${usd}/fund`, { amount: 7_000 }, withKey('fund-before'));
    expect(lost.statusCode, lost.body).toBe(500);
    expect(await count('ledger_entries')).toBe(entries);
    const retry = await t.call('POST', `/sandbox/internal-accounts/${usd}/fund`, { amount: 7_000 }, withKey('fund-before'));
    expect(retry.statusCode, retry.body).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect((await balanceOf(t, usd)).available).toBe(before.available + 7_000);
    await assertLedgerInvariants(t.store);
  });

  it('transfer-out and a quote with immediatelyExecute: a crash after the commit replays the answer, one payment each', async () => {
    const before = await balanceOf(t, usd);
    const txs = await count('transactions');
    crashOnce('afterEffectCommit');
    const out = { source: { accountId: usd }, destination: { accountId: external }, amount: 1_000 };
    expect((await t.call('POST', '/transfer-out', out, withKey('out-after'))).statusCode).toBe(500);
    const outRetry = await t.call('POST', '/transfer-out', out, withKey('out-after'));
    expect(outRetry.statusCode, outRetry.body).toBe(201);
    expect(outRetry.headers['idempotent-replayed']).toBe('true');
    expect(outRetry.json()).toMatchObject({ type: 'OUTGOING', sentAmount: { amount: 1_000 } });

    crashOnce('afterEffectCommit');
    const q = quoteRequest(usd, external, 2_000, { immediatelyExecute: true });
    expect((await t.call('POST', '/quotes', q, withKey('quote-after'))).statusCode).toBe(500);
    const qRetry = await t.call('POST', '/quotes', q, withKey('quote-after'));
    expect(qRetry.statusCode, qRetry.body).toBe(201);
    expect(qRetry.headers['idempotent-replayed']).toBe('true');
    const quote = qRetry.json() as { id: string; status: string; transactionId: string };
    expect(quote.status).toBe('PROCESSING');
    const got = await t.call('GET', `/quotes/${quote.id}`);
    expect((got.json() as { transactionId: string }).transactionId).toBe(quote.transactionId);

    expect(await count('transactions')).toBe(txs + 2);
    expect((await balanceOf(t, usd)).available).toBe(before.available - 3_000);
    await assertLedgerInvariants(t.store);
  });

  it('execute and a sandbox UMA receive: a crash after the commit replays the answer, the money moved once', async () => {
    const created = await t.call('POST', '/quotes', quoteRequest(usd, external, 1_500));
    expect(created.statusCode, created.body).toBe(201);
    const quoteId = (created.json() as { id: string }).id;
    const before = await balanceOf(t, usd);
    crashOnce('afterEffectCommit');
    expect((await t.call('POST', `/quotes/${quoteId}/execute`, undefined, withKey('exec-after'))).statusCode).toBe(500);
    const exec = await t.call('POST', `/quotes/${quoteId}/execute`, undefined, withKey('exec-after'));
    expect(exec.statusCode, exec.body).toBe(200);
    expect(exec.headers['idempotent-replayed']).toBe('true');
    expect((await balanceOf(t, usd)).available).toBe(before.available - 1_500);

    const uma = await t.call('GET', `/customers/${customer.id}`);
    const umaAddress = (uma.json() as { umaAddress: string }).umaAddress;
    const receive = { senderUmaAddress: '$success.USD@sandbox.uma.money', receiverUmaAddress: umaAddress, receivingCurrencyCode: 'USD', receivingCurrencyAmount: 900 };
    const total = (await balanceOf(t, usd)).total;
    crashOnce('afterEffectCommit');
    expect((await t.call('POST', '/sandbox/uma/receive', receive, withKey('uma-after'))).statusCode).toBe(500);
    const recv = await t.call('POST', '/sandbox/uma/receive', receive, withKey('uma-after'));
    expect(recv.statusCode, recv.body).toBe(200);
    expect(recv.headers['idempotent-replayed']).toBe('true');
    expect((await balanceOf(t, usd)).total).toBe(total + 900);
    await assertLedgerInvariants(t.store);
  });
});
