import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listEvents } from '../../src/kernel/events.js';
import { ADMIN_KEY, basic, envelope, makeApp, STORE, type TestApp, waitFor } from '../helpers.js';
import { Receiver } from '../webhook-receiver.js';

// The Customers area, black box: create, read, list, update, delete; validation that
// lists every invalid field; end-user terms; conflicts; permissions; and the sandbox's
// KYC outcome at create (regulated platforms and "Skip verification paperwork").

type Json = Record<string, unknown>;
interface Customer extends Json {
  id: string;
  platformCustomerId: string;
  customerType: 'INDIVIDUAL' | 'BUSINESS';
  umaAddress: string;
  currencies: string[];
  isDeleted: boolean;
  createdAt: string;
  updatedAt: string;
  kycStatus?: string;
  kybStatus?: string;
  fullName?: string;
}
interface List {
  data: Customer[];
  hasMore: boolean;
  nextCursor?: string;
  totalCount: number;
}
interface FieldError {
  field: string;
  message: string;
  constraint?: { format?: string; pattern?: string; enum?: string[]; minLength?: number; maxLength?: number };
}

const CUSTOMER_ID = /^Customer:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ADMIN = { authorization: `Bearer ${ADMIN_KEY}` };
const SSN = '123-45-6789';

const CONSENT = { acceptedAt: '2025-10-13T11:59:00.000Z', ipAddress: '198.51.100.24', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' };

const EDD = {
  sourceOfFundsCategories: ['SALARY', 'OTHER'],
  sourceOfFundsOtherDescription: 'Contest winnings',
  sourceOfWealthCategories: ['SALARY', 'INVESTMENTS', 'OTHER'],
  sourceOfWealthOtherDescription: 'Royalty income from published works',
  purposeOfAccount: 'OTHER',
  purposeOfAccountOtherDescription: 'Household budgeting between spouses',
  expectedMonthlyTransactionCount: 'COUNT_10_TO_100',
  expectedMonthlyTransactionVolume: 'VOLUME_10K_TO_100K',
  annualIncomeRange: 'RANGE_100K_250K',
  netWorthRange: 'RANGE_500K_1M',
  pepStatus: 'NONE',
};

const ADDRESS = { line1: '123 Main Street', line2: 'Apt 4B', city: 'San Francisco', state: 'CA', postalCode: '94105', country: 'US' };

const BUSINESS_INFO = {
  legalName: 'Acme Corporation',
  doingBusinessAs: 'Acme',
  country: 'US',
  registrationNumber: '5523041',
  incorporatedOn: '2018-03-14',
  entityType: 'LLC',
  taxId: '47-1234567',
  countriesOfOperation: ['US'],
  businessType: 'INFORMATION',
  purposeOfAccount: 'CONTRACTOR_PAYOUTS',
  sourceOfFunds: 'Funds derived from customer payments for software services',
  expectedMonthlyTransactionCount: 'COUNT_100_TO_500',
  expectedMonthlyTransactionVolume: 'VOLUME_100K_TO_1M',
  expectedRecipientJurisdictions: ['US', 'MX'],
};

function individual(overrides: Json = {}): Json {
  return { customerType: 'INDIVIDUAL', fullName: 'Jane Smith', birthDate: '1990-01-15', nationality: 'US', ...overrides };
}

function business(overrides: Json = {}): Json {
  return { customerType: 'BUSINESS', region: 'US', businessInfo: { ...BUSINESS_INFO }, address: { ...ADDRESS }, ...overrides };
}

async function create(t: TestApp, body: Json, headers?: Record<string, string>): Promise<Customer> {
  const res = await t.call('POST', '/customers', body, headers);
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as Customer;
}

async function get(t: TestApp, id: string, headers?: Record<string, string>): Promise<Customer> {
  const res = await t.call('GET', `/customers/${id}`, undefined, headers);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as Customer;
}

async function patch(t: TestApp, id: string, body: Json, headers?: Record<string, string>): Promise<Customer> {
  const res = await t.call('PATCH', `/customers/${id}`, body, headers);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as Customer;
}

async function list(t: TestApp, query = '', headers?: Record<string, string>): Promise<List> {
  const res = await t.call('GET', `/customers${query ? `?${query}` : ''}`, undefined, headers);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as List;
}

/** Every customer of the platform, deleted ones too. */
async function count(t: TestApp, headers?: Record<string, string>): Promise<number> {
  return (await list(t, 'isIncludingDeleted=true', headers)).totalCount;
}

function fieldErrors(res: LightMyRequestResponse): FieldError[] {
  const e = envelope(res, 400, 'INVALID_INPUT');
  return (e.details as { errors: FieldError[] }).errors;
}

function byField(errors: FieldError[]): Record<string, FieldError> {
  return Object.fromEntries(errors.map((e) => [e.field, e]));
}

async function umaDomainOf(t: TestApp, headers?: Record<string, string>): Promise<string> {
  const res = await t.call('GET', '/config', undefined, headers);
  expect(res.statusCode).toBe(200);
  return (res.json() as { umaDomain: string }).umaDomain;
}

interface NewPlatform {
  id: string;
  auth: { authorization: string };
}

async function newPlatform(t: TestApp, body: Json): Promise<NewPlatform> {
  const res = await t.call('POST', '/admin/platforms', body, ADMIN);
  expect(res.statusCode, res.body).toBe(201);
  const created = res.json() as { platform: { id: string }; credentials: { clientId: string; clientSecret: string } };
  return { id: created.platform.id, auth: { authorization: basic(created.credentials.clientId, created.credentials.clientSecret) } };
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function expectNoIdentifier(res: LightMyRequestResponse): void {
  expect(res.body).not.toContain('identifier');
  expect(res.body).not.toContain(SSN);
  expect(res.body).not.toContain('123456789');
}

describe(`POST /customers and GET /customers/{id} (${STORE})`, () => {
  let t: TestApp;
  let umaDomain: string;
  beforeAll(async () => {
    t = await makeApp();
    umaDomain = await umaDomainOf(t);
  });
  afterAll(async () => t.close());

  it('creates an individual with every field and echoes each one, identifier excepted', async () => {
    const body = individual({
      platformCustomerId: 'ind-9f84e0c2',
      region: 'US',
      currencies: ['USD', 'USDC'],
      email: 'jane.smith@example.com',
      phoneNumber: '+14155551234',
      umaAddress: `$jane.smith@${umaDomain}`,
      address: { ...ADDRESS },
      idType: 'SSN',
      identifier: SSN,
      countryOfIssuance: 'US',
      endUserTermsConsent: { ...CONSENT },
      ...EDD,
    });
    const at = new Date(t.clock.nowMs()).toISOString();
    const res = await t.call('POST', '/customers', body);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expectNoIdentifier(res);
    const c = res.json() as Customer;
    expect(c.id).toMatch(CUSTOMER_ID);
    const { identifier: _written, ...echoed } = body;
    expect(c).toEqual({ ...echoed, id: c.id, kycStatus: 'UNVERIFIED', isDeleted: false, createdAt: at, updatedAt: at });
    expect(c).not.toHaveProperty('kybStatus');
    expect(c).not.toHaveProperty('beneficialOwners');
    expect(c).not.toHaveProperty('contactVerification');

    const got = await t.call('GET', `/customers/${c.id}`);
    expect(got.statusCode).toBe(200);
    expectNoIdentifier(got);
    expect(got.json()).toEqual(c);

    const listed = await t.call('GET', `/customers?platformCustomerId=ind-9f84e0c2`);
    expectNoIdentifier(listed);
    expect((listed.json() as List).data).toEqual([c]);

    const updated = await t.call('PATCH', `/customers/${c.id}`, { customerType: 'INDIVIDUAL', idType: 'SSN', identifier: '234-56-7890' });
    expect(updated.statusCode, updated.body).toBe(200);
    expectNoIdentifier(updated);
    expect(updated.body).not.toContain('234-56-7890');
    expect(updated.json()).toEqual({ ...c, updatedAt: expect.any(String) });
  });

  it('generates platformCustomerId and umaAddress (on the platform UMA domain) when absent', async () => {
    const a = await create(t, { customerType: 'INDIVIDUAL' });
    const b = await create(t, individual());
    for (const c of [a, b]) {
      expect(c.platformCustomerId).toEqual(expect.any(String));
      expect(c.platformCustomerId.length).toBeGreaterThan(0);
      expect(c.umaAddress).toMatch(new RegExp(`^\\$[^@\\s]+@${escapeRe(umaDomain)}$`));
      expect(c.kycStatus).toBe('UNVERIFIED');
      expect(c.currencies.length).toBeGreaterThan(0);
    }
    expect(a.platformCustomerId).not.toBe(b.platformCustomerId);
    expect(a.umaAddress).not.toBe(b.umaAddress);
  });

  it('creates a business with businessInfo: kybStatus UNVERIFIED and no beneficial owners yet', async () => {
    const body = business({ platformCustomerId: 'biz-acme-001', currencies: ['USD', 'USDC'], email: 'finance@acme.com', phoneNumber: '+14155559876' });
    const res = await t.call('POST', '/customers', body);
    expect(res.statusCode, res.body).toBe(201);
    const c = res.json() as Customer;
    expect(c.id).toMatch(CUSTOMER_ID);
    expect(c).toMatchObject({ ...body, kybStatus: 'UNVERIFIED', beneficialOwners: [], isDeleted: false });
    expect(c.businessInfo).toEqual(BUSINESS_INFO);
    expect(c).not.toHaveProperty('kycStatus');
    expect(c).not.toHaveProperty('fullName');
    expect(c.umaAddress).toMatch(new RegExp(`@${escapeRe(umaDomain)}$`));
    expect(await get(t, c.id)).toEqual(c);
  });

  it('shows contactVerification only for customers in a region that mandates it', async () => {
    const eu = await create(t, individual({ region: 'DE', email: 'anna@example.de', phoneNumber: '+4915123456789', currencies: ['EUR'] }));
    expect(eu.contactVerification).toEqual({ email: 'PENDING', phone: 'PENDING' });
    const us = await create(t, individual({ region: 'US', email: 'joe@example.com', phoneNumber: '+14155550000' }));
    expect(us).not.toHaveProperty('contactVerification');
  });

  it('answers 404 USER_NOT_FOUND for an unknown customer', async () => {
    const id = 'Customer:01950000-0000-7000-8000-000000000000';
    const e = envelope(await t.call('GET', `/customers/${id}`), 404, 'USER_NOT_FOUND');
    expect(e.message).toContain(id);
    envelope(await t.call('GET', '/customers/not-an-id'), 404, 'USER_NOT_FOUND');
    envelope(await t.call('PATCH', `/customers/${id}`, { customerType: 'INDIVIDUAL', fullName: 'X' }), 404, 'USER_NOT_FOUND');
    envelope(await t.call('DELETE', `/customers/${id}`), 404, 'USER_NOT_FOUND');
  });

  it("hides another platform's customer behind the same 404 as an unknown one", async () => {
    const other = await newPlatform(t, { name: 'Other platform' });
    const theirs = await create(t, individual({ platformCustomerId: 'theirs-1' }), other.auth);
    expect(await get(t, theirs.id, other.auth)).toEqual(theirs);

    const unknownId = 'Customer:01950000-0000-7000-8000-00000000abcd';
    const unknown = envelope(await t.call('GET', `/customers/${unknownId}`), 404, 'USER_NOT_FOUND');
    const foreign = await t.call('GET', `/customers/${theirs.id}`);
    const e = envelope(foreign, 404, 'USER_NOT_FOUND');
    expect(e).toEqual({ ...unknown, message: unknown.message.replace(unknownId, theirs.id) });
    expect(foreign.body).not.toContain('Jane');

    envelope(await t.call('PATCH', `/customers/${theirs.id}`, { customerType: 'INDIVIDUAL', fullName: 'Hijack' }), 404, 'USER_NOT_FOUND');
    envelope(await t.call('DELETE', `/customers/${theirs.id}`), 404, 'USER_NOT_FOUND');
    expect((await list(t, 'platformCustomerId=theirs-1')).totalCount).toBe(0);
    expect(await get(t, theirs.id, other.auth)).toEqual(theirs);
  });
});

describe(`customer validation (${STORE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp();
    await create(t, individual());
  });
  afterAll(async () => t.close());

  async function rejected(body: unknown): Promise<FieldError[]> {
    const before = await count(t);
    const errors = fieldErrors(await t.call('POST', '/customers', body));
    expect(await count(t), 'nothing is written on a 400').toBe(before);
    return errors;
  }

  it('lists every invalid field in one 400, each with its constraint', async () => {
    const errors = await rejected(
      individual({
        fullName: '',
        birthDate: '1990-02-30',
        nationality: 'XX',
        region: 'QQ',
        email: 'not-an-email',
        phoneNumber: '4155551234',
        address: { line1: '1 Main St', postalCode: '94105', country: 'USA' },
        idType: 'SSN',
        identifier: '000-12-3456',
        pepStatus: 'MAYBE',
        annualIncomeRange: 'A_LOT',
        sourceOfFundsCategories: ['SALARY', 'LOTTERY'],
      }),
    );
    const f = byField(errors);
    expect(Object.keys(f).sort()).toEqual(
      ['address.country', 'annualIncomeRange', 'birthDate', 'email', 'fullName', 'identifier', 'nationality', 'pepStatus', 'phoneNumber', 'region', 'sourceOfFundsCategories.1'].sort(),
    );
    expect(f.fullName!.constraint).toEqual({ minLength: 1 });
    expect(f.birthDate!.constraint).toEqual({ format: 'date' });
    expect(f.nationality!.constraint).toEqual({ format: 'iso3166-1-alpha-2' });
    expect(f.region!.constraint).toEqual({ format: 'iso3166-1-alpha-2' });
    expect(f['address.country']!.constraint).toEqual({ format: 'iso3166-1-alpha-2' });
    expect(f.email!.constraint).toEqual({ format: 'email' });
    expect(f.phoneNumber!.constraint).toEqual({ format: 'e.164' });
    expect(f.identifier!.constraint).toEqual({ format: 'us-ssn' });
    expect(f.pepStatus!.constraint!.enum).toEqual(['NONE', 'DOMESTIC', 'FOREIGN', 'HIO', 'FAMILY_OR_ASSOCIATE']);
    expect(f.annualIncomeRange!.constraint!.enum).toEqual(['UNDER_50K', 'RANGE_50K_100K', 'RANGE_100K_250K', 'RANGE_250K_1M', 'OVER_1M']);
    expect(f['sourceOfFundsCategories.1']!.constraint!.enum).toContain('SALARY');
    for (const e of errors) expect(e.message).toEqual(expect.any(String));
  });

  it('checks an SSN identifier (us-ssn), alone or with other problems', async () => {
    for (const identifier of ['000-12-3456', 'abc', '123-456-789']) {
      const errors = await rejected(individual({ idType: 'SSN', identifier }));
      expect(errors).toEqual([{ field: 'identifier', message: expect.any(String), constraint: { format: 'us-ssn' } }]);
    }
    const errors = await rejected(individual({ idType: 'SSN', identifier: 'abc', birthDate: 'yesterday', currencies: ['USD', 'JPY'] }));
    expect(byField(errors)).toEqual({
      identifier: expect.objectContaining({ constraint: { format: 'us-ssn' } }),
      birthDate: expect.objectContaining({ constraint: { format: 'date' } }),
      'currencies.1': expect.objectContaining({ constraint: expect.objectContaining({ enum: expect.arrayContaining(['USD']) }) }),
    });
  });

  it('enforces minLength and maxLength on fullName', async () => {
    expect(await rejected(individual({ fullName: '' }))).toEqual([{ field: 'fullName', message: expect.any(String), constraint: { minLength: 1 } }]);
    const long = await rejected(individual({ fullName: 'x'.repeat(256) }));
    expect(long).toEqual([{ field: 'fullName', message: expect.any(String), constraint: { maxLength: 255 } }]);
    await create(t, individual({ fullName: 'x'.repeat(255) }));
  });

  it('requires customerType and names its values when unknown', async () => {
    expect(await rejected({ fullName: 'Jane Smith' })).toEqual([{ field: 'customerType', message: expect.any(String) }]);
    const unknown = await rejected({ customerType: 'ROBOT', fullName: 'Jane Smith' });
    expect(unknown).toEqual([{ field: 'customerType', message: expect.any(String), constraint: { enum: ['INDIVIDUAL', 'BUSINESS'] } }]);
    expect(byField(await rejected({ customerType: 'individual' })).customerType!.constraint).toEqual({ enum: ['INDIVIDUAL', 'BUSINESS'] });
  });

  it('does not let a body it refuses use up an Idempotency-Key', async () => {
    const key = { 'idempotency-key': 'customer-invalid-then-fixed' };
    const bad = await t.call('POST', '/customers', individual({ birthDate: 'soon', idType: 'SSN', identifier: 'abc' }), key);
    expect(fieldErrors(bad).map((e) => e.field).sort()).toEqual(['birthDate', 'identifier']);
    const fixed = await t.call('POST', '/customers', individual({ platformCustomerId: 'idem-fixed' }), key);
    expect(fixed.statusCode, fixed.body).toBe(201);
    expect(fixed.headers['idempotent-replayed']).toBeUndefined();
    const again = await t.call('POST', '/customers', individual({ platformCustomerId: 'idem-fixed' }), key);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toBe(fixed.body);
  });

  it('rejects a body that is not an object', async () => {
    for (const body of ['[]', '"x"', '42']) {
      const errors = await rejected(body);
      expect(errors.length).toBeGreaterThan(0);
    }
  });

  it("requires a business's businessInfo and its required fields", async () => {
    expect(await rejected({ customerType: 'BUSINESS' })).toEqual([{ field: 'businessInfo', message: expect.any(String) }]);
    const errors = await rejected({ customerType: 'BUSINESS', businessInfo: { legalName: 'Acme' } });
    expect(errors.map((e) => e.field).sort()).toEqual(['businessInfo.country', 'businessInfo.incorporatedOn', 'businessInfo.taxId']);
    const bad = await rejected(business({ businessInfo: { ...BUSINESS_INFO, legalName: '', country: 'XX', incorporatedOn: '2018-13-01', entityType: 'GUILD' } }));
    const f = byField(bad);
    expect(Object.keys(f).sort()).toEqual(['businessInfo.country', 'businessInfo.entityType', 'businessInfo.incorporatedOn', 'businessInfo.legalName']);
    expect(f['businessInfo.country']!.constraint).toEqual({ format: 'iso3166-1-alpha-2' });
    expect(f['businessInfo.incorporatedOn']!.constraint).toEqual({ format: 'date' });
    expect(f['businessInfo.legalName']!.constraint).toEqual({ minLength: 1 });
    expect(f['businessInfo.entityType']!.constraint!.enum).toContain('LLC');
  });

  it('rejects currencies the platform does not support, naming currencies.N', async () => {
    const errors = await rejected(individual({ currencies: ['USD', 'JPY', 'EUR', 'CHF'] }));
    expect(errors.map((e) => e.field)).toEqual(['currencies.1', 'currencies.3']);
    const supported = (await t.call('GET', '/config')).json().supportedCurrencies.map((c: { currencyCode: string }) => c.currencyCode) as string[];
    expect(errors[0]!.constraint!.enum).toEqual(supported);
    expect(errors[0]!.message).toContain('JPY');
    expect(errors[1]!.message).toContain('CHF');
  });

  it('follows PATCH /config at once: a currency dropped is refused by the next create, added back accepted', async () => {
    const original = (await t.call('GET', '/config')).json().supportedCurrencies as Array<{ currencyCode: string }>;
    expect(original.map((c) => c.currencyCode)).toContain('EUR');
    expect((await t.call('POST', '/customers', individual({ currencies: ['EUR'] }))).statusCode).toBe(201);
    try {
      const narrowed = await t.call('PATCH', '/config', { supportedCurrencies: original.filter((c) => c.currencyCode !== 'EUR') });
      expect(narrowed.statusCode, narrowed.body).toBe(200);
      const errors = await rejected(individual({ currencies: ['USD', 'EUR'] }));
      expect(errors.map((e) => e.field)).toEqual(['currencies.1']);
      expect(errors[0]!.constraint!.enum).not.toContain('EUR');
    } finally {
      const restored = await t.call('PATCH', '/config', { supportedCurrencies: original });
      expect(restored.statusCode, restored.body).toBe(200);
    }
    expect((await t.call('POST', '/customers', individual({ currencies: ['EUR'] }))).statusCode).toBe(201);
  });

  it('accepts the enhanced due diligence fields with the reference enums only', async () => {
    const c = await create(t, individual(EDD));
    expect(c).toMatchObject(EDD);
    for (const [field, value] of [
      ['sourceOfWealthCategories', ['LOTTERY']],
      ['purposeOfAccount', 'FUN'],
      ['expectedMonthlyTransactionCount', 'COUNT_MANY'],
      ['expectedMonthlyTransactionVolume', 'VOLUME_HUGE'],
      ['netWorthRange', 'RANGE_1B'],
    ] as const) {
      const errors = await rejected(individual({ [field]: value }));
      expect(errors).toHaveLength(1);
      expect(errors[0]!.field.startsWith(field), errors[0]!.field).toBe(true);
      expect(errors[0]!.constraint!.enum!.length).toBeGreaterThan(1);
    }
  });
});

describe(`end-user terms (${STORE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp();
  });
  afterAll(async () => t.close());

  it('GET /customers/end-user-terms gives version V1 and a URL that serves an HTML page', async () => {
    const res = await t.call('GET', '/customers/end-user-terms');
    expect(res.statusCode, res.body).toBe(200);
    const terms = res.json() as { version: string; url: string };
    expect(terms).toEqual({ version: 'V1', url: expect.any(String) });
    const url = new URL(terms.url);
    expect(url.protocol).toMatch(/^https?:$/);
    const page = await t.app.inject({ method: 'GET', url: url.pathname });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.body).toMatch(/^<!doctype html>/i);
    expect(page.body).toContain('V1');
  });

  it('records consent given on create, read-only on the customer', async () => {
    const c = await create(t, individual({ endUserTermsConsent: { ...CONSENT } }));
    expect(c.endUserTermsConsent).toEqual(CONSENT);
    expect((await get(t, c.id)).endUserTermsConsent).toEqual(CONSENT);
  });

  it('records consent given on PATCH', async () => {
    const c = await create(t, individual());
    expect(c).not.toHaveProperty('endUserTermsConsent');
    const consent = { ...CONSENT, acceptanceMethod: 'CLICK_TO_ACCEPT', acceptedAt: '2025-10-14T08:00:00.000Z' };
    const updated = await patch(t, c.id, { customerType: 'INDIVIDUAL', endUserTermsConsent: consent });
    expect(updated.endUserTermsConsent).toEqual(consent);
    expect(updated.fullName).toBe(c.fullName);
    expect((await get(t, c.id)).endUserTermsConsent).toEqual(consent);

    const biz = await create(t, business());
    expect((await patch(t, biz.id, { customerType: 'BUSINESS', endUserTermsConsent: consent })).endUserTermsConsent).toEqual(consent);
  });

  it('refuses an unsupported terms version with END_USER_TERMS_VERSION_NOT_FOUND and writes nothing', async () => {
    const before = await count(t);
    const e = envelope(await t.call('POST', '/customers', individual({ endUserTermsConsent: { ...CONSENT, termsVersion: 'V9' } })), 400, 'END_USER_TERMS_VERSION_NOT_FOUND');
    expect(e.message).toContain('V9');
    expect(await count(t)).toBe(before);

    const c = await create(t, individual());
    envelope(
      await t.call('PATCH', `/customers/${c.id}`, { customerType: 'INDIVIDUAL', fullName: 'Renamed', endUserTermsConsent: { ...CONSENT, termsVersion: 'v1' } }),
      400,
      'END_USER_TERMS_VERSION_NOT_FOUND',
    );
    expect(await get(t, c.id)).toEqual(c);
  });

  it('validates the consent object itself', async () => {
    const errors = fieldErrors(await t.call('POST', '/customers', individual({ endUserTermsConsent: { termsVersion: 'V1', acceptanceMethod: 'NOD', acceptedAt: 'today' } })));
    const f = byField(errors);
    expect(Object.keys(f).sort()).toEqual(['endUserTermsConsent.acceptanceMethod', 'endUserTermsConsent.acceptedAt', 'endUserTermsConsent.ipAddress']);
    expect(f['endUserTermsConsent.acceptanceMethod']!.constraint).toEqual({ enum: ['CHECKBOX', 'CLICK_TO_ACCEPT'] });
  });
});

describe(`conflicts (${STORE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp();
  });
  afterAll(async () => t.close());

  it('refuses a platformCustomerId held by an active customer, and allows it again once that one is deleted', async () => {
    const first = await create(t, individual({ platformCustomerId: 'dup-1' }));
    const before = await count(t);
    const e = envelope(await t.call('POST', '/customers', business({ platformCustomerId: 'dup-1' })), 409, 'CONFLICT');
    expect(e.message).toContain('dup-1');
    expect(await count(t)).toBe(before);

    const other = await create(t, individual({ platformCustomerId: 'dup-2' }));
    envelope(await t.call('PATCH', `/customers/${other.id}`, { customerType: 'INDIVIDUAL', platformCustomerId: 'dup-1' }), 409, 'CONFLICT');
    expect((await get(t, other.id)).platformCustomerId).toBe('dup-2');

    expect((await t.call('DELETE', `/customers/${first.id}`)).statusCode).toBe(200);
    const second = await create(t, individual({ platformCustomerId: 'dup-1' }));
    expect(second.id).not.toBe(first.id);
    const all = await list(t, 'platformCustomerId=dup-1&isIncludingDeleted=true');
    expect(all.data.map((c) => [c.id, c.isDeleted])).toEqual([
      [second.id, false],
      [first.id, true],
    ]);
  });

  it('allows the same platformCustomerId on another platform', async () => {
    await create(t, individual({ platformCustomerId: 'shared-ref' }));
    const other = await newPlatform(t, { name: 'Second platform' });
    await create(t, individual({ platformCustomerId: 'shared-ref' }), other.auth);
  });

  it('refuses a UMA address that is taken with UMA_ADDRESS_EXISTS', async () => {
    const domain = await umaDomainOf(t);
    const address = `$taken.name@${domain}`;
    const first = await create(t, individual({ umaAddress: address }));
    expect(first.umaAddress).toBe(address);
    const before = await count(t);
    const e = envelope(await t.call('POST', '/customers', individual({ umaAddress: address })), 409, 'UMA_ADDRESS_EXISTS');
    expect(e.message).toContain(address);
    expect(await count(t)).toBe(before);

    const other = await create(t, individual());
    envelope(await t.call('PATCH', `/customers/${other.id}`, { customerType: 'INDIVIDUAL', umaAddress: address }), 409, 'UMA_ADDRESS_EXISTS');
    expect((await get(t, other.id)).umaAddress).toBe(other.umaAddress);
    // Its own address is no conflict.
    expect((await patch(t, first.id, { customerType: 'INDIVIDUAL', umaAddress: address })).umaAddress).toBe(address);
  });
});

describe(`PATCH and DELETE /customers/{id} (${STORE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp();
  });
  afterAll(async () => t.close());

  it('changes only the fields sent', async () => {
    const c = await create(t, individual({ region: 'US', email: 'jane@example.com', address: { ...ADDRESS }, idType: 'SSN', identifier: SSN, currencies: ['USD'], ...EDD }));
    t.clock.advance(60_000);
    const at = new Date(t.clock.nowMs()).toISOString();
    const updated = await patch(t, c.id, { customerType: 'INDIVIDUAL', fullName: 'Jane Q. Smith' });
    expect(updated).toEqual({ ...c, fullName: 'Jane Q. Smith', updatedAt: at });
    expect(updated.createdAt).toBe(c.createdAt);
    expect(await get(t, c.id)).toEqual(updated);
  });

  it('replaces the address as a whole', async () => {
    const c = await create(t, individual({ address: { ...ADDRESS } }));
    const address = { line1: '456 Market St', postalCode: '98101', country: 'US' };
    const updated = await patch(t, c.id, { customerType: 'INDIVIDUAL', address });
    expect(updated.address).toEqual(address);
    expect(updated.fullName).toBe(c.fullName);
  });

  it('accepts the enhanced due diligence fields on update, and refuses values outside the enums', async () => {
    const c = await create(t, individual({ pepStatus: 'NONE', purposeOfAccount: 'P2P_TRANSFERS' }));
    const edd = {
      pepStatus: 'FOREIGN',
      annualIncomeRange: 'OVER_1M',
      netWorthRange: 'OVER_25M',
      sourceOfFundsCategories: ['INHERITANCE'],
      sourceOfWealthCategories: ['PROPERTY_SALE', 'OTHER'],
      sourceOfWealthOtherDescription: 'Art collection',
      expectedMonthlyTransactionCount: 'COUNT_OVER_1000',
      expectedMonthlyTransactionVolume: 'VOLUME_OVER_10M',
    };
    const updated = await patch(t, c.id, { customerType: 'INDIVIDUAL', ...edd });
    expect(updated).toMatchObject({ ...edd, purposeOfAccount: 'P2P_TRANSFERS', fullName: c.fullName });

    const errors = fieldErrors(await t.call('PATCH', `/customers/${c.id}`, { customerType: 'INDIVIDUAL', pepStatus: 'SOMETIMES', netWorthRange: 'HUGE', purposeOfAccount: 'GAMBLING' }));
    const f = byField(errors);
    expect(Object.keys(f).sort()).toEqual(['netWorthRange', 'pepStatus', 'purposeOfAccount']);
    expect(f.pepStatus!.constraint).toEqual({ enum: ['NONE', 'DOMESTIC', 'FOREIGN', 'HIO', 'FAMILY_OR_ASSOCIATE'] });
    expect(f.netWorthRange!.constraint).toEqual({ enum: ['UNDER_100K', 'RANGE_100K_500K', 'RANGE_500K_1M', 'RANGE_1M_5M', 'RANGE_5M_25M', 'OVER_25M'] });
    expect(f.purposeOfAccount!.constraint!.enum).toContain('CONTRACTOR_PAYOUTS');
    expect(await get(t, c.id)).toEqual(updated);
  });

  it('lists schema and service problems of an update together', async () => {
    const c = await create(t, individual({ idType: 'SSN', identifier: SSN }));
    const errors = fieldErrors(await t.call('PATCH', `/customers/${c.id}`, { customerType: 'INDIVIDUAL', email: 'nope', identifier: 'abc', currencies: ['JPY'] }));
    expect(byField(errors)).toEqual({
      email: expect.objectContaining({ constraint: { format: 'email' } }),
      identifier: expect.objectContaining({ constraint: { format: 'us-ssn' } }),
      'currencies.0': expect.objectContaining({ constraint: expect.objectContaining({ enum: expect.arrayContaining(['USD']) }) }),
    });
    expect(await get(t, c.id)).toEqual(c);
  });

  it('refuses a customerType that is not the customer’s', async () => {
    const c = await create(t, individual());
    const errors = fieldErrors(await t.call('PATCH', `/customers/${c.id}`, { customerType: 'BUSINESS', businessInfo: { legalName: 'Nope' } }));
    expect(errors).toEqual([{ field: 'customerType', message: expect.any(String), constraint: { enum: ['INDIVIDUAL'] } }]);
    const b = await create(t, business());
    const e2 = fieldErrors(await t.call('PATCH', `/customers/${b.id}`, { customerType: 'INDIVIDUAL', fullName: 'Nope' }));
    expect(e2).toEqual([{ field: 'customerType', message: expect.any(String), constraint: { enum: ['BUSINESS'] } }]);
    expect(fieldErrors(await t.call('PATCH', `/customers/${c.id}`, { fullName: 'No type' }))).toEqual([{ field: 'customerType', message: expect.any(String) }]);
    expect(await get(t, c.id)).toEqual(c);
    expect(await get(t, b.id)).toEqual(b);
  });

  it('merges businessInfo on a business update', async () => {
    const b = await create(t, business());
    const updated = await patch(t, b.id, { customerType: 'BUSINESS', businessInfo: { legalName: 'New Tech Solutions LLC', taxId: 'EIN-123456789' } });
    expect(updated.businessInfo).toEqual({ ...BUSINESS_INFO, legalName: 'New Tech Solutions LLC', taxId: 'EIN-123456789' });
    expect(updated.kybStatus).toBe('UNVERIFIED');
  });

  it('deletes softly: 200 with isDeleted, then 404 on PATCH and 410 on DELETE, still readable, listed only on request', async () => {
    const c = await create(t, individual({ platformCustomerId: 'to-delete' }));
    t.clock.advance(1_000);
    const res = await t.call('DELETE', `/customers/${c.id}`);
    expect(res.statusCode, res.body).toBe(200);
    const deleted = res.json() as Customer;
    expect(deleted).toEqual({ ...c, isDeleted: true, updatedAt: new Date(t.clock.nowMs()).toISOString() });

    envelope(await t.call('DELETE', `/customers/${c.id}`), 410, 'CUSTOMER_DELETED');
    // updateCustomerById declares no 410: a deleted customer is one that is not found.
    envelope(await t.call('PATCH', `/customers/${c.id}`, { customerType: 'INDIVIDUAL', fullName: 'Ghost' }), 404, 'USER_NOT_FOUND');
    expect(await get(t, c.id)).toEqual(deleted);

    expect((await list(t, 'platformCustomerId=to-delete')).data).toEqual([]);
    expect((await list(t, 'platformCustomerId=to-delete&isIncludingDeleted=false')).data).toEqual([]);
    expect((await list(t, 'platformCustomerId=to-delete&isIncludingDeleted=true')).data).toEqual([deleted]);
  });
});

describe(`GET /customers filters and pagination (${STORE})`, () => {
  let t: TestApp;
  let a: Customer;
  let b: Customer;
  let c: Customer;
  let d: Customer;
  const ids = (l: List) => l.data.map((x) => x.id);
  beforeAll(async () => {
    t = await makeApp();
    const domain = await umaDomainOf(t);
    a = await create(t, individual({ platformCustomerId: 'list-a', region: 'US', currencies: ['USD'] }));
    t.clock.advance(60_000);
    b = await create(t, business({ platformCustomerId: 'list-b', region: 'MX', currencies: ['MXN', 'USDC'] }));
    t.clock.advance(60_000);
    c = await create(t, individual({ platformCustomerId: 'list-c', region: 'BR', currencies: ['BRL', 'USD'], umaAddress: `$carla@${domain}` }));
    t.clock.advance(60_000);
    d = await create(t, individual({ platformCustomerId: 'list-d', region: 'US', currencies: ['USD'] }));
    await t.call('DELETE', `/customers/${d.id}`);
  });
  afterAll(async () => t.close());

  it('lists active customers newest first with totalCount', async () => {
    const l = await list(t);
    expect(ids(l)).toEqual([c.id, b.id, a.id]);
    expect(l.hasMore).toBe(false);
    expect(l).not.toHaveProperty('nextCursor');
    expect(l.totalCount).toBe(3);
    expect(ids(await list(t, 'isIncludingDeleted=true'))).toEqual([d.id, c.id, b.id, a.id]);
  });

  it('filters by customerType, platformCustomerId, region, currency and umaAddress', async () => {
    expect(ids(await list(t, 'customerType=BUSINESS'))).toEqual([b.id]);
    expect(ids(await list(t, 'customerType=INDIVIDUAL'))).toEqual([c.id, a.id]);
    expect(ids(await list(t, 'platformCustomerId=list-a'))).toEqual([a.id]);
    expect(ids(await list(t, 'platformCustomerId=list-z'))).toEqual([]);
    expect(ids(await list(t, 'region=MX'))).toEqual([b.id]);
    expect(ids(await list(t, 'region=US'))).toEqual([a.id]);
    expect(ids(await list(t, 'region=US&isIncludingDeleted=true'))).toEqual([d.id, a.id]);
    expect(ids(await list(t, 'currency=USD'))).toEqual([c.id, a.id]);
    expect(ids(await list(t, 'currency=USDC'))).toEqual([b.id]);
    expect(ids(await list(t, 'currency=EUR'))).toEqual([]);
    const uma = await list(t, `umaAddress=${encodeURIComponent(c.umaAddress)}`);
    expect(ids(uma)).toEqual([c.id]);
    expect(uma.totalCount).toBe(1);
    expect(ids(await list(t, 'customerType=INDIVIDUAL&currency=USD&region=BR'))).toEqual([c.id]);
  });

  it('filters by creation time, both bounds inclusive', async () => {
    const q = (s: string) => encodeURIComponent(s);
    expect(ids(await list(t, `createdAfter=${q(b.createdAt)}`))).toEqual([c.id, b.id]);
    expect(ids(await list(t, `createdBefore=${q(b.createdAt)}`))).toEqual([b.id, a.id]);
    expect(ids(await list(t, `createdAfter=${q(b.createdAt)}&createdBefore=${q(b.createdAt)}`))).toEqual([b.id]);
    const afterAll = new Date(Date.parse(c.createdAt) + 1).toISOString();
    expect((await list(t, `createdAfter=${q(afterAll)}`)).totalCount).toBe(0);
    // Another offset names the same instant.
    const bPlus2 = new Date(Date.parse(b.createdAt) + 2 * 3_600_000).toISOString().replace('Z', '+02:00');
    expect(ids(await list(t, `createdAfter=${q(bPlus2)}`))).toEqual([c.id, b.id]);
    fieldErrors(await t.call('GET', '/customers?createdAfter=yesterday'));
  });

  it('pages with limit and nextCursor', async () => {
    const p1 = await list(t, 'limit=2');
    expect(ids(p1)).toEqual([c.id, b.id]);
    expect(p1.hasMore).toBe(true);
    expect(p1.totalCount).toBe(3);
    expect(p1.nextCursor).toEqual(expect.any(String));
    const p2 = await list(t, `limit=2&cursor=${encodeURIComponent(p1.nextCursor!)}`);
    expect(ids(p2)).toEqual([a.id]);
    expect(p2.hasMore).toBe(false);
    expect(p2).not.toHaveProperty('nextCursor');
    expect(p2.totalCount).toBe(3);

    const one = await list(t, 'limit=1&customerType=INDIVIDUAL');
    expect(ids(one)).toEqual([c.id]);
    expect(one.totalCount).toBe(2);
    const rest = await list(t, `limit=1&customerType=INDIVIDUAL&cursor=${encodeURIComponent(one.nextCursor!)}`);
    expect(ids(rest)).toEqual([a.id]);
    expect(rest.hasMore).toBe(false);
  });

  it('refuses bad list parameters', async () => {
    expect(fieldErrors(await t.call('GET', '/customers?limit=0')).map((e) => e.field)).toEqual(['limit']);
    expect(fieldErrors(await t.call('GET', '/customers?limit=101')).map((e) => e.field)).toEqual(['limit']);
    const e = fieldErrors(await t.call('GET', '/customers?customerType=ROBOT'));
    expect(e).toEqual([{ field: 'customerType', message: expect.any(String), constraint: { enum: ['INDIVIDUAL', 'BUSINESS'] } }]);
    fieldErrors(await t.call('GET', '/customers?cursor=garbage'));
  });
});

describe(`permissions (${STORE})`, () => {
  let t: TestApp;
  let view: { authorization: string };
  let c: Customer;
  beforeAll(async () => {
    t = await makeApp();
    const res = await t.call('POST', '/tokens', { name: 'read only', permissions: ['VIEW'] });
    expect(res.statusCode, res.body).toBe(201);
    const tok = res.json() as { clientId: string; clientSecret: string };
    view = { authorization: basic(tok.clientId, tok.clientSecret) };
    c = await create(t, individual());
  });
  afterAll(async () => t.close());

  it('lets a VIEW-only token read', async () => {
    expect(await get(t, c.id, view)).toEqual(c);
    expect((await list(t, '', view)).totalCount).toBe(1);
    expect((await t.call('GET', '/customers/end-user-terms', undefined, view)).statusCode).toBe(200);
  });

  it('refuses a VIEW-only token every change with 401 (these operations declare no 403), naming the permission', async () => {
    const e = envelope(await t.call('POST', '/customers', individual(), view), 401, 'UNAUTHORIZED');
    expect(e.details).toEqual({ required: 'MANAGE', granted: ['VIEW'], reason: 'This API token lacks the MANAGE permission' });
    envelope(await t.call('PATCH', `/customers/${c.id}`, { customerType: 'INDIVIDUAL', fullName: 'Changed' }, view), 401, 'UNAUTHORIZED');
    envelope(await t.call('DELETE', `/customers/${c.id}`, undefined, view), 401, 'UNAUTHORIZED');
    // Even an invalid body is refused for the permission first.
    envelope(await t.call('POST', '/customers', { customerType: 'ROBOT' }, view), 401, 'UNAUTHORIZED');
    expect(await get(t, c.id)).toEqual(c);
    expect(await count(t)).toBe(1);
  });

  it('refuses requests without credentials', async () => {
    envelope(await t.call('GET', '/customers', undefined, { authorization: '' }), 401, 'UNAUTHORIZED');
    envelope(await t.call('POST', '/customers', individual(), { authorization: '' }), 401, 'UNAUTHORIZED');
  });
});

describe(`a create's status webhook (${STORE})`, () => {
  it('carries the answer byte for byte; its event is stored as text with the row values elided (issue 35)', async () => {
    const t = await makeApp({ worker: true });
    const receiver = await new Receiver().start();
    try {
      const p = await newPlatform(t, { name: 'Announcing platform', skipVerificationPaperwork: true });
      expect((await t.call('PATCH', '/config', { webhookEndpoint: receiver.url }, p.auth)).statusCode).toBe(200);
      // Characters a naive text substitution would mangle: `$` patterns, non-ASCII.
      const res = await t.call('POST', '/customers', individual({ fullName: "Zoë $& $' Dollar ✓" }), p.auth);
      expect(res.statusCode, res.body).toBe(201);
      const c = res.json() as Customer;
      expect(c.kycStatus).toBe('APPROVED');
      await waitFor(() => receiver.got.some((r) => r.json.type === 'CUSTOMER.KYC_APPROVED'));
      const hook = receiver.got.find((r) => r.json.type === 'CUSTOMER.KYC_APPROVED')!;
      const payload = JSON.parse(hook.body) as { id: string; type: string; timestamp: string; data: Customer };
      expect(payload.data).toEqual(c);
      // As stored: the event's own time (a delivery's `timestamp` is when it is sent).
      const [event] = await listEvents(t.store.db, p.id, { resourceId: c.id });
      expect(event!.payload).toEqual({ id: payload.id, type: 'CUSTOMER.KYC_APPROVED', timestamp: c.createdAt, data: c });
      const row = await t.store.db.selectFrom('events').select(['body']).where('id', '=', payload.id).executeTakeFirstOrThrow();
      const body = Buffer.from(row.body!);
      expect(body[0]).toBe(3);
      expect(body.toString('utf8')).not.toContain(c.id);
      expect(body.toString('utf8')).toContain('Zoë $& $\' Dollar ✓');
    } finally {
      await receiver.stop();
      await t.close();
    }
  });
});

describe(`sandbox KYC at create (${STORE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp();
  });
  afterAll(async () => t.close());

  const CASES: Array<[string, string, string | undefined]> = [
    ['Ann Tester 001', 'PENDING', 'CUSTOMER.KYC_PENDING'],
    ['Ann Tester 002', 'REJECTED', 'CUSTOMER.KYC_REJECTED'],
    ['Ann Tester 003', 'UNVERIFIED', undefined],
    ['Ann Tester', 'APPROVED', 'CUSTOMER.KYC_APPROVED'],
    ['Ann Tester 004', 'APPROVED', 'CUSTOMER.KYC_APPROVED'],
  ];

  async function eventsOf(platformId: string, resourceId: string) {
    return listEvents(t.store.db, platformId, { resourceId });
  }

  it('leaves every individual UNVERIFIED on the default (unregulated) platform, with no event', async () => {
    const platformId = ((await t.call('GET', '/admin/platforms', undefined, ADMIN)).json() as { data: Array<{ id: string; isDefault: boolean }> }).data.find(
      (p) => p.isDefault,
    )!.id;
    for (const [fullName] of CASES) {
      const c = await create(t, individual({ fullName }));
      expect(c.kycStatus, fullName).toBe('UNVERIFIED');
      expect(await eventsOf(platformId, c.id)).toEqual([]);
    }
  });

  it('resolves individuals by the last 3 characters of fullName on a regulated platform, with an event', async () => {
    const p = await newPlatform(t, { name: 'Regulated bank', regulated: true });
    expect((await t.call('GET', '/config', undefined, p.auth)).json().isRegulatedFinancialInstitution).toBe(true);
    for (const [fullName, status, event] of CASES) {
      const c = await create(t, individual({ fullName }), p.auth);
      expect(c.kycStatus, fullName).toBe(status);
      expect((await get(t, c.id, p.auth)).kycStatus).toBe(status);
      const events = await eventsOf(p.id, c.id);
      if (event === undefined) {
        expect(events).toEqual([]);
      } else {
        expect(events.map((e) => e.type)).toEqual([event]);
        expect(events[0]!.payload.type).toBe(event);
        expect(events[0]!.payload.data).toMatchObject({ id: c.id, kycStatus: status, fullName });
        expect(JSON.stringify(events[0]!.payload)).not.toContain('identifier');
      }
    }
    const biz = await create(t, business({ businessInfo: { ...BUSINESS_INFO, registrationNumber: 'REG-999' } }), p.auth);
    expect(biz.kybStatus).toBe('UNVERIFIED');
    expect(await eventsOf(p.id, biz.id)).toEqual([]);
  });

  it('never overwrites a settled result when the customer is renamed', async () => {
    const p = await newPlatform(t, { name: 'Regulated renames', regulated: true });
    const approved = await create(t, individual({ fullName: 'Sam Settled' }), p.auth);
    const rejected = await create(t, individual({ fullName: 'Rita Refused 002' }), p.auth);
    expect([approved.kycStatus, rejected.kycStatus]).toEqual(['APPROVED', 'REJECTED']);
    const a2 = await patch(t, approved.id, { customerType: 'INDIVIDUAL', fullName: 'Sam Settled 002' }, p.auth);
    const r2 = await patch(t, rejected.id, { customerType: 'INDIVIDUAL', fullName: 'Rita Refused 999' }, p.auth);
    expect([a2.fullName, a2.kycStatus]).toEqual(['Sam Settled 002', 'APPROVED']);
    expect([r2.fullName, r2.kycStatus]).toEqual(['Rita Refused 999', 'REJECTED']);
    expect((await get(t, approved.id, p.auth)).kycStatus).toBe('APPROVED');
    expect((await get(t, rejected.id, p.auth)).kycStatus).toBe('REJECTED');
    expect((await eventsOf(p.id, approved.id)).map((e) => e.type)).toEqual(['CUSTOMER.KYC_APPROVED']);
    expect((await eventsOf(p.id, rejected.id)).map((e) => e.type)).toEqual(['CUSTOMER.KYC_REJECTED']);
  });

  it('resolves at create once Skip verification paperwork is on; earlier customers keep their status', async () => {
    const p = await newPlatform(t, { name: 'Skipping platform' });
    const before = await create(t, individual({ fullName: 'Early Bird' }), p.auth);
    expect(before.kycStatus).toBe('UNVERIFIED');

    const res = await t.call('PATCH', `/admin/platforms/${p.id}`, { skipVerificationPaperwork: true }, ADMIN);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id: p.id, regulated: false, skipVerificationPaperwork: true });

    for (const [fullName, status, event] of CASES) {
      const c = await create(t, individual({ fullName }), p.auth);
      expect(c.kycStatus, fullName).toBe(status);
      expect((await eventsOf(p.id, c.id)).map((e) => e.type)).toEqual(event ? [event] : []);
    }
    expect((await get(t, before.id, p.auth)).kycStatus).toBe('UNVERIFIED');
    const biz = await create(t, business(), p.auth);
    expect(biz.kybStatus).toBe('UNVERIFIED');

    await t.call('PATCH', `/admin/platforms/${p.id}`, { skipVerificationPaperwork: false }, ADMIN);
    expect((await create(t, individual({ fullName: 'Late Comer' }), p.auth)).kycStatus).toBe('UNVERIFIED');
  });

  it('cannot make a platform regulated after creation', async () => {
    const p = await newPlatform(t, { name: 'Stays unregulated' });
    fieldErrors(await t.call('PATCH', `/admin/platforms/${p.id}`, { regulated: true }, ADMIN));
    expect((await create(t, individual({ fullName: 'Still Unverified' }), p.auth)).kycStatus).toBe('UNVERIFIED');
  });
});

describe(`internal accounts of a new customer (${STORE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp();
  });
  afterAll(async () => t.close());

  const three = ['USD', 'EUR', 'MXN'].map((currencyCode) => ({
    currencyCode,
    minAmount: 100,
    maxAmount: 1_000_000,
    requiredCounterpartyFields: [{ name: 'FULL_NAME', mandatory: true }],
    enabledTransactionTypes: ['OUTGOING', 'INCOMING'],
  }));

  async function accountCurrencies(id: string, headers?: Record<string, string>): Promise<string[]> {
    const res = await t.call('GET', `/customers/internal-accounts?customerId=${encodeURIComponent(id)}`, undefined, headers);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json() as { data: Array<{ customerId: string; balance: { currency: { code: string } } }>; totalCount: number };
    expect(body.data.every((a) => a.customerId === id)).toBe(true);
    expect(body.totalCount).toBe(body.data.length);
    return body.data.map((a) => a.balance.currency.code).sort();
  }

  // Consent is on file in every create here, so the accounts open at create on this
  // unregulated platform (the test is about which currencies, not when).
  it('without currencies, gets every currency configured on the platform and one account in each', async () => {
    const p = await newPlatform(t, { name: 'Three currency platform' });
    const res = await t.call('PATCH', '/config', { supportedCurrencies: three }, p.auth);
    expect(res.statusCode, res.body).toBe(200);

    const c = await create(t, individual({ endUserTermsConsent: { ...CONSENT } }), p.auth);
    expect(c.currencies).toEqual(['USD', 'EUR', 'MXN']);
    expect(await accountCurrencies(c.id, p.auth)).toEqual(['EUR', 'MXN', 'USD']);
    const biz = await create(t, business({ endUserTermsConsent: { ...CONSENT } }), p.auth);
    expect(biz.currencies).toEqual(['USD', 'EUR', 'MXN']);
    expect(await accountCurrencies(biz.id, p.auth)).toEqual(['EUR', 'MXN', 'USD']);
  });

  it('the default platform: all nine of its currencies', async () => {
    const c = await create(t, individual({ endUserTermsConsent: { ...CONSENT } }));
    expect(c.currencies).toEqual(['USD', 'EUR', 'MXN', 'BRL', 'GBP', 'INR', 'USDC', 'USDT', 'BTC']);
    expect(await accountCurrencies(c.id)).toEqual(['BRL', 'BTC', 'EUR', 'GBP', 'INR', 'MXN', 'USD', 'USDC', 'USDT']);
  });

  it('an explicit list wins: only the currencies named', async () => {
    const c = await create(t, individual({ currencies: ['EUR', 'USDC'], endUserTermsConsent: { ...CONSENT } }));
    expect(c.currencies).toEqual(['EUR', 'USDC']);
    expect(await accountCurrencies(c.id)).toEqual(['EUR', 'USDC']);
  });
});

describe(`UMA address username length (${STORE})`, () => {
  let t: TestApp;
  let domain: string;
  beforeAll(async () => {
    t = await makeApp();
    domain = await umaDomainOf(t);
  });
  afterAll(async () => t.close());

  // The username is the part before '@', '$' included: at most 64 characters.
  const username = (length: number) => `$${'a'.repeat(length - 1)}`;

  it('accepts a 64-character username on create and update', async () => {
    const c = await create(t, individual({ umaAddress: `${username(64)}@${domain}` }));
    expect(c.umaAddress).toBe(`${username(64)}@${domain}`);
    const other = await create(t, individual());
    const address = `$${'b'.repeat(63)}@${domain}`;
    expect((await patch(t, other.id, { customerType: 'INDIVIDUAL', umaAddress: address })).umaAddress).toBe(address);
  });

  it('refuses a 65-character username with INVALID_INPUT on umaAddress, with the other invalid fields, writing nothing', async () => {
    const before = await count(t);
    const errors = fieldErrors(await t.call('POST', '/customers', individual({ umaAddress: `${username(65)}@${domain}`, email: 'nope' })));
    expect(errors.map((e) => e.field).sort()).toEqual(['email', 'umaAddress']);
    const uma = byField(errors).umaAddress!;
    expect(uma.constraint?.pattern).toEqual(expect.any(String));
    expect(new RegExp(uma.constraint!.pattern!).test(`${username(64)}@${domain}`)).toBe(true);
    expect(new RegExp(uma.constraint!.pattern!).test(`${username(65)}@${domain}`)).toBe(false);
    expect(await count(t)).toBe(before);

    const c = await create(t, individual());
    const patched = fieldErrors(await t.call('PATCH', `/customers/${c.id}`, { customerType: 'INDIVIDUAL', umaAddress: `${username(65)}@${domain}` }));
    expect(patched.map((e) => e.field)).toEqual(['umaAddress']);
    expect(await get(t, c.id)).toEqual(c);
    const biz = fieldErrors(await t.call('POST', '/customers', business({ umaAddress: `${username(100)}@${domain}` })));
    expect(biz.map((e) => e.field)).toEqual(['umaAddress']);
    expect(await count(t)).toBe(before + 1);
  });

  it("accepts a domain other than the platform's UMA domain (not checked, see docs/decisions.md)", async () => {
    const c = await create(t, individual({ umaAddress: '$john.sender@mycompany.com' }));
    expect(c.umaAddress).toBe('$john.sender@mycompany.com');

  });
});

describe(`an individual's identifier is write-only (${STORE})`, () => {
  it('is in no answer and no CUSTOMER.* payload, and is kept only as far as verification needs (presence, last 4)', async () => {
    const t = await makeApp();
    try {
      // Resolved at create (no paperwork), so the create announces CUSTOMER.KYC_APPROVED.
      const p = await newPlatform(t, { name: 'No paperwork', skipVerificationPaperwork: true });
      const res = await t.call('POST', '/customers', individual({ fullName: 'Iris Written', address: { ...ADDRESS }, idType: 'SSN', identifier: SSN }), p.auth);
      expect(res.statusCode, res.body).toBe(201);
      expectNoIdentifier(res);
      const c = res.json() as Customer;
      expect(c.kycStatus).toBe('APPROVED');
      const updated = await t.call('PATCH', `/customers/${c.id}`, { customerType: 'INDIVIDUAL', identifier: '234-56-7890' }, p.auth);
      expect(updated.statusCode, updated.body).toBe(200);
      expectNoIdentifier(updated);
      expect(updated.body).not.toContain('234-56');
      for (const read of [await t.call('GET', `/customers/${c.id}`, undefined, p.auth), await t.call('GET', '/customers', undefined, p.auth)]) {
        expect(read.statusCode).toBe(200);
        expectNoIdentifier(read);
        expect(read.body).not.toContain('234-56');
      }
      const events = await listEvents(t.store.db, p.id, { resourceId: c.id });
      expect(events.map((e) => e.type)).toEqual(['CUSTOMER.KYC_APPROVED']);
      expect(events[0]!.payload.data).toMatchObject({ id: c.id, idType: 'SSN', kycStatus: 'APPROVED' });
      expect(JSON.stringify(events[0]!.payload)).not.toContain('identifier');
      expect(JSON.stringify(events[0]!.payload)).not.toContain(SSN);

      // At rest: its last 4 (what verification checks the presence of), never the number.
      const row = await t.store.db.selectFrom('customers').selectAll().where('id', '=', c.id).executeTakeFirstOrThrow();
      expect(JSON.parse(row.fields)).toMatchObject({ idType: 'SSN', identifierLast4: '7890' });
      expect(JSON.stringify(row)).not.toContain('234-56');
      expect(JSON.stringify(row)).not.toContain('123-45');

      // Sent on update only, it still counts as on file for a verification.
      const later = await create(t, individual({ fullName: 'Ivo Later', address: { ...ADDRESS }, idType: 'SSN' }));
      const missing = async () =>
        ((await t.call('POST', '/verifications', { customerId: later.id })).json() as { errors?: Array<{ field?: string }> }).errors?.map((e) => e.field) ?? [];
      expect(await missing()).toContain('identifier');
      expectNoIdentifier(await t.call('PATCH', `/customers/${later.id}`, { customerType: 'INDIVIDUAL', identifier: SSN }));
      expect(await missing()).not.toContain('identifier');
    } finally {
      await t.close();
    }
  });
});
