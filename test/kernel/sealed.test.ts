import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openSealed, Sealer } from '../../src/kernel/sealed.js';
import { makeApp, STORE, storeSeries, type TestApp } from '../helpers.js';

// The data key that seals sensitive values at rest: PAYMENTS_DATA_KEY, or a key the store
// keeps, generated at the first start; and the sealed format itself.

const BUSINESS = {
  customerType: 'BUSINESS',
  businessInfo: { legalName: 'Sealed Inc', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789', registrationNumber: 'RN-001' },
};
const PERSONAL = {
  firstName: 'Jane',
  lastName: 'Smith',
  birthDate: '1978-06-15',
  nationality: 'US',
  address: { line1: '1 Market Street', postalCode: '94105', country: 'US' },
  idType: 'SSN',
  identifier: '123-45-6789',
};

async function addOwner(t: TestApp): Promise<string> {
  const b = await t.call('POST', '/customers', BUSINESS);
  expect(b.statusCode, b.body).toBe(201);
  const o = await t.call('POST', '/beneficial-owners', { customerId: b.json().id, roles: ['UBO'], ownershipPercentage: 50, personalInfo: PERSONAL });
  expect(o.statusCode, o.body).toBe(201);
  return o.json().id as string;
}

async function sealedOf(t: TestApp, id: string): Promise<string> {
  return (await t.store.db.selectFrom('beneficial_owners').select('identifier_sealed').where('id', '=', id).executeTakeFirstOrThrow()).identifier_sealed!;
}

describe('PAYMENTS_DATA_KEY', () => {
  it('takes 32 bytes as hex or base64 (standard or url-safe)', () => {
    const key = randomBytes(32);
    for (const text of [key.toString('hex'), key.toString('base64'), key.toString('base64url'), ` ${key.toString('hex').toUpperCase()}\n`]) {
      expect(loadConfig({ PAYMENTS_DATA_KEY: text }).dataKey).toEqual(key);
    }
    expect(loadConfig({}).dataKey).toBeUndefined();
    expect(loadConfig({ PAYMENTS_DATA_KEY: '' }).dataKey).toBeUndefined();
  });

  it('refuses a key of another length or not hex/base64, without echoing it', () => {
    const short = randomBytes(16).toString('hex');
    expect(() => loadConfig({ PAYMENTS_DATA_KEY: short })).toThrow(/PAYMENTS_DATA_KEY must be 32 bytes .*decodes to 16 bytes/);
    expect(() => loadConfig({ PAYMENTS_DATA_KEY: randomBytes(33).toString('base64') })).toThrow(/decodes to 33 bytes/);
    expect(() => loadConfig({ PAYMENTS_DATA_KEY: 'not a key!' })).toThrow(/PAYMENTS_DATA_KEY must be 32 bytes/);
    try {
      loadConfig({ PAYMENTS_DATA_KEY: short });
    } catch (err) {
      expect((err as Error).message).not.toContain(short);
    }
  });
});

describe(`the data key (${STORE})`, () => {
  it('without a configured secret: generated at the first start (PostgreSQL: kept in the store; a SQLite file: kept beside it), the same after a restart', async () => {
    const series = await storeSeries();
    try {
      const first = await makeApp({ testStore: await series.open() });
      const keys = await first.store.db.selectFrom('data_keys').selectAll().execute();
      if (STORE === 'postgres') {
        expect(keys).toHaveLength(1);
        expect(Buffer.from(keys[0]!.data_key, 'base64')).toHaveLength(32);
      } else {
        expect(keys).toEqual([]);
        expect(first.running.secretSource).toBe('data-directory');
      }
      const keyId = first.running.app.deps.sealer.keyId;
      const id = await addOwner(first);
      expect((await sealedOf(first, id)).split('.').slice(0, 2)).toEqual(['v1', keyId]);
      await first.close();

      const second = await makeApp({ testStore: await series.open() });
      try {
        expect(await second.store.db.selectFrom('data_keys').selectAll().execute()).toEqual(keys);
        expect(second.running.app.deps.sealer.keyId).toBe(keyId);
        expect((await second.call('GET', `/beneficial-owners/${id}`)).json().personalInfo.identifier).toBe('123-45-6789');
      } finally {
        await second.close();
      }
    } finally {
      await series.drop();
    }
  });

  it('with PAYMENTS_DATA_KEY: seals with it and keeps no key in the store', async () => {
    const key = randomBytes(32);
    const t = await makeApp({ env: { PAYMENTS_DATA_KEY: key.toString('base64') } });
    try {
      expect(await t.store.db.selectFrom('data_keys').selectAll().execute()).toEqual([]);
      const id = await addOwner(t);
      const sealed = await sealedOf(t, id);
      expect(sealed.split('.')[1]).toBe(new Sealer(key).keyId);
      expect(t.running.app.deps.sealer.keyId).toBe(new Sealer(key).keyId);
      expect((await t.call('GET', `/beneficial-owners/${id}`)).json().personalInfo.identifier).toBe('123-45-6789');
    } finally {
      await t.close();
    }
  });
});

describe('sealed values', () => {
  const sealer = new Sealer(randomBytes(32)).register();

  it('open only for their context, with a fresh nonce each time, and not once altered', () => {
    const a = sealer.seal('123-45-6789', 'beneficial_owners.identifier:A');
    const b = sealer.seal('123-45-6789', 'beneficial_owners.identifier:A');
    expect(a).not.toBe(b);
    expect(a).toMatch(/^v1\.[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{36}$/);
    expect(openSealed(a, 'beneficial_owners.identifier:A')).toBe('123-45-6789');
    expect(openSealed(b, 'beneficial_owners.identifier:A')).toBe('123-45-6789');
    expect(openSealed(a, 'beneficial_owners.identifier:B')).toBeUndefined();
    const parts = a.split('.');
    const body = Buffer.from(parts[3]!, 'base64url');
    body[0] = body[0]! ^ 1;
    expect(openSealed([parts[0], parts[1], parts[2], body.toString('base64url')].join('.'), 'beneficial_owners.identifier:A')).toBeUndefined();
    expect(openSealed('123-45-6789', 'beneficial_owners.identifier:A')).toBeUndefined();
  });

  it('a key not registered in this process opens nothing', () => {
    const stranger = new Sealer(randomBytes(32));
    expect(openSealed(stranger.seal('x', 'c'), 'c')).toBeUndefined();
    expect(openSealed(stranger.register().seal('x', 'c'), 'c')).toBe('x');
  });
});
