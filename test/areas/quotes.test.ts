import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listEvents } from '../../src/kernel/events.js';
import { ADMIN_KEY, basic, envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import {
  balanceOf,
  eurExternal,
  fund,
  newCustomer,
  otherPlatformAuth,
  type QuoteBody,
  quoteRequest,
  TERMS,
  type TxBody,
  usdExternal,
} from '../money-helpers.js';

// Quotes: creation (pricing from the lookup's source, gates), reading, execution (ledger
// hold, OUTGOING transaction, durable settlement job), expiry, balance, double execution,
// and two executes racing for one balance.

const QUOTE_ID = /^Quote:[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const TX_ID = /^Transaction:[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const usdFee = (variableFeeBps: number, amount: number) => ({ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', variableFeeBps, fixedFee: { amount, currency: 'USD' } });

describe(`quotes (${STORE})`, () => {
  let t: TestApp;
  let platformId: string;

  const quote = (body: unknown, headers?: Record<string, string>) => t.call('POST', '/quotes', body, headers);
  const execute = (id: string, headers?: Record<string, string>) => t.call('POST', `/quotes/${encodeURIComponent(id)}/execute`, undefined, headers);
  const created = async (body: unknown): Promise<QuoteBody> => {
    const res = await quote(body);
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as QuoteBody;
  };

  beforeAll(async () => {
    t = await makeApp();
    platformId = (await t.store.db.selectFrom('platforms').select('id').where('is_default', '=', 1).executeTakeFirstOrThrow()).id;
  });
  afterAll(async () => t.close());

  describe('create and read', () => {
    it('prices a same-currency quote: no fee, rate 1, 5 minutes to execute, default rail', async () => {
      const c = await newCustomer(t, ['USD']);
      const dest = await usdExternal(t, c.id);
      const q = await created(quoteRequest(c.accounts.USD!.id, dest, 10_000, { description: 'Invoice 7', remittanceInformation: 'INV-7', purposeOfPayment: 'GOODS_OR_SERVICES' }));
      expect(q.id).toMatch(QUOTE_ID);
      expect(q.transactionId).toMatch(TX_ID);
      expect(q.status).toBe('PENDING');
      expect(q.source).toEqual({ sourceType: 'ACCOUNT', accountId: c.accounts.USD!.id, customerId: c.id });
      expect(q.destination).toEqual({ destinationType: 'ACCOUNT', accountId: dest, paymentRail: 'ACH' });
      expect(q.sendingCurrency.code).toBe('USD');
      expect(q.receivingCurrency.code).toBe('USD');
      expect([q.totalSendingAmount, q.totalReceivingAmount, q.feesIncluded, q.platformFeesIncluded, q.exchangeRate]).toEqual([10_000, 10_000, 0, 0, 1]);
      expect(Date.parse(q.expiresAt) - Date.parse(q.createdAt)).toBe(5 * 60_000);
      expect(Object.keys(q.rateDetails).sort()).toEqual(['counterpartyFixedFee', 'counterpartyMultiplier', 'gridApiFixedFee', 'gridApiMultiplier', 'gridApiVariableFeeAmount', 'gridApiVariableFeeRate']);

      const got = await t.call('GET', `/quotes/${encodeURIComponent(q.id)}`);
      expect(got.statusCode, got.body).toBe(200);
      expect(got.json()).toEqual(q);
    });

    it('echoes the description: create answer, GET /quotes/{id}, its transaction; executed or not; absent when none was given', async () => {
      const c = await newCustomer(t, ['USD']);
      await fund(t, c.accounts.USD!.id, 10_000);
      const dest = await usdExternal(t, c.id);
      const description = 'Invoice #1234 – services (Q3)';
      const q = await created(quoteRequest(c.accounts.USD!.id, dest, 1_000, { description }));
      expect((q as QuoteBody & { description?: string }).description).toBe(description);
      expect(((await t.call('GET', `/quotes/${encodeURIComponent(q.id)}`)).json() as { description?: string }).description).toBe(description);
      const pendingTx = (await t.call('GET', `/transactions/${encodeURIComponent(q.transactionId)}`)).json() as TxBody & { description?: string };
      expect([pendingTx.status, pendingTx.description]).toEqual(['PENDING', description]);
      const executed = await execute(q.id);
      expect(executed.statusCode, executed.body).toBe(200);
      expect(executed.json()).toMatchObject({ status: 'PROCESSING', description });
      expect((await t.call('GET', `/transactions/${encodeURIComponent(q.transactionId)}`)).json()).toMatchObject({ status: 'PROCESSING', description });

      const imm = await created(quoteRequest(c.accounts.USD!.id, dest, 1_000, { description: 'at once', immediatelyExecute: true }));
      expect(imm).toMatchObject({ status: 'PROCESSING', description: 'at once' });
      expect((await t.call('GET', `/transactions/${encodeURIComponent(imm.transactionId)}`)).json()).toMatchObject({ description: 'at once' });

      const none = await created(quoteRequest(c.accounts.USD!.id, dest, 1_000));
      expect('description' in none).toBe(false);
      expect('description' in ((await t.call('GET', `/transactions/${encodeURIComponent(none.transactionId)}`)).json() as object)).toBe(false);
      await assertLedgerInvariants(t.store);
    });

    it('prices cross-currency from the same rate and platform fee as GET /exchange-rates and the lookup', async () => {
      const patched = await t.call('PATCH', '/config', { feeConfigs: [usdFee(100, 30)] });
      expect(patched.statusCode, patched.body).toBe(200);
      try {
        const c = await newCustomer(t, ['USD']);
        const dest = await eurExternal(t, c.id);
        const q = await created(quoteRequest(c.accounts.USD!.id, dest, 10_000));
        const rates = await t.call('GET', '/exchange-rates?sourceCurrency=USD&destinationCurrency=EUR&sendingAmount=10000');
        const rate = (rates.json() as { data: Array<{ receivingAmount: number; exchangeRate: number; fees: { total: number } }> }).data[0]!;
        expect(q.totalSendingAmount).toBe(10_000);
        expect(q.totalReceivingAmount).toBe(rate.receivingAmount);
        expect(q.exchangeRate).toBe(rate.exchangeRate);
        expect(q.feesIncluded).toBe(130); // 30 fixed + 1 % of 10,000
        expect(q.platformFeesIncluded).toBe(130);
        expect(q.rateDetails.gridApiFixedFee).toBe(30);
        expect(q.rateDetails.gridApiVariableFeeRate).toBe(0.01);
        expect(q.rateDetails.gridApiVariableFeeAmount).toBe(100);
        expect(q.destination.paymentRail).toBe('SEPA_INSTANT');

        const lookup = await t.call('GET', `/receiver/external-account/${encodeURIComponent(dest)}?customerId=${encodeURIComponent(c.id)}`);
        expect(lookup.statusCode, lookup.body).toBe(200);
        const l = lookup.json() as { lookupId: string; supportedCurrencies: Array<{ currency: { code: string }; estimatedExchangeRate: number }> };
        const est = l.supportedCurrencies.find((s) => s.currency.code === 'EUR')!.estimatedExchangeRate;
        // The estimate is the customer rate the quote priced with; its exchangeRate is net of fees, from its amounts.
        expect(Math.abs(est / q.rateDetails.counterpartyMultiplier! - 1)).toBeLessThan(1e-9);
        expect(Math.abs(q.exchangeRate / ((q.totalSendingAmount - q.feesIncluded) / q.totalReceivingAmount) - 1)).toBeLessThan(1e-9);

        // With the lookup: the same price.
        const withLookup = await created(quoteRequest(c.accounts.USD!.id, dest, 10_000, { lookupId: l.lookupId }));
        expect(withLookup.totalReceivingAmount).toBe(q.totalReceivingAmount);

        // Locked on the receiving side: exactly that amount arrives, for the smallest sending amount that delivers it.
        const r = await created(quoteRequest(c.accounts.USD!.id, dest, 5_000, { lockedCurrencySide: 'RECEIVING' }));
        expect(r.totalReceivingAmount).toBe(5_000);
        const atS = await t.call('GET', `/exchange-rates?sourceCurrency=USD&destinationCurrency=EUR&sendingAmount=${r.totalSendingAmount}`);
        const below = await t.call('GET', `/exchange-rates?sourceCurrency=USD&destinationCurrency=EUR&sendingAmount=${r.totalSendingAmount - 1}`);
        expect((atS.json() as { data: Array<{ receivingAmount: number }> }).data[0]!.receivingAmount).toBeGreaterThanOrEqual(5_000);
        expect((below.json() as { data: Array<{ receivingAmount: number }> }).data[0]!.receivingAmount).toBeLessThan(5_000);
      } finally {
        await t.call('PATCH', '/config', { feeConfigs: [usdFee(0, 0)] });
      }
    });

    it('stores rateDetails as six numbers; the quote and its transaction show the same object, also from rows stored as the object', async () => {
      // An app of its own: the fee it pays must not reach the platform fee account the other tests read.
      const own = await makeApp();
      const patched = await own.call('PATCH', '/config', { feeConfigs: [usdFee(100, 5_000)] });
      expect(patched.statusCode, patched.body).toBe(200);
      try {
        const c = await newCustomer(own, ['USD']);
        await fund(own, c.accounts.USD!.id, 200_000);
        const dest = await eurExternal(own, c.id);
        const res = await own.call('POST', '/quotes', quoteRequest(c.accounts.USD!.id, dest, 100_000));
        expect(res.statusCode, res.body).toBe(201);
        const q = res.json() as QuoteBody;
        const details = q.rateDetails;
        expect(details).toMatchObject({ counterpartyFixedFee: 0, gridApiFixedFee: 5_000, gridApiVariableFeeRate: 0.01, gridApiVariableFeeAmount: 950, gridApiMultiplier: 0.99 });
        expect(details.counterpartyMultiplier).toBeGreaterThan(0);
        const row = await own.store.db.selectFrom('quotes').select('rate_details').where('id', '=', q.id).executeTakeFirstOrThrow();
        expect(JSON.parse(row.rate_details)).toEqual([details.counterpartyMultiplier, 0, 0.99, 5_000, 0.01, 950]);
        expect((await own.call('GET', `/quotes/${encodeURIComponent(q.id)}`)).json().rateDetails).toEqual(details);
        const ex = await own.call('POST', `/quotes/${encodeURIComponent(q.id)}/execute`);
        expect(ex.statusCode, ex.body).toBe(200);
        const tx = await own.call('GET', `/transactions/${encodeURIComponent(q.transactionId)}`);
        expect(tx.json().rateDetails).toEqual(details);

        // Rows written before the packed form hold the object's JSON: they read the same.
        const asObject = JSON.stringify(details);
        await own.store.db.updateTable('quotes').set({ rate_details: asObject }).where('id', '=', q.id).execute();
        await own.store.db.updateTable('transactions').set({ rate_details: asObject }).where('id', '=', q.transactionId).execute();
        expect((await own.call('GET', `/quotes/${encodeURIComponent(q.id)}`)).json().rateDetails).toEqual(details);
        expect((await own.call('GET', `/transactions/${encodeURIComponent(q.transactionId)}`)).json().rateDetails).toEqual(details);
        await assertLedgerInvariants(own.store);
      } finally {
        await own.close();
      }
    });

    it('charges the variable platform fee on the sending amount net of the fixed fee, the same in quotes, lookups and GET /exchange-rates', async () => {
      const patched = await t.call('PATCH', '/config', { feeConfigs: [usdFee(100, 5_000)] });
      expect(patched.statusCode, patched.body).toBe(200);
      try {
        const c = await newCustomer(t, ['USD']);
        const dest = await eurExternal(t, c.id);
        // $1,000.00 with 100 bps + $50.00: 5,000 + 1 % of (100,000 − 5,000) = 5,950 (on the gross amount: 6,000).
        const q = await created(quoteRequest(c.accounts.USD!.id, dest, 100_000));
        expect([q.totalSendingAmount, q.feesIncluded, q.platformFeesIncluded]).toEqual([100_000, 5_950, 5_950]);
        expect(q.rateDetails).toMatchObject({ gridApiFixedFee: 5_000, gridApiVariableFeeRate: 0.01, gridApiVariableFeeAmount: 950, gridApiMultiplier: 0.99 });
        // What is left after the fee converts: floor(94,050 × 0.92 × 0.995).
        expect(q.totalReceivingAmount).toBe(86_093);

        const rates = await t.call('GET', '/exchange-rates?sourceCurrency=USD&destinationCurrency=EUR&sendingAmount=100000');
        expect(rates.statusCode, rates.body).toBe(200);
        const rate = (rates.json() as { data: Array<{ receivingAmount: number; fees: { fixed: number; total: number } }> }).data[0]!;
        expect(rate.fees).toEqual({ fixed: 5_000, total: 5_950 });
        expect(rate.receivingAmount).toBe(86_093);

        // Locked on the receiving side: the smallest sending amount that delivers it, with the same fee formula.
        const r = await created(quoteRequest(c.accounts.USD!.id, dest, 86_093, { lockedCurrencySide: 'RECEIVING' }));
        expect(r.totalReceivingAmount).toBe(86_093);
        // 100,000 leaves 94,050 → 86,093.37; 99,999 leaves 94,049 → 86,092.45 (the gross formula would need about 100,051).
        expect(r.totalSendingAmount).toBe(100_000);
        expect(r.feesIncluded).toBe(5_950);
        expect(r.rateDetails.gridApiVariableFeeAmount).toBe(950);

        // The docs' worked example: $10.00 with 30 bps + $0.50 → 53 cents.
        await t.call('PATCH', '/config', { feeConfigs: [usdFee(30, 50)] });
        const small = await created(quoteRequest(c.accounts.USD!.id, dest, 1_000));
        expect([small.feesIncluded, small.platformFeesIncluded, small.rateDetails.gridApiVariableFeeAmount]).toEqual([53, 53, 3]);
      } finally {
        await t.call('PATCH', '/config', { feeConfigs: [usdFee(0, 0)] });
      }
    });

    it('400 INVALID_INPUT naming platformFeeOverride for a sending currency other than USD; nothing is stored', async () => {
      const c = await newCustomer(t, ['EUR']);
      const dest = await usdExternal(t, c.id);
      const override = { platformFixedFee: { amount: 10, currency: 'EUR' }, platformVariableFeeBps: 10 };
      const before = await t.store.db.selectFrom('quotes').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      const e = envelope(await quote(quoteRequest(c.accounts.EUR!.id, dest, 10_000, { platformFeeOverride: override })), 400, 'INVALID_INPUT');
      expect(e.details).toEqual({
        errors: [{ field: 'platformFeeOverride', constraint: { enum: ['USD'] }, message: 'applies only to a USD sending currency today, not EUR' }],
      });
      // A real-time BTC source is refused the same way.
      const btc = envelope(
        await quote({ source: { sourceType: 'REALTIME_FUNDING', currency: 'BTC', customerId: c.id }, destination: { destinationType: 'ACCOUNT', accountId: dest }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 100_000, platformFeeOverride: override }),
        400,
        'INVALID_INPUT',
      );
      expect((btc.details as { errors: Array<{ field: string }> }).errors.map((x) => x.field)).toEqual(['platformFeeOverride']);
      const after = await t.store.db.selectFrom('quotes').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      expect(Number(after.n)).toBe(Number(before.n));
      // Standing fee configs in another currency keep their 501.
      envelope(await t.call('PATCH', '/config', { feeConfigs: [{ ...usdFee(10, 10), sourceCurrency: 'EUR', fixedFee: { amount: 10, currency: 'EUR' } }] }), 501, 'NOT_IMPLEMENTED');
    });

    it('400 INVALID_INPUT listing every invalid field at once', async () => {
      const res = await quote({ source: { sourceType: 'ACCOUNT' }, destination: { destinationType: 'ACCOUNT', accountId: 'x' }, lockedCurrencySide: 'SIDEWAYS', lockedCurrencyAmount: 0, remittanceInformation: 'x'.repeat(81) });
      const e = envelope(res, 400, 'INVALID_INPUT');
      const fields = (e.details!.errors as Array<{ field: string }>).map((x) => x.field).join(' ');
      for (const f of ['source.accountId', 'lockedCurrencySide', 'lockedCurrencyAmount', 'remittanceInformation']) expect(fields).toContain(f);
    });

    it('400 for a lookup of another receiver, and a rail the account does not take', async () => {
      const c = await newCustomer(t, ['USD']);
      const a = await usdExternal(t, c.id, '111111111');
      const b = await usdExternal(t, c.id, '222222222');
      const lookup = await t.call('GET', `/receiver/external-account/${encodeURIComponent(a)}?customerId=${encodeURIComponent(c.id)}`);
      const lookupId = (lookup.json() as { lookupId: string }).lookupId;
      envelope(await quote(quoteRequest(c.accounts.USD!.id, b, 1_000, { lookupId })), 400, 'INVALID_INPUT');
      // createQuote declares no 404: an unknown lookup is 400 naming lookupId.
      expect(envelope(await quote(quoteRequest(c.accounts.USD!.id, b, 1_000, { lookupId: 'Lookup:01890000-0000-7000-8000-000000000000' })), 400, 'INVALID_INPUT').details!.errors).toEqual([
        { field: 'lookupId', message: expect.stringMatching(/Lookup .* not found/) },
      ]);
      const rail = await quote({ ...quoteRequest(c.accounts.USD!.id, b, 1_000), destination: { destinationType: 'ACCOUNT', accountId: b, paymentRail: 'SEPA' } });
      expect(JSON.stringify(envelope(rail, 400, 'INVALID_INPUT').details)).toContain('destination.paymentRail');
      const wire = await created({ ...quoteRequest(c.accounts.USD!.id, b, 1_000), destination: { destinationType: 'ACCOUNT', accountId: b, paymentRail: 'WIRE' } });
      expect(wire.destination.paymentRail).toBe('WIRE');
    });

    it('403 END_USER_TERMS_NOT_ACCEPTED without terms on file (unregulated platform)', async () => {
      // Such a customer holds no internal account yet, so it can only be the payer of a real-time funded quote.
      const c = await newCustomer(t, ['USD'], { terms: false });
      expect(c.accounts).toEqual({});
      const dest = await usdExternal(t, c.id);
      const body = { ...quoteRequest(c.accounts.USD?.id ?? '', dest, 1_000), source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: c.id } };
      const e = envelope(await quote(body), 403, 'END_USER_TERMS_NOT_ACCEPTED');
      expect(e.details).toEqual({ customerId: c.id });
      // Once the terms are recorded its account opens and the same customer may send.
      const patched = await t.call('PATCH', `/customers/${c.id}`, { customerType: 'INDIVIDUAL', endUserTermsConsent: TERMS });
      expect(patched.statusCode, patched.body).toBe(200);
      expect((await quote(body)).statusCode).toBe(201);
    });

    it('a regulated platform needs no end-user terms on file', async () => {
      const res = await t.call('POST', '/admin/platforms', { name: 'Regulated bank', regulated: true }, { authorization: `Bearer ${ADMIN_KEY}` });
      expect(res.statusCode, res.body).toBe(201);
      const { clientId, clientSecret } = (res.json() as { credentials: { clientId: string; clientSecret: string } }).credentials;
      const auth = { authorization: basic(clientId, clientSecret) };
      const c = await newCustomer(t, ['USD'], { terms: false, headers: auth });
      const dest = await usdExternal(t, c.id, '123456789', auth);
      expect((await quote(quoteRequest(c.accounts.USD!.id, dest, 1_000), auth)).statusCode).toBe(201);
    });

    it('403 USER_NOT_READY when the customer is not APPROVED', async () => {
      const c = await newCustomer(t, ['USD'], { approved: false });
      const dest = await usdExternal(t, c.id);
      const e = envelope(await quote(quoteRequest(c.accounts.USD!.id, dest, 1_000)), 403, 'USER_NOT_READY');
      expect(e.details).toMatchObject({ customerId: c.id, kycStatus: 'UNVERIFIED' });
    });

    it('400 AMOUNT_OUT_OF_RANGE outside the corridor bounds (USD receives 100 to 10,000,000)', async () => {
      const c = await newCustomer(t, ['USD']);
      const dest = await usdExternal(t, c.id);
      const low = envelope(await quote(quoteRequest(c.accounts.USD!.id, dest, 99)), 400, 'AMOUNT_OUT_OF_RANGE');
      expect(low.details).toMatchObject({ minReceivingAmount: 100, maxReceivingAmount: 10_000_000 });
      envelope(await quote(quoteRequest(c.accounts.USD!.id, dest, 10_000_001)), 400, 'AMOUNT_OUT_OF_RANGE');
      envelope(await quote(quoteRequest(c.accounts.USD!.id, dest, 10_000_001, { lockedCurrencySide: 'RECEIVING' })), 400, 'AMOUNT_OUT_OF_RANGE');
      await created(quoteRequest(c.accounts.USD!.id, dest, 100));
      await created(quoteRequest(c.accounts.USD!.id, dest, 10_000_000));
    });

    it('400 EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED above the threshold for an account pending ownership verification, at any amount when UNVERIFIED', async () => {
      const c = await newCustomer(t, ['USD']);
      const dest = await usdExternal(t, c.id);
      await t.store.db.updateTable('external_accounts').set({ status: 'PENDING_OWNERSHIP_VERIFICATION' }).where('id', '=', dest).execute();
      await created(quoteRequest(c.accounts.USD!.id, dest, 99_999));
      const e = envelope(await quote(quoteRequest(c.accounts.USD!.id, dest, 100_000)), 400, 'EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED');
      expect(e.details).toMatchObject({ accountId: dest });
      await t.store.db.updateTable('external_accounts').set({ status: 'UNVERIFIED' }).where('id', '=', dest).execute();
      envelope(await quote(quoteRequest(c.accounts.USD!.id, dest, 100)), 400, 'EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED');
    });

    it('404 for unknown or another platform’s quotes; 400 naming the field for accounts in a create (createQuote declares no 404)', async () => {
      const c = await newCustomer(t, ['USD']);
      const dest = await usdExternal(t, c.id);
      const named = (res: Awaited<ReturnType<typeof quote>>) => (envelope(res, 400, 'INVALID_INPUT').details!.errors as Array<{ field: string }>).map((e) => e.field);
      expect(named(await quote(quoteRequest('InternalAccount:01890000-0000-7000-8000-000000000000', dest, 1_000)))).toEqual(['source.accountId']);
      expect(named(await quote(quoteRequest(c.accounts.USD!.id, 'ExternalAccount:01890000-0000-7000-8000-000000000000', 1_000)))).toEqual(['destination.accountId']);
      envelope(await t.call('GET', '/quotes/Quote:01890000-0000-7000-8000-000000000000'), 404, 'QUOTE_NOT_FOUND');
      envelope(await t.call('GET', '/quotes/nonsense'), 404, 'QUOTE_NOT_FOUND');
      const q = await created(quoteRequest(c.accounts.USD!.id, dest, 1_000));
      const other = await otherPlatformAuth(t);
      envelope(await t.call('GET', `/quotes/${encodeURIComponent(q.id)}`, undefined, other), 404, 'QUOTE_NOT_FOUND');
      expect(named(await quote(quoteRequest(c.accounts.USD!.id, dest, 1_000), other))).toEqual(['source.accountId']);
      envelope(await execute(q.id, other), 404, 'QUOTE_NOT_FOUND');
    });

    it('creating and executing need the TRANSACT permission', async () => {
      const tok = await t.call('POST', '/tokens', { name: 'read only', permissions: ['VIEW'] });
      expect(tok.statusCode, tok.body).toBe(201);
      const { clientId, clientSecret } = tok.json() as { clientId: string; clientSecret: string };
      const viewOnly = { authorization: basic(clientId, clientSecret) };
      const c = await newCustomer(t, ['USD']);
      const dest = await usdExternal(t, c.id);
      envelope(await quote(quoteRequest(c.accounts.USD!.id, dest, 1_000), viewOnly), 403, 'FORBIDDEN');
      const q = await created(quoteRequest(c.accounts.USD!.id, dest, 1_000));
      envelope(await execute(q.id, viewOnly), 403, 'FORBIDDEN');
      expect((await t.call('GET', `/quotes/${encodeURIComponent(q.id)}`, undefined, viewOnly)).statusCode).toBe(200);
    });
  });

  describe('execute', () => {
    it('holds the total, pays the platform fee, completes through the durable job a second later', async () => {
      await t.call('PATCH', '/config', { feeConfigs: [usdFee(100, 30)] });
      try {
        const c = await newCustomer(t, ['USD']);
        const src = c.accounts.USD!.id;
        const dest = await eurExternal(t, c.id);
        await fund(t, src, 100_000);
        const platformUsd = ((await t.call('GET', '/platform/internal-accounts?currency=USD')).json() as { data: Array<{ id: string }> }).data[0]!.id;
        const feeBefore = await balanceOf(t, platformUsd);
        const q = await created(quoteRequest(src, dest, 10_000, { description: 'Rent' }));

        const res = await execute(q.id, { 'idempotency-key': `exec-${q.id}` });
        expect(res.statusCode, res.body).toBe(200);
        const executed = res.json() as QuoteBody;
        expect(executed.status).toBe('PROCESSING');
        expect(executed.transactionId).toBe(q.transactionId);
        // The whole total is held (fee included) until the payment settles.
        expect(await balanceOf(t, src)).toEqual({ available: 90_000, total: 100_000 });
        expect((await balanceOf(t, platformUsd)).available).toBe(feeBefore.available);

        const tx1 = (await t.call('GET', `/transactions/${encodeURIComponent(q.transactionId)}`)).json() as TxBody;
        expect(tx1).toMatchObject({
          id: q.transactionId,
          status: 'PROCESSING',
          type: 'OUTGOING',
          direction: 'DEBIT',
          customerId: c.id,
          quoteId: q.id,
          source: { sourceType: 'ACCOUNT', accountId: src, currency: 'USD' },
          destination: { destinationType: 'ACCOUNT', accountId: dest, currency: 'EUR' },
          sentAmount: { amount: 10_000 },
          receivedAmount: { amount: q.totalReceivingAmount },
          exchangeRate: q.exchangeRate,
          fees: 130,
          platformFees: 130,
          paymentRail: 'SEPA_INSTANT',
          description: 'Rent',
        });
        expect(tx1.settledAt).toBeUndefined();

        // The same key answers the same response; a second execute without it is a conflict.
        const replay = await execute(q.id, { 'idempotency-key': `exec-${q.id}` });
        expect(replay.statusCode).toBe(200);
        expect(replay.headers['idempotent-replayed']).toBe('true');
        expect(replay.json()).toEqual(executed);
        const again = envelope(await execute(q.id), 409, 'INVALID_STATE_TRANSITION');
        expect(again.details).toMatchObject({ transactionId: q.transactionId });

        // Not yet due.
        t.clock.advance(999);
        await t.running.jobs.runDue();
        expect(((await t.call('GET', `/transactions/${encodeURIComponent(q.transactionId)}`)).json() as TxBody).status).toBe('PROCESSING');
        t.clock.advance(1);
        expect(await t.running.jobs.runDue()).toBeGreaterThanOrEqual(1);
        const tx2 = (await t.call('GET', `/transactions/${encodeURIComponent(q.transactionId)}`)).json() as TxBody;
        expect(tx2.status).toBe('COMPLETED');
        expect(tx2.settledAt).toBe(new Date(Date.parse(tx1.createdAt) + 1_000).toISOString());
        expect(await balanceOf(t, src)).toEqual({ available: 90_000, total: 90_000 });
        // The platform's fee lands when the payment settles.
        expect((await balanceOf(t, platformUsd)).available).toBe(feeBefore.available + 130);
        expect(((await t.call('GET', `/quotes/${encodeURIComponent(q.id)}`)).json() as QuoteBody).status).toBe('COMPLETED');

        const events = await listEvents(t.store.db, platformId, { resourceId: q.transactionId });
        // The quote's transaction was announced PENDING when the quote was created.
        expect(events.map((e) => e.type)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING', 'OUTGOING_PAYMENT.COMPLETED']);
        expect(events[2]!.payload.data).toEqual(tx2);
        const balanceEvents = await listEvents(t.store.db, platformId, { type: 'INTERNAL_ACCOUNT.BALANCE_UPDATED', resourceId: src });
        expect(balanceEvents.length).toBe(3); // fund, hold, capture
        await assertLedgerInvariants(t.store);
      } finally {
        await t.call('PATCH', '/config', { feeConfigs: [usdFee(0, 0)] });
      }
    });

    it('an expired quote: shown EXPIRED, execute 400 QUOTE_REQUEST_FAILED (reason QUOTE_EXPIRED), nothing moved', async () => {
      const c = await newCustomer(t, ['USD']);
      const dest = await usdExternal(t, c.id);
      await fund(t, c.accounts.USD!.id, 5_000);
      const q = await created(quoteRequest(c.accounts.USD!.id, dest, 1_000));
      t.clock.advance(5 * 60_000);
      expect(((await t.call('GET', `/quotes/${encodeURIComponent(q.id)}`)).json() as QuoteBody).status).toBe('PENDING');
      t.clock.advance(1);
      expect(((await t.call('GET', `/quotes/${encodeURIComponent(q.id)}`)).json() as QuoteBody).status).toBe('EXPIRED');
      const e = envelope(await execute(q.id), 400, 'QUOTE_REQUEST_FAILED');
      expect(e.details).toMatchObject({ reason: 'QUOTE_EXPIRED', expiresAt: q.expiresAt });
      expect(await balanceOf(t, c.accounts.USD!.id)).toEqual({ available: 5_000, total: 5_000 });
      // Its transaction expired with it: shown at once, stored (and announced) by the EXPIRE step.
      const shown = await t.call('GET', `/transactions/${encodeURIComponent(q.transactionId)}`);
      expect(shown.json()).toMatchObject({ id: q.transactionId, status: 'EXPIRED', type: 'OUTGOING', quoteId: q.id });
      await t.running.jobs.runDue();
      expect((await t.store.db.selectFrom('transactions').select('status').where('id', '=', q.transactionId).executeTakeFirstOrThrow()).status).toBe('EXPIRED');
      const types = (await listEvents(t.store.db, platformId, { resourceId: q.transactionId })).map((e) => e.type);
      expect(types).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.EXPIRED']);
      await assertLedgerInvariants(t.store);
    });

    it('not enough available balance: 400 INVALID_AMOUNT (reason INSUFFICIENT_BALANCE), nothing moved, the quote stays executable', async () => {
      const c = await newCustomer(t, ['USD']);
      const dest = await usdExternal(t, c.id);
      await fund(t, c.accounts.USD!.id, 999);
      const q = await created(quoteRequest(c.accounts.USD!.id, dest, 1_000));
      const e = envelope(await execute(q.id), 400, 'INVALID_AMOUNT');
      expect(e.details).toMatchObject({ reason: 'INSUFFICIENT_BALANCE', accountId: c.accounts.USD!.id, available: 999, required: 1_000, shortfall: 1 });
      expect(await balanceOf(t, c.accounts.USD!.id)).toEqual({ available: 999, total: 999 });
      expect((await t.call('GET', `/transactions/${encodeURIComponent(q.transactionId)}`)).json()).toMatchObject({ status: 'PENDING' });
      await fund(t, c.accounts.USD!.id, 1);
      expect((await execute(q.id)).statusCode).toBe(200);
      expect(await balanceOf(t, c.accounts.USD!.id)).toEqual({ available: 0, total: 1_000 });
      await assertLedgerInvariants(t.store);
    });

    it('immediatelyExecute creates and executes in one request; refused as a whole when the balance is short', async () => {
      const c = await newCustomer(t, ['USD']);
      const dest = await usdExternal(t, c.id);
      await fund(t, c.accounts.USD!.id, 3_000);
      const ok = await created(quoteRequest(c.accounts.USD!.id, dest, 2_000, { immediatelyExecute: true }));
      expect(ok.status).toBe('PROCESSING');
      expect(((await t.call('GET', `/transactions/${encodeURIComponent(ok.transactionId)}`)).json() as TxBody).status).toBe('PROCESSING');
      const short = await quote(quoteRequest(c.accounts.USD!.id, dest, 2_000, { immediatelyExecute: true }));
      envelope(short, 400, 'INVALID_AMOUNT');
      expect(await balanceOf(t, c.accounts.USD!.id)).toEqual({ available: 1_000, total: 3_000 });
      t.clock.advance(1_000);
      await t.running.jobs.runDue();
      expect(await balanceOf(t, c.accounts.USD!.id)).toEqual({ available: 1_000, total: 1_000 });
      await assertLedgerInvariants(t.store);
    });

    it('the sender is checked again at execution: 403 USER_NOT_READY once no longer APPROVED, nothing moved', async () => {
      const c = await newCustomer(t, ['USD']);
      const dest = await usdExternal(t, c.id);
      await fund(t, c.accounts.USD!.id, 5_000);
      const q = await created(quoteRequest(c.accounts.USD!.id, dest, 1_000));
      await t.store.db.updateTable('customers').set({ status: 'HOLD' }).where('id', '=', c.id).execute();
      envelope(await execute(q.id), 403, 'USER_NOT_READY');
      expect(await balanceOf(t, c.accounts.USD!.id)).toEqual({ available: 5_000, total: 5_000 });
      await t.store.db.updateTable('customers').set({ status: 'APPROVED' }).where('id', '=', c.id).execute();
      expect((await execute(q.id)).statusCode).toBe(200);
      await assertLedgerInvariants(t.store);
    });

    it('two executes racing for a balance that affords one: exactly one succeeds', async () => {
      const c = await newCustomer(t, ['USD']);
      const dest = await usdExternal(t, c.id);
      await fund(t, c.accounts.USD!.id, 10_000);
      const a = await created(quoteRequest(c.accounts.USD!.id, dest, 6_000));
      const b = await created(quoteRequest(c.accounts.USD!.id, dest, 6_000));
      const results = await Promise.all([execute(a.id), execute(b.id)]);
      const codes = results.map((r) => r.statusCode).sort();
      expect(codes, results.map((r) => r.body).join('\n')).toEqual([200, 400]);
      expect(results.find((r) => r.statusCode === 400)!.json()).toMatchObject({ code: 'INVALID_AMOUNT' });
      expect(await balanceOf(t, c.accounts.USD!.id)).toEqual({ available: 4_000, total: 10_000 });
      await assertLedgerInvariants(t.store);
    });
  });
});
