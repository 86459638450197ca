import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrations } from '../../src/kernel/db/migrations.js';
import { ADMIN_KEY, basic, envelope, makeApp, STORE, storeSeries, type TestApp } from '../helpers.js';

// Platform configuration: GET /config and PATCH /config (black box, over HTTP).

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface FieldError {
  field: string;
  constraint?: Record<string, unknown>;
  message: string;
}

const usdFee = (variableFeeBps: number, amount: number) => ({
  feeType: 'CROSS_CURRENCY_TRANSACTION',
  sourceCurrency: 'USD',
  variableFeeBps,
  fixedFee: { amount, currency: 'USD' },
});

const currency = (code: string, minAmount: number, maxAmount: number) => ({
  currencyCode: code,
  minAmount,
  maxAmount,
  requiredCounterpartyFields: [{ name: 'FULL_NAME', mandatory: true }],
  enabledTransactionTypes: ['OUTGOING', 'INCOMING'],
});

function fieldErrors(details: Record<string, unknown> | undefined): FieldError[] {
  const errors = details?.errors;
  expect(Array.isArray(errors)).toBe(true);
  return errors as FieldError[];
}

describe(`platform configuration (${STORE})`, () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await makeApp();
  });
  afterEach(async () => t.close());

  async function getConfig(): Promise<Record<string, any>> {
    const res = await t.call('GET', '/config');
    expect(res.statusCode).toBe(200);
    return res.json();
  }

  async function patch(body: unknown, headers?: Record<string, string>) {
    // Move the clock so a write would show in updatedAt.
    t.clock.advance(1_000);
    return t.call('PATCH', '/config', body, headers);
  }

  /** PATCH must fail with `status` and leave the configuration exactly as it was. */
  async function rejectedWithoutWrite(body: unknown, status: number, code: string) {
    const before = await getConfig();
    const e = envelope(await patch(body), status, code);
    expect(await getConfig()).toEqual(before);
    return e;
  }

  describe('GET /config', () => {
    it('returns the default configuration of the sandbox platform', async () => {
      const res = await t.call('GET', '/config');
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      const c = res.json();
      expect(c.id).toMatch(/^PlatformConfig:/);
      expect(c.id.slice('PlatformConfig:'.length)).toMatch(UUID);
      expect(typeof c.umaDomain).toBe('string');
      expect(c.umaDomain.length).toBeGreaterThan(0);
      expect(c.isRegulatedFinancialInstitution).toBe(false);
      expect(c.feeConfigs).toEqual([]);
      expect(c).not.toHaveProperty('webhookEndpoint');
      expect(Date.parse(c.createdAt)).not.toBeNaN();
      expect(Date.parse(c.updatedAt)).not.toBeNaN();

      const codes = (c.supportedCurrencies as Array<{ currencyCode: string }>).map((s) => s.currencyCode);
      for (const code of ['USD', 'EUR', 'MXN', 'BRL', 'GBP', 'INR', 'USDC', 'USDT', 'BTC']) expect(codes).toContain(code);
      expect(new Set(codes).size).toBe(codes.length);
      for (const s of c.supportedCurrencies) {
        expect(Number.isInteger(s.minAmount)).toBe(true);
        expect(Number.isInteger(s.maxAmount)).toBe(true);
        expect(s.minAmount).toBeGreaterThanOrEqual(0);
        expect(s.minAmount).toBeLessThanOrEqual(s.maxAmount);
        expect(Array.isArray(s.requiredCounterpartyFields)).toBe(true);
        for (const f of s.requiredCounterpartyFields) {
          expect(typeof f.name).toBe('string');
          expect(typeof f.mandatory).toBe('boolean');
        }
        expect(Array.isArray(s.enabledTransactionTypes)).toBe(true);
        expect(s.enabledTransactionTypes.length).toBeGreaterThan(0);
        for (const tt of s.enabledTransactionTypes) expect(['INCOMING', 'OUTGOING']).toContain(tt);
      }
    });

    it('is stable between reads', async () => {
      expect(await getConfig()).toEqual(await getConfig());
    });

    it('needs credentials', async () => {
      const e = envelope(await t.call('GET', '/config', undefined, { authorization: '' }), 401, 'UNAUTHORIZED');
      expect(typeof e.details?.reason).toBe('string');
    });

    it('is per platform, and a regulated platform reports it', async () => {
      const res = await t.call('POST', '/admin/platforms', { name: 'Regulated Bank', regulated: true }, { authorization: `Bearer ${ADMIN_KEY}` });
      expect(res.statusCode).toBe(201);
      const { credentials } = res.json();
      const auth = basic(credentials.clientId, credentials.clientSecret);
      await patch({ umaDomain: 'default-platform.example.com', feeConfigs: [usdFee(30, 100)] });

      const other = await t.call('GET', '/config', undefined, { authorization: auth });
      expect(other.statusCode).toBe(200);
      const c = other.json();
      expect(c.isRegulatedFinancialInstitution).toBe(true);
      expect(c.umaDomain).not.toBe('default-platform.example.com');
      expect(c.feeConfigs).toEqual([]);
      expect(c.id).not.toBe((await getConfig()).id);

      const e = envelope(await t.call('PATCH', '/config', { isRegulatedFinancialInstitution: false }, { authorization: auth }), 400, 'INVALID_INPUT');
      expect(fieldErrors(e.details).map((f) => f.field)).toEqual(['isRegulatedFinancialInstitution']);
      expect((await t.call('GET', '/config', undefined, { authorization: auth })).json().isRegulatedFinancialInstitution).toBe(true);
    });
  });

  describe('PATCH /config: domain and webhook', () => {
    it('updates umaDomain and webhookEndpoint, and null clears the webhook', async () => {
      const before = await getConfig();
      const res = await patch({ umaDomain: 'pay.example.com', webhookEndpoint: 'https://hooks.example.com/uma' });
      expect(res.statusCode).toBe(200);
      const c = res.json();
      expect(c.umaDomain).toBe('pay.example.com');
      expect(c.webhookEndpoint).toBe('https://hooks.example.com/uma');
      expect(c.id).toBe(before.id);
      expect(c.createdAt).toBe(before.createdAt);
      expect(Date.parse(c.updatedAt)).toBeGreaterThan(Date.parse(before.updatedAt));
      expect(c.supportedCurrencies).toEqual(before.supportedCurrencies);
      expect(await getConfig()).toEqual(c);

      const cleared = await patch({ webhookEndpoint: null });
      expect(cleared.statusCode).toBe(200);
      expect(cleared.json()).not.toHaveProperty('webhookEndpoint');
      expect(cleared.json().umaDomain).toBe('pay.example.com');
      expect(await getConfig()).not.toHaveProperty('webhookEndpoint');
    });

    it('leaves the webhook alone when the field is omitted', async () => {
      await patch({ webhookEndpoint: 'https://hooks.example.com/a' });
      const res = await patch({ umaDomain: 'other.example.com' });
      expect(res.statusCode).toBe(200);
      expect(res.json().webhookEndpoint).toBe('https://hooks.example.com/a');
    });

    it('rejects a webhook that is not a URL and a domain that is not a domain', async () => {
      const e = await rejectedWithoutWrite({ umaDomain: 'not a domain', webhookEndpoint: 'nope' }, 400, 'INVALID_INPUT');
      const errs = fieldErrors(e.details);
      expect(errs.find((f) => f.field === 'webhookEndpoint')?.constraint).toEqual({ format: 'url' });
      expect(errs.find((f) => f.field === 'umaDomain')?.constraint).toEqual({ format: 'hostname' });
    });
  });

  describe('PATCH /config: supportedCurrencies', () => {
    it('replaces the whole list', async () => {
      const list = [currency('USD', 50, 500_000), { ...currency('EUR', 200, 900_000), enabledTransactionTypes: ['INCOMING'] }];
      const res = await patch({ supportedCurrencies: list });
      expect(res.statusCode).toBe(200);
      expect(res.json().supportedCurrencies).toEqual(list);
      expect((await getConfig()).supportedCurrencies).toEqual(list);
    });

    it('accepts minAmount equal to maxAmount', async () => {
      const res = await patch({ supportedCurrencies: [currency('USD', 1000, 1000)] });
      expect(res.statusCode).toBe(200);
    });

    it('rejects minAmount above maxAmount, naming supportedCurrencies.N.minAmount', async () => {
      const e = await rejectedWithoutWrite(
        { umaDomain: 'valid.example.com', supportedCurrencies: [currency('USD', 100, 1000), currency('EUR', 5000, 10)] },
        400,
        'INVALID_INPUT',
      );
      const errs = fieldErrors(e.details);
      expect(errs.map((f) => f.field)).toEqual(['supportedCurrencies.1.minAmount']);
      expect(errs[0]!.message).toMatch(/maxAmount/);
    });

    it('rejects a currency listed twice', async () => {
      const e = await rejectedWithoutWrite({ supportedCurrencies: [currency('USD', 1, 2), currency('EUR', 1, 2), currency('USD', 3, 4)] }, 400, 'INVALID_INPUT');
      expect(fieldErrors(e.details).map((f) => f.field)).toEqual(['supportedCurrencies.2.currencyCode']);
    });

    it('rejects an unknown currency code with constraint.format iso4217', async () => {
      const e = await rejectedWithoutWrite({ supportedCurrencies: [currency('USD', 1, 2), currency('XYZ', 1, 2)] }, 400, 'INVALID_INPUT');
      const errs = fieldErrors(e.details);
      expect(errs).toHaveLength(1);
      expect(errs[0]).toMatchObject({ field: 'supportedCurrencies.1.currencyCode', constraint: { format: 'iso4217' } });
    });

    it('rejects an empty list, negative amounts, unknown field names and transaction types', async () => {
      const e1 = await rejectedWithoutWrite({ supportedCurrencies: [] }, 400, 'INVALID_INPUT');
      expect(fieldErrors(e1.details).map((f) => f.field)).toEqual(['supportedCurrencies']);

      const bad = {
        ...currency('USD', -1, 100),
        requiredCounterpartyFields: [{ name: 'SHOE_SIZE', mandatory: true }],
        enabledTransactionTypes: ['SIDEWAYS'],
      };
      const e2 = await rejectedWithoutWrite({ supportedCurrencies: [bad] }, 400, 'INVALID_INPUT');
      const fields = fieldErrors(e2.details).map((f) => f.field);
      expect(fields).toEqual(
        expect.arrayContaining([
          'supportedCurrencies.0.minAmount',
          'supportedCurrencies.0.requiredCounterpartyFields.0.name',
          'supportedCurrencies.0.enabledTransactionTypes.0',
        ]),
      );
    });
  });

  describe('PATCH /config: feeConfigs', () => {
    it('upserts by (feeType, sourceCurrency), deactivates at zero, and is untouched when omitted', async () => {
      const set = await patch({ feeConfigs: [usdFee(30, 100)] });
      expect(set.statusCode).toBe(200);
      expect(set.json().feeConfigs).toEqual([usdFee(30, 100)]);
      expect((await getConfig()).feeConfigs).toEqual([usdFee(30, 100)]);

      const replaced = await patch({ feeConfigs: [usdFee(45, 0)] });
      expect(replaced.statusCode).toBe(200);
      expect(replaced.json().feeConfigs).toEqual([usdFee(45, 0)]);

      const untouched = await patch({ umaDomain: 'fees.example.com' });
      expect(untouched.statusCode).toBe(200);
      expect(untouched.json().feeConfigs).toEqual([usdFee(45, 0)]);

      const emptyList = await patch({ feeConfigs: [] });
      expect(emptyList.statusCode).toBe(200);
      expect(emptyList.json().feeConfigs).toEqual([usdFee(45, 0)]);

      const fixedOnly = await patch({ feeConfigs: [usdFee(0, 250)] });
      expect(fixedOnly.json().feeConfigs).toEqual([usdFee(0, 250)]);

      const off = await patch({ feeConfigs: [usdFee(0, 0)] });
      expect(off.statusCode).toBe(200);
      expect(off.json().feeConfigs).toEqual([]);
      expect((await getConfig()).feeConfigs).toEqual([]);

      const again = await patch({ feeConfigs: [usdFee(10, 5)] });
      expect(again.json().feeConfigs).toEqual([usdFee(10, 5)]);
    });

    it('answers 501 NOT_IMPLEMENTED for a non-USD source currency and writes nothing', async () => {
      await patch({ feeConfigs: [usdFee(30, 100)] });
      const eur = { feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'EUR', variableFeeBps: 30, fixedFee: { amount: 100, currency: 'EUR' } };
      const res = await rejectedWithoutWrite({ umaDomain: 'valid.example.com', feeConfigs: [usdFee(50, 50), eur] }, 501, 'NOT_IMPLEMENTED');
      expect(res.message).toMatch(/USD/);
      expect((await getConfig()).feeConfigs).toEqual([usdFee(30, 100)]);
    });

    it('rejects variableFeeBps above 10000 and negative amounts', async () => {
      const e = await rejectedWithoutWrite({ feeConfigs: [usdFee(10_001, 100)] }, 400, 'INVALID_INPUT');
      expect(fieldErrors(e.details).map((f) => f.field)).toEqual(['feeConfigs.0.variableFeeBps']);
      const e2 = await rejectedWithoutWrite({ feeConfigs: [usdFee(-1, -5)] }, 400, 'INVALID_INPUT');
      expect(fieldErrors(e2.details).map((f) => f.field).sort()).toEqual(['feeConfigs.0.fixedFee.amount', 'feeConfigs.0.variableFeeBps']);
      expect((await patch({ feeConfigs: [usdFee(10_000, 0)] })).statusCode).toBe(200);
    });

    it('rejects a fixed fee in another currency than the source currency', async () => {
      const fee = { ...usdFee(30, 100), fixedFee: { amount: 100, currency: 'EUR' } };
      const e = await rejectedWithoutWrite({ umaDomain: 'valid.example.com', feeConfigs: [fee] }, 400, 'INVALID_INPUT');
      expect(fieldErrors(e.details).map((f) => f.field)).toEqual(['feeConfigs.0.fixedFee.currency']);
    });

    it('rejects the same key twice in one request', async () => {
      const e = await rejectedWithoutWrite({ feeConfigs: [usdFee(30, 100), usdFee(40, 100)] }, 400, 'INVALID_INPUT');
      expect(fieldErrors(e.details).map((f) => f.field)).toEqual(['feeConfigs.1']);
    });

    it('rejects an unknown fee type and a missing fixedFee', async () => {
      const e = await rejectedWithoutWrite(
        { feeConfigs: [{ ...usdFee(30, 100), feeType: 'MONTHLY' }, { feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', variableFeeBps: 1 }] },
        400,
        'INVALID_INPUT',
      );
      const errs = fieldErrors(e.details);
      expect(errs.find((f) => f.field === 'feeConfigs.0.feeType')?.constraint).toEqual({ enum: ['CROSS_CURRENCY_TRANSACTION'] });
      expect(errs.find((f) => f.field === 'feeConfigs.1.fixedFee')?.message).toBe('is required');
    });
  });

  describe('PATCH /config: embedded wallet and card tokenization 2FA', () => {
    it('merges embeddedWalletConfig field by field', async () => {
      const first = await patch({
        embeddedWalletConfig: { appName: 'Acme Wallet', otpLength: 6, sendFromEmailAddress: 'noreply@acme.com', logoUrl: 'https://acme.com/logo.png' },
      });
      expect(first.statusCode).toBe(200);
      const second = await patch({ embeddedWalletConfig: { otpLength: 8, alphanumeric: true } });
      expect(second.statusCode).toBe(200);
      const expected = { appName: 'Acme Wallet', otpLength: 8, alphanumeric: true, sendFromEmailAddress: 'noreply@acme.com', logoUrl: 'https://acme.com/logo.png' };
      expect(second.json().embeddedWalletConfig).toEqual(expected);
      expect((await getConfig()).embeddedWalletConfig).toEqual(expected);
      // Another PATCH that does not name it leaves it unchanged.
      expect((await patch({ umaDomain: 'w.example.com' })).json().embeddedWalletConfig).toEqual(expected);
    });

    it('loses no field when PATCHes of different fields run at once', async () => {
      const fields = {
        appName: 'Acme',
        otpLength: 6,
        alphanumeric: true,
        expirationSeconds: 300,
        sendFromEmailAddress: 'noreply@acme.com',
        sendFromEmailSenderName: 'Acme',
        replyToEmailAddress: 'support@acme.com',
        logoUrl: 'https://acme.com/logo.png',
      };
      const results = await Promise.all(Object.entries(fields).map(([k, v]) => t.call('PATCH', '/config', { embeddedWalletConfig: { [k]: v } })));
      expect(results.map((r) => r.statusCode)).toEqual(results.map(() => 200));
      expect((await getConfig()).embeddedWalletConfig).toEqual(fields);
    });

    it('is absent until configured', async () => {
      const c = await getConfig();
      expect(c).not.toHaveProperty('embeddedWalletConfig');
      expect(c).not.toHaveProperty('cardTokenization2faConfig');
    });

    it('merges cardTokenization2faConfig field by field, nested objects included', async () => {
      const first = await patch({
        cardTokenization2faConfig: {
          displayName: 'Acme',
          logoUrl: 'https://acme.com/card-email-logo.png',
          email: { fromAddress: 'cards@acme.com', fromName: 'Acme Cards', subject: 'Your code' },
        },
      });
      expect(first.statusCode).toBe(200);
      const second = await patch({ cardTokenization2faConfig: { displayName: 'Acme Inc', email: { subject: 'Your Acme code' }, sms: { bodyText: 'Code:' } } });
      expect(second.statusCode).toBe(200);
      const expected = {
        displayName: 'Acme Inc',
        logoUrl: 'https://acme.com/card-email-logo.png',
        email: { fromAddress: 'cards@acme.com', fromName: 'Acme Cards', subject: 'Your Acme code' },
        sms: { bodyText: 'Code:' },
      };
      expect(second.json().cardTokenization2faConfig).toEqual(expected);
      expect((await getConfig()).cardTokenization2faConfig).toEqual(expected);
    });

    it('rejects a card-tokenization logo that is not https, naming the pattern', async () => {
      const e = await rejectedWithoutWrite({ cardTokenization2faConfig: { logoUrl: 'http://acme.com/logo.png' } }, 400, 'INVALID_INPUT');
      const errs = fieldErrors(e.details);
      expect(errs).toHaveLength(1);
      expect(errs[0]).toMatchObject({ field: 'cardTokenization2faConfig.logoUrl', constraint: { pattern: '^https://' } });
    });

    it('rejects out-of-range wallet settings', async () => {
      const e = await rejectedWithoutWrite(
        { embeddedWalletConfig: { otpLength: 3, expirationSeconds: 86_401, replyToEmailAddress: 'nobody', appName: 'x'.repeat(256) } },
        400,
        'INVALID_INPUT',
      );
      expect(fieldErrors(e.details).map((f) => f.field).sort()).toEqual([
        'embeddedWalletConfig.appName',
        'embeddedWalletConfig.expirationSeconds',
        'embeddedWalletConfig.otpLength',
        'embeddedWalletConfig.replyToEmailAddress',
      ]);
    });
  });

  describe('PATCH /config: what cannot be changed', () => {
    it('rejects isRegulatedFinancialInstitution as read-only, writing nothing', async () => {
      for (const value of [true, false]) {
        const e = await rejectedWithoutWrite({ umaDomain: 'valid.example.com', isRegulatedFinancialInstitution: value }, 400, 'INVALID_INPUT');
        const errs = fieldErrors(e.details);
        expect(errs).toHaveLength(1);
        expect(errs[0]!.field).toBe('isRegulatedFinancialInstitution');
        expect(errs[0]!.message).toMatch(/read-only/);
      }
      expect((await getConfig()).isRegulatedFinancialInstitution).toBe(false);
    });

    it('reports the read-only field together with other invalid fields', async () => {
      const e = await rejectedWithoutWrite(
        { isRegulatedFinancialInstitution: true, supportedCurrencies: [currency('USD', 10, 1)] },
        400,
        'INVALID_INPUT',
      );
      expect(fieldErrors(e.details).map((f) => f.field).sort()).toEqual(['isRegulatedFinancialInstitution', 'supportedCurrencies.0.minAmount']);

      // Also alongside schema errors (format, range), in one 400.
      const e2 = await rejectedWithoutWrite(
        { isRegulatedFinancialInstitution: true, webhookEndpoint: 'not a url', feeConfigs: [usdFee(20_000, 0)] },
        400,
        'INVALID_INPUT',
      );
      expect(fieldErrors(e2.details).map((f) => f.field).sort()).toEqual(['feeConfigs.0.variableFeeBps', 'isRegulatedFinancialInstitution', 'webhookEndpoint']);
    });

    it('forbids PATCH to a VIEW-only token, which can still read', async () => {
      const created = await t.call('POST', '/tokens', { name: 'read only', permissions: ['VIEW'] });
      expect(created.statusCode).toBe(201);
      const { clientId, clientSecret } = created.json();
      const auth = basic(clientId, clientSecret);
      const before = await getConfig();
      // updatePlatformConfig declares no 403: the missing permission is a 401 naming it.
      const e = envelope(await patch({ umaDomain: 'viewer.example.com' }, { authorization: auth }), 401, 'UNAUTHORIZED');
      expect(e.details?.required).toBe('MANAGE');
      expect(await getConfig()).toEqual(before);
      const read = await t.call('GET', '/config', undefined, { authorization: auth });
      expect(read.statusCode).toBe(200);
      expect(read.json()).toEqual(before);
    });

    it('writes nothing when one field is valid and another is not', async () => {
      const e = await rejectedWithoutWrite(
        {
          umaDomain: 'valid.example.com',
          webhookEndpoint: 'https://hooks.example.com/ok',
          feeConfigs: [usdFee(30, 100)],
          embeddedWalletConfig: { appName: 'Fine', sendFromEmailAddress: 'not-an-email' },
        },
        400,
        'INVALID_INPUT',
      );
      expect(fieldErrors(e.details).map((f) => f.field)).toEqual(['embeddedWalletConfig.sendFromEmailAddress']);
    });

    it('rejects a body that is not an object', async () => {
      await rejectedWithoutWrite([{ umaDomain: 'a.example.com' }], 400, 'INVALID_INPUT');
      await rejectedWithoutWrite('"a string"', 400, 'INVALID_INPUT');
    });
  });
});

describe('read-only provider fields in supportedCurrencies', () => {
  it('are not stored from a PATCH', async () => {
    const t = await makeApp();
    try {
      const res = await t.call('PATCH', '/config', {
        supportedCurrencies: [
          {
            currencyCode: 'USD', minAmount: 100, maxAmount: 1000, requiredCounterpartyFields: [], enabledTransactionTypes: ['OUTGOING'],
            providerRequiredCustomerFields: ['NATIONALITY'], providerRequiredCounterpartyCustomerFields: ['FULL_NAME'],
          },
        ],
      });
      expect(res.statusCode).toBe(200);
      const usd = (res.json() as { supportedCurrencies: Array<Record<string, unknown>> }).supportedCurrencies[0]!;
      expect(usd.providerRequiredCustomerFields).toBeUndefined();
      expect(usd.providerRequiredCounterpartyCustomerFields).toBeUndefined();
      expect(usd.maxAmount).toBe(1000);
    } finally {
      await t.close();
    }
  });
});

describe(`proxyUmaSubdomain (${STORE})`, () => {
  const admin = { authorization: `Bearer ${ADMIN_KEY}` };

  async function config(t: TestApp, headers?: Record<string, string>): Promise<Record<string, any>> {
    const res = await t.call('GET', '/config', undefined, headers);
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  }

  it('is the first label of the UMA domain: set at platform creation and on each umaDomain change', async () => {
    const t = await makeApp();
    try {
      const c = await config(t);
      const firstLabel = (c.umaDomain as string).split('.')[0]!;
      expect(firstLabel).toMatch(/^default-sandbox-platform-[0-9a-f]{6}$/);
      expect(c.proxyUmaSubdomain).toBe(firstLabel);

      // The hosted docs' example.
      const res = await t.call('PATCH', '/config', { umaDomain: 'mycompany.com' });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ umaDomain: 'mycompany.com', proxyUmaSubdomain: 'mycompany' });
      expect(await config(t)).toMatchObject({ umaDomain: 'mycompany.com', proxyUmaSubdomain: 'mycompany' });

      const upper = await t.call('PATCH', '/config', { umaDomain: 'Pay.Example.COM' });
      expect(upper.json()).toMatchObject({ umaDomain: 'pay.example.com', proxyUmaSubdomain: 'pay' });
      // Other changes leave it alone; a refused change writes nothing.
      expect((await t.call('PATCH', '/config', { webhookEndpoint: 'https://hooks.example.com/x' })).json().proxyUmaSubdomain).toBe('pay');
      envelope(await t.call('PATCH', '/config', { umaDomain: 'new.example.com', webhookEndpoint: 'nope' }), 400, 'INVALID_INPUT');
      expect((await config(t)).proxyUmaSubdomain).toBe('pay');

      // A platform created through /admin gets its own.
      const created = await t.call('POST', '/admin/platforms', { name: 'Acme Payouts' }, admin);
      expect(created.statusCode, created.body).toBe(201);
      const { credentials } = created.json();
      const theirs = await config(t, { authorization: basic(credentials.clientId, credentials.clientSecret) });
      expect(theirs.proxyUmaSubdomain).toMatch(/^acme-payouts-[0-9a-f]{6}$/);
      expect(theirs.proxyUmaSubdomain).toBe((theirs.umaDomain as string).split('.')[0]);
    } finally {
      await t.close();
    }
  });

  it('is filled in for platforms that predate it, by migration 0013_onboarding', async () => {
    const s = await storeSeries();
    try {
      const first = await makeApp({ testStore: await s.open() });
      const platformId = first.running.bootstrap.platform.id;
      const res = await first.call('PATCH', '/config', { umaDomain: 'legacy.example.org' });
      expect(res.statusCode, res.body).toBe(200);
      // As before the migration: no subdomain on file. Then the migration's step runs on
      // that data (as it does once, at the first start after the upgrade).
      await first.store.db.updateTable('platform_configs').set({ proxy_uma_subdomain: null }).where('platform_id', '=', platformId).execute();
      expect(await config(first)).not.toHaveProperty('proxyUmaSubdomain');
      await migrations()['0013_onboarding']!.up(first.store.db as never);
      await first.close();

      const second = await makeApp({ testStore: await s.open() });
      try {
        expect(await config(second)).toMatchObject({ umaDomain: 'legacy.example.org', proxyUmaSubdomain: 'legacy' });
      } finally {
        await second.close();
      }
    } finally {
      await s.drop();
    }
  });
});
