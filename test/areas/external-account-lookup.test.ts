import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getLookup } from '../../src/api/lookups/service.js';
import { ADMIN_KEY, basic, envelope, makeApp, type TestApp } from '../helpers.js';

// GET /receiver/external-account/{accountId} (lookupExternalAccount), checked against the
// specification's section line by line.

interface Currency { code: string; name: string; symbol: string; decimals: number }
interface Pref { currency: Currency; estimatedExchangeRate: number; min: number; max: number; minSendingAmount?: number; maxSendingAmount?: number }
interface LookupBody { accountId: string; sendingCurrency: Currency; supportedCurrencies: Pref[]; requiredPayerDataFields?: Array<{ name: string; mandatory: boolean }>; lookupId: string }

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

describe('external-account lookup', () => {
  let t: TestApp;
  let sender: { id: string; umaAddress: string };
  let otherCustomer: { id: string; umaAddress: string };

  const usdAccount = async (accountNumber: string, customerId = sender.id): Promise<string> => {
    const res = await t.call('POST', '/customers/external-accounts', {
      customerId,
      currency: 'USD',
      accountInfo: { accountType: 'USD_ACCOUNT', accountNumber, routingNumber: '021000021', bankName: 'Sandbox Bank', beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Rita Receiver' } },
    });
    expect(res.statusCode, res.body).toBe(201);
    return (res.json() as { id: string }).id;
  };

  const platformOf = async (customerId: string): Promise<string> =>
    (await t.store.db.selectFrom('customers').select('platform_id').where('id', '=', customerId).executeTakeFirstOrThrow()).platform_id;

  const lookup = (accountId: string, query: Record<string, string>, headers: Record<string, string> = {}) =>
    t.call('GET', `/receiver/external-account/${encodeURIComponent(accountId)}?${new URLSearchParams(query).toString()}`, undefined, headers);

  beforeAll(async () => {
    t = await makeApp();
    const a = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Sam Sender', currencies: ['USD', 'EUR', 'BTC'] });
    expect(a.statusCode, a.body).toBe(201);
    sender = a.json();
    const b = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Olga Other', currencies: ['MXN'] });
    otherCustomer = b.json();
  });
  afterAll(async () => t.close());

  it('answers 200 with accountId, the sending currency, priced currencies and a fresh lookupId', async () => {
    const accountId = await usdAccount('123456789');
    const res = await lookup(accountId, { customerId: sender.id });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toMatch(/application\/json/);
    const body = res.json() as LookupBody;
    expect(body.accountId).toBe(accountId);
    // Defaults to the sender's default (first) currency, as a full Currency object.
    expect(body.sendingCurrency).toEqual({ code: 'USD', name: 'United States Dollar', symbol: '$', decimals: 2 });
    expect(body.lookupId).toMatch(new RegExp(`^Lookup:${UUID}$`));
    expect(body.supportedCurrencies).toHaveLength(1);
    const usd = body.supportedCurrencies[0]!;
    expect(usd.currency.code).toBe('USD');
    // Same currency: rate 1, no FX spread.
    expect(usd.estimatedExchangeRate).toBe(1);
    expect(Number.isInteger(usd.min) && usd.min > 0).toBe(true);
    expect(Number.isInteger(usd.max) && usd.max >= usd.min).toBe(true);
    expect(usd.minSendingAmount).toBeGreaterThanOrEqual(usd.min);
    expect(usd.maxSendingAmount).toBeLessThanOrEqual(usd.max);
    // A second lookup gets its own id.
    const again = (await lookup(accountId, { customerId: sender.id })).json() as LookupBody;
    expect(again.lookupId).not.toBe(body.lookupId);
  });

  it('accepts the sender by UMA address, or by both when they agree', async () => {
    const accountId = await usdAccount('223456789');
    const byUma = await lookup(accountId, { senderUmaAddress: sender.umaAddress });
    expect(byUma.statusCode, byUma.body).toBe(200);
    const both = await lookup(accountId, { senderUmaAddress: sender.umaAddress, customerId: sender.id });
    expect(both.statusCode, both.body).toBe(200);
    const disagree = envelope(await lookup(accountId, { senderUmaAddress: otherCustomer.umaAddress, customerId: sender.id }), 400, 'INVALID_INPUT');
    expect(JSON.stringify(disagree.details)).toContain('senderUmaAddress');
  });

  it('prices against the sendingCurrency named, echoes it, and refuses one the sender does not hold', async () => {
    const accountId = await usdAccount('323456789');
    const res = await lookup(accountId, { customerId: sender.id, sendingCurrency: 'EUR' });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json() as LookupBody;
    expect(body.sendingCurrency.code).toBe('EUR');
    const usd = body.supportedCurrencies[0]!;
    expect(usd.estimatedExchangeRate).toBeGreaterThan(1); // dollars per euro
    envelope(await lookup(accountId, { customerId: sender.id, sendingCurrency: 'MXN' }), 400, 'INVALID_CURRENCY');
    envelope(await lookup(accountId, { customerId: sender.id, sendingCurrency: 'NOTACURRENCY' }), 400, 'INVALID_INPUT');
  });

  it('gives sending bounds in the sending currency\'s smallest unit (8 decimals: BTC → USD)', async () => {
    const accountId = await usdAccount('423456789');
    const body = (await lookup(accountId, { customerId: sender.id, sendingCurrency: 'BTC' })).json() as LookupBody;
    expect(body.sendingCurrency.decimals).toBe(8);
    const p = body.supportedCurrencies[0]!;
    expect(Number.isInteger(p.minSendingAmount)).toBe(true);
    // Sending minSendingAmount satoshis at the estimate delivers what rounds (half to even) to
    // at least `min` cents, and not much more (the smallest such amount).
    const delivered = (p.minSendingAmount! / 1e8) * p.estimatedExchangeRate * 100;
    expect(delivered).toBeGreaterThanOrEqual(p.min - 0.5);
    expect(((p.minSendingAmount! - 2) / 1e8) * p.estimatedExchangeRate * 100).toBeLessThan(p.min);
    const deliveredMax = (p.maxSendingAmount! / 1e8) * p.estimatedExchangeRate * 100;
    expect(deliveredMax).toBeLessThanOrEqual(p.max + 0.5);
  });

  it('gives receiving bounds in a 0-decimal currency (USD → VND)', async () => {
    const patch = await t.call('GET', '/config');
    const supported = (patch.json() as { supportedCurrencies: Array<Record<string, unknown>> }).supportedCurrencies;
    await t.call('PATCH', '/config', {
      supportedCurrencies: [...supported.map(({ providerRequiredCustomerFields: _a, providerRequiredCounterpartyCustomerFields: _b, ...c }) => c), { currencyCode: 'VND', minAmount: 1, maxAmount: 10_000_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['OUTGOING', 'INCOMING'] }],
    });
    const res = await t.call('POST', '/customers/external-accounts', {
      customerId: sender.id,
      currency: 'VND',
      accountInfo: { accountType: 'VND_ACCOUNT', bankName: 'Sandbox VN', accountNumber: '0011223344', swiftCode: 'BFTVVNVX', beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Vu Nguyen' } },
    });
    expect(res.statusCode, res.body).toBe(201);
    const body = (await lookup(res.json().id, { customerId: sender.id })).json() as LookupBody;
    const vnd = body.supportedCurrencies[0]!;
    expect(vnd.currency).toMatchObject({ code: 'VND', decimals: 0 });
    expect(vnd.estimatedExchangeRate).toBeGreaterThan(1000); // dong per dollar
    expect(Number.isInteger(vnd.min) && vnd.min > 0 && Number.isInteger(vnd.max)).toBe(true);
    // minSendingAmount cents deliver at least min dong.
    expect((vnd.minSendingAmount! / 100) * vnd.estimatedExchangeRate).toBeGreaterThanOrEqual(vnd.min * (1 - 1e-9));
    expect(((vnd.minSendingAmount! - 1) / 100) * vnd.estimatedExchangeRate).toBeLessThan(vnd.min * (1 + 1e-6));
  });

  it('stores the lookup with what was quoted', async () => {
    const accountId = await usdAccount('523456789');
    const body = (await lookup(accountId, { customerId: sender.id, sendingCurrency: 'EUR' })).json() as LookupBody;
    const stored = await getLookup(t.store.db, await platformOf(sender.id), body.lookupId);
    expect(stored.id).toBe(body.lookupId);
    expect(stored.kind).toBe('EXTERNAL_ACCOUNT');
    expect(stored.target).toBe(accountId);
    expect(stored.customerId).toBe(sender.id);
    expect(stored.sendingCurrency).toBe('EUR');
    expect(stored.supportedCurrencies).toEqual(body.supportedCurrencies);
  });

  it('identical lookups share one stored answer, each with its own id and time; another answer is stored apart (issue 35)', async () => {
    const accountId = await usdAccount('133456789');
    const platformId = await platformOf(sender.id);
    const first = (await lookup(accountId, { customerId: sender.id })).json() as LookupBody;
    await t.call('POST', '/sandbox/clock/advance', { seconds: 60 });
    const second = (await lookup(accountId, { customerId: sender.id })).json() as LookupBody;
    const both = await Promise.all([lookup(accountId, { customerId: sender.id }), lookup(accountId, { customerId: sender.id })]);
    const ids = [first.lookupId, second.lookupId, ...both.map((r) => (r.json() as LookupBody).lookupId)];
    expect(new Set(ids).size).toBe(4);
    for (const id of ids) expect(id).toMatch(new RegExp(`^Lookup:${UUID}$`));
    const answers = () => t.store.db.selectFrom('lookup_answers').select(['key', 'sending_currency']).where('target', '=', accountId).execute();
    expect(await answers()).toHaveLength(1);
    const a = await getLookup(t.store.db, platformId, first.lookupId);
    const b = await getLookup(t.store.db, platformId, second.lookupId);
    expect({ ...a, id: '', createdAt: '' }).toEqual({ ...b, id: '', createdAt: '' });
    expect(Date.parse(b.createdAt) - Date.parse(a.createdAt)).toBeGreaterThanOrEqual(60_000);
    // Another answer (another sending currency): its own row.
    const eur = (await lookup(accountId, { customerId: sender.id, sendingCurrency: 'EUR' })).json() as LookupBody;
    expect((await answers()).map((r) => r.sending_currency).sort()).toEqual(['EUR', 'USD']);
    expect((await getLookup(t.store.db, platformId, eur.lookupId)).sendingCurrency).toBe('EUR');
  });

  it('a restored snapshot takes the lookups made after it; the next identical lookup is stored again (issue 35)', async () => {
    const accountId = await usdAccount('143456789');
    const platformId = await platformOf(sender.id);
    const name = `lookups-${Date.now()}`;
    const saved = await t.call('POST', '/sandbox/snapshots', { name });
    expect(saved.statusCode, saved.body).toBe(201);
    const before = (await lookup(accountId, { customerId: sender.id })).json() as LookupBody;
    expect((await getLookup(t.store.db, platformId, before.lookupId)).target).toBe(accountId);
    const restored = await t.call('POST', `/sandbox/snapshots/${name}/restore`);
    expect(restored.statusCode, restored.body).toBe(200);
    await expect(getLookup(t.store.db, platformId, before.lookupId)).rejects.toMatchObject({ status: 404, code: 'LOOKUP_REQUEST_NOT_FOUND' });
    const after = (await lookup(accountId, { customerId: sender.id })).json() as LookupBody;
    expect((await getLookup(t.store.db, platformId, after.lookupId)).target).toBe(accountId);
    expect(after.lookupId).not.toBe(before.lookupId);
  });

  it('lists every parameter problem in one 400', async () => {
    const res = envelope(await lookup('not-an-id', {}), 400, 'INVALID_INPUT');
    const fields = (res.details!.errors as Array<{ field: string }>).map((e) => e.field);
    expect(fields).toEqual(expect.arrayContaining(['accountId', 'senderUmaAddress', 'customerId']));
    const bad = envelope(await lookup('ExternalAccount:nope', { customerId: 'Customer:nope', sendingCurrency: 'XXXX' }), 400, 'INVALID_INPUT');
    expect((bad.details!.errors as Array<{ field: string }>).map((e) => e.field)).toEqual(expect.arrayContaining(['accountId', 'customerId', 'sendingCurrency']));
    // A malformed sender UMA address alone is INVALID_UMA_ADDRESS.
    const accountId = await usdAccount('623456789');
    envelope(await lookup(accountId, { senderUmaAddress: 'not-an-address' }), 400, 'INVALID_UMA_ADDRESS');
  });

  it('answers 404 for an unknown, deleted or other platform\'s account, and for an unknown sender', async () => {
    envelope(await lookup('ExternalAccount:01890000-0000-7000-8000-000000000000', { customerId: sender.id }), 404);
    const accountId = await usdAccount('723456789');
    expect((await t.call('DELETE', `/customers/external-accounts/${accountId}`)).statusCode).toBe(204);
    envelope(await lookup(accountId, { customerId: sender.id }), 404);

    const live = await usdAccount('823456789');
    envelope(await lookup(live, { customerId: 'Customer:01890000-0000-7000-8000-000000000000' }), 404, 'USER_NOT_FOUND');

    const created = await t.call('POST', '/admin/platforms', { name: 'Other' }, { authorization: `Bearer ${ADMIN_KEY}` });
    const { clientId, clientSecret } = created.json().credentials as { clientId: string; clientSecret: string };
    const other = basic(clientId, clientSecret);
    const theirs = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Them' }, { authorization: other });
    const res = await lookup(live, { customerId: theirs.json().id }, { authorization: other });
    envelope(res, 404);
    expect(res.body).not.toContain('Rita');
  });

  it('accepts HTTP Basic only: a Bearer token and no credentials answer 401', async () => {
    const accountId = await usdAccount('923456789');
    const bearer = envelope(await lookup(accountId, { customerId: sender.id }, { authorization: 'Bearer some-agent-token' }), 401, 'UNAUTHORIZED');
    expect(String(bearer.details?.reason)).toMatch(/Basic/);
    envelope(await lookup(accountId, { customerId: sender.id }, { authorization: '' }), 401, 'UNAUTHORIZED');
  });

  it('answers the sandbox counterparty failures by identifier suffix: 412, 424, 500', async () => {
    const cases: Array<[string, number, string]> = [
      ['100000412', 412, 'UNSUPPORTED_UMA_VERSION'],
      ['100000424', 424, 'LNURLP_REQUEST_FAILED'],
      ['100000425', 424, 'NO_COMPATIBLE_UMA_VERSION'],
      ['100000426', 424, 'COUNTERPARTY_PUBKEY_FETCH_ERROR'],
      ['100000500', 500, 'SERVICE_SWITCH_ERROR'],
    ];
    for (const [number, status, code] of cases) {
      const accountId = await usdAccount(number);
      const e = envelope(await lookup(accountId, { customerId: sender.id }), status, code);
      expect(e.details).toMatchObject({ accountId, sandboxTrigger: true });
    }
    const before = await t.store.db.selectFrom('lookups').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    await lookup(await usdAccount('200000412'), { customerId: sender.id });
    const after = await t.store.db.selectFrom('lookups').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    expect(Number(after.n)).toBe(Number(before.n)); // a failed lookup stores nothing
  });

  it('is in the served OpenAPI document with Basic security only', async () => {
    const doc = (await t.call('GET', '/openapi.json', undefined, { authorization: '' })).json() as {
      paths: Record<string, Record<string, { operationId: string; security: unknown; responses: Record<string, unknown> }>>;
    };
    const op = doc.paths['/receiver/external-account/{accountId}']!.get!;
    expect(op.operationId).toBe('lookupExternalAccount');
    expect(op.security).toEqual([{ BasicAuth: [] }]);
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '404', '412', '424', '500']));
  });
});
