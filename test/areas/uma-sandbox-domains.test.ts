import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { balanceOf, fund, newCustomer, type QuoteBody, usdExternal } from '../money-helpers.js';

/** Account numbers of the external accounts the cases register (5550100000, 5550101000, …: the last three digits are no sandbox rule). */
let nextAccount = 99;

// The sandbox counterparty answers for our domain and for the other sandbox domain the
// reference's examples use (`$success.usd@sandbox.grid.uma.money`, SandboxUmaReceiveRequest):
// every sandbox local part behaves the same at both, wherever a UMA address is taken.

const DOMAINS = ['sandbox.uma.money', 'sandbox.grid.uma.money'];
const LOCALS: Array<[local: string, currency: string, outcome: 'COMPLETED' | 'PENDING_LONG' | 'FAILED', sender: boolean]> = [
  ['$success.usd', 'USD', 'COMPLETED', true],
  ['$success.eur', 'EUR', 'COMPLETED', true],
  ['$success.mxn', 'MXN', 'COMPLETED', true],
  ['$pending.long.usd', 'USD', 'PENDING_LONG', false],
  ['$fail.compliance.usd', 'USD', 'FAILED', false],
];
const CASES = DOMAINS.flatMap((domain) => LOCALS.map(([local, currency, outcome, sender]) => ({ address: `${local}@${domain}`, currency, outcome, sender })));

interface Tx {
  id: string;
  status: string;
  pendingReason?: string;
  failureReason?: string;
  source: { sourceType: string; umaAddress?: string; currency?: string };
  receivedAmount: { amount: number; currency: { code: string } };
  sentAmount: { amount: number; currency: { code: string } };
}

describe(`sandbox UMA domains (${STORE})`, () => {
  let t: TestApp;
  /** A sender with USD, funded; and a receiver holding USD, EUR and MXN accounts. */
  let payer: Awaited<ReturnType<typeof newCustomer>>;
  let receiver: Awaited<ReturnType<typeof newCustomer>>;

  beforeAll(async () => {
    t = await makeApp();
    payer = await newCustomer(t, ['USD']);
    await fund(t, payer.accounts.USD!.id, 10_000_000);
    receiver = await newCustomer(t, ['USD', 'EUR', 'MXN']);
  });
  afterAll(async () => t.close());

  const advance = async (seconds: number) => expect((await t.call('POST', '/sandbox/clock/advance', { seconds })).statusCode).toBe(200);
  const tx = async (id: string): Promise<Tx> => (await t.call('GET', `/transactions/${encodeURIComponent(id)}`)).json() as Tx;
  const lookupUrl = (address: string, query: string) => `/receiver/uma/${encodeURIComponent(address)}?${query}`;

  it.each(CASES)('receiver lookup of $address: 200, receives $currency', async ({ address, currency }) => {
    const res = await t.call('GET', lookupUrl(address, `customerId=${encodeURIComponent(payer.id)}`));
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json() as { receiverUmaAddress: string; supportedCurrencies: Array<{ currency: { code: string } }>; lookupId: string };
    expect(body.receiverUmaAddress).toBe(address);
    expect(body.supportedCurrencies.map((c) => c.currency.code)).toEqual([currency]);
  });

  it.each(CASES)('a quote to $address ends as the local part says ($outcome)', async ({ address, currency, outcome }) => {
    const lookup = await t.call('GET', lookupUrl(address, `customerId=${encodeURIComponent(payer.id)}`));
    const lookupId = (lookup.json() as { lookupId: string }).lookupId;
    const res = await t.call('POST', '/quotes', {
      lookupId,
      source: { sourceType: 'ACCOUNT', accountId: payer.accounts.USD!.id },
      destination: { destinationType: 'UMA_ADDRESS', umaAddress: address },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: 10_000,
      immediatelyExecute: true,
    });
    expect(res.statusCode, res.body).toBe(201);
    const q = res.json() as QuoteBody & { destination: { umaAddress: string; currency: string } };
    expect(q.destination).toEqual({ destinationType: 'UMA_ADDRESS', umaAddress: address, currency });
    await advance(1);
    const after = await tx(q.transactionId);
    if (outcome === 'COMPLETED') expect(after.status).toBe('COMPLETED');
    if (outcome === 'PENDING_LONG') expect(after).toMatchObject({ status: 'PROCESSING', pendingReason: 'COMPLIANCE_REVIEW' });
    if (outcome === 'FAILED') expect(after).toMatchObject({ status: 'FAILED', failureReason: 'COMPLIANCE_REJECTED' });
    await assertLedgerInvariants(t.store);
  });

  it.each(CASES)('POST /sandbox/uma/receive from $address', async ({ address, currency, sender }) => {
    const before = await balanceOf(t, receiver.accounts.USD!.id);
    const res = await t.call('POST', '/sandbox/uma/receive', { senderUmaAddress: address, customerId: receiver.id, receivingCurrencyCode: 'USD', receivingCurrencyAmount: 1_000 });
    if (!sender) {
      // $pending.long.* and $fail.compliance.* are receivers only, at either domain.
      envelope(res, 404, 'UMA_NOT_FOUND');
      expect(await balanceOf(t, receiver.accounts.USD!.id)).toEqual(before);
      return;
    }
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json() as Tx;
    expect(body.source).toEqual({ sourceType: 'UMA_ADDRESS', umaAddress: address, currency });
    expect(body.sentAmount.currency.code).toBe(currency);
    expect(body.receivedAmount).toMatchObject({ amount: 1_000, currency: { code: 'USD' } });
    expect(body.status).toBe('COMPLETED'); // no webhook endpoint: approved at once
    expect((await balanceOf(t, receiver.accounts.USD!.id)).total).toBe(before.total + 1_000);
    await assertLedgerInvariants(t.store);
  });

  it.each(CASES)('$address as senderUmaAddress of both lookups is a well-formed address (404 USER_NOT_FOUND, not 400)', async ({ address }) => {
    envelope(await t.call('GET', lookupUrl('$success.usd@sandbox.uma.money', `senderUmaAddress=${encodeURIComponent(address)}`)), 404, 'USER_NOT_FOUND');
    // A number of its own per case: the cases share the payer, and an account registered twice is a 409.
    nextAccount += 1;
    const ext = await usdExternal(t, payer.id, `5550${nextAccount}000`);
    envelope(await t.call('GET', `/receiver/external-account/${encodeURIComponent(ext)}?senderUmaAddress=${encodeURIComponent(address)}`), 404, 'USER_NOT_FOUND');
  });

  it('other domains are still no sandbox sender: 400 INVALID_UMA_ADDRESS naming both sandbox domains', async () => {
    for (const address of ['$success.usd@grid.uma.money', '$success.usd@sandbox.service.uma.money', '$success.usd@uma.money']) {
      const e = envelope(
        await t.call('POST', '/sandbox/uma/receive', { senderUmaAddress: address, customerId: receiver.id, receivingCurrencyCode: 'USD', receivingCurrencyAmount: 1_000 }),
        400,
        'INVALID_UMA_ADDRESS',
      );
      const errors = (e.details as { errors: Array<{ field: string; message: string }> }).errors;
      expect(errors.map((x) => x.field)).toEqual(['senderUmaAddress']);
      expect(errors[0]!.message).toContain('sandbox.uma.money');
      expect(errors[0]!.message).toContain('sandbox.grid.uma.money');
    }
    // As a receiver, another domain is a customer of some platform, or nobody.
    envelope(await t.call('GET', lookupUrl('$success.usd@grid.uma.money', `customerId=${encodeURIComponent(payer.id)}`)), 404, 'UMA_NOT_FOUND');
  });

  it('case does not matter at the reference domain either', async () => {
    const res = await t.call('GET', lookupUrl('$Success.EUR@Sandbox.Grid.UMA.money', `customerId=${encodeURIComponent(payer.id)}`));
    expect(res.statusCode, res.body).toBe(200);
    expect((res.json() as { supportedCurrencies: Array<{ currency: { code: string } }> }).supportedCurrencies[0]!.currency.code).toBe('EUR');
    envelope(await t.call('GET', lookupUrl('$fail.sender@sandbox.grid.uma.money', `customerId=${encodeURIComponent(payer.id)}`)), 400, 'SENDER_NOT_ACCEPTED');
  });
});
