import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listEvents } from '../../src/kernel/events.js';
import { envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { balanceOf, eurExternal, fund, newCustomer, otherPlatformAuth, PERSON, quoteRequest, type QuoteBody, usdExternal } from '../money-helpers.js';

// The sandbox outcome tables of money movement, row by row, driven by the sandbox clock
// (POST /sandbox/clock/advance): quotes to external accounts (002–007), pulls and
// transfer-out payouts (002–005), UMA destinations; real-time funding with /sandbox/send;
// cancel and confirm; platform fee overrides; the deprecated transfers. The ledger
// invariants (including every transaction's money accounted for) are checked after each.

interface Tx {
  id: string;
  status: string;
  type: string;
  direction: string;
  failureReason?: string;
  refund?: { reference: string; initiatedAt: string; settledAt?: string; status: string; reason?: string };
  settledAt?: string;
  quoteId?: string;
  pendingReason?: string;
  source: Record<string, unknown> & { onChainTransaction?: { transactionHash: string; network: string } };
  destination: Record<string, unknown> & { onChainTransaction?: { transactionHash: string; network: string } };
  sentAmount: { amount: number; currency: { code: string } };
  receivedAmount?: { amount: number; currency: { code: string } };
  fees?: number;
  platformFees?: number;
  paymentRail?: string | null;
  reconciliationInstructions?: { reference?: string; transactionHash?: string };
  receiptDeliveryConfirmedAt?: string;
  paymentInstructions?: unknown[];
}

describe(`payment outcomes (${STORE})`, () => {
  let t: TestApp;
  let platformId: string;

  const advance = async (seconds: number) => {
    const res = await t.call('POST', '/sandbox/clock/advance', { seconds });
    expect(res.statusCode, res.body).toBe(200);
  };
  const tx = async (id: string): Promise<Tx> => {
    const res = await t.call('GET', `/transactions/${encodeURIComponent(id)}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as Tx;
  };
  const quoteOf = async (id: string): Promise<QuoteBody> => (await t.call('GET', `/quotes/${encodeURIComponent(id)}`)).json() as QuoteBody;
  const eventsOf = async (id: string) => (await listEvents(t.store.db, platformId, { resourceId: id })).map((e) => e.type);
  const pay = async (body: Record<string, unknown>): Promise<QuoteBody> => {
    const res = await t.call('POST', '/quotes', { ...body, immediatelyExecute: true });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as QuoteBody;
  };
  /** An approved customer with a funded USD account and a USD external account ending in `suffix`. */
  const payer = async (suffix: string, funds = 100_000) => {
    const c = await newCustomer(t, ['USD']);
    const src = c.accounts.USD!.id;
    if (funds > 0) await fund(t, src, funds);
    const ext = await usdExternal(t, c.id, `123456${suffix}`);
    return { customerId: c.id, src, ext };
  };

  beforeAll(async () => {
    t = await makeApp();
    platformId = (await t.store.db.selectFrom('platforms').select('id').where('is_default', '=', 1).executeTakeFirstOrThrow()).id;
  });
  afterAll(async () => t.close());

  describe('quote to an external account, by the account’s last 3 digits', () => {
    it('any other suffix: completes a second after execution', async () => {
      const p = await payer('789');
      const q = await pay(quoteRequest(p.src, p.ext, 10_000));
      expect(q.status).toBe('PROCESSING');
      expect((await tx(q.transactionId)).status).toBe('PROCESSING');
      expect(await balanceOf(t, p.src)).toEqual({ available: 90_000, total: 100_000 });
      await advance(1);
      const done = await tx(q.transactionId);
      expect(done).toMatchObject({ status: 'COMPLETED', type: 'OUTGOING', direction: 'DEBIT' });
      expect(done.failureReason).toBeUndefined();
      expect(done.refund).toBeUndefined();
      expect(done.settledAt).toBeDefined();
      expect((await quoteOf(q.id)).status).toBe('COMPLETED');
      expect(await balanceOf(t, p.src)).toEqual({ available: 90_000, total: 90_000 });
      expect(await eventsOf(q.transactionId)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING', 'OUTGOING_PAYMENT.COMPLETED']);
      await assertLedgerInvariants(t.store);
    });

    it.each([
      ['002', 'QUOTE_EXECUTION_FAILED', 'TRANSACTION_FAILED'],
      ['004', 'ACCOUNT_CANNOT_RECEIVE', 'TRANSACTION_FAILED'],
      ['006', 'QUOTE_EXECUTION_FAILED', 'USER_CANCELLATION'],
    ])('%s: fails after execution (%s) and the debited amount is refunded (%s)', async (suffix, reason, refundReason) => {
      const p = await payer(suffix);
      const q = await pay(quoteRequest(p.src, p.ext, 10_000));
      await advance(1);
      const failed = await tx(q.transactionId);
      expect(failed).toMatchObject({ status: 'FAILED', failureReason: reason, refund: { status: 'PENDING', reason: refundReason } });
      expect(failed.refund!.reference).toMatch(/^REFUND-/);
      expect((await quoteOf(q.id)).status).toBe('FAILED');
      expect(await balanceOf(t, p.src)).toEqual({ available: 90_000, total: 100_000 });
      await assertLedgerInvariants(t.store);
      await advance(1);
      const refunded = await tx(q.transactionId);
      expect(refunded.status).toBe('FAILED');
      expect(refunded.refund).toMatchObject({ status: 'COMPLETED', reason: refundReason, initiatedAt: failed.refund!.initiatedAt });
      expect(refunded.refund!.settledAt).toBeDefined();
      expect(await balanceOf(t, p.src)).toEqual({ available: 100_000, total: 100_000 });
      expect(await eventsOf(q.transactionId)).toEqual([
        'OUTGOING_PAYMENT.PENDING',
        'OUTGOING_PAYMENT.PROCESSING',
        'OUTGOING_PAYMENT.FAILED',
        'OUTGOING_PAYMENT.REFUND_PENDING',
        'OUTGOING_PAYMENT.REFUND_COMPLETED',
      ]);
      await assertLedgerInvariants(t.store);
    });

    it('003: long payment, still processing at 5:59, completes at about 6 minutes', async () => {
      const p = await payer('003');
      const q = await pay(quoteRequest(p.src, p.ext, 10_000));
      await advance(359);
      expect((await tx(q.transactionId)).status).toBe('PROCESSING');
      await advance(1);
      expect((await tx(q.transactionId)).status).toBe('COMPLETED');
      expect(await balanceOf(t, p.src)).toEqual({ available: 90_000, total: 90_000 });
      await assertLedgerInvariants(t.store);
    });

    it('005: completes, then the receiving bank returns it: FAILED with PAYOUT_RETURNED and the money back', async () => {
      await t.call('PATCH', '/config', { feeConfigs: [{ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', variableFeeBps: 100, fixedFee: { amount: 30, currency: 'USD' } }] });
      try {
        const c = await newCustomer(t, ['USD']);
        await fund(t, c.accounts.USD!.id, 100_000);
        const res = await t.call('POST', '/customers/external-accounts', {
          customerId: c.id,
          currency: 'EUR',
          accountInfo: { accountType: 'EUR_ACCOUNT', iban: 'DE89370400440532013005', swiftCode: 'COBADEFF', beneficiary: PERSON },
        });
        // A valid IBAN ending in 005 is not needed: the suffix is read from the identifier as given.
        const ext = res.statusCode === 201 ? (res.json() as { id: string }).id : await usdExternal(t, c.id, '123456005');
        const q = await pay(quoteRequest(c.accounts.USD!.id, ext, 10_000));
        await advance(1);
        const done = await tx(q.transactionId);
        expect(done.status).toBe('COMPLETED');
        await assertLedgerInvariants(t.store);
        await advance(60);
        const returned = await tx(q.transactionId);
        expect(returned).toMatchObject({ status: 'FAILED', failureReason: 'PAYOUT_RETURNED', refund: { status: 'PENDING', reason: 'TRANSACTION_FAILED' } });
        await advance(1);
        expect((await tx(q.transactionId)).refund?.status).toBe('COMPLETED');
        // The whole debit comes back, the platform's fee included.
        expect(await balanceOf(t, c.accounts.USD!.id)).toEqual({ available: 100_000, total: 100_000 });
        expect(await eventsOf(q.transactionId)).toEqual([
          'OUTGOING_PAYMENT.PENDING',
          'OUTGOING_PAYMENT.PROCESSING',
          'OUTGOING_PAYMENT.COMPLETED',
          'OUTGOING_PAYMENT.FAILED',
          'OUTGOING_PAYMENT.REFUND_PENDING',
          'OUTGOING_PAYMENT.REFUND_COMPLETED',
        ]);
        await assertLedgerInvariants(t.store);
      } finally {
        await t.call('PATCH', '/config', { feeConfigs: [] });
      }
    });

    it('007: the payout and its refund fail: the money stays held on the paying account, accounted for', async () => {
      const p = await payer('007');
      const q = await pay(quoteRequest(p.src, p.ext, 10_000));
      await advance(1);
      expect(await tx(q.transactionId)).toMatchObject({ status: 'FAILED', failureReason: 'QUOTE_EXECUTION_FAILED', refund: { status: 'PENDING' } });
      await advance(1);
      const after = await tx(q.transactionId);
      expect(after.refund).toMatchObject({ status: 'FAILED' });
      expect(after.refund!.settledAt).toBeUndefined();
      expect(await balanceOf(t, p.src)).toEqual({ available: 90_000, total: 100_000 });
      expect((await eventsOf(q.transactionId)).slice(-1)).toEqual(['OUTGOING_PAYMENT.REFUND_FAILED']);
      // Nothing further happens to it.
      await advance(3600);
      expect(await balanceOf(t, p.src)).toEqual({ available: 90_000, total: 100_000 });
      await assertLedgerInvariants(t.store);
    });

    it('the removed failure reasons never appear', async () => {
      const rows = await t.store.db.selectFrom('transactions').select('failure_reason').where('failure_reason', 'is not', null).execute();
      expect(rows.length).toBeGreaterThan(0);
      for (const r of rows) expect(['EXECUTION_FAILED_POST_DEBIT', 'SETTLEMENT_FAILED', 'TIMEOUT', 'MANUAL_REFUND']).not.toContain(r.failure_reason);
    });
  });

  describe('pulls (an external-account source) and transfer-out payouts, by the account’s last 3 digits', () => {
    const pull = async (suffix: string, via: 'quote' | 'transfer-in') => {
      const p = await payer(suffix, 0);
      if (via === 'quote') {
        const q = await pay(quoteRequest(p.ext, p.src, 25_000));
        return { ...p, txId: q.transactionId, quote: q };
      }
      const res = await t.call('POST', '/transfer-in', { source: { accountId: p.ext }, destination: { accountId: p.src }, amount: 25_000 });
      expect(res.statusCode, res.body).toBe(201);
      return { ...p, txId: (res.json() as Tx).id, quote: undefined };
    };

    it.each(['quote', 'transfer-in'] as const)('any other suffix (%s): PENDING, then COMPLETED and credited', async (via) => {
      const p = await pull('321', via);
      const pending = await tx(p.txId);
      expect(pending).toMatchObject({
        status: 'PENDING',
        type: 'INCOMING',
        direction: 'CREDIT',
        source: { sourceType: 'ACCOUNT', accountId: p.ext },
        destination: { destinationType: 'ACCOUNT', accountId: p.src },
        receivedAmount: { amount: 25_000 },
      });
      expect(await balanceOf(t, p.src)).toEqual({ available: 0, total: 25_000 });
      await advance(1);
      expect((await tx(p.txId)).status).toBe('COMPLETED');
      expect(await balanceOf(t, p.src)).toEqual({ available: 25_000, total: 25_000 });
      expect(await eventsOf(p.txId)).toEqual(['INCOMING_PAYMENT.PENDING', 'INCOMING_PAYMENT.COMPLETED']);
      await assertLedgerInvariants(t.store);
    });

    it.each([
      ['002', 'quote'],
      ['003', 'quote'],
      ['002', 'transfer-in'],
      ['003', 'transfer-in'],
    ] as const)('%s (%s): fails at once, nothing moves', async (suffix, via) => {
      const p = await pull(suffix, via);
      const failed = await tx(p.txId);
      expect(failed).toMatchObject({ status: 'FAILED', failureReason: 'COLLECTION_FAILED', type: 'INCOMING' });
      if (p.quote) expect(p.quote.status).toBe('FAILED');
      expect(await balanceOf(t, p.src)).toEqual({ available: 0, total: 0 });
      expect(await eventsOf(p.txId)).toEqual(['INCOMING_PAYMENT.FAILED']);
      await assertLedgerInvariants(t.store);
    });

    it('004: the bank rejects the pull after it started', async () => {
      const p = await pull('004', 'quote');
      expect((await tx(p.txId)).status).toBe('PENDING');
      await advance(1);
      expect(await tx(p.txId)).toMatchObject({ status: 'FAILED', failureReason: 'COLLECTION_FAILED' });
      expect(await balanceOf(t, p.src)).toEqual({ available: 0, total: 0 });
      await assertLedgerInvariants(t.store);
    });

    it('005: pending about 30 seconds, then fails', async () => {
      const p = await pull('005', 'transfer-in');
      await advance(29);
      expect((await tx(p.txId)).status).toBe('PENDING');
      expect(await balanceOf(t, p.src)).toEqual({ available: 0, total: 25_000 });
      await advance(1);
      expect(await tx(p.txId)).toMatchObject({ status: 'FAILED', failureReason: 'COLLECTION_FAILED' });
      expect(await balanceOf(t, p.src)).toEqual({ available: 0, total: 0 });
      await assertLedgerInvariants(t.store);
    });

    const payout = async (suffix: string) => {
      const p = await payer(suffix);
      const res = await t.call('POST', '/transfer-out', { source: { accountId: p.src }, destination: { accountId: p.ext, paymentRail: 'ACH' }, amount: 10_000, remittanceInformation: 'INV-9' });
      expect(res.statusCode, res.body).toBe(201);
      return { ...p, tx: res.json() as Tx };
    };

    it('transfer-out, any other suffix: an OUTGOING payout that completes', async () => {
      const p = await payout('444');
      // Answered as created (PENDING, as its first webhook); already PROCESSING when read.
      expect(p.tx).toMatchObject({ status: 'PENDING', type: 'OUTGOING', sentAmount: { amount: 10_000 }, receivedAmount: { amount: 10_000 }, paymentRail: 'ACH' });
      expect(p.tx.quoteId).toMatch(/^Quote:/);
      expect((await tx(p.tx.id)).status).toBe('PROCESSING');
      expect(await balanceOf(t, p.src)).toEqual({ available: 90_000, total: 100_000 });
      await advance(1);
      expect((await tx(p.tx.id)).status).toBe('COMPLETED');
      expect(await balanceOf(t, p.src)).toEqual({ available: 90_000, total: 90_000 });
      await assertLedgerInvariants(t.store);
    });

    it.each([
      ['002', 'QUOTE_EXECUTION_FAILED'],
      ['003', 'ACCOUNT_INVALID'],
    ])('transfer-out %s: fails at once (%s), nothing debited', async (suffix, reason) => {
      const p = await payout(suffix);
      expect(p.tx).toMatchObject({ status: 'FAILED', failureReason: reason });
      expect(p.tx.refund).toBeUndefined();
      expect(await balanceOf(t, p.src)).toEqual({ available: 100_000, total: 100_000 });
      expect(await eventsOf(p.tx.id)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.FAILED']);
      await assertLedgerInvariants(t.store);
    });

    it('transfer-out 004: the bank rejects it; refunded', async () => {
      const p = await payout('004');
      await advance(1);
      expect(await tx(p.tx.id)).toMatchObject({ status: 'FAILED', failureReason: 'ACCOUNT_CANNOT_RECEIVE', refund: { status: 'PENDING' } });
      await advance(1);
      expect(await balanceOf(t, p.src)).toEqual({ available: 100_000, total: 100_000 });
      await assertLedgerInvariants(t.store);
    });

    it('transfer-out 005: pending about 30 seconds, then fails and is refunded', async () => {
      const p = await payout('005');
      await advance(29);
      expect((await tx(p.tx.id)).status).toBe('PROCESSING');
      await advance(1);
      expect(await tx(p.tx.id)).toMatchObject({ status: 'FAILED', failureReason: 'QUOTE_EXECUTION_FAILED' });
      await advance(1);
      expect((await tx(p.tx.id)).refund?.status).toBe('COMPLETED');
      expect(await balanceOf(t, p.src)).toEqual({ available: 100_000, total: 100_000 });
      await assertLedgerInvariants(t.store);
    });

    it('transfers keep their shapes and need one currency; an external source pays only into an internal account', async () => {
      const c = await newCustomer(t, ['USD', 'EUR']);
      const eur = await eurExternal(t, c.id);
      const usd = await usdExternal(t, c.id);
      envelope(await t.call('POST', '/transfer-out', { source: { accountId: c.accounts.USD!.id }, destination: { accountId: eur }, amount: 100 }), 400, 'INVALID_CURRENCY');
      envelope(await t.call('POST', '/transfer-in', { source: { accountId: usd }, destination: { accountId: c.accounts.EUR!.id }, amount: 100 }), 400, 'INVALID_CURRENCY');
      const bad = envelope(await t.call('POST', '/transfer-in', { source: {}, destination: { accountId: 7 }, amount: -1 }), 400, 'INVALID_INPUT');
      expect((bad.details as { errors: Array<{ field: string }> }).errors.map((e) => e.field).sort()).toEqual(['amount', 'destination.accountId', 'source.accountId']);
      const ext2ext = envelope(await t.call('POST', '/quotes', quoteRequest(usd, eur, 1_000)), 400, 'INVALID_INPUT');
      expect(JSON.stringify(ext2ext.details)).toContain('destination.accountId');
      const doc = (await t.app.inject({ method: 'GET', url: '/2025-10-13/openapi.json' })).json() as { paths: Record<string, { post: { deprecated?: boolean } }> };
      expect(doc.paths['/transfer-in']!.post.deprecated).toBe(true);
      expect(doc.paths['/transfer-out']!.post.deprecated).toBe(true);
    });
  });

  describe('UMA destinations', () => {
    const umaQuote = async (local: string, currency?: string) => {
      const c = await newCustomer(t, ['USD']);
      await fund(t, c.accounts.USD!.id, 100_000);
      const address = `${local}@sandbox.uma.money`;
      const lookup = await t.call('GET', `/receiver/uma/${encodeURIComponent(address)}?customerId=${encodeURIComponent(c.id)}`);
      expect(lookup.statusCode, lookup.body).toBe(200);
      const lookupId = (lookup.json() as { lookupId: string }).lookupId;
      const body = {
        lookupId,
        source: { sourceType: 'ACCOUNT', accountId: c.accounts.USD!.id },
        destination: { destinationType: 'UMA_ADDRESS', umaAddress: address, ...(currency ? { currency } : {}) },
        lockedCurrencySide: 'SENDING',
        lockedCurrencyAmount: 10_000,
        immediatelyExecute: true,
      };
      return { c, address, lookupId, body };
    };

    it.each([
      ['$success.usd', 'USD'],
      ['$success.eur', 'EUR'],
      ['$success.mxn', 'MXN'],
    ])('%s succeeds in %s, reporting the inter-VASP settlement hash', async (local, currency) => {
      const u = await umaQuote(local);
      const res = await t.call('POST', '/quotes', u.body);
      expect(res.statusCode, res.body).toBe(201);
      const q = res.json() as QuoteBody & { destination: { umaAddress: string; currency: string } };
      expect(q.receivingCurrency.code).toBe(currency);
      expect(q.destination).toEqual({ destinationType: 'UMA_ADDRESS', umaAddress: u.address, currency });
      const started = await tx(q.transactionId);
      expect(started.destination).toEqual({ destinationType: 'UMA_ADDRESS', umaAddress: u.address, currency });
      expect(started.reconciliationInstructions?.reference).toMatch(/^UMA-/);
      expect(started.reconciliationInstructions?.transactionHash).toBeUndefined();
      await advance(1);
      const done = await tx(q.transactionId);
      expect(done.status).toBe('COMPLETED');
      expect(done.reconciliationInstructions?.transactionHash).toMatch(/^[1-9A-HJ-NP-Za-km-z]{40,}$/);
      expect(done.receivedAmount?.currency.code).toBe(currency);
      await assertLedgerInvariants(t.store);
    });

    it('$pending.long.usd stays pending (compliance review) for long, then completes', async () => {
      const u = await umaQuote('$pending.long.usd');
      const q = (await t.call('POST', '/quotes', u.body)).json() as QuoteBody;
      await advance(600);
      expect(await tx(q.transactionId)).toMatchObject({ status: 'PROCESSING', pendingReason: 'COMPLIANCE_REVIEW' });
      await advance(3000);
      const done = await tx(q.transactionId);
      expect(done.status).toBe('COMPLETED');
      expect(done.pendingReason).toBeUndefined();
      await assertLedgerInvariants(t.store);
    });

    it('$fail.compliance.usd fails COMPLIANCE_REJECTED and is refunded', async () => {
      const u = await umaQuote('$fail.compliance.usd');
      const q = (await t.call('POST', '/quotes', u.body)).json() as QuoteBody;
      await advance(1);
      expect(await tx(q.transactionId)).toMatchObject({ status: 'FAILED', failureReason: 'COMPLIANCE_REJECTED', refund: { status: 'PENDING' } });
      await advance(1);
      expect(await balanceOf(t, u.c.accounts.USD!.id)).toEqual({ available: 100_000, total: 100_000 });
      await assertLedgerInvariants(t.store);
    });

    it('$fail.payreq fails at the quote: 424 PAYREQ_REQUEST_FAILED, nothing written', async () => {
      const u = await umaQuote('$fail.payreq');
      const before = await t.store.db.selectFrom('quotes').select('id').execute();
      envelope(await t.call('POST', '/quotes', u.body), 424, 'PAYREQ_REQUEST_FAILED');
      expect(await t.store.db.selectFrom('quotes').select('id').execute()).toHaveLength(before.length);
    });

    it('needs the lookup: missing → 400, unknown → 400 naming lookupId (createQuote declares no 404), another address → 400; a currency the receiver lacks → 400', async () => {
      const u = await umaQuote('$success.eur');
      const { lookupId, ...noLookup } = u.body;
      void lookupId;
      const missing = envelope(await t.call('POST', '/quotes', noLookup), 400, 'INVALID_INPUT');
      expect(JSON.stringify(missing.details)).toContain('lookupId');
      expect(envelope(await t.call('POST', '/quotes', { ...u.body, lookupId: 'Lookup:01900000-0000-7000-8000-000000000000' }), 400, 'INVALID_INPUT').details?.errors).toEqual([expect.objectContaining({ field: 'lookupId' })]);
      envelope(await t.call('POST', '/quotes', { ...u.body, destination: { destinationType: 'UMA_ADDRESS', umaAddress: '$success.usd@sandbox.uma.money' } }), 400, 'INVALID_INPUT');
      envelope(await t.call('POST', '/quotes', { ...u.body, destination: { ...u.body.destination, currency: 'JPY' } }), 400, 'INVALID_CURRENCY');
      envelope(await t.call('POST', '/quotes', { ...u.body, destination: { destinationType: 'UMA_ADDRESS', umaAddress: 'not-an-address' } }), 400, 'INVALID_UMA_ADDRESS');
    });
  });

  describe('real-time funding', () => {
    const rtQuote = async (suffix = '789', extra: Record<string, unknown> = {}) => {
      const c = await newCustomer(t, ['USD']);
      const ext = await usdExternal(t, c.id, `123456${suffix}`);
      const res = await t.call('POST', '/quotes', {
        source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: c.id },
        destination: { destinationType: 'ACCOUNT', accountId: ext },
        lockedCurrencySide: 'SENDING',
        lockedCurrencyAmount: 5_000,
        ...extra,
      });
      expect(res.statusCode, res.body).toBe(201);
      return { c, ext, q: res.json() as QuoteBody & { paymentInstructions?: Array<{ accountOrWalletInfo: { accountType: string; reference: string } }> } };
    };
    const send = (body: unknown) => t.call('POST', '/sandbox/send', body);

    it('answers payment instructions; /sandbox/send funds it and the payment proceeds to its outcome', async () => {
      const { q } = await rtQuote();
      expect(q.source).toEqual({ sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: expect.any(String) });
      expect(q.paymentInstructions!.length).toBeGreaterThan(0);
      expect(q.paymentInstructions![0]!.accountOrWalletInfo.reference).toMatch(/^UMA-/);
      envelope(await t.call('POST', `/quotes/${encodeURIComponent(q.id)}/execute`), 400, 'QUOTE_REQUEST_FAILED');
      // Its transaction waits for the funds, with the instructions.
      const waiting = await tx(q.transactionId);
      expect(waiting).toMatchObject({ status: 'PENDING', type: 'OUTGOING', source: { sourceType: 'REALTIME_FUNDING', currency: 'USD' } });
      expect(waiting.paymentInstructions).toEqual(q.paymentInstructions);

      const res = await send({ quoteId: q.id, currencyCode: 'USD' });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ id: q.transactionId, status: 'PROCESSING', type: 'OUTGOING', source: { sourceType: 'REALTIME_FUNDING', currency: 'USD' }, sentAmount: { amount: 5_000 } });
      expect((await quoteOf(q.id)).status).toBe('PROCESSING');
      const again = envelope(await send({ quoteId: q.id, currencyCode: 'USD' }), 400, 'QUOTE_REQUEST_FAILED');
      expect(again.details).toMatchObject({ reason: 'NOT_AWAITING_FUNDS' });
      await advance(1);
      expect((await tx(q.transactionId)).status).toBe('COMPLETED');
      await assertLedgerInvariants(t.store);
    });

    it("a real-time quote's instructions list only the currency's instant rails and point to POST /sandbox/send", async () => {
      type Instr = { instructionsNotes: string; accountOrWalletInfo: Record<string, unknown> };
      const { c, ext, q } = await rtQuote();
      const instr = q.paymentInstructions as unknown as Instr[];
      expect(instr).toHaveLength(1);
      expect(instr[0]!.accountOrWalletInfo).toMatchObject({ accountType: 'USD_ACCOUNT', paymentRails: ['RTP', 'FEDNOW'] });
      expect(JSON.stringify(instr)).not.toMatch(/ACH|WIRE|\/fund/);
      const sendBody = JSON.stringify({ quoteId: q.id, currencyCode: 'USD' });
      expect(instr[0]!.instructionsNotes).toContain(`To simulate the payment, call POST /sandbox/send with ${sendBody}.`);
      // An internal account's own instructions keep every rail.
      const acct = await t.call('GET', `/customers/internal-accounts?customerId=${encodeURIComponent(c.id)}`);
      const accountRails = (acct.json() as { data: Array<{ fundingPaymentInstructions: Instr[] }> }).data[0]!.fundingPaymentInstructions[0]!.accountOrWalletInfo.paymentRails;
      expect(accountRails).toEqual(['ACH', 'WIRE', 'RTP', 'FEDNOW']);
      // The note's call works as written.
      const sent = await send(JSON.parse(/with (\{.*\})\.$/.exec(instr[0]!.instructionsNotes)![1]!));
      expect(sent.statusCode, sent.body).toBe(200);

      const rt = async (currency: string) =>
        t.call('POST', '/quotes', { source: { sourceType: 'REALTIME_FUNDING', currency, customerId: c.id }, destination: { destinationType: 'ACCOUNT', accountId: ext }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 500_000 });
      const eur = await rt('EUR');
      expect(eur.statusCode, eur.body).toBe(201);
      const eurInstr = (eur.json() as { paymentInstructions: Instr[] }).paymentInstructions;
      expect(eurInstr.map((i) => i.accountOrWalletInfo.paymentRails)).toEqual([['SEPA_INSTANT']]);
      const inr = await rt('INR');
      expect(inr.statusCode, inr.body).toBe(201);
      const inrInfo = (inr.json() as { paymentInstructions: Instr[] }).paymentInstructions[0]!.accountOrWalletInfo;
      expect(inrInfo.paymentRails).toEqual(['UPI']);
      expect(inrInfo.vpa).toMatch(/@psbx$/);
      expect(Object.keys(inrInfo).filter((k) => ['accountNumber', 'ifsc', 'bankName'].includes(k))).toEqual([]);
      // A currency whose sandbox coordinates have no instant rail cannot fund a quote just in time.
      for (const currency of ['CAD', 'JPY']) {
        const refused = envelope(await rt(currency), 400, 'INVALID_CURRENCY');
        expect(refused.details).toEqual({ field: 'source.currency', currency });
      }
      await advance(1);
      await assertLedgerInvariants(t.store);
    });

    it('a crypto deposit names its network (required for stablecoins) and reports its on-chain funding leg', async () => {
      const c = await newCustomer(t, ['USD']);
      const ext = await usdExternal(t, c.id);
      const body = (source: Record<string, unknown>) => ({
        source: { sourceType: 'REALTIME_FUNDING', currency: 'USDC', customerId: c.id, ...source },
        destination: { destinationType: 'ACCOUNT', accountId: ext },
        lockedCurrencySide: 'SENDING',
        lockedCurrencyAmount: 20_000_000,
      });
      const missing = envelope(await t.call('POST', '/quotes', body({})), 400, 'INVALID_INPUT');
      expect((missing.details as { errors: Array<{ field: string; constraint: { enum: string[] } }> }).errors[0]).toMatchObject({ field: 'source.cryptoNetwork' });
      envelope(await t.call('POST', '/quotes', body({ cryptoNetwork: 'BITCOIN' })), 400, 'INVALID_INPUT');
      const res = await t.call('POST', '/quotes', body({ cryptoNetwork: 'SOLANA' }));
      expect(res.statusCode, res.body).toBe(201);
      const q = res.json() as QuoteBody & { paymentInstructions: unknown[] };
      expect(q.source).toMatchObject({ sourceType: 'REALTIME_FUNDING', currency: 'USDC', cryptoNetwork: 'SOLANA' });
      expect(q.paymentInstructions.length).toBeGreaterThan(0);
      const sent = await send({ quoteId: q.id, currencyCode: 'USDC' });
      expect(sent.statusCode, sent.body).toBe(200);
      expect((sent.json() as Tx).source.onChainTransaction).toEqual({ network: 'SOLANA', transactionHash: expect.stringMatching(/^[1-9A-HJ-NP-Za-km-z]{40,}$/) });
      await advance(1);
      expect((await tx(q.transactionId)).status).toBe('COMPLETED');
      await assertLedgerInvariants(t.store);
    });

    it('fiat (instant rail): a failing destination refunds the sender outside, no internal account is touched', async () => {
      const { c, q } = await rtQuote('002');
      expect((await send({ quoteId: q.id, currencyCode: 'USD', currencyAmount: 5_000 })).statusCode).toBe(200);
      await advance(2);
      expect(await tx(q.transactionId)).toMatchObject({ status: 'FAILED', refund: { status: 'COMPLETED' } });
      expect(await balanceOf(t, c.accounts.USD!.id)).toEqual({ available: 0, total: 0 });
      expect(await listEvents(t.store.db, platformId, { resourceId: c.accounts.USD!.id })).toEqual([]);
      await assertLedgerInvariants(t.store);
    });

    /** A USDC real-time quote of `customerId` (the platform's own without one) to a USD account ending in `suffix`. */
    const usdcQuote = async (suffix: string, customerId?: string) => {
      const owner = customerId ?? (await newCustomer(t, ['USD'])).id;
      const ext = await usdExternal(t, owner, `987654${suffix}`);
      const res = await t.call('POST', '/quotes', {
        source: { sourceType: 'REALTIME_FUNDING', currency: 'USDC', cryptoNetwork: 'SOLANA', ...(customerId !== undefined ? { customerId } : {}) },
        destination: { destinationType: 'ACCOUNT', accountId: ext },
        lockedCurrencySide: 'SENDING',
        lockedCurrencyAmount: 20_000_000,
      });
      expect(res.statusCode, res.body).toBe(201);
      return res.json() as QuoteBody;
    };
    const accountsOf = async (customerId: string): Promise<Array<{ id: string; balance: { amount: number; currency: { code: string } }; totalBalance: { amount: number } }>> =>
      ((await t.call('GET', `/customers/internal-accounts?customerId=${encodeURIComponent(customerId)}`)).json() as { data: [] }).data;
    const balanceEvents = async (accountId: string) =>
      (await listEvents(t.store.db, platformId, { resourceId: accountId })).map((e) => {
        const d = e.payload.data as { balance: { amount: number }; totalBalance: { amount: number } };
        return [e.type, d.balance.amount, d.totalBalance.amount];
      });

    it('crypto: the deposit lands in the customer’s USDC internal account (opened for it, INTERNAL_ACCOUNT.BALANCE_UPDATED), is held, and a failing payout refunds it there, not to the wallet', async () => {
      const c = await newCustomer(t, ['USD']);
      expect((await accountsOf(c.id)).map((a) => a.balance.currency.code)).toEqual(['USD']);
      const q = await usdcQuote('002', c.id);
      const sent = await send({ quoteId: q.id, currencyCode: 'USDC' });
      expect(sent.statusCode, sent.body).toBe(200);
      expect(sent.json()).toMatchObject({ status: 'PROCESSING', source: { sourceType: 'REALTIME_FUNDING', currency: 'USDC', customerId: c.id } });
      const usdc = (await accountsOf(c.id)).find((a) => a.balance.currency.code === 'USDC')!;
      expect(usdc).toBeDefined();
      // Deposit confirmed (balance up), then held for the payment (balance back, total keeps it).
      expect(await balanceEvents(usdc.id)).toEqual([
        ['INTERNAL_ACCOUNT.BALANCE_UPDATED', 20_000_000, 20_000_000],
        ['INTERNAL_ACCOUNT.BALANCE_UPDATED', 0, 20_000_000],
      ]);
      expect(await balanceOf(t, usdc.id)).toEqual({ available: 0, total: 20_000_000 });
      await assertLedgerInvariants(t.store);
      await advance(1);
      expect(await tx(q.transactionId)).toMatchObject({ status: 'FAILED', failureReason: 'QUOTE_EXECUTION_FAILED', refund: { status: 'PENDING' } });
      await advance(1);
      expect(await tx(q.transactionId)).toMatchObject({ status: 'FAILED', refund: { status: 'COMPLETED', reason: 'TRANSACTION_FAILED' } });
      // Refunded into the customer's USDC balance: spendable with a new quote or withdrawable.
      expect(await balanceOf(t, usdc.id)).toEqual({ available: 20_000_000, total: 20_000_000 });
      expect((await balanceEvents(usdc.id)).at(-1)).toEqual(['INTERNAL_ACCOUNT.BALANCE_UPDATED', 20_000_000, 20_000_000]);
      expect(await eventsOf(q.transactionId)).toEqual([
        'OUTGOING_PAYMENT.PENDING',
        'OUTGOING_PAYMENT.PROCESSING',
        'OUTGOING_PAYMENT.FAILED',
        'OUTGOING_PAYMENT.REFUND_PENDING',
        'OUTGOING_PAYMENT.REFUND_COMPLETED',
      ]);
      const entries = await t.store.db.selectFrom('ledger_entries').select('kind').where('reference_id', '=', q.transactionId).orderBy('id').execute();
      expect(entries.map((e) => e.kind)).toEqual(['DEPOSIT', 'HOLD', 'REFUND']);
      await assertLedgerInvariants(t.store);
    });

    it('crypto: a payout that completes leaves the USDC account where it was (deposit in, payment out); an existing account and its balance are reused', async () => {
      const c = await newCustomer(t, ['USD', 'USDC']);
      await fund(t, c.accounts.USDC!.id, 1_000_000);
      const q = await usdcQuote('789', c.id);
      expect((await send({ quoteId: q.id, currencyCode: 'USDC' })).statusCode).toBe(200);
      expect(await balanceOf(t, c.accounts.USDC!.id)).toEqual({ available: 1_000_000, total: 21_000_000 });
      await advance(1);
      expect((await tx(q.transactionId)).status).toBe('COMPLETED');
      expect(await balanceOf(t, c.accounts.USDC!.id)).toEqual({ available: 1_000_000, total: 1_000_000 });
      expect((await accountsOf(c.id)).filter((a) => a.balance.currency.code === 'USDC')).toHaveLength(1);
      expect((await balanceEvents(c.accounts.USDC!.id)).slice(-3)).toEqual([
        ['INTERNAL_ACCOUNT.BALANCE_UPDATED', 21_000_000, 21_000_000],
        ['INTERNAL_ACCOUNT.BALANCE_UPDATED', 1_000_000, 21_000_000],
        ['INTERNAL_ACCOUNT.BALANCE_UPDATED', 1_000_000, 1_000_000],
      ]);
      await assertLedgerInvariants(t.store);
    });

    it('crypto, another amount than the quote’s: the payment fails at once (FUNDING_AMOUNT_MISMATCH) and what arrived stays in the USDC account', async () => {
      const c = await newCustomer(t, ['USD']);
      const q = await usdcQuote('789', c.id);
      const res = await send({ quoteId: q.id, currencyCode: 'USDC', currencyAmount: 19_000_000 });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ status: 'FAILED', failureReason: 'FUNDING_AMOUNT_MISMATCH' });
      expect((res.json() as Tx).refund).toBeUndefined();
      const usdc = (await accountsOf(c.id)).find((a) => a.balance.currency.code === 'USDC')!;
      expect(await balanceOf(t, usdc.id)).toEqual({ available: 19_000_000, total: 19_000_000 });
      expect(await balanceEvents(usdc.id)).toEqual([['INTERNAL_ACCOUNT.BALANCE_UPDATED', 19_000_000, 19_000_000]]);
      expect(await eventsOf(q.transactionId)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.FAILED']);
      await assertLedgerInvariants(t.store);
    });

    it('crypto, a platform quote (no customerId): the refund lands in the platform’s own USDC account', async () => {
      const c = await newCustomer(t, ['USD']);
      const ext = await usdExternal(t, c.id, '555555004');
      const res = await t.call('POST', '/quotes', {
        source: { sourceType: 'REALTIME_FUNDING', currency: 'USDC', cryptoNetwork: 'SOLANA' },
        destination: { destinationType: 'ACCOUNT', accountId: ext },
        lockedCurrencySide: 'SENDING',
        lockedCurrencyAmount: 3_000_000,
      });
      expect(res.statusCode, res.body).toBe(201);
      const q = res.json() as QuoteBody;
      const platformUsdc = async () => {
        const list = (await t.call('GET', '/platform/internal-accounts')).json() as { data: Array<{ id: string; balance: { amount: number; currency: { code: string } } }> };
        return list.data.find((a) => a.balance.currency.code === 'USDC');
      };
      const before = (await platformUsdc())?.balance.amount ?? 0;
      expect((await send({ quoteId: q.id, currencyCode: 'USDC' })).statusCode).toBe(200);
      await advance(2);
      expect(await tx(q.transactionId)).toMatchObject({ status: 'FAILED', failureReason: 'ACCOUNT_CANNOT_RECEIVE', refund: { status: 'COMPLETED' } });
      const account = await platformUsdc();
      expect(account!.balance.amount).toBe(before + 3_000_000);
      expect((await accountsOf(c.id)).map((a) => a.balance.currency.code)).toEqual(['USD']);
      await assertLedgerInvariants(t.store);
    });

    it('errors: wrong currency 400 INVALID_CURRENCY, not a real-time quote 400, another amount fails FUNDING_AMOUNT_MISMATCH, expired 400, unknown 404, immediatelyExecute 400', async () => {
      const { q } = await rtQuote();
      envelope(await send({ quoteId: q.id, currencyCode: 'EUR' }), 400, 'INVALID_CURRENCY');
      const mismatch = await send({ quoteId: q.id, currencyCode: 'USD', currencyAmount: 4_999 });
      expect(mismatch.statusCode, mismatch.body).toBe(200);
      expect(mismatch.json()).toMatchObject({ status: 'FAILED', failureReason: 'FUNDING_AMOUNT_MISMATCH' });
      expect((await quoteOf(q.id)).status).toBe('FAILED');

      const p = await payer('789');
      const plain = (await t.call('POST', '/quotes', quoteRequest(p.src, p.ext, 1_000))).json() as QuoteBody;
      expect(envelope(await send({ quoteId: plain.id, currencyCode: 'USD' }), 400, 'QUOTE_REQUEST_FAILED').details).toMatchObject({ reason: 'NOT_REALTIME_FUNDING' });

      const late = (await rtQuote()).q;
      await advance(301);
      expect(envelope(await send({ quoteId: late.id, currencyCode: 'USD' }), 400, 'QUOTE_REQUEST_FAILED').details).toMatchObject({ reason: 'QUOTE_EXPIRED' });
      // Never funded: the quote and its transaction expired, announced once.
      expect((await quoteOf(late.id)).status).toBe('EXPIRED');
      expect((await tx(late.transactionId)).status).toBe('EXPIRED');
      expect(await eventsOf(late.transactionId)).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.EXPIRED']);
      envelope(await send({ quoteId: 'Quote:01900000-0000-7000-8000-000000000000', currencyCode: 'USD' }), 404, 'QUOTE_NOT_FOUND');
      const invalid = envelope(await send({}), 400, 'INVALID_INPUT');
      expect((invalid.details as { errors: Array<{ field: string }> }).errors.map((e) => e.field).sort()).toEqual(['currencyCode', 'quoteId']);
      const c = await newCustomer(t, ['USD']);
      const ext = await usdExternal(t, c.id);
      const imm = await t.call('POST', '/quotes', {
        source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: c.id },
        destination: { destinationType: 'ACCOUNT', accountId: ext },
        lockedCurrencySide: 'SENDING',
        lockedCurrencyAmount: 5_000,
        immediatelyExecute: true,
      });
      envelope(imm, 400, 'INVALID_INPUT');
      await assertLedgerInvariants(t.store);
    });
  });

  describe('cancel and confirm', () => {
    it('cancels an in-flight ACH transfer: FAILED, refund USER_CANCELLATION completed, money back; then 409', async () => {
      const p = await payer('789');
      const res = await t.call('POST', '/transfer-out', { source: { accountId: p.src }, destination: { accountId: p.ext, paymentRail: 'ACH' }, amount: 10_000 });
      const id = (res.json() as Tx).id;
      const cancelled = await t.call('POST', `/transactions/${encodeURIComponent(id)}/cancel`, { reason: 'REQUESTED_AFTER_HOURS' });
      expect(cancelled.statusCode, cancelled.body).toBe(200);
      expect(cancelled.json()).toMatchObject({ status: 'FAILED', refund: { status: 'COMPLETED', reason: 'USER_CANCELLATION' } });
      expect(await balanceOf(t, p.src)).toEqual({ available: 100_000, total: 100_000 });
      envelope(await t.call('POST', `/transactions/${encodeURIComponent(id)}/cancel`), 409, 'TRANSACTION_NOT_CANCELLABLE');
      await advance(2);
      expect((await tx(id)).status).toBe('FAILED');
      await assertLedgerInvariants(t.store);
    });

    it('409 TRANSACTION_NOT_CANCELLABLE once settled, or off the bank rails; 404 when unknown', async () => {
      const p = await payer('789');
      const done = await pay(quoteRequest(p.src, p.ext, 1_000));
      await advance(1);
      envelope(await t.call('POST', `/transactions/${encodeURIComponent(done.transactionId)}/cancel`), 409, 'TRANSACTION_NOT_CANCELLABLE');
      const instant = await pay(quoteRequest(p.src, p.ext, 1_000, { destination: { destinationType: 'ACCOUNT', accountId: p.ext, paymentRail: 'RTP' } }));
      envelope(await t.call('POST', `/transactions/${encodeURIComponent(instant.transactionId)}/cancel`), 409, 'TRANSACTION_NOT_CANCELLABLE');
      envelope(await t.call('POST', '/transactions/Transaction:01900000-0000-7000-8000-000000000000/cancel'), 404, 'TRANSACTION_NOT_FOUND');
      await advance(1);
    });

    it('confirm records receipt delivery (now by default, or the given time; again moves it); 404 unknown, another platform 404', async () => {
      const p = await payer('789');
      const q = await pay(quoteRequest(p.src, p.ext, 1_000));
      const first = await t.call('POST', `/transactions/${encodeURIComponent(q.transactionId)}/confirm`);
      expect(first.statusCode, first.body).toBe(200);
      expect((first.json() as Tx).receiptDeliveryConfirmedAt).toBeDefined();
      const second = await t.call('POST', `/transactions/${encodeURIComponent(q.transactionId)}/confirm`, { receiptDeliveryConfirmedAt: '2025-08-15T14:31:00Z' });
      expect((second.json() as Tx).receiptDeliveryConfirmedAt).toBe('2025-08-15T14:31:00.000Z');
      expect((await tx(q.transactionId)).receiptDeliveryConfirmedAt).toBe('2025-08-15T14:31:00.000Z');
      envelope(await t.call('POST', `/transactions/${encodeURIComponent(q.transactionId)}/confirm`, { receiptDeliveryConfirmedAt: 'yesterday' }), 400, 'INVALID_INPUT');
      envelope(await t.call('POST', '/transactions/Transaction:01900000-0000-7000-8000-000000000000/confirm'), 404, 'TRANSACTION_NOT_FOUND');
      const other = await otherPlatformAuth(t);
      envelope(await t.call('POST', `/transactions/${encodeURIComponent(q.transactionId)}/confirm`, undefined, other), 404, 'TRANSACTION_NOT_FOUND');
      envelope(await t.call('POST', `/transactions/${encodeURIComponent(q.transactionId)}/cancel`, undefined, other), 404, 'TRANSACTION_NOT_FOUND');
      await advance(1);
    });
  });

  describe('platform fee override, internal transfers, wallets', () => {
    it('platformFeeOverride replaces the configured fee (USD source); the fee lands on the platform account at settlement', async () => {
      await t.call('PATCH', '/config', { feeConfigs: [{ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', variableFeeBps: 100, fixedFee: { amount: 30, currency: 'USD' } }] });
      try {
        const c = await newCustomer(t, ['USD']);
        await fund(t, c.accounts.USD!.id, 100_000);
        const eur = await eurExternal(t, c.id);
        const override = { platformFixedFee: { amount: 50, currency: 'USD' }, platformVariableFeeBps: 30 };
        const q = await pay(quoteRequest(c.accounts.USD!.id, eur, 10_000, { platformFeeOverride: override }));
        expect(q.feesIncluded).toBe(80); // 50 + 0.30 % of 10,000
        expect(q.platformFeesIncluded).toBe(80);
        expect(q.rateDetails).toMatchObject({ gridApiFixedFee: 50, gridApiVariableFeeRate: 0.003, gridApiVariableFeeAmount: 30 });
        const platformUsd = ((await t.call('GET', '/platform/internal-accounts?currency=USD')).json() as { data: Array<{ id: string }> }).data[0]!.id;
        const before = await balanceOf(t, platformUsd);
        await advance(1);
        const done = await tx(q.transactionId);
        expect(done).toMatchObject({ status: 'COMPLETED', fees: 80, platformFees: 80 });
        expect((await balanceOf(t, platformUsd)).available).toBe(before.available + 80);
        // Zero override: no fee at all.
        const free = await pay(quoteRequest(c.accounts.USD!.id, eur, 10_000, { platformFeeOverride: { platformFixedFee: { amount: 0, currency: 'USD' }, platformVariableFeeBps: 0 } }));
        expect(free.feesIncluded).toBe(0);
        envelope(await t.call('POST', '/quotes', quoteRequest(c.accounts.USD!.id, eur, 10_000, { platformFeeOverride: { ...override, platformFixedFee: { amount: 50, currency: 'EUR' } } })), 400, 'INVALID_INPUT');
        const bad = envelope(await t.call('POST', '/quotes', quoteRequest(c.accounts.USD!.id, eur, 10_000, { platformFeeOverride: { platformVariableFeeBps: 10_001 } })), 400, 'INVALID_INPUT');
        expect((bad.details as { errors: Array<{ field: string }> }).errors.map((e) => e.field).sort()).toEqual(['platformFeeOverride.platformFixedFee', 'platformFeeOverride.platformVariableFeeBps']);
        const e = await newCustomer(t, ['EUR']);
        const usd = await usdExternal(t, e.id);
        const eurOverride = envelope(await t.call('POST', '/quotes', quoteRequest(e.accounts.EUR!.id, usd, 10_000, { platformFeeOverride: override })), 400, 'INVALID_INPUT');
        expect((eurOverride.details as { errors: Array<{ field: string }> }).errors.map((x) => x.field)).toEqual(['platformFeeOverride']);
        await advance(1);
        await assertLedgerInvariants(t.store);
      } finally {
        await t.call('PATCH', '/config', { feeConfigs: [] });
      }
    });

    it('an internal account to another internal account: converted and credited at settlement', async () => {
      const a = await newCustomer(t, ['USD']);
      const b = await newCustomer(t, ['EUR']);
      await fund(t, a.accounts.USD!.id, 50_000);
      const q = await pay(quoteRequest(a.accounts.USD!.id, b.accounts.EUR!.id, 10_000));
      expect(q.receivingCurrency.code).toBe('EUR');
      await advance(1);
      expect((await tx(q.transactionId)).status).toBe('COMPLETED');
      expect(await balanceOf(t, a.accounts.USD!.id)).toEqual({ available: 40_000, total: 40_000 });
      expect(await balanceOf(t, b.accounts.EUR!.id)).toEqual({ available: q.totalReceivingAmount, total: q.totalReceivingAmount });
      envelope(await t.call('POST', '/quotes', quoteRequest(a.accounts.USD!.id, a.accounts.USD!.id, 1_000)), 400, 'INVALID_INPUT');
      await assertLedgerInvariants(t.store);
    });

    it('a payout to a wallet reports its on-chain transaction on the destination', async () => {
      const c = await newCustomer(t, ['USDC']);
      await fund(t, c.accounts.USDC!.id, 50_000_000);
      const res = await t.call('POST', '/customers/external-accounts', {
        customerId: c.id,
        currency: 'USDC',
        accountInfo: { accountType: 'SOLANA_WALLET', address: '4Nd1m6Qkq7RfKuE5vQ9qP9Tn6H94Ueqb4xXHzsAbd8Wg' },
      });
      expect(res.statusCode, res.body).toBe(201);
      const wallet = (res.json() as { id: string }).id;
      const q = await pay(quoteRequest(c.accounts.USDC!.id, wallet, 10_000_000));
      expect((await tx(q.transactionId)).destination.onChainTransaction).toBeUndefined();
      await advance(1);
      const done = await tx(q.transactionId);
      expect(done.status).toBe('COMPLETED');
      expect(done.destination.onChainTransaction).toEqual({ network: 'SOLANA', transactionHash: expect.stringMatching(/^[1-9A-HJ-NP-Za-km-z]{40,}$/) });
      expect(done.reconciliationInstructions).toBeUndefined();
      await assertLedgerInvariants(t.store);
    });
  });
});
