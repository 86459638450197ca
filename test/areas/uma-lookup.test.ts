import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getLookup } from '../../src/api/lookups/service.js';
import { ApiError } from '../../src/kernel/errors.js';
import { ADMIN_KEY, basic, envelope, makeApp, STORE, type TestApp } from '../helpers.js';

// GET /receiver/uma/{receiverUmaAddress} (black box, over HTTP), plus the stored lookup the
// quotes will read (through the lookups service).

interface Currency {
  code: string;
  name: string;
  symbol: string;
  decimals: number;
}
interface Pref {
  currency: Currency;
  estimatedExchangeRate: number;
  min: number;
  max: number;
  minSendingAmount?: number;
  maxSendingAmount?: number;
}
interface Lookup {
  receiverUmaAddress: string;
  sendingCurrency: Currency;
  supportedCurrencies: Pref[];
  requiredPayerDataFields?: Array<{ name: string; mandatory: boolean }>;
  lookupId: string;
}
interface FieldError {
  field: string;
  constraint?: Record<string, unknown>;
  message: string;
}

const ADMIN = { authorization: `Bearer ${ADMIN_KEY}` };
const LOOKUP_ID = /^Lookup:[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const USD = { code: 'USD', name: 'United States Dollar', symbol: '$', decimals: 2 };
const SANDBOX = 'sandbox.uma.money';

const usdFee = (variableFeeBps: number, amount: number) => ({
  feeType: 'CROSS_CURRENCY_TRANSACTION',
  sourceCurrency: 'USD',
  variableFeeBps,
  fixedFee: { amount, currency: 'USD' },
});

const platformCurrency = (code: string, minAmount: number, maxAmount: number, opts: { incoming?: boolean; fields?: Array<{ name: string; mandatory: boolean }> } = {}) => ({
  currencyCode: code,
  minAmount,
  maxAmount,
  requiredCounterpartyFields: opts.fields ?? [{ name: 'FULL_NAME', mandatory: true }],
  enabledTransactionTypes: opts.incoming === false ? ['OUTGOING'] : ['OUTGOING', 'INCOMING'],
});

describe(`UMA receiver lookup (${STORE})`, () => {
  let t: TestApp;
  let platformId: string;
  /** The sender: USD (default), EUR, BTC. */
  let sender: { id: string; umaAddress: string };

  async function createCustomer(body: Record<string, unknown>, headers?: Record<string, string>): Promise<{ id: string; umaAddress: string }> {
    const res = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Sam Sender', birthDate: '1990-01-15', nationality: 'US', ...body }, headers);
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as { id: string; umaAddress: string };
  }

  async function newPlatform(): Promise<{ id: string; auth: { authorization: string } }> {
    const res = await t.call('POST', '/admin/platforms', { name: `Other ${Math.random().toString(36).slice(2, 8)}` }, ADMIN);
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json() as { platform: { id: string }; credentials: { clientId: string; clientSecret: string } };
    return { id: body.platform.id, auth: { authorization: basic(body.credentials.clientId, body.credentials.clientSecret) } };
  }

  function url(address: string, query: Record<string, string> = {}): string {
    const qs = new URLSearchParams(query).toString();
    return `/receiver/uma/${encodeURIComponent(address)}${qs ? `?${qs}` : ''}`;
  }

  async function lookup(address: string, query: Record<string, string> = { customerId: sender.id }, headers?: Record<string, string>): Promise<Lookup> {
    const res = await t.call('GET', url(address, query), undefined, headers);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json() as Lookup;
    expect(body.lookupId).toMatch(LOOKUP_ID);
    return body;
  }

  async function receivingFor(from: string, to: string, sendingAmount: number): Promise<number> {
    const res = await t.call('GET', `/exchange-rates?sourceCurrency=${from}&destinationCurrency=${to}&sendingAmount=${sendingAmount}`);
    expect(res.statusCode, res.body).toBe(200);
    return (res.json() as { data: Array<{ receivingAmount: number }> }).data[0]!.receivingAmount;
  }

  beforeAll(async () => {
    t = await makeApp();
    const platforms = (await t.call('GET', '/admin/platforms', undefined, ADMIN)).json() as { data: Array<{ id: string; isDefault: boolean }> };
    platformId = platforms.data.find((p) => p.isDefault)!.id;
    sender = await createCustomer({ platformCustomerId: 'sender-1', currencies: ['USD', 'EUR', 'BTC'] });
  });
  afterAll(async () => t.close());

  describe('the sandbox receivers', () => {
    it('$success.usd: USD to USD at 1, the corridor bounds on both sides', async () => {
      const address = `$success.usd@${SANDBOX}`;
      const res = await t.call('GET', url(address, { customerId: sender.id }));
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json() as Lookup;
      expect(body).toEqual({
        receiverUmaAddress: address,
        sendingCurrency: USD,
        supportedCurrencies: [{ currency: USD, estimatedExchangeRate: 1, min: 100, max: 10_000_000, minSendingAmount: 100, maxSendingAmount: 10_000_000 }],
        lookupId: expect.stringMatching(LOOKUP_ID),
      });
      expect(Object.keys(body)).toEqual(['receiverUmaAddress', 'sendingCurrency', 'supportedCurrencies', 'lookupId']);
    });

    it('$success.eur and $success.mxn: estimated rates from the sender\'s default currency', async () => {
      const eur = await lookup(`$success.eur@${SANDBOX}`);
      expect(eur.sendingCurrency).toEqual(USD);
      expect(eur.supportedCurrencies).toEqual([
        // 0.92 × 0.995; €1: 109 × 0.9154 = 99.78 rounds to 100; €100,000 / 0.9154 → 10,924,186 cents.
        { currency: { code: 'EUR', name: 'Euro', symbol: '€', decimals: 2 }, estimatedExchangeRate: 0.9154, min: 100, max: 10_000_000, minSendingAmount: 109, maxSendingAmount: 10_924_186 },
      ]);
      expect(eur.requiredPayerDataFields).toBeUndefined();
      const mxn = await lookup(`$success.mxn@${SANDBOX}`);
      expect(mxn.supportedCurrencies).toEqual([
        { currency: { code: 'MXN', name: 'Mexican Peso', symbol: '$', decimals: 2 }, estimatedExchangeRate: 18.4075, min: 2_000, max: 200_000_000, minSendingAmount: 109, maxSendingAmount: 10_865_136 },
      ]);
      expect(mxn.requiredPayerDataFields).toEqual([{ name: 'FULL_NAME', mandatory: true }, { name: 'BIRTH_DATE', mandatory: false }]);
    });

    it('$pending.long.usd and $fail.compliance.usd answer like $success.usd; the tag is stored for the quote', async () => {
      for (const [local, behaviour] of [['$pending.long.usd', 'PENDING_LONG'], ['$fail.compliance.usd', 'FAIL_COMPLIANCE'], ['$success.usd', 'SUCCESS']] as const) {
        const body = await lookup(`${local}@${SANDBOX}`);
        expect(body.supportedCurrencies.map((c) => c.currency.code)).toEqual(['USD']);
        const stored = await getLookup(t.store.db, platformId, body.lookupId);
        expect(stored.receiver).toEqual({ kind: 'SANDBOX_UMA', address: `${local}@${SANDBOX}`, behaviour });
      }
    });

    it('matches the sandbox addresses without regard to case, echoing the address as given', async () => {
      const body = await lookup(`$Success.EUR@Sandbox.UMA.money`);
      expect(body.receiverUmaAddress).toBe('$Success.EUR@Sandbox.UMA.money');
      expect(body.supportedCurrencies[0]?.currency.code).toBe('EUR');
    });

    it('takes a percent-encoded or a raw path parameter', async () => {
      const raw = await t.call('GET', `/receiver/uma/$success.usd@${SANDBOX}?customerId=${encodeURIComponent(sender.id)}`);
      expect(raw.statusCode, raw.body).toBe(200);
      expect((raw.json() as Lookup).receiverUmaAddress).toBe(`$success.usd@${SANDBOX}`);
    });
  });

  describe('counterparty failures (sandbox triggers)', () => {
    it('$fail.version → 412 UNSUPPORTED_UMA_VERSION', async () => {
      const e = envelope(await t.call('GET', url(`$fail.version@${SANDBOX}`, { customerId: sender.id })), 412, 'UNSUPPORTED_UMA_VERSION');
      expect(e.details).toMatchObject({ receiverUmaAddress: `$fail.version@${SANDBOX}` });
    });

    it('$fail.lnurlp, $fail.pubkey, $fail.noversion → 424; $fail.sender → 400 SENDER_NOT_ACCEPTED', async () => {
      envelope(await t.call('GET', url(`$fail.lnurlp@${SANDBOX}`, { customerId: sender.id })), 424, 'LNURLP_REQUEST_FAILED');
      envelope(await t.call('GET', url(`$fail.pubkey@${SANDBOX}`, { customerId: sender.id })), 424, 'COUNTERPARTY_PUBKEY_FETCH_ERROR');
      envelope(await t.call('GET', url(`$fail.noversion@${SANDBOX}`, { customerId: sender.id })), 424, 'NO_COMPATIBLE_UMA_VERSION');
      envelope(await t.call('GET', url(`$fail.sender@${SANDBOX}`, { customerId: sender.id })), 400, 'SENDER_NOT_ACCEPTED');
    });

    it('$fail.payreq: the lookup succeeds; the pay request fails at the quote (recorded with the lookup)', async () => {
      const body = await lookup(`$fail.payreq@${SANDBOX}`);
      expect(body.supportedCurrencies.map((c) => c.currency.code)).toEqual(['USD']);
      const stored = await getLookup(t.store.db, platformId, body.lookupId);
      expect(stored.receiver).toMatchObject({ kind: 'SANDBOX_UMA', failure: { status: 424, code: 'PAYREQ_REQUEST_FAILED', stage: 'QUOTE' } });
    });

    it('a well-formed address with no receiver → 404 UMA_NOT_FOUND (sandbox domain or any other)', async () => {
      envelope(await t.call('GET', url(`$nobody@${SANDBOX}`, { customerId: sender.id })), 404, 'UMA_NOT_FOUND');
      envelope(await t.call('GET', url(`$success.xyz@${SANDBOX}`, { customerId: sender.id })), 404, 'UMA_NOT_FOUND');
      envelope(await t.call('GET', url('$alice@elsewhere.example', { customerId: sender.id })), 404, 'UMA_NOT_FOUND');
    });
  });

  describe('request checks', () => {
    it('a malformed receiver address → 400 INVALID_UMA_ADDRESS', async () => {
      for (const bad of ['alice@example.com', '$alice', '$@example.com', '$al ice@example.com', '$alice@example', '$alice@-bad-.example']) {
        const e = envelope(await t.call('GET', url(bad, { customerId: sender.id })), 400, 'INVALID_UMA_ADDRESS');
        expect(e.details?.errors, bad).toEqual([{ field: 'receiverUmaAddress', constraint: { pattern: expect.any(String) }, message: expect.any(String) }]);
      }
      const both = envelope(await t.call('GET', url('nope', { senderUmaAddress: 'also-nope' })), 400, 'INVALID_UMA_ADDRESS');
      expect((both.details?.errors as FieldError[]).map((x) => x.field)).toEqual(['receiverUmaAddress', 'senderUmaAddress']);
    });

    it('every problem in one 400 INVALID_INPUT when any is not about an address', async () => {
      const e = envelope(await t.call('GET', url('nope', { senderUmaAddress: 'bad', customerId: 'Customer:123', sendingCurrency: 'XXX' })), 400, 'INVALID_INPUT');
      expect((e.details?.errors as FieldError[]).map((x) => x.field)).toEqual(['receiverUmaAddress', 'senderUmaAddress', 'customerId', 'sendingCurrency']);
    });

    it('needs senderUmaAddress or customerId', async () => {
      const e = envelope(await t.call('GET', url(`$success.usd@${SANDBOX}`, {})), 400, 'INVALID_INPUT');
      expect((e.details?.errors as FieldError[]).map((x) => x.field)).toEqual(['senderUmaAddress', 'customerId']);
    });

    it('finds the sender by its UMA address (any case), by customerId, or both when they agree', async () => {
      const byAddress = await lookup(`$success.usd@${SANDBOX}`, { senderUmaAddress: sender.umaAddress });
      expect(byAddress.sendingCurrency.code).toBe('USD');
      const stored = await getLookup(t.store.db, platformId, byAddress.lookupId);
      expect(stored.customerId).toBe(sender.id);
      await lookup(`$success.usd@${SANDBOX}`, { senderUmaAddress: sender.umaAddress.toUpperCase() });
      await lookup(`$success.usd@${SANDBOX}`, { senderUmaAddress: sender.umaAddress, customerId: sender.id });
      const other = await createCustomer({ platformCustomerId: 'sender-2', currencies: ['USD'] });
      const e = envelope(await t.call('GET', url(`$success.usd@${SANDBOX}`, { senderUmaAddress: other.umaAddress, customerId: sender.id })), 400, 'INVALID_INPUT');
      expect((e.details?.errors as FieldError[]).map((x) => x.field)).toEqual(['senderUmaAddress']);
    });

    it('a sender that is not a customer of the platform → 404 USER_NOT_FOUND', async () => {
      envelope(await t.call('GET', url(`$success.usd@${SANDBOX}`, { customerId: 'Customer:01950000-0000-7000-8000-000000000000' })), 404, 'USER_NOT_FOUND');
      envelope(await t.call('GET', url(`$success.usd@${SANDBOX}`, { senderUmaAddress: '$ghost@nowhere.example' })), 404, 'USER_NOT_FOUND');
      const p2 = await newPlatform();
      const theirs = await createCustomer({ platformCustomerId: 'theirs', currencies: ['USD'] }, p2.auth);
      envelope(await t.call('GET', url(`$success.usd@${SANDBOX}`, { customerId: theirs.id })), 404, 'USER_NOT_FOUND');
      envelope(await t.call('GET', url(`$success.usd@${SANDBOX}`, { senderUmaAddress: theirs.umaAddress })), 404, 'USER_NOT_FOUND');
      const gone = await createCustomer({ platformCustomerId: 'gone', currencies: ['USD'] });
      expect((await t.call('DELETE', `/customers/${gone.id}`)).statusCode).toBe(200);
      envelope(await t.call('GET', url(`$success.usd@${SANDBOX}`, { customerId: gone.id })), 404, 'USER_NOT_FOUND');
    });

    it('sendingCurrency selects one of the sender\'s currencies and is echoed; others → 400 INVALID_CURRENCY', async () => {
      const eur = await lookup(`$success.usd@${SANDBOX}`, { customerId: sender.id, sendingCurrency: 'EUR' });
      expect(eur.sendingCurrency).toEqual({ code: 'EUR', name: 'Euro', symbol: '€', decimals: 2 });
      // 1 / 0.92 × 0.995 USD per EUR; $1 → 92 euro cents (99.50 rounds to 100); $100,000 → 9,246,231.
      expect(eur.supportedCurrencies[0]).toMatchObject({ estimatedExchangeRate: 1.08152173913, minSendingAmount: 92, maxSendingAmount: 9_246_231 });
      const e = envelope(await t.call('GET', url(`$success.usd@${SANDBOX}`, { customerId: sender.id, sendingCurrency: 'MXN' })), 400, 'INVALID_CURRENCY');
      expect(e.details?.errors).toEqual([{ field: 'sendingCurrency', constraint: { enum: ['USD', 'EUR', 'BTC'] }, message: expect.any(String) }]);
      envelope(await t.call('GET', url(`$success.usd@${SANDBOX}`, { customerId: sender.id, sendingCurrency: 'XXX' })), 400, 'INVALID_INPUT');
      const stored = await getLookup(t.store.db, platformId, eur.lookupId);
      expect(stored.sendingCurrency).toBe('EUR');
    });

    it('accepts Basic credentials only', async () => {
      envelope(await t.call('GET', url(`$success.usd@${SANDBOX}`, { customerId: sender.id }), undefined, { authorization: '' }), 401, 'UNAUTHORIZED');
      envelope(await t.call('GET', url(`$success.usd@${SANDBOX}`, { customerId: sender.id }), undefined, { authorization: 'Bearer agent-token' }), 401, 'UNAUTHORIZED');
    });
  });

  describe('bounds arithmetic', () => {
    it('USD → JPY (0 decimals): min delivers at least ¥150, max at most ¥15,000,000', async () => {
      const jpy = (await lookup(`$success.jpy@${SANDBOX}`)).supportedCurrencies[0]!;
      expect(jpy).toEqual({
        currency: { code: 'JPY', name: 'Japanese Yen', symbol: '¥', decimals: 0 },
        estimatedExchangeRate: 149.25,
        min: 150,
        max: 15_000_000,
        minSendingAmount: 101,
        maxSendingAmount: 10_050_251,
      });
      expect(await receivingFor('USD', 'JPY', jpy.minSendingAmount!)).toBeGreaterThanOrEqual(jpy.min);
      expect(await receivingFor('USD', 'JPY', jpy.minSendingAmount! - 1)).toBeLessThan(jpy.min);
      expect(await receivingFor('USD', 'JPY', jpy.maxSendingAmount!)).toBeLessThanOrEqual(jpy.max);
    });

    it('USD → BTC and BTC → USD (8 decimals)', async () => {
      const btc = (await lookup(`$success.btc@${SANDBOX}`)).supportedCurrencies[0]!;
      expect(btc).toMatchObject({ currency: { code: 'BTC', decimals: 8 }, min: 1_000, max: 200_000_000, minSendingAmount: 66, maxSendingAmount: 13_065_326 });
      expect(btc.estimatedExchangeRate).toBeCloseTo(0.995 / 65_000, 15);
      const fromBtc = await lookup(`$success.usd@${SANDBOX}`, { customerId: sender.id, sendingCurrency: 'BTC' });
      expect(fromBtc.sendingCurrency).toEqual({ code: 'BTC', name: 'Bitcoin', symbol: '₿', decimals: 8 });
      // 0.064675 cents per sat, rounded half to even: $1 → 1,539 sats (99.53 cents); $100,000 → 154,619,257 sats (10,000,000.45 cents).
      expect(fromBtc.supportedCurrencies[0]).toMatchObject({ estimatedExchangeRate: 64_675, minSendingAmount: 1_539, maxSendingAmount: 154_619_257 });
      expect(await receivingFor('BTC', 'USD', 1_539)).toBeGreaterThanOrEqual(100);
      expect(await receivingFor('BTC', 'USD', 1_538)).toBeLessThan(100);
    });

    it('agrees with GET /exchange-rates and includes the platform fee in the sending bounds', async () => {
      const rate = (await t.call('GET', '/exchange-rates?sourceCurrency=USD&destinationCurrency=EUR')).json() as {
        data: Array<{ exchangeRate: number; minSendingAmount: number; maxSendingAmount: number }>;
      };
      const before = (await lookup(`$success.eur@${SANDBOX}`)).supportedCurrencies[0]!;
      expect(before.estimatedExchangeRate * rate.data[0]!.exchangeRate).toBeCloseTo(1, 10);
      expect([before.minSendingAmount, before.maxSendingAmount]).toEqual([rate.data[0]!.minSendingAmount, rate.data[0]!.maxSendingAmount]);

      expect((await t.call('PATCH', '/config', { feeConfigs: [usdFee(100, 30)] })).statusCode).toBe(200);
      try {
        const after = (await lookup(`$success.eur@${SANDBOX}`)).supportedCurrencies[0]!;
        // (s − 30) × 0.99 × 0.9154 ≥ 99.5: s − 30 = 110, 140 cents.
        expect(after).toMatchObject({ estimatedExchangeRate: 0.9154, min: 100, minSendingAmount: 140 });
        expect(after.maxSendingAmount).toBeGreaterThan(before.maxSendingAmount!);
        expect(await receivingFor('USD', 'EUR', 140)).toBeGreaterThanOrEqual(100);
        expect(await receivingFor('USD', 'EUR', 139)).toBeLessThan(100);
        expect(await receivingFor('USD', 'EUR', after.maxSendingAmount!)).toBeLessThanOrEqual(10_000_000);
        // No fee from EUR, nor USD to USD.
        const fromEur = (await lookup(`$success.eur@${SANDBOX}`, { customerId: sender.id, sendingCurrency: 'EUR' })).supportedCurrencies[0]!;
        expect(fromEur).toMatchObject({ estimatedExchangeRate: 1, minSendingAmount: 100, maxSendingAmount: 10_000_000 });
        expect((await lookup(`$success.usd@${SANDBOX}`)).supportedCurrencies[0]).toMatchObject({ minSendingAmount: 100, maxSendingAmount: 10_000_000 });
      } finally {
        await t.call('PATCH', '/config', { feeConfigs: [usdFee(0, 0)] });
      }
    });
  });

  describe('customers as receivers', () => {
    it('a customer of the platform receives in its currencies, under the platform\'s limits, with the payer data asked for', async () => {
      const receiver = await createCustomer({ platformCustomerId: 'receiver-1', fullName: 'Rita Receiver', currencies: ['MXN', 'INR', 'BTC'] });
      const body = await lookup(receiver.umaAddress);
      expect(body.receiverUmaAddress).toBe(receiver.umaAddress);
      expect(body.supportedCurrencies.map((c) => [c.currency.code, c.min, c.max, c.minSendingAmount, c.maxSendingAmount])).toEqual([
        ['MXN', 2_000, 200_000_000, 109, 10_865_136],
        ['INR', 10_000, 800_000_000, 120, 9_571_667],
        ['BTC', 1_000, 200_000_000, 66, 13_065_326],
      ]);
      // The corridors' (MXN, INR) and the platform's requiredCounterpartyFields (FULL_NAME), merged.
      expect(body.requiredPayerDataFields).toEqual([
        { name: 'FULL_NAME', mandatory: true },
        { name: 'BIRTH_DATE', mandatory: true },
        { name: 'NATIONALITY', mandatory: true },
        { name: 'POSTAL_ADDRESS', mandatory: true },
        { name: 'PURPOSE_OF_PAYMENT', mandatory: true },
        { name: 'PHONE_NUMBER', mandatory: false },
      ]);
      const stored = await getLookup(t.store.db, platformId, body.lookupId);
      expect(stored).toMatchObject({
        kind: 'UMA',
        target: receiver.umaAddress,
        customerId: sender.id,
        sendingCurrency: 'USD',
        supportedCurrencies: body.supportedCurrencies,
        requiredPayerDataFields: body.requiredPayerDataFields,
        receiver: { kind: 'CUSTOMER', platformId, customerId: receiver.id, address: receiver.umaAddress },
      });

      // The platform narrows MXN and stops INR coming in: the lookup follows.
      const config = (await t.call('GET', '/config')).json() as { supportedCurrencies: Array<Record<string, unknown>> };
      const original = config.supportedCurrencies;
      const narrowed = original.map((c) =>
        c.currencyCode === 'MXN'
          ? platformCurrency('MXN', 5_000, 100_000)
          : c.currencyCode === 'INR'
            ? platformCurrency('INR', 10_000, 800_000_000, { incoming: false })
            : c,
      );
      expect((await t.call('PATCH', '/config', { supportedCurrencies: narrowed })).statusCode).toBe(200);
      try {
        const after = await lookup(receiver.umaAddress);
        expect(after.supportedCurrencies.map((c) => [c.currency.code, c.min, c.max, c.minSendingAmount, c.maxSendingAmount])).toEqual([
          ['MXN', 5_000, 100_000, 272, 5_432],
          ['BTC', 1_000, 200_000_000, 66, 13_065_326],
        ]);
        expect(after.requiredPayerDataFields).toEqual([{ name: 'FULL_NAME', mandatory: true }, { name: 'BIRTH_DATE', mandatory: false }]);
      } finally {
        await t.call('PATCH', '/config', { supportedCurrencies: original });
      }
    });

    it('a customer of another platform is a receiver too', async () => {
      const p2 = await newPlatform();
      const theirs = await createCustomer({ platformCustomerId: 'abroad', currencies: ['EUR', 'GBP'] }, p2.auth);
      const body = await lookup(theirs.umaAddress);
      expect(body.supportedCurrencies.map((c) => c.currency.code)).toEqual(['EUR', 'GBP']);
      expect(body.supportedCurrencies[1]?.estimatedExchangeRate).toBe(0.78605);
      const stored = await getLookup(t.store.db, platformId, body.lookupId);
      expect(stored.receiver).toMatchObject({ kind: 'CUSTOMER', platformId: p2.id, customerId: theirs.id });
      // The lookup belongs to the caller's platform only.
      await expect(getLookup(t.store.db, p2.id, body.lookupId)).rejects.toMatchObject({ status: 404, code: 'LOOKUP_REQUEST_NOT_FOUND' });
    });

    it('a deleted customer is no receiver; the sender cannot look itself up', async () => {
      const leaving = await createCustomer({ platformCustomerId: 'leaving', currencies: ['USD'] });
      await lookup(leaving.umaAddress);
      expect((await t.call('DELETE', `/customers/${leaving.id}`)).statusCode).toBe(200);
      envelope(await t.call('GET', url(leaving.umaAddress, { customerId: sender.id })), 404, 'UMA_NOT_FOUND');
      envelope(await t.call('GET', url(sender.umaAddress, { customerId: sender.id })), 400, 'SELF_PAYMENT');
    });
  });

  describe('stored lookups', () => {
    it('each lookup gets a new id; an unknown id is 404 LOOKUP_REQUEST_NOT_FOUND', async () => {
      const a = await lookup(`$success.usd@${SANDBOX}`);
      const b = await lookup(`$success.usd@${SANDBOX}`);
      expect(a.lookupId).not.toBe(b.lookupId);
      const stored = await getLookup(t.store.db, platformId, a.lookupId);
      expect(stored).toMatchObject({ id: a.lookupId, platformId, kind: 'UMA', target: `$success.usd@${SANDBOX}`, supportedCurrencies: a.supportedCurrencies, requiredPayerDataFields: [] });
      expect(stored.createdAt).toBe(new Date(t.clock.nowMs()).toISOString());
      for (const id of ['Lookup:01950000-0000-7000-8000-000000000000', 'nonsense']) {
        const err = await getLookup(t.store.db, platformId, id).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ApiError);
        expect((err as ApiError).toEnvelope()).toMatchObject({ status: 404, code: 'LOOKUP_REQUEST_NOT_FOUND' });
      }
    });
  });
});
