import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, basic, DEFAULT_AUTH, DEFAULT_SECRET, DEFAULT_TOKEN_ID, envelope, makeApp, STORE, type TestApp, V } from '../helpers.js';

// Issue 14, "no 5xx on any input": U+0000 anywhere a request carries text, integer amounts
// out of the safe range, and racing deletes. Every answer is a 4xx envelope (never a 500),
// on both stores.

const NUL = '\u0000';
const ADMIN = { authorization: `Bearer ${ADMIN_KEY}` };

interface FieldError {
  field: string;
  message: string;
}
const fieldsOf = (e: { details?: Record<string, unknown> }): string[] => ((e.details?.errors ?? []) as FieldError[]).map((x) => x.field);

describe(`U+0000 in any input (${STORE})`, () => {
  let t: TestApp;
  let customerId: string;

  beforeAll(async () => {
    t = await makeApp();
    const res = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Nul Tester', birthDate: '1990-01-15', nationality: 'US' });
    expect(res.statusCode).toBe(201);
    customerId = (res.json() as { id: string }).id;
  });
  afterAll(async () => t.close());

  it('in a JSON body string: 400 INVALID_INPUT naming each field, nothing written', async () => {
    const before = (await t.call('GET', '/customers')).json() as { totalCount: number };
    const e = envelope(
      await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: `Jane${NUL}Smith`, platformCustomerId: `p${NUL}`, birthDate: '1990-01-15', nationality: 'US' }),
      400,
      'INVALID_INPUT',
    );
    expect(fieldsOf(e)).toEqual(['fullName', 'platformCustomerId']);
    expect((e.details!.errors as FieldError[])[0]!.message).toContain('U+0000');
    const after = (await t.call('GET', '/customers')).json() as { totalCount: number };
    expect(after.totalCount).toBe(before.totalCount);

    // Nested fields and property names too; a PATCH and a token name.
    const nested = envelope(
      await t.call('PATCH', `/customers/${customerId}`, { customerType: 'INDIVIDUAL', address: { line1: `1${NUL}`, city: 'X', postalCode: '1', country: 'US' }, [`k${NUL}`]: 1 }),
      400,
      'INVALID_INPUT',
    );
    expect(fieldsOf(nested).sort()).toEqual(['address.line1', `k${NUL}`]);
    expect(fieldsOf(envelope(await t.call('POST', '/tokens', { name: NUL, permissions: ['VIEW'] }), 400, 'INVALID_INPUT'))).toEqual(['name']);
  });

  it('in a path id: 400 naming the parameter', async () => {
    for (const [method, url] of [
      ['GET', `/customers/${encodeURIComponent(`${customerId}${NUL}`)}`],
      ['DELETE', `/customers/Customer%3A%00`],
      ['GET', '/transactions/Transaction%3Ax%00y'],
      ['GET', '/quotes/%00'],
      ['POST', '/sandbox/internal-accounts/InternalAccount%3A%00/fund'],
    ] as const) {
      const res = await t.call(method, url, method === 'POST' ? { amount: 100 } : undefined);
      const e = envelope(res, 400, 'INVALID_INPUT');
      expect(fieldsOf(e), url).toHaveLength(1);
      expect(e.message, url).toContain('U+0000');
    }
    const admin = envelope(await t.call('GET', '/admin/platforms/Platform%3A%00', undefined, ADMIN), 400, 'INVALID_INPUT');
    expect(fieldsOf(admin)).toHaveLength(1);
  });

  it('in a query value: 400 naming the parameter', async () => {
    expect(fieldsOf(envelope(await t.call('GET', '/customers?platformCustomerId=a%00b'), 400, 'INVALID_INPUT'))).toEqual(['platformCustomerId']);
    expect(fieldsOf(envelope(await t.call('GET', '/transactions?reference=%00'), 400, 'INVALID_INPUT'))).toContain('reference');
    expect(fieldsOf(envelope(await t.call('GET', '/customers?cursor=%00&limit=5'), 400, 'INVALID_INPUT'))).toEqual(['cursor']);
  });

  it('in Basic credentials: 401, with or without a known token id, before anything else', async () => {
    for (const auth of [basic(`${DEFAULT_TOKEN_ID}${NUL}`, DEFAULT_SECRET), basic(DEFAULT_TOKEN_ID, `${DEFAULT_SECRET}${NUL}`), basic(NUL, NUL), basic(`Token:${NUL}`, 'x')]) {
      for (const url of ['/config', `/customers/${customerId}`, '/customers?platformCustomerId=%00']) {
        const e = envelope(await t.call('GET', url, undefined, { authorization: auth }), 401, 'UNAUTHORIZED');
        expect(e.details?.reason).toMatch(/NUL/);
      }
      envelope(await t.call('POST', '/customers', { fullName: NUL }, { authorization: auth }), 401, 'UNAUTHORIZED');
    }
  });

  it('in a multipart text field or file name: 400 naming it, no document stored', async () => {
    const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
    const upload = (fields: Record<string, string>, fileName: string) => {
      const fd = new FormData();
      for (const [k, v] of Object.entries(fields)) fd.append(k, v);
      fd.append('file', new Blob([png], { type: 'image/png' }), fileName);
      return t.app.inject({ method: 'POST', url: `${V}/documents`, payload: fd, headers: { authorization: DEFAULT_AUTH } });
    };
    const fields = { documentHolder: customerId, documentType: 'PASSPORT', country: 'GB' };
    const e = envelope(await upload({ ...fields, documentNumber: `A1${NUL}` }, 'p.png'), 400, 'INVALID_INPUT');
    expect(fieldsOf(e)).toEqual(['documentNumber']);
    expect(fieldsOf(envelope(await upload(fields, `p${NUL}.png`), 400, 'INVALID_INPUT'))).toEqual(['file.fileName']);
    expect(((await t.call('GET', '/documents')).json() as { data: unknown[] }).data).toEqual([]);
  });

  it('an unknown route with U+0000 stays 404', async () => {
    envelope(await t.call('GET', '/no-such-thing/%00'), 404, 'REFERENCE_NOT_FOUND');
  });
});

describe(`integer amounts out of range (${STORE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp();
  });
  afterAll(async () => t.close());

  const HUGE = [-(2 ** 53), -(2 ** 60), 2 ** 53, 1e300, -1e300];

  it('POST /crypto/estimate-withdrawal-fee refuses amounts outside the safe integers', async () => {
    const res = await t.call('GET', '/platform/internal-accounts?currency=USDC');
    const usdc = ((res.json() as { data: Array<{ id: string; type: string }> }).data.find((a) => a.type === 'INTERNAL_CRYPTO') ?? { id: 'InternalAccount:none' }).id;
    for (const amount of HUGE) {
      const r = await t.call('POST', '/crypto/estimate-withdrawal-fee', {
        internalAccountId: usdc,
        currency: 'USDC',
        cryptoNetwork: 'SOLANA',
        amount,
        destinationAddress: '7EcDhSYGxXyscszYEp35KHN8vvw3svAuLKTzXwCFLtV',
      });
      expect(r.statusCode, `${amount}: ${r.body}`).toBe(400);
      expect(fieldsOf(r.json()), String(amount)).toContain('amount');
    }
  });

  it('PATCH /config refuses minAmount, maxAmount and fixed fees beyond 2^53 − 1', async () => {
    const cfg = (await t.call('GET', '/config')).json() as { supportedCurrencies: Array<Record<string, unknown>> };
    const first = cfg.supportedCurrencies[0]!;
    for (const big of [2 ** 53, 1e300]) {
      const e = envelope(await t.call('PATCH', '/config', { supportedCurrencies: [{ ...first, minAmount: big, maxAmount: big }] }), 400, 'INVALID_INPUT');
      expect(fieldsOf(e)).toEqual(['supportedCurrencies.0.minAmount', 'supportedCurrencies.0.maxAmount']);
      const fee = envelope(
        await t.call('PATCH', '/config', { feeConfigs: [{ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', variableFeeBps: 0, fixedFee: { amount: big, currency: 'USD' } }] }),
        400,
        'INVALID_INPUT',
      );
      expect(fieldsOf(fee)).toContain('feeConfigs.0.fixedFee.amount');
    }
  });

  it('money requests (quotes, transfers, sandbox fund, UMA receive, limits) refuse them with a 400, never a 500', async () => {
    const cases: Array<[string, string, (n: number) => unknown, Record<string, string>?]> = [
      ['POST', '/quotes', (n) => ({ source: { sourceType: 'ACCOUNT', accountId: 'InternalAccount:x' }, destination: { destinationType: 'UMA_ADDRESS', umaAddress: '$a@b.c', currency: 'USD' }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: n })],
      ['POST', '/transfer-in', (n) => ({ source: { accountId: 'ExternalAccount:x' }, destination: { accountId: 'InternalAccount:x' }, amount: n })],
      ['POST', '/transfer-out', (n) => ({ source: { accountId: 'InternalAccount:x' }, destination: { accountId: 'ExternalAccount:x' }, amount: n })],
      ['POST', '/sandbox/internal-accounts/InternalAccount:x/fund', (n) => ({ amount: n })],
      ['POST', '/sandbox/uma/receive', (n) => ({ senderUmaAddress: '$success.usd@sandbox.uma.money', customerId: 'Customer:x', receivingCurrencyCode: 'USD', receivingCurrencyAmount: n })],
    ];
    for (const [method, url, body] of cases) {
      for (const n of HUGE) {
        const r = await t.call(method as 'POST', url, body(n));
        expect(r.statusCode, `${url} ${n}: ${r.body}`).toBe(400);
      }
    }
    const platform = ((await t.call('GET', '/admin/platforms', undefined, ADMIN)).json() as { data: Array<{ id: string }> }).data[0]!.id;
    for (const n of HUGE) {
      const r = await t.call('PATCH', `/admin/platforms/${platform}`, { limits: { transactionSize: { default: n, corridors: { 'USD:EUR': n } } } }, ADMIN);
      expect(r.statusCode, `limits ${n}: ${r.body}`).toBe(400);
    }
  });
});

describe(`DELETE /customers/{id} raced (${STORE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp();
  });
  afterAll(async () => t.close());

  it('20 parallel deletes: exactly one 200, every other one 410 CUSTOMER_DELETED', async () => {
    for (let round = 0; round < 3; round++) {
      const c = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: `Race ${round}`, birthDate: '1990-01-15', nationality: 'US' });
      const id = (c.json() as { id: string }).id;
      const answers = await Promise.all(Array.from({ length: 20 }, () => t.call('DELETE', `/customers/${id}`)));
      const statuses = answers.map((a) => a.statusCode).sort();
      expect(statuses.filter((s) => s === 200), `round ${round}: ${statuses.join(',')}`).toHaveLength(1);
      expect(statuses.filter((s) => s === 410)).toHaveLength(19);
      for (const a of answers) if (a.statusCode === 410) envelope(a, 410, 'CUSTOMER_DELETED');
    }
  });
});
