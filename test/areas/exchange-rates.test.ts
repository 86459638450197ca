import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { envelope, makeApp, STORE, type TestApp } from '../helpers.js';

// GET /exchange-rates (black box, over HTTP): the sandbox market through the platform's
// 5-minute cache, with its USD cross-currency fee.

interface Currency {
  code: string;
  name: string;
  symbol: string;
  decimals: number;
}
interface ExchangeRate {
  sourceCurrency: Currency;
  sendingAmount: number;
  minSendingAmount: number;
  maxSendingAmount: number;
  destinationCurrency: Currency;
  destinationPaymentRail: string;
  receivingAmount: number;
  exchangeRate: number;
  fees: { fixed: number; total: number };
  updatedAt: string;
}
interface FieldError {
  field: string;
  constraint?: Record<string, unknown>;
  message: string;
}

const MIN = 60_000;

const usdFee = (variableFeeBps: number, amount: number) => ({
  feeType: 'CROSS_CURRENCY_TRANSACTION',
  sourceCurrency: 'USD',
  variableFeeBps,
  fixedFee: { amount, currency: 'USD' },
});

describe(`exchange rates (${STORE})`, () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await makeApp();
  });
  afterEach(async () => t.close());

  const now = () => new Date(t.clock.nowMs()).toISOString();

  async function rates(query = ''): Promise<ExchangeRate[]> {
    const res = await t.call('GET', `/exchange-rates${query}`);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json() as { data: ExchangeRate[] };
    expect(Object.keys(body)).toEqual(['data']);
    return body.data;
  }

  async function one(query: string): Promise<ExchangeRate> {
    const data = await rates(query);
    expect(data).toHaveLength(1);
    return data[0]!;
  }

  it('answers the reference shape for one corridor (USD → INR, default sending amount)', async () => {
    const r = await one('?sourceCurrency=USD&destinationCurrency=INR');
    expect(r).toEqual({
      sourceCurrency: { code: 'USD', name: 'United States Dollar', symbol: '$', decimals: 2 },
      sendingAmount: 10_000,
      // ₹100 / 83.58 → 120 cents; ₹8,000,000 / 83.58 → 9,571,667 cents.
      minSendingAmount: 120,
      maxSendingAmount: 9_571_667,
      destinationCurrency: { code: 'INR', name: 'Indian Rupee', symbol: '₹', decimals: 2 },
      destinationPaymentRail: 'UPI',
      // 100 USD × 84 × 0.995 = ₹8,358.
      receivingAmount: 835_800,
      exchangeRate: expect.any(Number),
      fees: { fixed: 0, total: 0 },
      updatedAt: now(),
    });
    // Sending units per receiving unit, as the reference's example (USD per INR).
    expect(r.exchangeRate).toBeCloseTo(1 / 83.58, 12);
  });

  it('lists every corridor from each of the platform\'s currencies by default, never a currency to itself', async () => {
    const data = await rates();
    const config = (await t.call('GET', '/config')).json() as { supportedCurrencies: Array<{ currencyCode: string }> };
    const sources = config.supportedCurrencies.map((c) => c.currencyCode);
    expect([...new Set(data.map((r) => r.sourceCurrency.code))]).toEqual(sources);
    const pairs = data.map((r) => `${r.sourceCurrency.code}>${r.destinationCurrency.code}`);
    expect(new Set(pairs).size).toBe(pairs.length);
    for (const r of data) {
      expect(r.sourceCurrency.code).not.toBe(r.destinationCurrency.code);
      expect(r.exchangeRate).toBeGreaterThan(0);
      expect(Number.isSafeInteger(r.receivingAmount) && r.receivingAmount >= 0).toBe(true);
      expect(r.minSendingAmount).toBeLessThanOrEqual(r.maxSendingAmount);
      expect(r.updatedAt).toBe(now());
    }
    const fromUsd = data.filter((r) => r.sourceCurrency.code === 'USD').map((r) => r.destinationCurrency.code);
    expect(fromUsd).toEqual(expect.arrayContaining(['EUR', 'GBP', 'MXN', 'BRL', 'INR', 'JPY', 'NGN', 'PHP', 'KES', 'XOF', 'VND', 'CNY']));
    // Crypto corridors have no PaymentRail in the reference, so they are not listed.
    expect(fromUsd).not.toContain('BTC');
    expect(data.find((r) => r.destinationCurrency.code === 'EUR')?.destinationPaymentRail).toBe('SEPA_INSTANT');
    expect(data.find((r) => r.destinationCurrency.code === 'MXN')?.destinationPaymentRail).toBe('SPEI');
    expect(data.find((r) => r.destinationCurrency.code === 'BRL')?.destinationPaymentRail).toBe('PIX');
  });

  it('filters by destination currencies in the order asked (repeated parameter), all sources', async () => {
    const data = await rates('?sourceCurrency=EUR&destinationCurrency=GBP&destinationCurrency=JPY');
    expect(data.map((r) => [r.sourceCurrency.code, r.destinationCurrency.code])).toEqual([['EUR', 'GBP'], ['EUR', 'JPY']]);
    const all = await rates('?destinationCurrency=PHP');
    expect(all.every((r) => r.destinationCurrency.code === 'PHP')).toBe(true);
    expect(all.length).toBeGreaterThan(3);
  });

  it('converts sendingAmount across decimals exactly: USD → JPY (0), BTC (8) → USD, JPY → USD', async () => {
    // 123.45 USD × 149.25 = 18,424.91 yen, rounded half to even; the rate from those amounts.
    const jpy = await one('?sourceCurrency=USD&destinationCurrency=JPY&sendingAmount=12345');
    expect(jpy).toMatchObject({ sendingAmount: 12_345, receivingAmount: 18_425, destinationCurrency: { decimals: 0 }, destinationPaymentRail: 'SWIFT' });
    expect(jpy.exchangeRate).toBeCloseTo(123.45 / 18_425, 15);
    // 150 yen minimum: 150 / 1.4925 = 100.5 cents → 101.
    expect(jpy.minSendingAmount).toBe(101);
    // 10,000 sats × 0.064675 cents = 646.75 cents → 647.
    const btc = await one('?sourceCurrency=BTC&destinationCurrency=USD&sendingAmount=10000');
    expect(btc).toMatchObject({ sourceCurrency: { code: 'BTC', decimals: 8 }, receivingAmount: 647, fees: { fixed: 0, total: 0 } });
    expect(btc.exchangeRate).toBeCloseTo(0.0001 / 6.47, 15);
    // 150 yen → 99.5 cents: a tie, to the even 100.
    const back = await one('?sourceCurrency=JPY&destinationCurrency=USD&sendingAmount=150');
    expect(back.receivingAmount).toBe(100);
    expect(back.exchangeRate).toBe(150);
  });

  it('shows a currency to itself only when asked, at 1', async () => {
    const r = await one('?sourceCurrency=USD&destinationCurrency=USD&sendingAmount=777');
    expect(r).toMatchObject({ receivingAmount: 777, exchangeRate: 1, fees: { fixed: 0, total: 0 }, minSendingAmount: 100, maxSendingAmount: 10_000_000, destinationPaymentRail: 'ACH' });
  });

  it('clamps the sending maximum to what a JSON integer carries for 18-decimal ETH', async () => {
    const r = await one('?sourceCurrency=ETH&destinationCurrency=INR&sendingAmount=0');
    expect(r.maxSendingAmount).toBe(Number.MAX_SAFE_INTEGER);
    expect(r.minSendingAmount).toBeGreaterThan(0);
    expect(r.receivingAmount).toBe(0);
  });

  it('includes the platform fee after PATCH /config feeConfigs (USD sources only)', async () => {
    const before = await one('?sourceCurrency=USD&destinationCurrency=EUR');
    expect(before).toMatchObject({ receivingAmount: 9_154, fees: { fixed: 0, total: 0 } });
    t.clock.advance(1_000);
    const patched = await t.call('PATCH', '/config', { feeConfigs: [usdFee(100, 30)] });
    expect(patched.statusCode, patched.body).toBe(200);
    const after = await one('?sourceCurrency=USD&destinationCurrency=EUR');
    // Fee 30 + 1 % of 9,970 = 130; (10,000 − 30) × 0.99 × 0.9154 = 9,035.17 → 9,035.
    expect(after).toMatchObject({ sendingAmount: 10_000, receivingAmount: 9_035, fees: { fixed: 30, total: 130 } });
    // The fee is part of the cached value: a new fee refreshes the entry at once.
    expect(after.updatedAt).toBe(now());
    expect(after.updatedAt).not.toBe(before.updatedAt);
    // The minimum covers the fee: €1 needs (s − 30) × 0.99 × 0.9154 ≥ 99.5, s − 30 = 110: 140 cents.
    expect(after.minSendingAmount).toBe(140);
    expect(after.minSendingAmount).toBeGreaterThan(before.minSendingAmount);
    expect(after.maxSendingAmount).toBeGreaterThan(before.maxSendingAmount);
    const small = await one('?sourceCurrency=USD&destinationCurrency=EUR&sendingAmount=149');
    expect(small.fees).toEqual({ fixed: 30, total: 31 });
    const tiny = await one('?sourceCurrency=USD&destinationCurrency=EUR&sendingAmount=20');
    expect(tiny).toMatchObject({ receivingAmount: 0, fees: { fixed: 30, total: 30 } });
    // Other sources carry no fee; nor does USD to itself.
    expect((await one('?sourceCurrency=EUR&destinationCurrency=USD')).fees).toEqual({ fixed: 0, total: 0 });
    expect((await one('?sourceCurrency=USD&destinationCurrency=USD')).fees).toEqual({ fixed: 0, total: 0 });
    // Removing the fee (0 and 0) shows at once too.
    await t.call('PATCH', '/config', { feeConfigs: [usdFee(0, 0)] });
    expect((await one('?sourceCurrency=USD&destinationCurrency=EUR')).fees).toEqual({ fixed: 0, total: 0 });
  });

  it('caches each rate for 5 minutes of the platform clock', async () => {
    const first = await one('?sourceCurrency=USD&destinationCurrency=MXN');
    const t0 = now();
    expect(first.updatedAt).toBe(t0);
    t.clock.advance(4 * MIN);
    const cached = await one('?sourceCurrency=USD&destinationCurrency=MXN');
    expect(cached).toEqual(first);
    // Another pair is cached on its own.
    expect((await one('?sourceCurrency=USD&destinationCurrency=BRL')).updatedAt).toBe(now());
    t.clock.advance(MIN + 1_000);
    const refreshed = await one('?sourceCurrency=USD&destinationCurrency=MXN');
    expect(refreshed.updatedAt).toBe(now());
    expect(refreshed.updatedAt > t0).toBe(true);
    // The sandbox market is deterministic: only the time moved.
    expect({ ...refreshed, updatedAt: t0 }).toEqual(first);
  });

  it('reports every invalid parameter in one 400 INVALID_INPUT', async () => {
    const e = envelope(await t.call('GET', '/exchange-rates?sourceCurrency=XXX&destinationCurrency=EUR&destinationCurrency=ZZZ&sendingAmount=-5'), 400, 'INVALID_INPUT');
    const errors = e.details?.errors as FieldError[];
    expect(errors.map((x) => x.field).sort()).toEqual(['destinationCurrency.1', 'sendingAmount', 'sourceCurrency']);
    expect(errors.find((x) => x.field === 'sourceCurrency')?.constraint).toEqual({ format: 'iso4217' });
    envelope(await t.call('GET', '/exchange-rates?sendingAmount=1.5'), 400, 'INVALID_INPUT');
    envelope(await t.call('GET', '/exchange-rates?sendingAmount=abc'), 400, 'INVALID_INPUT');
  });

  it('answers 400 INVALID_CURRENCY for a known currency without a payout corridor', async () => {
    const e = envelope(await t.call('GET', '/exchange-rates?destinationCurrency=EUR&destinationCurrency=BTC'), 400, 'INVALID_CURRENCY');
    const errors = e.details?.errors as FieldError[];
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ field: 'destinationCurrency.1', constraint: { enum: expect.arrayContaining(['USD', 'EUR', 'INR']) } });
  });

  it('answers 400 AMOUNT_OUT_OF_RANGE when the receiving amount cannot be carried', async () => {
    const e = envelope(await t.call('GET', '/exchange-rates?sourceCurrency=BTC&destinationCurrency=IDR&sendingAmount=9000000000000000'), 400, 'AMOUNT_OUT_OF_RANGE');
    expect(e.details).toMatchObject({ field: 'sendingAmount', destinationCurrencies: ['IDR'] });
  });

  it('needs Basic credentials', async () => {
    envelope(await t.call('GET', '/exchange-rates', undefined, { authorization: '' }), 401, 'UNAUTHORIZED');
    envelope(await t.call('GET', '/exchange-rates', undefined, { authorization: 'Bearer some-agent-token' }), 401, 'UNAUTHORIZED');
  });
});
