import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { generatedParts } from '../../src/api/customers/service.js';
import { envelope, makeApp, STORE, type TestApp } from '../helpers.js';

// Issue 15: a value the service generates never answers 409. The UMA address of a customer
// created without one is `$<name>.<random>@<domain>`; customers with the same name draw
// from the same space, and a taken draw is drawn again instead of refused.

interface Customer {
  id: string;
  umaAddress: string;
  platformCustomerId: string;
}

const body = (extra: Record<string, unknown> = {}) => ({ customerType: 'INDIVIDUAL', fullName: 'Sam Same', ...extra });

describe(`generated customer values never conflict (${STORE})`, () => {
  let t: TestApp;
  let domain: string;
  beforeAll(async () => {
    t = await makeApp();
    domain = ((await t.call('GET', '/config')).json() as { umaDomain: string }).umaDomain;
  });
  afterAll(async () => t.close());
  afterEach(() => vi.restoreAllMocks());

  async function create(extra: Record<string, unknown> = {}): Promise<Customer> {
    const res = await t.call('POST', '/customers', body(extra));
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as Customer;
  }

  it('draws the random part again when the generated UMA address is taken by an earlier customer', async () => {
    const taken = await create({ umaAddress: `$sam.same.abc123@${domain}` });
    const spy = vi.spyOn(generatedParts, 'umaSuffix').mockReturnValueOnce('abc123').mockReturnValueOnce('abc123').mockReturnValueOnce('def456');
    const c = await create();
    expect(c.umaAddress).toBe(`$sam.same.def456@${domain}`);
    expect(c.umaAddress).not.toBe(taken.umaAddress);
    expect(spy).toHaveBeenCalledTimes(3);
  });

  it('after three taken draws the random part gets longer, and it never gives up with a 409', async () => {
    await create({ umaAddress: `$sam.same.aaaaaa@${domain}` });
    const spy = vi.spyOn(generatedParts, 'umaSuffix');
    spy.mockImplementation((attempt: number) => (attempt < 3 ? 'aaaaaa' : 'longer0123456789'));
    const c = await create();
    expect(c.umaAddress).toBe(`$sam.same.longer0123456789@${domain}`);
    expect(spy.mock.calls.map((call) => call[0])).toEqual([0, 1, 2, 3]);
    // The real suffix from the fourth draw on is 8 random bytes.
    spy.mockRestore();
    expect(generatedParts.umaSuffix(3)).toMatch(/^[0-9a-f]{16}$/);
    expect(generatedParts.umaSuffix(0)).toMatch(/^[0-9a-f]{6}$/);
  });

  it('a generated platformCustomerId that is taken is drawn again too', async () => {
    const first = await create({ platformCustomerId: 'cust_0000000000000000' });
    vi.spyOn(generatedParts, 'platformCustomerIdSuffix').mockReturnValueOnce('0000000000000000').mockReturnValueOnce('1111111111111111');
    const c = await create();
    expect(first.platformCustomerId).toBe('cust_0000000000000000');
    expect(c.platformCustomerId).toBe('cust_1111111111111111');
  });

  it('a UMA address the request names is still refused when taken (that 409 the request caused)', async () => {
    await create({ umaAddress: `$named@${domain}` });
    envelope(await t.call('POST', '/customers', body({ umaAddress: `$named@${domain}` })), 409, 'UMA_ADDRESS_EXISTS');
    envelope(await t.call('POST', '/customers', body({ platformCustomerId: 'cust_0000000000000000' })), 409, 'CONFLICT');
  });

  it('two creates racing for the same generated address: both succeed, with different addresses', async () => {
    // Every first draw of both requests is the same suffix; the unique index decides and the loser draws again.
    vi.spyOn(generatedParts, 'umaSuffix').mockImplementation((attempt: number) => (attempt === 0 ? 'race00' : Math.random().toString(16).slice(2, 8)));
    const results = await Promise.all(Array.from({ length: 6 }, () => t.call('POST', '/customers', body())));
    for (const r of results) expect(r.statusCode, r.body).toBe(201);
    const addresses = results.map((r) => (r.json() as Customer).umaAddress);
    expect(new Set(addresses).size).toBe(addresses.length);
    expect(addresses.filter((a) => a === `$sam.same.race00@${domain}`)).toHaveLength(1);
  });

  it('many customers with the same name: every create answers 201 with a distinct address', async () => {
    // 3 random bytes give 16.7 M suffixes; squeeze them to 64 so collisions are certain and frequent.
    const real = generatedParts.umaSuffix.bind(generatedParts);
    vi.spyOn(generatedParts, 'umaSuffix').mockImplementation((attempt: number) => (attempt < 3 ? `s${Math.floor(Math.random() * 64)}` : real(attempt)));
    const statuses: number[] = [];
    const addresses = new Set<string>();
    for (let batch = 0; batch < 10; batch++) {
      const res = await Promise.all(Array.from({ length: 10 }, () => t.call('POST', '/customers', body())));
      for (const r of res) {
        statuses.push(r.statusCode);
        if (r.statusCode === 201) addresses.add((r.json() as Customer).umaAddress);
      }
    }
    expect(statuses.filter((s) => s !== 201)).toEqual([]);
    expect(addresses.size).toBe(100);
  });
});
