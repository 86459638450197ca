import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { newCustomer } from '../money-helpers.js';

// The query-string rules of every operation (issue 13), kernel/validation.ts:
// - a parameter the operation does not declare is 400 INVALID_INPUT naming it, never ignored;
// - an array parameter takes the repeated form, the comma-joined form (what the official SDK
//   sends) and a mix; only array parameters are split on commas.

interface FieldError { field: string; message: string; constraint?: unknown }
type Doc = { paths: Record<string, Record<string, { operationId?: string; parameters?: Array<{ name: string; in: string; schema?: { type?: unknown } }> }>> };

const unknown = (field: string): FieldError => ({ field, message: 'is not a recognised parameter' });

describe(`query parameters (${STORE})`, () => {
  let t: TestApp;
  let doc: Doc;

  beforeAll(async () => {
    t = await makeApp();
    doc = (await t.call('GET', '/openapi.json', undefined, { authorization: '' })).json() as Doc;
  });
  afterAll(async () => t.close());

  const errorsOf = async (url: string): Promise<FieldError[]> => envelope(await t.call('GET', url), 400, 'INVALID_INPUT').details!.errors as FieldError[];

  describe('an unknown parameter is a 400 naming it', () => {
    it.each([
      ['/transactions', 'listTransactions'],
      ['/customers', 'listCustomers'],
      ['/customers/external-accounts', 'listCustomerExternalAccounts'],
      ['/platform/external-accounts', 'listPlatformExternalAccounts'],
      ['/customers/internal-accounts', 'listCustomerInternalAccounts'],
      ['/platform/internal-accounts', 'listPlatformInternalAccounts'],
      ['/exchange-rates', 'getExchangeRates'],
      ['/tokens', 'listTokens'],
      ['/documents', 'listDocuments'],
      ['/verifications', 'listVerifications'],
      ['/beneficial-owners', 'listBeneficialOwners'],
      ['/quotes', 'listQuotes'],
    ])('%s: every unknown parameter listed together, valid ones still accepted', async (path, operationId) => {
      expect(doc.paths[path]?.get?.operationId).toBe(operationId);
      // Names close to real ones are still unknown: nothing is guessed.
      expect(await errorsOf(`${path}?foo=1&Limit=2&customer_id=x`)).toEqual([unknown('foo'), unknown('Limit'), unknown('customer_id')]);
      // A repeated unknown parameter is named once.
      expect(await errorsOf(`${path}?foo=1&foo=2`)).toEqual([unknown('foo')]);
      const ok = await t.call('GET', path);
      expect(ok.statusCode, ok.body).toBe(200);
    });

    it('unknown parameters are listed with the declared parameters’ errors in one answer', async () => {
      const errors = await errorsOf('/customers?limit=0&nope=1&customerType=ROBOT');
      expect(errors.map((e) => e.field).sort()).toEqual(['customerType', 'limit', 'nope']);
      expect(errors.find((e) => e.field === 'nope')).toEqual(unknown('nope'));
    });

    it('every GET operation under the version prefix refuses an unknown parameter, those without any declared too', async () => {
      const gets = Object.entries(doc.paths).filter(([, ops]) => ops.get).map(([path]) => path);
      expect(gets.length).toBeGreaterThan(25);
      // An operation that declares no query parameter refuses one as well (openapi.json is hidden from the document).
      // Agent operations (AgentAuth) are asked with an installed agent's Bearer token.
      const c = await newCustomer(t, ['USD']);
      const created = await t.call('POST', '/agents', { name: 'Query agent', customerId: c.id, policy: { permissions: ['VIEW_TRANSACTIONS'], defaultExecutionMode: 'AUTO', spendingLimits: { currency: 'USD', perTransactionLimit: 100_000 } } });
      expect(created.statusCode, created.body).toBe(201);
      const code = (created.json() as { deviceCode: { code: string } }).deviceCode.code;
      const redeemed = await t.call('POST', `/agents/device-codes/${code}/redeem`, undefined, { authorization: '' });
      expect(redeemed.statusCode, redeemed.body).toBe(200);
      const agent = { authorization: `Bearer ${(redeemed.json() as { accessToken: string }).accessToken}` };
      for (const path of [...gets, '/openapi.json']) {
        const url = path.replace(/\{[^}]+\}/g, 'Thing:01890000-0000-7000-8000-000000000000');
        const res = await t.call('GET', `${url}?zzUnknown=1`, undefined, path === '/openapi.json' ? { authorization: '' } : path.startsWith('/agents/me') ? agent : {});
        expect(res.statusCode, `${path}: ${res.body}`).toBe(400);
        expect((res.json() as { details: { errors: FieldError[] } }).details.errors, path).toContainEqual(unknown('zzUnknown'));
      }
      for (const path of ['/config', '/sandbox/clock']) {
        expect(doc.paths[path]!.get!.parameters ?? []).toEqual([]);
        expect(await errorsOf(`${path}?verbose=true`)).toEqual([unknown('verbose')]);
      }
    });

    it('the OpenAPI document shows only the declared parameters (the closing is the validator’s)', () => {
      const names = doc.paths['/customers']!.get!.parameters!.filter((p) => p.in === 'query').map((p) => p.name);
      expect(names).toContain('platformCustomerId');
      expect(JSON.stringify(doc)).not.toContain('"additionalProperties":false,"type":"object","properties":{}');
      expect(doc.paths['/customers/{customerId}']!.get!.parameters!.filter((p) => p.in === 'query')).toEqual([]);
    });

    it('other methods are unchanged: a POST without a query schema still ignores its query string', async () => {
      const res = await t.call('POST', '/customers?source=dashboard', { customerType: 'INDIVIDUAL', fullName: 'Query Tolerant' });
      expect(res.statusCode, res.body).toBe(201);
    });
  });

  describe('array parameters: repeated, comma-joined or both', () => {
    interface Rate { sourceCurrency: { code: string }; destinationCurrency: { code: string } }
    const pairs = async (query: string): Promise<string[]> => {
      const res = await t.call('GET', `/exchange-rates${query}`);
      expect(res.statusCode, res.body).toBe(200);
      return (res.json() as { data: Rate[] }).data.map((r) => `${r.sourceCurrency.code}>${r.destinationCurrency.code}`);
    };

    it('the array query parameters of the served operations are exactly these (each tested below)', () => {
      const arrays: string[] = [];
      for (const [path, ops] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(ops)) {
          for (const p of op.parameters ?? []) if (p.in === 'query' && p.schema?.type === 'array') arrays.push(`${method.toUpperCase()} ${path} ${p.name}`);
        }
      }
      expect(arrays).toEqual(['GET /exchange-rates destinationCurrency']);
    });

    it('GET /exchange-rates?destinationCurrency=EUR,MXN (the SDK’s form) answers as the repeated form', async () => {
      const repeated = await pairs('?sourceCurrency=USD&destinationCurrency=EUR&destinationCurrency=MXN');
      expect(repeated).toEqual(['USD>EUR', 'USD>MXN']);
      expect(await pairs('?sourceCurrency=USD&destinationCurrency=EUR,MXN')).toEqual(repeated);
      expect(await pairs('?sourceCurrency=USD&destinationCurrency=EUR%2CMXN')).toEqual(repeated);
      expect(await pairs('?sourceCurrency=USD&destinationCurrency=EUR,MXN&destinationCurrency=BRL')).toEqual(['USD>EUR', 'USD>MXN', 'USD>BRL']);
      expect(await pairs('?sourceCurrency=USD&destinationCurrency=BRL&destinationCurrency=EUR,MXN')).toEqual(['USD>BRL', 'USD>EUR', 'USD>MXN']);
      expect(await pairs('?sourceCurrency=USD&destinationCurrency=EUR')).toEqual(['USD>EUR']);
    });

    it('each value of a comma-joined list is validated at its position', async () => {
      const errors = await errorsOf('/exchange-rates?sourceCurrency=USD&destinationCurrency=EUR,ZZZ,MXN');
      expect(errors).toEqual([{ field: 'destinationCurrency.1', message: expect.stringMatching(/currency/), constraint: { format: 'iso4217' } }]);
      const mixed = await errorsOf('/exchange-rates?sourceCurrency=USD&destinationCurrency=EUR&destinationCurrency=MXN,');
      expect(mixed.map((e) => e.field)).toEqual(['destinationCurrency.2']);
    });

    it('a parameter that is not an array is never split', async () => {
      const errors = await errorsOf('/exchange-rates?sourceCurrency=USD,EUR&destinationCurrency=MXN');
      expect(errors.map((e) => e.field)).toEqual(['sourceCurrency']);
      // A transactions filter with a comma is one value (it matches nothing), not a list.
      const res = await t.call('GET', '/transactions?reference=A,B');
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ data: [], hasMore: false, totalCount: 0 });
    });
  });
});
