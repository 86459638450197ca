import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import swagger from '@fastify/swagger';
import { validate } from '@readme/openapi-parser';
import Fastify from 'fastify';
import openapiTS, { astToString } from 'openapi-typescript';
import { Type } from 'typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openapiTransform } from '../../src/app.js';
import { WEBHOOK_EVENTS } from '../../src/openapi-schemas.js';
import { nameSchemas, resolveSchema, unresolvedRefs } from '../../src/kernel/openapi.js';
import { makeApp, type TestApp, V } from '../helpers.js';

// The served OpenAPI document: named components like the reference's, $refs that resolve,
// a webhooks section, small enough for Swagger UI and code generators.

type Json = Record<string, unknown>;
interface Doc {
  openapi: string;
  paths: Record<string, Record<string, { operationId?: string; requestBody?: Json; responses: Record<string, Json>; 'x-extension'?: boolean }>>;
  components: { schemas: Record<string, Json>; responses?: Record<string, Json>; securitySchemes: Record<string, Json> };
  webhooks: Record<string, { post: { requestBody: { content: Record<string, { schema: { $ref: string } }> } } }>;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const bodyOf = (op: { requestBody?: Json }) => (op.requestBody as { content: Record<string, { schema: Json }> }).content['application/json']!.schema;
const answerOf = (doc: Doc, op: { responses: Record<string, Json> }, status: string) =>
  (op.responses[status] as { content: Record<string, { schema: Json }> }).content['application/json']!.schema;

describe('the OpenAPI document', () => {
  let t: TestApp;
  let text: string;
  let doc: Doc;
  beforeAll(async () => {
    t = await makeApp();
    const res = await t.call('GET', '/openapi.json', undefined, { authorization: '' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    text = res.body;
    doc = JSON.parse(text) as Doc;
  });
  afterAll(async () => {
    await t.close();
  });

  it('is under 600 KB', () => {
    expect(Buffer.byteLength(text)).toBeLessThan(600 * 1024);
  });

  it('is served as the same text every time (generated once)', async () => {
    const again = await t.call('GET', '/openapi.json', undefined, { authorization: '' });
    expect(again.body).toBe(text);
    expect(t.app.swagger()).toBe(t.app.swagger());
  });

  it('names its schemas with the reference’s names', () => {
    const names = Object.keys(doc.components.schemas);
    for (const n of [
      'Customer', 'IndividualCustomer', 'BusinessCustomer', 'CustomerOneOf', 'CustomerListResponse', 'CustomerCreateRequestOneOf',
      'IndividualCustomerCreateRequest', 'BusinessCustomerCreateRequest', 'Address', 'BeneficialOwner',
      'Quote', 'QuoteRequest', 'QuoteSourceOneOf', 'QuoteDestinationOneOf',
      'Transaction', 'IncomingTransaction', 'OutgoingTransaction', 'TransactionOneOf', 'TransactionListResponse', 'TransactionStatus',
      'ExternalAccount', 'ExternalAccountListResponse', 'ExternalAccountCreateRequest', 'ExternalAccountInfoOneOf', 'ExternalAccountCreateInfoOneOf',
      'UsdExternalAccountInfo', 'UsdExternalAccountCreateInfo', 'SwiftExternalAccountInfo', 'EthereumWalletExternalAccountInfo', 'BusinessBeneficiary',
      'InternalAccount', 'InternalAccountListResponse', 'PaymentInstructions', 'PaymentUsdAccountInfo',
      'Currency', 'CurrencyAmount', 'CurrencyPreference', 'PlatformConfig', 'ApiToken', 'TokenListResponse',
      'Error400', 'Error401', 'Error404', 'Error409', 'Error500', 'FieldError', 'FieldConstraint',
      'Verification', 'VerificationListResponse', 'BaseWebhook', 'WebhookType',
    ]) {
      expect(names, n).toContain(n);
    }
    for (const n of names) expect(n).toMatch(/^[A-Za-z0-9._-]+$/);
  });

  it('shows the customer kinds with the fields each has', () => {
    const props = (n: string) => Object.keys((doc.components.schemas[n] as { properties: Json }).properties);
    expect(props('IndividualCustomer')).toEqual(expect.arrayContaining(['id', 'fullName', 'kycStatus', 'customerType']));
    expect(props('IndividualCustomer')).not.toContain('businessInfo');
    expect(props('BusinessCustomer')).toEqual(expect.arrayContaining(['id', 'businessInfo', 'beneficialOwners', 'kybStatus']));
    expect(props('BusinessCustomer')).not.toContain('fullName');
    const oneOf = doc.components.schemas.CustomerOneOf as { discriminator: { propertyName: string; mapping: Record<string, string> } };
    expect(oneOf.discriminator).toEqual({ propertyName: 'customerType', mapping: { INDIVIDUAL: ref('IndividualCustomer').$ref, BUSINESS: ref('BusinessCustomer').$ref } });
  });

  it('has operations refer to the named schemas', () => {
    const p = doc.paths;
    expect(bodyOf(p['/customers']!.post!)).toEqual(ref('CustomerCreateRequestOneOf'));
    expect(answerOf(doc, p['/customers']!.post!, '201')).toEqual(ref('Customer'));
    expect(answerOf(doc, p['/customers']!.get!, '200')).toEqual(ref('CustomerListResponse'));
    expect(bodyOf(p['/quotes']!.post!)).toEqual(ref('QuoteRequest'));
    expect(answerOf(doc, p['/quotes/{quoteId}']!.get!, '200')).toEqual(ref('Quote'));
    expect(answerOf(doc, p['/transactions']!.get!, '200')).toEqual(ref('TransactionListResponse'));
    expect(answerOf(doc, p['/transactions/{transactionId}']!.get!, '200')).toEqual(ref('TransactionOneOf'));
    expect(answerOf(doc, p['/customers/external-accounts']!.post!, '201')).toEqual(ref('ExternalAccount'));
    expect(answerOf(doc, p['/customers/internal-accounts']!.get!, '200')).toEqual(ref('InternalAccountListResponse'));
    // Inside components too: a list's items, a union's branches (with the discriminator's mapping).
    const list = doc.components.schemas.CustomerListResponse as { properties: { data: { items: Json } } };
    expect(list.properties.data.items).toEqual(ref('Customer'));
    const tx = doc.components.schemas.TransactionOneOf as { oneOf: Json[]; discriminator: { mapping: Record<string, string> } };
    expect(tx.oneOf).toEqual([ref('IncomingTransaction'), ref('OutgoingTransaction'), ref('CardTransaction')]);
    expect(tx.discriminator.mapping).toEqual({ INCOMING: ref('IncomingTransaction').$ref, OUTGOING: ref('OutgoingTransaction').$ref, CARD: ref('CardTransaction').$ref });
    // A use with its own description keeps it beside the $ref.
    const account = doc.components.schemas.InternalAccount as { properties: Record<string, Json> };
    expect(account.properties.balance).toMatchObject(ref('CurrencyAmount'));
    expect(account.properties.balance!.description).toMatch(/available/i);
    // resolveSchema follows the $ref for a reader, keeping the use's description.
    const balance = resolveSchema(doc, account.properties.balance) as { properties: Json; description: string };
    expect(Object.keys(balance.properties)).toEqual(['amount', 'currency']);
    expect(balance.description).toMatch(/available/i);
  });

  it('shares the error responses', () => {
    const op = doc.paths['/customers']!.post!;
    expect(op.responses['400']).toEqual({ $ref: '#/components/responses/Error400' });
    const shared = doc.components.responses!.Error400 as { content: Record<string, { schema: Json }> };
    expect(shared.content['application/json']!.schema).toMatchObject(ref('Error400'));
    const error = doc.components.schemas.Error400 as { properties: { code: { enum: string[] } } };
    expect(error.properties.code.enum).toContain('INVALID_INPUT');
  });

  it('has every $ref and discriminator mapping resolve', () => {
    expect(unresolvedRefs(doc)).toEqual([]);
    const mappings: string[] = [];
    const walk = (x: unknown): void => {
      if (Array.isArray(x)) return x.forEach(walk);
      if (typeof x !== 'object' || x === null) return;
      const d = (x as { discriminator?: { mapping?: Record<string, string> } }).discriminator;
      if (d?.mapping) mappings.push(...Object.values(d.mapping));
      Object.values(x).forEach(walk);
    };
    walk(doc);
    expect(mappings.length).toBeGreaterThan(10);
    for (const m of mappings) expect(Object.keys(doc.components.schemas)).toContain(m.replace('#/components/schemas/', ''));
  });

  it('is valid OpenAPI 3.1', async () => {
    const result = await validate(JSON.parse(text) as never);
    expect(result.valid ? [] : result.errors.slice(0, 3)).toEqual([]);
    // The validator does look: a dangling $ref is an error.
    const broken = JSON.parse(text) as Doc;
    broken.components.schemas.Quote = ref('NoSuchSchema');
    expect((await validate(broken as never)).valid).toBe(false);
  });

  it('generates named TypeScript types (openapi-typescript)', async () => {
    const ts = astToString(await openapiTS(JSON.parse(text) as never));
    const schemas = ts.slice(ts.indexOf('export interface components'));
    for (const n of ['Customer', 'Quote', 'OutgoingTransaction', 'ExternalAccount', 'InternalAccount', 'Error400', 'OutgoingPaymentWebhook']) {
      expect(schemas, n).toMatch(new RegExp(`\\n {8}${n}: \\{`));
    }
    // The operations use them by name.
    expect(ts).toContain('components["schemas"]["Customer"]');
    expect(ts).toContain('components["schemas"]["Quote"]');
    expect(ts).toContain('components["responses"]["Error400"]');
    // A discriminated branch keeps its own tag value (no mapping would make it the schema name).
    expect(ts).not.toMatch(/type: "IncomingTransaction"/);
  });

  it('lists the webhooks the service sends, each a named payload', () => {
    const types = new Set<string>();
    for (const [key, w] of Object.entries(doc.webhooks)) {
      const schema = w.post.requestBody.content['application/json']!.schema;
      const name = schema.$ref.replace('#/components/schemas/', '');
      expect(name, key).toMatch(/Webhook|TestWebhookRequest/);
      const payload = doc.components.schemas[name] as { required: string[]; properties: { type: { enum: string[] }; data: Json } };
      expect(payload.required).toEqual(expect.arrayContaining(['id', 'type', 'timestamp', 'data']));
      for (const e of payload.properties.type.enum) types.add(e);
    }
    expect(Object.keys(doc.webhooks).sort()).toEqual(
      ['customer-update', 'external-account-status', 'incoming-payment', 'internal-account-status', 'outgoing-payment', 'test-webhook', 'verification-update',
        // issue 19 (cards)
        'card-funding-source-change', 'card-state-change', 'card-transaction',
        // issue 20 (bulk import, invitations)
        'bulk-upload', 'invitation-claimed', 'invitation-expired',
        // issue 17 (agents)
        'agent-action'].sort(),
    );
    const data = (name: string) => (doc.components.schemas[name] as { properties: { data: Json } }).properties.data;
    expect(data('OutgoingPaymentWebhook')).toEqual(ref('OutgoingTransaction'));
    expect(data('IncomingPaymentWebhook')).toEqual(ref('IncomingTransaction'));
    expect(data('CustomerWebhook')).toEqual(ref('CustomerOneOf'));
    expect(data('InternalAccountStatusWebhook')).toEqual(ref('InternalAccount'));
    expect(data('ExternalAccountStatusWebhook')).toEqual(ref('ExternalAccount'));
    expect(data('VerificationWebhook')).toEqual(ref('Verification'));
    expect(data('CardStateChangeWebhook')).toEqual(ref('Card'));
    expect(data('CardTransactionWebhook')).toEqual(ref('CardTransaction'));
    expect(data('AgentActionWebhook')).toEqual(ref('AgentAction'));
    for (const e of ['OUTGOING_PAYMENT.COMPLETED', 'OUTGOING_PAYMENT.REFUND_COMPLETED', 'INCOMING_PAYMENT.PENDING', 'CUSTOMER.KYC_APPROVED', 'CUSTOMER.KYB_REJECTED',
      'VERIFICATION.APPROVED', 'INTERNAL_ACCOUNT.BALANCE_UPDATED', 'EXTERNAL_ACCOUNT.STATUS_UPDATED', 'TEST']) {
      expect([...types], e).toContain(e);
    }
    expect([...(doc.components.schemas.WebhookType as { enum: string[] }).enum].sort()).toEqual([...types].sort());
    expect(doc.components.securitySchemes.WebhookSignature).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-Service-Signature' });
  });

  it('lists every event type written literally in src/', () => {
    // Event types built from parts (OUTGOING_PAYMENT.<status>) are checked above; the
    // literal ones ('INTERNAL_ACCOUNT.BALANCE_UPDATED') must each be in a payload.
    const listed = new Set(Object.values(WEBHOOK_EVENTS).flat());
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const f of readdirSync(dir)) {
        const p = join(dir, f);
        if (statSync(p).isDirectory()) walk(p);
        else if (p.endsWith('.ts')) files.push(p);
      }
    };
    walk(join(import.meta.dirname, '../../src'));
    const found = new Set<string>();
    for (const f of files) {
      const src = readFileSync(f, 'utf8');
      if (!src.includes('emitEvent(')) continue;
      for (const m of src.matchAll(/'((?:OUTGOING_PAYMENT|INCOMING_PAYMENT|CUSTOMER|VERIFICATION|INTERNAL_ACCOUNT|EXTERNAL_ACCOUNT|AGENT_ACTION)\.[A-Z_]+)'/g)) found.add(m[1]!);
    }
    for (const f of files) {
      for (const m of readFileSync(f, 'utf8').matchAll(/= '((?:INTERNAL_ACCOUNT|EXTERNAL_ACCOUNT)\.[A-Z_]+)'/g)) found.add(m[1]!);
    }
    expect(found.size).toBeGreaterThan(0);
    for (const e of found) expect([...listed], e).toContain(e);
  });

  it('still serves Swagger UI at /docs, loading this document', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/docs/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    const init = await t.app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
    expect(init.statusCode).toBe(200);
    const json = await t.app.inject({ method: 'GET', url: '/docs/json' });
    expect(json.statusCode).toBe(200);
    expect(json.json()).toEqual(doc);
  });
});

describe('route config extension', () => {
  it('comes out as x-extension: true on the operation', async () => {
    const app = Fastify({ logger: false });
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: { title: 't', version: '1' },
        components: { securitySchemes: { BasicAuth: { type: 'http', scheme: 'basic' }, AgentAuth: { type: 'http', scheme: 'bearer' } } },
      },
      transform: openapiTransform,
    });
    const schema = { response: { 200: Type.Object({ ok: Type.Boolean() }) } };
    app.get(`${V}/newer`, { config: { extension: true }, schema }, async () => ({ ok: true }));
    app.get(`${V}/older`, { schema }, async () => ({ ok: true }));
    await app.ready();
    const d = app.swagger() as unknown as Doc;
    expect(d.paths['/newer']!.get!['x-extension']).toBe(true);
    expect(d.paths['/older']!.get!).not.toHaveProperty('x-extension');
    await app.close();
  });
});

describe('nameSchemas', () => {
  it('names a registered schema, a titled one, and leaves the rest inline', () => {
    const item = { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] };
    const titled = { type: 'string', enum: ['A', 'B'], title: 'Letter' };
    const d = {
      openapi: '3.1.0',
      paths: {
        '/x': {
          get: {
            responses: {
              '200': { description: 'ok', content: { 'application/json': { schema: { type: 'object', properties: { item: { ...item, description: 'The item' }, letter: titled, n: { type: 'integer' } } } } } },
            },
          },
        },
      },
    };
    const out = nameSchemas(d as never, { registered: { Item: { ...item, properties: { id: Type.String() }, required: ['id'] } } }) as unknown as Doc;
    const schema = (out.paths['/x']!.get!.responses['200'] as { content: Record<string, { schema: { properties: Record<string, Json> } }> }).content['application/json']!.schema;
    expect(schema.properties.item).toEqual({ ...ref('Item'), description: 'The item' });
    expect(schema.properties.letter).toEqual(ref('Letter'));
    expect(schema.properties.n).toEqual({ type: 'integer' });
    expect(Object.keys(out.components.schemas).sort()).toEqual(['Item', 'Letter']);
  });
});
