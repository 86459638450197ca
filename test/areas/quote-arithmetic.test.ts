import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { eurExternal, fund, newCustomer, otherPlatformAuth, type QuoteBody, quoteRequest, type TxBody, usdExternal } from '../money-helpers.js';

// Quote arithmetic: every quote (and the transaction it makes) follows the real service's
// formulas, checked against an implementation written here (exact BigInt, half to even),
// on a grid of pairs, amounts, lock sides and fees:
//   fee       = fixed + round((sending − fixed) × v)
//   receiving = round((sending − fixed) × (1 − v) × fx)          (locked sending amount)
//   sending   = round(receiving / (fx × (1 − v)) + fixed)         (locked receiving amount)
//   exchangeRate = ((sending − fees) / 10^ds) / (receiving / 10^dr)   (to 1e-9 relative)
// fx is the sandbox customer rate (USD mid rates, 50 bps spread) in minor units, v = bps / 10,000.
// Also: GET /exchange-rates and the lookups' sending bounds under the same formulas, and
// quotes from a lookup priced in another currency (priced afresh, not refused).

// ---- The independent implementation --------------------------------------------------------

interface Q {
  n: bigint;
  d: bigint;
}
/** Units of the currency per 1 USD (the sandbox's documented mid rates). */
const MID: Record<string, Q> = {
  USD: { n: 1n, d: 1n },
  EUR: { n: 92n, d: 100n },
  MXN: { n: 185n, d: 10n },
  BRL: { n: 54n, d: 10n },
  USDC: { n: 1n, d: 1n },
  BTC: { n: 1n, d: 65_000n },
};
const DECIMALS: Record<string, number> = { USD: 2, EUR: 2, MXN: 2, BRL: 2, USDC: 6, BTC: 8 };
/** The receiving corridors' bounds (smallest unit). */
const CORRIDOR: Record<string, [bigint, bigint]> = {
  USD: [100n, 10_000_000n],
  EUR: [100n, 10_000_000n],
  MXN: [2_000n, 200_000_000n],
  BRL: [500n, 50_000_000n],
  USDC: [1_000_000n, 100_000_000_000n],
  BTC: [1_000n, 200_000_000n],
};
/** About US$30,000 in each currency, odd digits (within every corridor and transaction limit). */
const LARGE: Record<string, bigint> = { USD: 2_987_653n, EUR: 2_765_431n, MXN: 55_555_557n, BRL: 14_321_099n, USDC: 29_876_543_211n, BTC: 45_678_901n };
const CURRENCIES = Object.keys(MID);

/** Receiving minor units per sending minor unit: mid(to) / mid(from), less 50 bps between two currencies. */
function fxMinor(from: string, to: string): Q {
  const spread = from === to ? { n: 1n, d: 1n } : { n: 9_950n, d: 10_000n };
  return {
    n: MID[to]!.n * MID[from]!.d * spread.n * 10n ** BigInt(DECIMALS[to]!),
    d: MID[to]!.d * MID[from]!.n * spread.d * 10n ** BigInt(DECIMALS[from]!),
  };
}

/** n / d rounded half to even (n ≥ 0, d > 0). */
function roundHalfEven(n: bigint, d: bigint): bigint {
  const q = n / d;
  const twice = (n % d) * 2n;
  return twice > d || (twice === d && q % 2n === 1n) ? q + 1n : q;
}

interface Fee {
  fixed: bigint;
  bps: bigint;
}
const NO_FEE: Fee = { fixed: 0n, bps: 0n };
const pos = (x: bigint) => (x > 0n ? x : 0n);

function feeParts(s: bigint, f: Fee): { variable: bigint; total: bigint } {
  const variable = roundHalfEven(pos(s - f.fixed) * f.bps, 10_000n);
  return { variable, total: f.fixed + variable };
}
function receivingFor(s: bigint, fx: Q, f: Fee): bigint {
  return roundHalfEven(pos(s - f.fixed) * (10_000n - f.bps) * fx.n, 10_000n * fx.d);
}
function sendingFor(r: bigint, fx: Q, f: Fee): bigint {
  return roundHalfEven(r * 10_000n * fx.d, fx.n * (10_000n - f.bps)) + f.fixed;
}
/** The smallest sending amount whose receiving amount is ≥ target (walks from the formula's inverse). */
function minSending(target: bigint, fx: Q, f: Fee): bigint {
  let s = sendingFor(target, fx, f);
  while (s > 0n && receivingFor(s - 1n, fx, f) >= target) s -= 1n;
  while (receivingFor(s, fx, f) < target) s += 1n;
  return s;
}
/** The largest sending amount whose receiving amount is ≤ target. */
function maxSending(target: bigint, fx: Q, f: Fee): bigint {
  let s = sendingFor(target, fx, f);
  while (receivingFor(s + 1n, fx, f) <= target) s += 1n;
  while (receivingFor(s, fx, f) > target) s -= 1n;
  return s;
}
/** What a client computes from a quote's amounts: sending units per receiving unit, net of fees. */
function clientRate(sending: number, fees: number, receiving: number, from: string, to: string): number {
  return (sending - fees) / 10 ** DECIMALS[from]! / (receiving / 10 ** DECIMALS[to]!);
}
const closeRel = (a: number, b: number) => Math.abs(a / b - 1) <= 1e-9;

// ---- The grid ----------------------------------------------------------------------------------

type Mode = 'none' | 'config' | 'override';
const CONFIG_FEE: Fee = { fixed: 10n, bps: 50n }; // 0.5 %: (s − 10) = 100 → 0.5, a tie (half even: 0)
const OVERRIDE_FEE: Fee = { fixed: 5n, bps: 250n }; // 2.5 %: (s − 5) = 20k + 10 → k + 0.5, ties
const usdFeeConfig = (f: Fee) => ({ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', variableFeeBps: Number(f.bps), fixedFee: { amount: Number(f.fixed), currency: 'USD' } });

interface Case {
  from: string;
  to: string;
  mode: Mode;
  side: 'SENDING' | 'RECEIVING';
  amount: bigint;
}

/** The fee that applies: USD sources only, none between a currency and itself. */
function feeOf(c: { from: string; to: string; mode: Mode }): Fee {
  if (c.mode === 'none' || c.from !== 'USD' || c.from === c.to) return NO_FEE;
  return c.mode === 'config' ? CONFIG_FEE : OVERRIDE_FEE;
}

function casesFor(from: string, to: string, mode: Mode): Case[] {
  const fx = fxMinor(from, to);
  const f = feeOf({ from, to, mode });
  const [min] = CORRIDOR[to]!;
  const s0 = minSending(min, fx, f);
  const sending = [1n, s0 - 1n, s0, s0 + 1n, s0 + 7n, 3n * s0 + 1n, LARGE[from]!];
  // Ties of the fee's variable part when a fee applies (half to even differs from half up there).
  if (f.bps > 0n) {
    const ties = [];
    for (let s = s0; ties.length < 2 && s < s0 + 20_000n; s += 1n) if (((s - f.fixed) * f.bps) % 10_000n === 5_000n) ties.push(s);
    sending.push(...ties);
  }
  const receiving = [1n, min - 1n, min, min + 1n, min + 7n, 3n * min + 1n, LARGE[to]!];
  const seen = new Set<string>();
  const out: Case[] = [];
  for (const [side, list] of [['SENDING', sending], ['RECEIVING', receiving]] as const) {
    for (const amount of list) {
      if (amount <= 0n || seen.has(`${side}${amount}`)) continue;
      seen.add(`${side}${amount}`);
      out.push({ from, to, mode, side, amount });
    }
  }
  return out;
}

describe(`quote arithmetic: the real service's formulas (${STORE})`, () => {
  let t: TestApp;
  let payer: { id: string; accounts: Record<string, { id: string }> };
  let payee: { id: string; accounts: Record<string, { id: string }> };

  beforeAll(async () => {
    t = await makeApp();
    payer = await newCustomer(t, CURRENCIES);
    payee = await newCustomer(t, CURRENCIES);
  });
  afterAll(async () => t?.close());

  const requestOf = (c: Case) =>
    quoteRequest(payer.accounts[c.from]!.id, payee.accounts[c.to]!.id, Number(c.amount), {
      lockedCurrencySide: c.side,
      ...(c.mode === 'override' ? { platformFeeOverride: { platformFixedFee: { amount: Number(OVERRIDE_FEE.fixed), currency: 'USD' }, platformVariableFeeBps: Number(OVERRIDE_FEE.bps) } } : {}),
    });

  /** Check one answer against the formulas; the quotes created (201) are returned with their case. */
  function check(c: Case, res: LightMyRequestResponse): QuoteBody | null {
    const tag = `${c.from}→${c.to} ${c.mode} ${c.side} ${c.amount}`;
    const fx = fxMinor(c.from, c.to);
    const f = feeOf(c);
    const [min, max] = CORRIDOR[c.to]!;
    const sending = c.side === 'SENDING' ? c.amount : sendingFor(c.amount, fx, f);
    const receiving = c.side === 'SENDING' ? receivingFor(c.amount, fx, f) : c.amount;
    const fees = feeParts(sending, f);
    if (receiving < min || receiving > max) {
      const e = envelope(res, 400, 'AMOUNT_OUT_OF_RANGE');
      expect(e.details, tag).toMatchObject({ minReceivingAmount: Number(min), maxReceivingAmount: Number(max), minSendingAmount: Number(minSending(min, fx, f)), maxSendingAmount: Number(maxSending(max, fx, f)) });
      if (c.side === 'SENDING') expect(e.details!.receivingAmount, tag).toBe(Number(receiving));
      return null;
    }
    expect(res.statusCode, `${tag}: ${res.body}`).toBe(201);
    const q = res.json() as QuoteBody;
    expect([q.totalSendingAmount, q.totalReceivingAmount, q.feesIncluded, q.platformFeesIncluded], tag).toEqual([Number(sending), Number(receiving), Number(fees.total), Number(fees.total)]);
    expect(closeRel(q.exchangeRate, clientRate(q.totalSendingAmount, q.feesIncluded, q.totalReceivingAmount, c.from, c.to)), `${tag}: exchangeRate ${q.exchangeRate}`).toBe(true);
    expect(q.rateDetails, tag).toMatchObject({
      counterpartyFixedFee: 0,
      gridApiFixedFee: Number(f.fixed),
      gridApiVariableFeeRate: Number(f.bps) / 10_000,
      gridApiMultiplier: Number(10_000n - f.bps) / 10_000,
      gridApiVariableFeeAmount: Number(fees.variable),
    });
    const major = (Number(fx.n) / Number(fx.d)) * 10 ** (DECIMALS[c.from]! - DECIMALS[c.to]!);
    expect(closeRel(q.rateDetails.counterpartyMultiplier!, major), `${tag}: counterpartyMultiplier`).toBe(true);
    return q;
  }

  /** The quote's transaction shows the quote's amounts. */
  function checkTransaction(q: QuoteBody, tx: TxBody, tag: string): void {
    expect([tx.sentAmount.amount, tx.receivedAmount?.amount, tx.fees, tx.platformFees, tx.exchangeRate], tag).toEqual([q.totalSendingAmount, q.totalReceivingAmount, q.feesIncluded, q.platformFeesIncluded, q.exchangeRate]);
  }

  async function runGrid(cases: Case[]): Promise<Array<{ c: Case; q: QuoteBody }>> {
    const made: Array<{ c: Case; q: QuoteBody }> = [];
    const BATCH = 12;
    for (let i = 0; i < cases.length; i += BATCH) {
      const batch = cases.slice(i, i + BATCH);
      const answers = await Promise.all(batch.map((c) => t.call('POST', '/quotes', requestOf(c))));
      batch.forEach((c, j) => {
        const q = check(c, answers[j]!);
        if (q) made.push({ c, q });
      });
    }
    for (let i = 0; i < made.length; i += BATCH) {
      const batch = made.slice(i, i + BATCH);
      const txs = await Promise.all(batch.map(({ q }) => t.call('GET', `/transactions/${encodeURIComponent(q.transactionId)}`)));
      batch.forEach(({ c, q }, j) => checkTransaction(q, txs[j]!.json() as TxBody, `${c.from}→${c.to} ${c.mode} ${c.side} ${c.amount}`));
    }
    return made;
  }

  it('without a fee: every pair of USD, EUR, MXN, BRL, USDC, BTC, both sides locked, small and large amounts', async () => {
    const cases = CURRENCIES.flatMap((from) => CURRENCIES.flatMap((to) => casesFor(from, to, 'none')));
    const made = await runGrid(cases);
    expect(made.length).toBeGreaterThan(cases.length / 2);
    // Both sides produced quotes in every pair.
    for (const from of CURRENCIES) for (const to of CURRENCIES) for (const side of ['SENDING', 'RECEIVING']) {
      expect(made.some(({ c }) => c.from === from && c.to === to && c.side === side), `${from}→${to} ${side}`).toBe(true);
    }
  }, 60_000);

  it('with a standing feeConfig (PATCH /config), then a per-quote platformFeeOverride over it (USD sources)', async () => {
    const patched = await t.call('PATCH', '/config', { feeConfigs: [usdFeeConfig(CONFIG_FEE)] });
    expect(patched.statusCode, patched.body).toBe(200);
    const withConfig = await runGrid(CURRENCIES.flatMap((to) => casesFor('USD', to, 'config')));
    const withOverride = await runGrid(CURRENCIES.flatMap((to) => casesFor('USD', to, 'override')));
    // The fee was charged, and a tie of the variable part went to the even neighbour.
    expect(withConfig.some(({ q }) => q.platformFeesIncluded > 10)).toBe(true);
    expect(withOverride.some(({ q }) => q.platformFeesIncluded > 5)).toBe(true);
    const ties = [...withConfig, ...withOverride].filter(({ c, q }) => {
      const f = feeOf(c);
      return f.bps > 0n && ((BigInt(q.totalSendingAmount) - f.fixed) * f.bps) % 10_000n === 5_000n;
    });
    expect(ties.length).toBeGreaterThan(0);
    for (const { c, q } of ties) expect(q.rateDetails.gridApiVariableFeeAmount! % 2, `${c.to} ${q.totalSendingAmount}`).toBe(0);
  }, 60_000);

  it('executing a quote: its transaction keeps the quote\'s amounts, fees and exchangeRate', async () => {
    const c2 = await newCustomer(t, CURRENCIES);
    const funding: Record<string, number> = { USD: 1_000_000, EUR: 1_000_000, MXN: 20_000_000, BRL: 5_000_000, USDC: 1_000_000_000, BTC: 10_000_000 };
    for (const [code, amount] of Object.entries(funding)) await fund(t, c2.accounts[code]!.id, amount);
    const picks: Case[] = [
      { from: 'USD', to: 'EUR', mode: 'config', side: 'SENDING', amount: 12_345n },
      { from: 'USD', to: 'BTC', mode: 'override', side: 'RECEIVING', amount: 123_457n },
      { from: 'USD', to: 'MXN', mode: 'config', side: 'RECEIVING', amount: 250_001n },
      { from: 'EUR', to: 'BRL', mode: 'none', side: 'SENDING', amount: 9_999n },
      { from: 'MXN', to: 'USDC', mode: 'none', side: 'RECEIVING', amount: 7_654_321n },
      { from: 'BTC', to: 'USD', mode: 'none', side: 'SENDING', amount: 33_333n },
      { from: 'USDC', to: 'EUR', mode: 'none', side: 'RECEIVING', amount: 4_321n },
    ];
    for (const c of picks) {
      const tag = `${c.from}→${c.to} ${c.mode} ${c.side} ${c.amount}`;
      const res = await t.call('POST', '/quotes', { ...requestOf(c), source: { sourceType: 'ACCOUNT', accountId: c2.accounts[c.from]!.id } });
      const q = check(c, res)!;
      expect(q, tag).not.toBeNull();
      const executed = await t.call('POST', `/quotes/${encodeURIComponent(q.id)}/execute`);
      expect(executed.statusCode, `${tag}: ${executed.body}`).toBe(200);
      expect((executed.json() as QuoteBody).exchangeRate).toBe(q.exchangeRate);
      const tx = (await t.call('GET', `/transactions/${encodeURIComponent(q.transactionId)}`)).json() as TxBody;
      expect(tx.status, tag).not.toBe('PENDING');
      checkTransaction(q, tx, tag);
    }
  });

  it('GET /exchange-rates and the lookup\'s sending bounds follow the same formulas', async () => {
    // The feeConfig of the test above is still in place (USD sources).
    for (const [from, f] of [['USD', CONFIG_FEE], ['EUR', NO_FEE], ['MXN', NO_FEE]] as const) {
      for (const sendingAmount of [101, 10_015, 33_333, 2_987_653]) {
        const res = await t.call('GET', `/exchange-rates?sourceCurrency=${from}&destinationCurrency=EUR&destinationCurrency=MXN&destinationCurrency=BRL&sendingAmount=${sendingAmount}`);
        expect(res.statusCode, res.body).toBe(200);
        for (const row of (res.json() as { data: Array<{ destinationCurrency: { code: string }; receivingAmount: number; exchangeRate: number; fees: { fixed: number; total: number }; minSendingAmount: number; maxSendingAmount: number }> }).data) {
          const to = row.destinationCurrency.code;
          const fee = from === to ? NO_FEE : f;
          const fx = fxMinor(from, to);
          const tag = `${from}→${to} ${sendingAmount}`;
          const receiving = receivingFor(BigInt(sendingAmount), fx, fee);
          const fees = feeParts(BigInt(sendingAmount), fee).total;
          expect([row.receivingAmount, row.fees.total, row.fees.fixed], tag).toEqual([Number(receiving), Number(fees), Number(fee.fixed)]);
          expect(closeRel(row.exchangeRate, clientRate(sendingAmount, Number(fees), Number(receiving), from, to)), `${tag}: ${row.exchangeRate}`).toBe(true);
          const [min, max] = CORRIDOR[to]!;
          expect([row.minSendingAmount, row.maxSendingAmount], tag).toEqual([Number(minSending(min, fx, fee)), Number(maxSending(max, fx, fee))]);
        }
      }
    }
    const dest = await eurExternal(t, payer.id);
    const lookup = await t.call('GET', `/receiver/external-account/${encodeURIComponent(dest)}?customerId=${encodeURIComponent(payer.id)}&sendingCurrency=USD`);
    expect(lookup.statusCode, lookup.body).toBe(200);
    const eur = (lookup.json() as { supportedCurrencies: Array<{ currency: { code: string }; min: number; max: number; minSendingAmount: number; maxSendingAmount: number }> }).supportedCurrencies.find((s) => s.currency.code === 'EUR')!;
    const fx = fxMinor('USD', 'EUR');
    expect([eur.minSendingAmount, eur.maxSendingAmount]).toEqual([Number(minSending(BigInt(eur.min), fx, CONFIG_FEE)), Number(maxSending(BigInt(eur.max), fx, CONFIG_FEE))]);
    // The bound is a quote's: its minimum delivers the minimum, one less does not.
    const at = check({ from: 'USD', to: 'EUR', mode: 'config', side: 'SENDING', amount: BigInt(eur.minSendingAmount) }, await t.call('POST', '/quotes', quoteRequest(payer.accounts.USD!.id, dest, eur.minSendingAmount)));
    expect(at?.totalReceivingAmount).toBeGreaterThanOrEqual(eur.min);
    envelope(await t.call('POST', '/quotes', quoteRequest(payer.accounts.USD!.id, dest, eur.minSendingAmount - 1)), 400, 'AMOUNT_OUT_OF_RANGE');
    const reset = await t.call('PATCH', '/config', { feeConfigs: [usdFeeConfig(NO_FEE)] });
    expect(reset.statusCode, reset.body).toBe(200);
  });
});

describe(`quotes from a lookup priced in another currency (${STORE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp();
  });
  afterAll(async () => t?.close());

  it('an external-account lookup priced from USD serves a quote from EUR, priced afresh from EUR', async () => {
    const c = await newCustomer(t, ['USD', 'EUR', 'MXN']);
    const dest = await eurExternal(t, c.id);
    const lookup = await t.call('GET', `/receiver/external-account/${encodeURIComponent(dest)}?customerId=${encodeURIComponent(c.id)}&sendingCurrency=USD`);
    expect(lookup.statusCode, lookup.body).toBe(200);
    const l = lookup.json() as { lookupId: string; sendingCurrency: { code: string } };
    expect(l.sendingCurrency.code).toBe('USD');
    // From MXN to EUR with the USD lookup: priced from MXN, as without a lookup.
    const withLookup = await t.call('POST', '/quotes', quoteRequest(c.accounts.MXN!.id, dest, 250_000, { lookupId: l.lookupId }));
    expect(withLookup.statusCode, withLookup.body).toBe(201);
    const without = await t.call('POST', '/quotes', quoteRequest(c.accounts.MXN!.id, dest, 250_000));
    const a = withLookup.json() as QuoteBody;
    const b = without.json() as QuoteBody;
    expect(a.sendingCurrency.code).toBe('MXN');
    expect([a.totalSendingAmount, a.totalReceivingAmount, a.exchangeRate, a.feesIncluded]).toEqual([b.totalSendingAmount, b.totalReceivingAmount, b.exchangeRate, b.feesIncluded]);
    expect(a.totalReceivingAmount).toBe(Number(receivingFor(250_000n, fxMinor('MXN', 'EUR'), NO_FEE)));
    // Locked on the receiving side too.
    const r = await t.call('POST', '/quotes', quoteRequest(c.accounts.MXN!.id, dest, 5_000, { lookupId: l.lookupId, lockedCurrencySide: 'RECEIVING' }));
    expect(r.statusCode, r.body).toBe(201);
    expect((r.json() as QuoteBody).totalSendingAmount).toBe(Number(sendingFor(5_000n, fxMinor('MXN', 'EUR'), NO_FEE)));
  });

  it('a UMA lookup priced from USD serves a quote from EUR', async () => {
    const c = await newCustomer(t, ['USD', 'EUR']);
    await fund(t, c.accounts.EUR!.id, 100_000);
    const address = '$success.usd@sandbox.uma.money';
    const lookup = await t.call('GET', `/receiver/uma/${encodeURIComponent(address)}?customerId=${encodeURIComponent(c.id)}&sendingCurrency=USD`);
    expect(lookup.statusCode, lookup.body).toBe(200);
    const l = lookup.json() as { lookupId: string; sendingCurrency: { code: string } };
    expect(l.sendingCurrency.code).toBe('USD');
    const res = await t.call('POST', '/quotes', {
      lookupId: l.lookupId,
      source: { sourceType: 'ACCOUNT', accountId: c.accounts.EUR!.id },
      destination: { destinationType: 'UMA_ADDRESS', umaAddress: address, currency: 'USD' },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: 10_000,
    });
    expect(res.statusCode, res.body).toBe(201);
    const q = res.json() as QuoteBody;
    expect([q.sendingCurrency.code, q.receivingCurrency.code, q.totalSendingAmount, q.totalReceivingAmount]).toEqual(['EUR', 'USD', 10_000, Number(receivingFor(10_000n, fxMinor('EUR', 'USD'), NO_FEE))]);
  });

  it('still refused: a lookup of another receiver or of another platform (400 on lookupId)', async () => {
    const c = await newCustomer(t, ['USD', 'EUR']);
    const a = await eurExternal(t, c.id);
    const b = await usdExternal(t, c.id);
    const lookup = await t.call('GET', `/receiver/external-account/${encodeURIComponent(a)}?customerId=${encodeURIComponent(c.id)}&sendingCurrency=USD`);
    const lookupId = (lookup.json() as { lookupId: string }).lookupId;
    const other = envelope(await t.call('POST', '/quotes', quoteRequest(c.accounts.EUR!.id, b, 10_000, { lookupId })), 400, 'INVALID_INPUT');
    expect(JSON.stringify(other.details)).toContain('another receiver');
    expect(JSON.stringify(other.details)).not.toContain('priced from');

    const auth = await otherPlatformAuth(t);
    const oc = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Olga Other', currencies: ['USD'], endUserTermsConsent: { acceptedAt: '2025-10-01T00:00:00Z', ipAddress: '203.0.113.9', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' } }, auth);
    expect(oc.statusCode, oc.body).toBe(201);
    const ocId = (oc.json() as { id: string }).id;
    await t.store.db.updateTable('customers').set({ status: 'APPROVED' }).where('id', '=', ocId).execute();
    const accounts = (await t.call('GET', `/customers/internal-accounts?customerId=${encodeURIComponent(ocId)}`, undefined, auth)).json() as { data: Array<{ id: string }> };
    const ext = await t.call('POST', '/customers/external-accounts', { customerId: ocId, currency: 'EUR', accountInfo: { accountType: 'EUR_ACCOUNT', iban: 'DE89370400440532013000', swiftCode: 'COBADEFF', beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Rita Receiver', countryOfResidence: 'US' } } }, auth);
    expect(ext.statusCode, ext.body).toBe(201);
    const elsewhere = await t.call('POST', '/quotes', quoteRequest(accounts.data[0]!.id, (ext.json() as { id: string }).id, 10_000, { lookupId }), auth);
    // POST /quotes declares no 404: a lookup that is not this platform's is 400 on lookupId (docs/decisions.md, "Declared statuses only").
    const refused = envelope(elsewhere, 400, 'INVALID_INPUT');
    expect(refused.details).toMatchObject({ errors: [{ field: 'lookupId' }] });
  });

  it('a lookup made for another sender serves the quote, priced from the quote\'s own source', async () => {
    const looker = await newCustomer(t, ['USD']);
    const payer = await newCustomer(t, ['EUR']);
    const dest = await eurExternal(t, looker.id);
    const lookup = await t.call('GET', `/receiver/external-account/${encodeURIComponent(dest)}?customerId=${encodeURIComponent(looker.id)}&sendingCurrency=USD`);
    expect(lookup.statusCode, lookup.body).toBe(200);
    const { lookupId } = lookup.json() as { lookupId: string };
    const res = await t.call('POST', '/quotes', quoteRequest(payer.accounts.EUR!.id, dest, 10_000, { lookupId }));
    expect(res.statusCode, res.body).toBe(201);
    const q = res.json() as QuoteBody;
    expect([q.sendingCurrency.code, q.totalSendingAmount, q.totalReceivingAmount]).toEqual(['EUR', 10_000, 10_000]);
  });

  // Last in this describe: it moves the platform's clock.
  it('an expired lookup is refused: usable for 5 minutes of platform time, then 400 INVALID_INPUT on lookupId', async () => {
    const c = await newCustomer(t, ['USD', 'EUR']);
    const dest = await eurExternal(t, c.id);
    const look = async () => {
      const res = await t.call('GET', `/receiver/external-account/${encodeURIComponent(dest)}?customerId=${encodeURIComponent(c.id)}&sendingCurrency=USD`);
      expect(res.statusCode, res.body).toBe(200);
      return (res.json() as { lookupId: string }).lookupId;
    };
    const advance = async (seconds: number) => {
      const res = await t.call('POST', '/sandbox/clock/advance', { seconds });
      expect(res.statusCode, res.body).toBe(200);
    };
    const fresh = await look();
    await advance(299);
    const stillFresh = await t.call('POST', '/quotes', quoteRequest(c.accounts.USD!.id, dest, 10_000, { lookupId: fresh }));
    expect(stillFresh.statusCode, stillFresh.body).toBe(201);
    await advance(1);
    const expired = envelope(await t.call('POST', '/quotes', quoteRequest(c.accounts.USD!.id, dest, 10_000, { lookupId: fresh })), 400, 'INVALID_INPUT');
    expect(expired.details).toMatchObject({ errors: [{ field: 'lookupId' }] });
    expect(JSON.stringify(expired.details)).toContain('expired');
    // A new lookup works again.
    const again = await t.call('POST', '/quotes', quoteRequest(c.accounts.USD!.id, dest, 10_000, { lookupId: await look() }));
    expect(again.statusCode, again.body).toBe(201);
  });
});
