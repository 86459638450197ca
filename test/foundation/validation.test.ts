import { Ajv } from 'ajv';
import { Type } from 'typebox';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { FORMATS, formatWords } from '../../src/kernel/formats.js';
import { checkSchema } from '../../src/kernel/validation.js';
import { basic, makeApp, STORE, type TestApp } from '../helpers.js';

// Request validation: every invalid field of a request comes back in one 400
// INVALID_INPUT, as details.errors[] of {field (dot path), constraint?, message}.

interface FieldError {
  field: string;
  constraint?: { format?: string; pattern?: string; enum?: string[]; minLength?: number; maxLength?: number };
  message: string;
}

const CONSTRAINT_KEYS = new Set(['format', 'pattern', 'enum', 'minLength', 'maxLength']);

/** Check the FieldError shape and index the list by field. */
function byField(errors: unknown): Map<string, FieldError> {
  expect(Array.isArray(errors)).toBe(true);
  const map = new Map<string, FieldError>();
  for (const e of errors as FieldError[]) {
    expect(Object.keys(e).every((k) => k === 'field' || k === 'constraint' || k === 'message'), JSON.stringify(e)).toBe(true);
    expect(typeof e.field).toBe('string');
    expect(e.field.length).toBeGreaterThan(0);
    expect(typeof e.message).toBe('string');
    expect(e.message.length).toBeGreaterThan(0);
    if (e.constraint !== undefined) {
      expect(Object.keys(e.constraint).length).toBeGreaterThan(0);
      for (const k of Object.keys(e.constraint)) expect(CONSTRAINT_KEYS.has(k), k).toBe(true);
    }
    map.set(e.field, e);
  }
  return map;
}

describe('named formats', () => {
  const cases: Record<string, { valid: string[]; invalid: string[] }> = {
    email: {
      valid: ['a@b.co', 'first.last+tag@example.com', 'x@sub.example.org'],
      invalid: ['', 'plain', 'a@b', '@example.com', 'a@', 'a b@example.com', 'a@@example.com', `${'a'.repeat(250)}@x.com`],
    },
    url: {
      valid: ['https://example.com', 'http://localhost:8080/path?q=1', 'https://acme.com/logo.png'],
      invalid: ['', 'example.com', 'ftp://example.com/file', 'javascript:alert(1)', 'https://', 'mailto:a@b.co', 'http://exa mple.com'],
    },
    date: {
      valid: ['2024-02-29', '2000-02-29', '1990-12-31', '2023-01-01', '0050-06-15'],
      invalid: ['2023-02-30', '2023-02-29', '2100-02-29', '2023-13-01', '2023-00-10', '2023-04-31', '2023-1-01', '20230101', '2023-01-01T00:00:00Z', ''],
    },
    'date-time': {
      valid: ['2025-10-13T12:00:00Z', '2025-10-13T12:00:00.123Z', '2025-10-13T12:00:00+02:00'],
      invalid: ['2025-10-13', '2025-10-13 12:00:00Z', '2025-02-30T12:00:00Z', '2025-10-13T12:00Z', '2025-10-13T25:00:00Z', 'now'],
    },
    tel: {
      valid: ['+1 (555) 123-4567', '5551234', '+44 20 7946 0958'],
      invalid: ['', '12', 'call me', '+1-555-CALL-NOW', '1'.repeat(21)],
    },
    'e.164': {
      valid: ['+15551234567', '+442079460958', '+8613800138000', '+1234567'],
      invalid: ['+1 555', '15551234567', '+0123456789', '+1 555 123 4567', '+1-555-123-4567', '+123456', '+1234567890123456', ''],
    },
    'iso3166-1-alpha-2': {
      valid: ['US', 'MX', 'BR', 'GB', 'IN', 'DE', 'AX', 'ZW'],
      invalid: ['XX', 'us', 'USA', 'U', 'UK', 'EU', 'ZZ', ''],
    },
    iso4217: {
      valid: ['USD', 'EUR', 'MXN', 'BRL', 'GBP', 'INR', 'USDC', 'BTC'],
      invalid: ['usd', 'XYZ', 'US', 'DOLLARS', ''],
    },
    'us-ssn': {
      valid: ['123-45-6789', '123456789', '665-01-0001'],
      invalid: ['000-12-3456', '666-12-3456', '900-12-3456', '123-00-6789', '123-45-0000', '12345-6789', '123-456789', '123-45-678', 'abc-de-fghi', ''],
    },
    'bcp47-language-tag': {
      valid: ['en', 'en-US', 'pt-BR', 'zh-Hant-TW', 'es-419'],
      invalid: ['', 'e', 'english', 'en_US', 'en-', '-US'],
    },
    hostname: {
      valid: ['example.com', 'pay.example.co.uk', 'localhost', 'a-b.example'],
      invalid: ['', 'not a domain', '-bad.example.com', 'bad-.example.com', 'a..b', 'under_score.com', 'https://example.com', `${'a'.repeat(64)}.com`],
    },
    uuid: {
      valid: ['019542f5-b3e7-1d02-0000-000000000003', '00000000-0000-0000-0000-000000000000'],
      invalid: ['', '019542f5b3e71d020000000000000003', '019542f5-b3e7-1d02-0000-00000000000g', 'Token:019542f5-b3e7-1d02-0000-000000000003'],
    },
  };

  for (const [name, { valid, invalid }] of Object.entries(cases)) {
    it(`${name}: accepts ${valid.length} and rejects ${invalid.length} values`, () => {
      const test = FORMATS[name];
      expect(test, `format ${name} exists`).toBeTypeOf('function');
      for (const v of valid) expect(test!(v), `${name} should accept ${JSON.stringify(v)}`).toBe(true);
      for (const v of invalid) expect(test!(v), `${name} should reject ${JSON.stringify(v)}`).toBe(false);
    });
  }

  it('covers every format the service defines, each with words for messages', () => {
    expect(Object.keys(FORMATS).filter((f) => !(f in cases))).toEqual(['uri']);
    for (const f of Object.keys(FORMATS)) expect(formatWords(f).startsWith('a valid '), f).toBe(false);
    expect(FORMATS.uri).toBe(FORMATS.url);
  });

  it('includes every format slug the specification names', () => {
    for (const f of ['email', 'tel', 'url', 'date', 'iso3166-1-alpha-2', 'bcp47-language-tag', 'us-ssn', 'e.164']) expect(FORMATS).toHaveProperty([f]);
  });
});

describe('checkSchema', () => {
  const Person = Type.Object({
    email: Type.String({ format: 'email' }),
    website: Type.Optional(Type.String({ format: 'url' })),
    birthDate: Type.String({ format: 'date' }),
    phone: Type.String({ format: 'e.164' }),
    country: Type.String({ format: 'iso3166-1-alpha-2' }),
    ssn: Type.Optional(Type.String({ format: 'us-ssn' })),
    language: Type.Optional(Type.String({ format: 'bcp47-language-tag' })),
    postalCode: Type.Optional(Type.String({ pattern: '^\\d{5}(-\\d{4})?$' })),
    idType: Type.Optional(Type.Enum(['SSN', 'ITIN', 'NON_US_TAX_ID'])),
    kind: Type.Optional(Type.Union([Type.Literal('INDIVIDUAL'), Type.Literal('BUSINESS')])),
    nickname: Type.Optional(Type.String({ minLength: 2, maxLength: 8 })),
    fullName: Type.String({ minLength: 1 }),
    address: Type.Optional(
      Type.Object({
        line1: Type.String({ maxLength: 10 }),
        country: Type.String({ format: 'iso3166-1-alpha-2' }),
      }),
    ),
    tags: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    note: Type.Optional(Type.Union([Type.String({ maxLength: 3 }), Type.Null()])),
  });

  const valid = {
    email: 'ana@example.com',
    website: 'https://ana.example.com',
    birthDate: '1990-05-17',
    phone: '+5511987654321',
    country: 'BR',
    ssn: '123-45-6789',
    language: 'pt-BR',
    postalCode: '12345-6789',
    idType: 'SSN',
    kind: 'INDIVIDUAL',
    nickname: 'ana',
    fullName: 'Ana Souza',
    address: { line1: 'Rua 1', country: 'BR' },
    tags: ['vip'],
    note: null,
  };

  it('accepts a valid value', () => {
    expect(checkSchema(Person, valid)).toEqual([]);
  });

  it('reports every invalid field in one pass, with dot paths and constraints', () => {
    const errors = checkSchema(Person, {
      email: 'not-an-email',
      website: 'ftp://example.com',
      birthDate: '2023-02-30',
      phone: '+1 555',
      country: 'XX',
      ssn: '000-12-3456',
      language: 'en_US',
      postalCode: '1234',
      idType: 'PASSPORT',
      kind: 'ROBOT',
      nickname: 'a',
      address: { line1: 'A very long street name', country: 'us' },
      tags: ['ok', ''],
      note: 'long',
    });
    const m = byField(errors);
    expect([...m.keys()].sort()).toEqual(
      [
        'address.country',
        'address.line1',
        'birthDate',
        'country',
        'email',
        'fullName',
        'idType',
        'kind',
        'language',
        'nickname',
        'note',
        'phone',
        'postalCode',
        'ssn',
        'tags.1',
        'website',
      ].sort(),
    );
    expect(m.get('email')!.constraint).toEqual({ format: 'email' });
    expect(m.get('website')!.constraint).toEqual({ format: 'url' });
    expect(m.get('birthDate')!.constraint).toEqual({ format: 'date' });
    expect(m.get('phone')!.constraint).toEqual({ format: 'e.164' });
    expect(m.get('country')!.constraint).toEqual({ format: 'iso3166-1-alpha-2' });
    expect(m.get('address.country')!.constraint).toEqual({ format: 'iso3166-1-alpha-2' });
    expect(m.get('ssn')!.constraint).toEqual({ format: 'us-ssn' });
    expect(m.get('language')!.constraint).toEqual({ format: 'bcp47-language-tag' });
    expect(m.get('postalCode')!.constraint).toEqual({ pattern: '^\\d{5}(-\\d{4})?$' });
    expect(m.get('idType')!.constraint).toEqual({ enum: ['SSN', 'ITIN', 'NON_US_TAX_ID'] });
    expect(m.get('kind')!.constraint).toEqual({ enum: ['INDIVIDUAL', 'BUSINESS'] });
    expect(m.get('nickname')!.constraint).toEqual({ minLength: 2 });
    expect(m.get('address.line1')!.constraint).toEqual({ maxLength: 10 });
    expect(m.get('tags.1')!.constraint).toEqual({ minLength: 1 });
    // A nullable field is reported as its non-null type.
    expect(m.get('note')!.constraint).toEqual({ maxLength: 3 });
    expect(m.get('fullName')!).toEqual({ field: 'fullName', message: 'is required' });
    for (const e of errors) if (e.constraint?.format) expect(e.message).toMatch(/^must be /);
  });

  it('reports missing nested fields and wrong types with their paths', () => {
    const m = byField(checkSchema(Person, { ...valid, address: {}, tags: 'vip', phone: 5511987654321 }));
    expect([...m.keys()].sort()).toEqual(['address.country', 'address.line1', 'phone', 'tags']);
    expect(m.get('address.line1')!.message).toBe('is required');
    expect(m.get('phone')!.message).toBe('must be string');
    expect(m.get('tags')!.message).toBe('must be array');
  });

  it('names the body itself when it is not an object, and the part it was given', () => {
    expect(checkSchema(Person, 'text')).toEqual([{ field: '(body)', message: 'must be object' }]);
    expect(checkSchema(Person, null, 'querystring')).toEqual([{ field: '(querystring)', message: 'must be object' }]);
  });

  it('reports unrecognised fields when the schema closes the object', () => {
    const Closed = Type.Object({ a: Type.Optional(Type.String()) }, { additionalProperties: false });
    expect(checkSchema(Closed, { a: 'x', b: 1 })).toEqual([{ field: 'b', message: 'is not a recognised field' }]);
  });

  it('compiles a schema once and reuses it', () => {
    const spy = vi.spyOn(Ajv.prototype, 'compile');
    try {
      const S = Type.Object({ n: Type.Integer({ minimum: 1 }) });
      expect(checkSchema(S, { n: 0 }).map((e) => e.field)).toEqual(['n']);
      expect(checkSchema(S, { n: 2 })).toEqual([]);
      expect(checkSchema(S, { n: 'x' }).map((e) => e.message)).toEqual(['must be integer']);
      expect(spy).toHaveBeenCalledTimes(1);
      // A different schema object with the same shape is its own schema.
      const S2 = Type.Object({ n: Type.Integer({ minimum: 5 }) });
      expect(checkSchema(S2, { n: 2 }).map((e) => e.field)).toEqual(['n']);
      expect(spy).toHaveBeenCalledTimes(2);
    } finally {
      spy.mockRestore();
    }
  });
});

describe(`request validation over HTTP (${STORE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp();
  });
  afterAll(async () => t.close());

  it('lists every invalid field of PATCH /config in one 400', async () => {
    const before = (await t.call('GET', '/config')).json();
    const res = await t.call('PATCH', '/config', {
      umaDomain: 'x'.repeat(254),
      webhookEndpoint: 'not a url',
      supportedCurrencies: [
        {
          currencyCode: 'DOLLARS',
          minAmount: 1.5,
          maxAmount: 10,
          requiredCounterpartyFields: [{ name: 'FULL_NAME' }],
          enabledTransactionTypes: ['OUTGOING'],
        },
      ],
      embeddedWalletConfig: { appName: 'y'.repeat(256), sendFromEmailAddress: 'noreply-at-acme', logoUrl: 'acme.com/logo.png', otpLength: 20 },
      cardTokenization2faConfig: { logoUrl: 'http://acme.com/logo.png', email: { replyToAddress: 'nope', subject: 's'.repeat(256) } },
      feeConfigs: [{ feeType: 'WIRE', sourceCurrency: 'USD', variableFeeBps: 10_001, fixedFee: { currency: 'USD' } }],
    });
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body).toMatchObject({ status: 400, code: 'INVALID_INPUT' });
    const m = byField(body.details.errors);
    expect([...m.keys()].sort()).toEqual(
      [
        'cardTokenization2faConfig.email.replyToAddress',
        'cardTokenization2faConfig.email.subject',
        'cardTokenization2faConfig.logoUrl',
        'embeddedWalletConfig.appName',
        'embeddedWalletConfig.logoUrl',
        'embeddedWalletConfig.otpLength',
        'embeddedWalletConfig.sendFromEmailAddress',
        'feeConfigs.0.feeType',
        'feeConfigs.0.fixedFee.amount',
        'feeConfigs.0.variableFeeBps',
        'supportedCurrencies.0.currencyCode',
        'supportedCurrencies.0.minAmount',
        'supportedCurrencies.0.requiredCounterpartyFields.0.mandatory',
        'umaDomain',
        'webhookEndpoint',
      ].sort(),
    );
    // umaDomain fails two checks (hostname format, maxLength); the message counts fields.
    const domainErrors = (body.details.errors as FieldError[]).filter((e) => e.field === 'umaDomain');
    expect(domainErrors.map((e) => e.constraint)).toEqual(expect.arrayContaining([{ format: 'hostname' }, { maxLength: 253 }]));
    expect(domainErrors).toHaveLength(2);
    expect(body.message).toBe('Invalid input: 15 fields are invalid');
    expect(m.get('webhookEndpoint')!.constraint).toEqual({ format: 'url' });
    expect(m.get('supportedCurrencies.0.currencyCode')!.constraint).toEqual({ format: 'iso4217' });
    expect(m.get('supportedCurrencies.0.minAmount')!.message).toBe('must be integer');
    expect(m.get('supportedCurrencies.0.requiredCounterpartyFields.0.mandatory')!.message).toBe('is required');
    expect(m.get('embeddedWalletConfig.appName')!.constraint).toEqual({ maxLength: 255 });
    expect(m.get('embeddedWalletConfig.sendFromEmailAddress')!.constraint).toEqual({ format: 'email' });
    expect(m.get('embeddedWalletConfig.logoUrl')!.constraint).toEqual({ format: 'url' });
    expect(m.get('cardTokenization2faConfig.logoUrl')!.constraint).toEqual({ pattern: '^https://' });
    expect(m.get('cardTokenization2faConfig.email.replyToAddress')!.constraint).toEqual({ format: 'email' });
    expect(m.get('cardTokenization2faConfig.email.subject')!.constraint).toEqual({ maxLength: 255 });
    expect(m.get('feeConfigs.0.feeType')!.constraint).toEqual({ enum: ['CROSS_CURRENCY_TRANSACTION'] });
    expect(m.get('feeConfigs.0.fixedFee.amount')!).toEqual({ field: 'feeConfigs.0.fixedFee.amount', message: 'is required' });
    expect((await t.call('GET', '/config')).json()).toEqual(before);
  });

  it('reports both the format and the length of one field when both fail', async () => {
    const res = await t.call('PATCH', '/config', { embeddedWalletConfig: { sendFromEmailAddress: `${'a'.repeat(300)}` } });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toMatch(/^Invalid input: embeddedWalletConfig\.sendFromEmailAddress must be .* and must be /);
    const errors = res.json().details.errors as FieldError[];
    expect(errors.every((e) => e.field === 'embeddedWalletConfig.sendFromEmailAddress')).toBe(true);
    expect(errors.map((e) => e.constraint)).toEqual(expect.arrayContaining([{ format: 'email' }, { maxLength: 255 }]));
  });

  it('lists every invalid field of POST /tokens: required, minLength, maxLength, enum, minItems', async () => {
    const missing = await t.call('POST', '/tokens', {});
    expect(missing.statusCode).toBe(400);
    expect(missing.json().details.errors).toEqual([
      { field: 'name', message: 'is required' },
      { field: 'permissions', message: 'is required' },
    ]);

    const bad = await t.call('POST', '/tokens', { name: '', permissions: ['VIEW', 'ADMIN', 'ROOT'] });
    expect(bad.statusCode).toBe(400);
    const m = byField(bad.json().details.errors);
    expect([...m.keys()].sort()).toEqual(['name', 'permissions.1', 'permissions.2']);
    expect(m.get('name')!.constraint).toEqual({ minLength: 1 });
    expect(m.get('permissions.1')!.constraint).toEqual({ enum: ['VIEW', 'TRANSACT', 'MANAGE'] });

    const long = await t.call('POST', '/tokens', { name: 'n'.repeat(256), permissions: [] });
    const m2 = byField(long.json().details.errors);
    expect(m2.get('name')!.constraint).toEqual({ maxLength: 255 });
    expect(m2.get('permissions')!.message).toMatch(/at least 1/);

    const typed = await t.call('POST', '/tokens', { name: 42, permissions: 'VIEW' });
    const m3 = byField(typed.json().details.errors);
    expect(m3.get('name')!.message).toBe('must be string');
    expect(m3.get('permissions')!.message).toBe('must be array');
  });

  it('does not coerce body types', async () => {
    const res = await t.call('PATCH', '/config', { feeConfigs: [{ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', variableFeeBps: '30', fixedFee: { amount: '100', currency: 'USD' } }] });
    expect(res.statusCode).toBe(400);
    expect(byField(res.json().details.errors).has('feeConfigs.0.variableFeeBps')).toBe(true);
  });

  it('validates the query string, coercing numbers', async () => {
    const abc = await t.call('GET', '/tokens?limit=abc');
    expect(abc.statusCode).toBe(400);
    expect(abc.json()).toMatchObject({ status: 400, code: 'INVALID_INPUT' });
    expect(abc.json().details.errors).toEqual([{ field: 'limit', message: 'must be integer' }]);

    const two = await t.call('GET', '/tokens?limit=0&createdAfter=yesterday');
    expect(two.statusCode).toBe(400);
    const m = byField(two.json().details.errors);
    expect([...m.keys()].sort()).toEqual(['createdAfter', 'limit']);
    expect(m.get('createdAfter')!.constraint).toEqual({ format: 'date-time' });

    expect((await t.call('GET', '/tokens?limit=101')).statusCode).toBe(400);
    const ok = await t.call('GET', '/tokens?limit=1');
    expect(ok.statusCode).toBe(200);
    expect(ok.json().data).toHaveLength(1);
  });

  it('checks permission before validating the body', async () => {
    const created = await t.call('POST', '/tokens', { name: 'viewer', permissions: ['VIEW'] });
    const auth = basic(created.json().clientId, created.json().clientSecret);
    const res = await t.call('PATCH', '/config', { webhookEndpoint: 'not a url' }, { authorization: auth });
    // updatePlatformConfig declares no 403: 401 naming the missing permission.
    expect(res.statusCode).toBe(401);
    expect(res.json().details.required).toBe('MANAGE');
  });
});
