import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, basic, envelope, makeApp, STORE, type TestApp, waitFor } from '../helpers.js';
import { Receiver } from '../webhook-receiver.js';
import { Sealer } from '../../src/kernel/sealed.js';

// Beneficial owners of business customers: create, get, list, partial update, and the
// validation that reports every invalid field in one 400.

interface Owner {
  id: string;
  customerId: string;
  roles: string[];
  ownershipPercentage: number;
  personalInfo: Record<string, unknown>;
  kycStatus: string;
  createdAt: string;
  updatedAt?: string;
}

const ADDRESS = { line1: '1 Market Street', city: 'San Francisco', state: 'CA', postalCode: '94105', country: 'US' };
const PERSONAL = {
  firstName: 'Jane',
  middleName: 'Marie',
  lastName: 'Smith',
  birthDate: '1978-06-15',
  nationality: 'US',
  email: 'jane.smith@acme.example',
  phoneNumber: '+14155550192',
  address: ADDRESS,
  idType: 'SSN',
  identifier: '123-45-6789',
};
const OWNER_ID = /^BeneficialOwner:[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const UNKNOWN_CUSTOMER = 'Customer:01950000-0000-7000-8000-000000000000';
const UNKNOWN_OWNER = 'BeneficialOwner:01950000-0000-7000-8000-000000000000';

function fieldsOf(e: { details?: Record<string, unknown> }): string[] {
  return [...new Set((e.details?.errors as Array<{ field: string }>).map((x) => x.field))].sort();
}

describe(`beneficial owners (${STORE})`, () => {
  let t: TestApp;
  let business: string;
  let individual: string;
  beforeAll(async () => {
    t = await makeApp();
    const b = await t.call('POST', '/customers', {
      customerType: 'BUSINESS',
      businessInfo: { legalName: 'Acme Inc', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789', registrationNumber: 'RN-001' },
    });
    expect(b.statusCode, b.body).toBe(201);
    business = b.json().id;
    const i = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Solo Person' });
    expect(i.statusCode, i.body).toBe(201);
    individual = i.json().id;
  });
  afterAll(async () => t.close());

  async function create(body: Record<string, unknown> = {}, headers?: Record<string, string>): Promise<Owner> {
    const res = await t.call('POST', '/beneficial-owners', { customerId: business, roles: ['UBO', 'DIRECTOR'], ownershipPercentage: 51, personalInfo: PERSONAL, ...body }, headers);
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as Owner;
  }

  it('creates an owner (201): UNVERIFIED, the identifier returned as sent and sealed at rest', async () => {
    const res = await t.call('POST', '/beneficial-owners', { customerId: business, roles: ['UBO', 'DIRECTOR'], ownershipPercentage: 51, personalInfo: PERSONAL });
    expect(res.statusCode, res.body).toBe(201);
    const o = res.json() as Owner;
    expect(o.id).toMatch(OWNER_ID);
    expect(o).toEqual({
      id: o.id,
      customerId: business,
      roles: ['UBO', 'DIRECTOR'],
      ownershipPercentage: 51,
      personalInfo: { ...PERSONAL, identifier: '123-45-6789', countryOfIssuance: 'US' },
      kycStatus: 'UNVERIFIED',
      createdAt: o.createdAt,
      updatedAt: o.createdAt,
    });

    // At rest: the last 4 in personal_info, the full number only sealed.
    const row = await t.store.db.selectFrom('beneficial_owners').selectAll().where('id', '=', o.id).executeTakeFirstOrThrow();
    expect(row.personal_info).not.toContain('123-45');
    expect(JSON.parse(row.personal_info).identifierLast4).toBe('6789');
    expect(row.identifier_sealed).toMatch(/^v1\.[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
    for (const plain of ['123-45-6789', '123456789', Buffer.from('123-45-6789').toString('base64')]) expect(row.identifier_sealed).not.toContain(plain);
    expect(JSON.stringify(row)).not.toContain('123-45');

    // GET returns the same view; the business embeds it.
    expect((await t.call('GET', `/beneficial-owners/${o.id}`)).json()).toEqual(o);
    const customer = (await t.call('GET', `/customers/${business}`)).json() as { beneficialOwners: Owner[] };
    expect(customer.beneficialOwners.find((x) => x.id === o.id)).toEqual(o);
    const list = (await t.call('GET', `/customers?customerType=BUSINESS&limit=100`)).json() as { data: Array<{ id: string; beneficialOwners: Owner[] }> };
    expect(list.data.find((c) => c.id === business)!.beneficialOwners.find((x) => x.id === o.id)!.personalInfo.identifier).toBe('123-45-6789');
    const owners = (await t.call('GET', `/beneficial-owners?customerId=${encodeURIComponent(business)}`)).json() as { data: Owner[] };
    expect(owners.data.find((x) => x.id === o.id)).toEqual(o);
  });

  it('accepts only the required personal fields', async () => {
    const { middleName: _m, email: _e, phoneNumber: _p, identifier: _i, ...required } = PERSONAL;
    const o = await create({ roles: ['CONTROL_PERSON'], ownershipPercentage: 0, personalInfo: { ...required, idType: 'NON_US_TAX_ID', identifier: 'AB123456', countryOfIssuance: 'GB' } });
    expect(o.personalInfo).toEqual({ ...required, idType: 'NON_US_TAX_ID', identifier: 'AB123456', countryOfIssuance: 'GB' });
  });

  it('refuses an individual customer with 400 INVALID_INPUT naming customerId', async () => {
    const e = envelope(await t.call('POST', '/beneficial-owners', { customerId: individual, roles: ['UBO'], ownershipPercentage: 10, personalInfo: PERSONAL }), 400, 'INVALID_INPUT');
    expect(fieldsOf(e)).toEqual(['customerId']);
  });

  it('reports the customer and the identifier problems together', async () => {
    const e = envelope(
      await t.call('POST', '/beneficial-owners', { customerId: individual, roles: ['UBO'], ownershipPercentage: 10, personalInfo: { ...PERSONAL, identifier: '000-12-3456' } }),
      400,
      'INVALID_INPUT',
    );
    expect(fieldsOf(e)).toEqual(['customerId', 'personalInfo.identifier']);
  });

  it('answers 404 USER_NOT_FOUND for an unknown customer', async () => {
    envelope(await t.call('POST', '/beneficial-owners', { customerId: UNKNOWN_CUSTOMER, roles: ['UBO'], ownershipPercentage: 10, personalInfo: PERSONAL }), 404, 'USER_NOT_FOUND');
  });

  it('lists every invalid field in one 400', async () => {
    const e = envelope(
      await t.call('POST', '/beneficial-owners', {
        roles: ['CEO'],
        ownershipPercentage: 101,
        personalInfo: {
          firstName: '',
          birthDate: '1978-02-30',
          nationality: 'XX',
          email: 'not-an-email',
          phoneNumber: '555-1234',
          address: { line1: '1 Main', country: 'ZZ' },
          idType: 'PASSPORT',
          countryOfIssuance: 'U',
        },
      }),
      400,
      'INVALID_INPUT',
    );
    expect(fieldsOf(e)).toEqual(
      [
        'customerId',
        'roles.0',
        'ownershipPercentage',
        'personalInfo.firstName',
        'personalInfo.lastName',
        'personalInfo.birthDate',
        'personalInfo.nationality',
        'personalInfo.email',
        'personalInfo.phoneNumber',
        'personalInfo.address.postalCode',
        'personalInfo.address.country',
        'personalInfo.idType',
        'personalInfo.identifier',
        'personalInfo.countryOfIssuance',
      ].sort(),
    );
    const byField = Object.fromEntries((e.details!.errors as Array<{ field: string; constraint?: Record<string, unknown> }>).map((x) => [x.field, x.constraint]));
    expect(byField['personalInfo.phoneNumber']).toEqual({ format: 'e.164' });
    expect(byField['personalInfo.birthDate']).toEqual({ format: 'date' });
    expect(byField['personalInfo.nationality']).toEqual({ format: 'iso3166-1-alpha-2' });
  });

  it('checks ownershipPercentage bounds, roles and identifiers by idType', async () => {
    const bad = async (body: Record<string, unknown>, fields: string[]) => {
      const e = envelope(await t.call('POST', '/beneficial-owners', { customerId: business, roles: ['UBO'], ownershipPercentage: 10, personalInfo: PERSONAL, ...body }), 400, 'INVALID_INPUT');
      expect(fieldsOf(e), JSON.stringify(body)).toEqual(fields);
    };
    await bad({ ownershipPercentage: -1 }, ['ownershipPercentage']);
    await bad({ ownershipPercentage: 12.5 }, ['ownershipPercentage']);
    await bad({ roles: [] }, ['roles']);
    await bad({ roles: ['UBO', 'UBO'] }, ['roles']);
    await bad({ personalInfo: { ...PERSONAL, identifier: '123456789X' } }, ['personalInfo.identifier']);
    await bad({ personalInfo: { ...PERSONAL, idType: 'ITIN', identifier: '123-45-6789' } }, ['personalInfo.identifier']);
    await bad({ personalInfo: { ...PERSONAL, idType: 'EIN', identifier: '12-3456789' } }, ['personalInfo.idType']);
    await bad({ personalInfo: { ...PERSONAL, countryOfIssuance: 'GB' } }, ['personalInfo.countryOfIssuance']);
    await bad({ personalInfo: { ...PERSONAL, idType: 'NON_US_TAX_ID', identifier: 'AB123' } }, ['personalInfo.countryOfIssuance']);
  });

  it('gets by id; unknown ids answer 404 REFERENCE_NOT_FOUND', async () => {
    const o = await create();
    expect((await t.call('GET', `/beneficial-owners/${o.id}`)).json()).toEqual(o);
    envelope(await t.call('GET', `/beneficial-owners/${UNKNOWN_OWNER}`), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('GET', '/beneficial-owners/nonsense'), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('PATCH', `/beneficial-owners/${UNKNOWN_OWNER}`, { ownershipPercentage: 5 }), 404, 'REFERENCE_NOT_FOUND');
  });

  it('updates only the fields sent, merging personalInfo field by field', async () => {
    const o = await create();
    t.clock.advance(1000);
    const res = await t.call('PATCH', `/beneficial-owners/${o.id}`, {
      ownershipPercentage: 30,
      personalInfo: { middleName: 'Ann', address: { ...ADDRESS, line1: '2 Mission Street' }, identifier: '234-56-4321' },
    });
    expect(res.statusCode, res.body).toBe(200);
    const u = res.json() as Owner;
    expect(u.roles).toEqual(o.roles);
    expect(u.ownershipPercentage).toBe(30);
    expect(u.personalInfo).toEqual({ ...o.personalInfo, middleName: 'Ann', address: { ...ADDRESS, line1: '2 Mission Street' }, identifier: '234-56-4321' });
    expect(u.kycStatus).toBe('UNVERIFIED');
    expect(u.createdAt).toBe(o.createdAt);
    expect(u.updatedAt! > o.createdAt).toBe(true);
    const row = await t.store.db.selectFrom('beneficial_owners').selectAll().where('id', '=', o.id).executeTakeFirstOrThrow();
    expect(JSON.parse(row.personal_info).identifierLast4).toBe('4321');
    expect(JSON.stringify(row)).not.toContain('234-56');
    expect(JSON.stringify(row)).not.toContain('123-45');
    expect((await t.call('GET', `/beneficial-owners/${o.id}`)).json().personalInfo.identifier).toBe('234-56-4321');

    const roles = await t.call('PATCH', `/beneficial-owners/${o.id}`, { roles: ['COMPANY_OFFICER'] });
    expect(roles.json()).toMatchObject({ roles: ['COMPANY_OFFICER'], ownershipPercentage: 30 });
    expect((await t.call('GET', `/beneficial-owners/${o.id}`)).json()).toEqual(roles.json());
  });

  it('refuses an invalid update with every problem in one 400', async () => {
    const o = await create();
    const e = envelope(
      await t.call('PATCH', `/beneficial-owners/${o.id}`, { ownershipPercentage: 150, roles: ['BOSS'], personalInfo: { birthDate: 'yesterday', email: 'x', identifier: '12' } }),
      400,
      'INVALID_INPUT',
    );
    expect(fieldsOf(e)).toEqual(['ownershipPercentage', 'personalInfo.birthDate', 'personalInfo.email', 'roles.0']);
    const e2 = envelope(await t.call('PATCH', `/beneficial-owners/${o.id}`, { personalInfo: { identifier: '12' } }), 400, 'INVALID_INPUT');
    expect(fieldsOf(e2)).toEqual(['personalInfo.identifier']);
    expect((await t.call('GET', `/beneficial-owners/${o.id}`)).json()).toEqual(o);
  });

  it('lists owners by customer with cursor pagination, newest first', async () => {
    const b = await t.call('POST', '/customers', {
      customerType: 'BUSINESS',
      businessInfo: { legalName: 'Listed Ltd', country: 'GB', incorporatedOn: '2019-01-01', taxId: 'GB123', registrationNumber: 'RN-L001' },
    });
    const customerId = b.json().id as string;
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await create({ customerId, personalInfo: { ...PERSONAL, lastName: `Owner${i}` } })).id);

    const all = (await t.call('GET', `/beneficial-owners?customerId=${encodeURIComponent(customerId)}`)).json() as { data: Owner[]; hasMore: boolean; totalCount: number };
    expect(all.totalCount).toBe(5);
    expect(all.hasMore).toBe(false);
    expect(all.data.map((o) => o.id)).toEqual([...made].reverse());

    const seen: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const res = await t.call('GET', `/beneficial-owners?customerId=${encodeURIComponent(customerId)}&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.statusCode, res.body).toBe(200);
      const page = res.json() as { data: Owner[]; hasMore: boolean; nextCursor?: string; totalCount: number };
      expect(page.totalCount).toBe(5);
      seen.push(...page.data.map((o) => o.id));
      if (!page.hasMore) break;
      cursor = page.nextCursor;
    }
    expect(seen).toEqual([...made].reverse());
    const everyone = (await t.call('GET', '/beneficial-owners?limit=100')).json() as { data: Owner[] };
    expect(everyone.data.map((o) => o.id)).toEqual(expect.arrayContaining(made));
    expect(everyone.data.some((o) => o.customerId === business)).toBe(true);
    envelope(await t.call('GET', '/beneficial-owners?limit=0'), 400, 'INVALID_INPUT');
    envelope(await t.call('GET', '/beneficial-owners?cursor=garbage'), 400, 'INVALID_INPUT');
  });

  it('resolves a new owner at once when its business is settled, and a rename changes nothing', async () => {
    const b = await t.call('POST', '/customers', {
      customerType: 'BUSINESS',
      businessInfo: { legalName: 'Settled Co', country: 'US', incorporatedOn: '2010-01-01', taxId: '98-7654321', registrationNumber: 'RN-OK' },
    });
    const customerId = b.json().id as string;
    const v = await t.call('POST', '/verifications', { customerId });
    expect(v.json().verificationStatus).toBe('APPROVED');
    const pending = await create({ customerId, personalInfo: { ...PERSONAL, lastName: 'Pend001' } });
    const rejected = await create({ customerId, personalInfo: { ...PERSONAL, lastName: 'Rej002' } });
    const approved = await create({ customerId, personalInfo: { ...PERSONAL, lastName: 'Fine' } });
    expect([pending.kycStatus, rejected.kycStatus, approved.kycStatus]).toEqual(['PENDING', 'REJECTED', 'APPROVED']);
    const renamed = await t.call('PATCH', `/beneficial-owners/${approved.id}`, { personalInfo: { lastName: 'Fine002' } });
    expect(renamed.json()).toMatchObject({ kycStatus: 'APPROVED', personalInfo: { lastName: 'Fine002' } });
  });

  it("answers another platform's owner and customer exactly like unknown ones", async () => {
    const created = await t.call('POST', '/admin/platforms', { name: 'Other platform' }, { authorization: `Bearer ${ADMIN_KEY}` });
    const creds = created.json().credentials as { clientId: string; clientSecret: string };
    const other = { authorization: basic(creds.clientId, creds.clientSecret) };
    const o = await create();
    envelope(await t.call('GET', `/beneficial-owners/${o.id}`, undefined, other), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('PATCH', `/beneficial-owners/${o.id}`, { ownershipPercentage: 1 }, other), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('POST', '/beneficial-owners', { customerId: business, roles: ['UBO'], ownershipPercentage: 10, personalInfo: PERSONAL }, other), 404, 'USER_NOT_FOUND');
    expect((await t.call('GET', '/beneficial-owners', undefined, other)).json()).toEqual({ data: [], hasMore: false, totalCount: 0 });
    expect((await t.call('GET', `/beneficial-owners?customerId=${encodeURIComponent(business)}`, undefined, other)).json().data).toEqual([]);
    expect((await t.call('GET', `/beneficial-owners/${o.id}`)).json()).toEqual(o);
  });

  it('an ITIN and a changed idType come back exactly as sent; an update without identifier keeps it', async () => {
    const o = await create({ personalInfo: { ...PERSONAL, idType: 'ITIN', identifier: '912-70-1234' } });
    expect(o.personalInfo.identifier).toBe('912-70-1234');
    const u = await t.call('PATCH', `/beneficial-owners/${o.id}`, { personalInfo: { idType: 'NON_US_TAX_ID', identifier: 'X-99 887', countryOfIssuance: 'DE' } });
    expect(u.statusCode, u.body).toBe(200);
    expect((u.json() as Owner).personalInfo.identifier).toBe('X-99 887');
    const named = await t.call('PATCH', `/beneficial-owners/${o.id}`, { personalInfo: { firstName: 'Janet' } });
    expect(named.json().personalInfo).toMatchObject({ firstName: 'Janet', identifier: 'X-99 887' });
  });

  it('an Idempotency-Key replay answers the identifier in full; the stored answer keeps it sealed', async () => {
    const key = { 'idempotency-key': `owner-${Math.random().toString(36).slice(2)}` };
    const body = { customerId: business, roles: ['UBO'], ownershipPercentage: 20, personalInfo: { ...PERSONAL, identifier: '345-67-8901' } };
    const first = await t.call('POST', '/beneficial-owners', body, key);
    expect(first.statusCode, first.body).toBe(201);
    expect(first.json().personalInfo.identifier).toBe('345-67-8901');
    const again = await t.call('POST', '/beneficial-owners', body, key);
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
    const stored = await t.store.db.selectFrom('idempotency_keys').selectAll().where('key', '=', key['idempotency-key']).executeTakeFirstOrThrow();
    expect(stored.response_body).toMatch(/^v1\./);
    expect(JSON.stringify(stored)).not.toContain('345-67');
    // A stored answer that no longer opens is never replayed as something else, nor executed again.
    const owners = (await t.call('GET', `/beneficial-owners?customerId=${encodeURIComponent(business)}&limit=100`)).json().data.length as number;
    const foreign = new Sealer(Buffer.alloc(32, 9)).seal(first.body, 'elsewhere');
    await t.store.db.updateTable('idempotency_keys').set({ response_body: foreign }).where('key', '=', key['idempotency-key']).execute();
    envelope(await t.call('POST', '/beneficial-owners', body, key), 409, 'CONFLICT');
    expect((await t.call('GET', `/beneficial-owners?customerId=${encodeURIComponent(business)}&limit=100`)).json().data).toHaveLength(owners);
  });

  it('answers the masked last 4 when the full number cannot be opened: owners from before it was kept, another key, a moved value', async () => {
    const a = await create();
    const b = await create({ personalInfo: { ...PERSONAL, idType: 'NON_US_TAX_ID', identifier: 'ZZ-55 4433', countryOfIssuance: 'FR' } });
    const sealedOf = async (id: string) =>
      (await t.store.db.selectFrom('beneficial_owners').select('identifier_sealed').where('id', '=', id).executeTakeFirstOrThrow()).identifier_sealed!;
    const identifierOf = async (id: string) => (await t.call('GET', `/beneficial-owners/${id}`)).json().personalInfo.identifier as string;

    // A value sealed for another row does not open here (the row id is authenticated).
    await t.store.db.updateTable('beneficial_owners').set({ identifier_sealed: await sealedOf(a.id) }).where('id', '=', b.id).execute();
    expect(await identifierOf(b.id)).toBe('****4433');
    // Sealed with a key this process does not have.
    const stranger = new Sealer(Buffer.alloc(32, 7)).seal('999-88-7777', `beneficial_owners.identifier:${a.id}`);
    await t.store.db.updateTable('beneficial_owners').set({ identifier_sealed: stranger }).where('id', '=', a.id).execute();
    expect(await identifierOf(a.id)).toBe('***-**-6789');
    // An owner from before migration 0017: only the last 4 were kept.
    await t.store.db.updateTable('beneficial_owners').set({ identifier_sealed: null }).where('id', '=', a.id).execute();
    expect(await identifierOf(a.id)).toBe('***-**-6789');
    // Sending the number again keeps it in full from then on.
    const again = await t.call('PATCH', `/beneficial-owners/${a.id}`, { personalInfo: { identifier: '123-45-6789' } });
    expect(again.json().personalInfo.identifier).toBe('123-45-6789');
    expect(await identifierOf(a.id)).toBe('123-45-6789');
  });
});

describe(`the served OpenAPI document (${STORE})`, () => {
  it("lists identifier (required) on the owner's personalInfo, and not on the customer", async () => {
    const t = await makeApp();
    try {
      const spec = (await t.call('GET', '/openapi.json')).json() as Record<string, any>;
      const deref = (schema: Record<string, any>): Record<string, any> =>
        schema.$ref ? deref(spec.components.schemas[(schema.$ref as string).split('/').pop()!]) : schema;
      const answer = (path: string, method: string, status: string) => deref(spec.paths[path][method].responses[status].content['application/json'].schema);
      const owners = [
        answer('/beneficial-owners', 'post', '201'),
        answer('/beneficial-owners/{beneficialOwnerId}', 'get', '200'),
        answer('/beneficial-owners/{beneficialOwnerId}', 'patch', '200'),
        deref(deref(answer('/beneficial-owners', 'get', '200').properties.data).items),
      ];
      const customers = [answer('/customers', 'post', '201'), answer('/customers/{customerId}', 'get', '200'), answer('/customers/{customerId}', 'patch', '200')];
      owners.push(deref(deref(customers[1]!.properties.beneficialOwners).items));
      for (const owner of owners) {
        const info = deref(owner.properties.personalInfo);
        expect(info.properties.identifier).toMatchObject({ type: 'string' });
        expect(info.required).toContain('identifier');
      }
      for (const customer of customers) {
        expect(Object.keys(customer.properties)).toContain('idType');
        expect(Object.keys(customer.properties)).not.toContain('identifier');
      }
      // The individual's create body still takes it, marked write-only.
      const create = deref(spec.paths['/customers'].post.requestBody.content['application/json'].schema);
      const individual = deref(create.oneOf.map(deref).find((b: Record<string, any>) => (b.properties.customerType.enum?.[0] ?? b.properties.customerType.const) === 'INDIVIDUAL'));
      expect(individual.properties.identifier).toMatchObject({ type: 'string', writeOnly: true });
    } finally {
      await t.close();
    }
  });
});

describe(`beneficial owners in CUSTOMER.KYB_* webhooks (${STORE})`, () => {
  it('the business in the webhook carries its owners with their identifier as sent', async () => {
    const t = await makeApp({ worker: true });
    const receiver = await new Receiver().start();
    try {
      expect((await t.call('PATCH', '/config', { webhookEndpoint: receiver.url })).statusCode).toBe(200);
      const b = await t.call('POST', '/customers', {
        customerType: 'BUSINESS',
        businessInfo: { legalName: 'Hooked Inc', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789', registrationNumber: 'RN-777' },
      });
      const customerId = b.json().id as string;
      const owner = await t.call('POST', '/beneficial-owners', { customerId, roles: ['UBO'], ownershipPercentage: 60, personalInfo: { ...PERSONAL, identifier: '321-54-9876' } });
      expect(owner.statusCode, owner.body).toBe(201);
      expect((await t.call('POST', '/verifications', { customerId })).json().verificationStatus).toBe('APPROVED');
      await waitFor(() => receiver.got.some((r) => r.json.type === 'CUSTOMER.KYB_APPROVED'));
      const hook = receiver.got.find((r) => r.json.type === 'CUSTOMER.KYB_APPROVED')!;
      const data = hook.json.data as { id: string; beneficialOwners: Owner[] };
      expect(data.id).toBe(customerId);
      expect(data.beneficialOwners).toHaveLength(1);
      expect(data.beneficialOwners[0]!.personalInfo.identifier).toBe('321-54-9876');
      expect(data.beneficialOwners[0]!.kycStatus).toBe('APPROVED');
    } finally {
      await receiver.stop();
      await t.close();
    }
  });
});
