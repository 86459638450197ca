import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelope, makeApp, STORE, type TestApp } from '../helpers.js';

// GET /discoveries, GET /uma-providers, GET /vasps (black box, over HTTP): fixed sandbox
// directories. Read-only, so one app serves every test.

interface Discovery {
  bankName: string;
  displayName: string;
  country: string;
  currency: string;
  paymentRails?: string[];
  accountType?: string;
}
interface UmaProvider {
  name: string;
  supportedRegions: string[];
  domain: string;
  logoUrl: string;
  supportedCurrencies: Array<{ code: string; name: string; symbol: string; decimals: number }>;
  lei: string;
  allowListStatus: boolean;
}
interface Page<T> {
  data: T[];
  hasMore: boolean;
  nextCursor?: string;
  totalCount?: number;
}

/** ISO 17442: the 20 characters, letters as 10–35, are 1 mod 97. */
function leiValid(lei: string): boolean {
  if (!/^[0-9A-Z]{18}[0-9]{2}$/.test(lei)) return false;
  const digits = [...lei].map((c) => (c >= 'A' ? String(c.charCodeAt(0) - 55) : c)).join('');
  return [...digits].reduce((r, d) => (r * 10 + Number(d)) % 97, 0) === 1;
}

describe(`discoveries, UMA providers and VASPs (${STORE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp();
  });
  afterAll(async () => t.close());

  async function get<T>(url: string): Promise<T> {
    const res = await t.call('GET', url);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as T;
  }

  describe('GET /discoveries', () => {
    it('lists the banks and providers of a corridor (the reference example: PH, PHP)', async () => {
      const { data } = await get<{ data: Discovery[] }>('/discoveries?country=PH&currency=PHP');
      expect(data.map((d) => d.bankName)).toEqual(expect.arrayContaining(['BDO Unibank', 'BPI', 'GCash']));
      expect(data.find((d) => d.bankName === 'BPI')).toEqual({
        bankName: 'BPI',
        displayName: 'Bank of the Philippine Islands',
        country: 'PH',
        currency: 'PHP',
        paymentRails: ['INSTAPAY', 'PESONET'],
        accountType: 'PHP_ACCOUNT',
      });
      expect(data.every((d) => d.country === 'PH' && d.currency === 'PHP')).toBe(true);
    });

    it('filters by country or currency alone; everything without filters, in a stable order', async () => {
      const eur = (await get<{ data: Discovery[] }>('/discoveries?currency=EUR')).data;
      expect(new Set(eur.map((d) => d.country)).size).toBeGreaterThan(5);
      expect(eur.every((d) => d.currency === 'EUR' && d.accountType === 'EUR_ACCOUNT' && d.paymentRails?.[0] === 'SEPA_INSTANT')).toBe(true);
      const sv = (await get<{ data: Discovery[] }>('/discoveries?country=SV')).data;
      expect(sv.length).toBeGreaterThan(0);
      expect(sv.every((d) => d.currency === 'USD' && d.accountType === 'SLV_ACCOUNT')).toBe(true);
      const ke = (await get<{ data: Discovery[] }>('/discoveries?country=KE')).data;
      expect(ke.find((d) => d.bankName === 'M-Pesa')?.paymentRails).toEqual(['MOBILE_MONEY', 'BANK_TRANSFER']);
      const all = (await get<{ data: Discovery[] }>('/discoveries')).data;
      expect(all.length).toBeGreaterThan(100);
      const keys = all.map((d) => `${d.country}|${d.currency}|${d.bankName}`);
      expect(new Set(keys).size).toBe(keys.length);
      expect(all).toEqual((await get<{ data: Discovery[] }>('/discoveries')).data);
      expect([...all].sort((a, b) => a.country.localeCompare(b.country) || a.currency.localeCompare(b.currency) || a.bankName.localeCompare(b.bankName))).toEqual(all);
      // A country and currency without a corridor between them: nothing.
      expect((await get<{ data: Discovery[] }>('/discoveries?country=US&currency=EUR')).data).toEqual([]);
    });

    it('rejects a malformed country and currency in one 400', async () => {
      const e = envelope(await t.call('GET', '/discoveries?country=ZZ&currency=XYZ'), 400, 'INVALID_INPUT');
      expect((e.details?.errors as Array<{ field: string }>).map((x) => x.field).sort()).toEqual(['country', 'currency']);
    });
  });

  describe('GET /uma-providers', () => {
    it('lists the providers newest first with the reference fields, blocked ones included by default', async () => {
      const page = await get<Page<UmaProvider>>('/uma-providers');
      expect(page.hasMore).toBe(false);
      expect(page.nextCursor).toBeUndefined();
      expect(page.totalCount).toBe(page.data.length);
      expect(page.data[0]?.allowListStatus).toBe(false);
      const sandbox = page.data.find((p) => p.domain === 'sandbox.uma.money')!;
      expect(sandbox).toMatchObject({ name: 'Sandbox UMA', allowListStatus: true, logoUrl: 'https://sandbox.uma.money/logo.png' });
      expect(sandbox.supportedCurrencies[0]).toEqual({ code: 'USD', name: 'United States Dollar', symbol: '$', decimals: 2 });
      for (const p of page.data) {
        expect(Object.keys(p).sort()).toEqual(['allowListStatus', 'domain', 'lei', 'logoUrl', 'name', 'supportedCurrencies', 'supportedRegions']);
        expect(leiValid(p.lei), p.lei).toBe(true);
      }
      const asc = await get<Page<UmaProvider>>('/uma-providers?sortOrder=asc');
      expect(asc.data.map((p) => p.domain)).toEqual([...page.data].reverse().map((p) => p.domain));
      expect(asc.data[0]?.domain).toBe('sandbox.uma.money');
    });

    it('filters by country, currency and allow list', async () => {
      const mx = await get<Page<UmaProvider>>('/uma-providers?countryCode=MX');
      expect(mx.data.map((p) => p.name).sort()).toEqual(['Quetzal Money', 'Sandbox UMA']);
      expect(mx.totalCount).toBe(2);
      const inr = await get<Page<UmaProvider>>('/uma-providers?currencyCode=inr');
      expect(inr.data.map((p) => p.name)).toEqual(['Saffron Pay']);
      const all = await get<Page<UmaProvider>>('/uma-providers');
      const allowed = await get<Page<UmaProvider>>('/uma-providers?hasBlockedProviders=false');
      expect(allowed.totalCount).toBe(all.totalCount! - 1);
      expect(allowed.data.every((p) => p.allowListStatus)).toBe(true);
      expect((await get<Page<UmaProvider>>('/uma-providers?hasBlockedProviders=true')).totalCount).toBe(all.totalCount);
      expect((await get<Page<UmaProvider>>('/uma-providers?countryCode=AQ')).data).toEqual([]);
    });

    it('pages with limit and cursor', async () => {
      const all = (await get<Page<UmaProvider>>('/uma-providers')).data.map((p) => p.domain);
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await get<Page<UmaProvider>>(`/uma-providers?limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        expect(page.totalCount).toBe(all.length);
        seen.push(...page.data.map((p) => p.domain));
        expect(page.hasMore).toBe(page.nextCursor !== undefined);
        cursor = page.nextCursor;
        pages += 1;
      } while (cursor && pages < 10);
      expect(seen).toEqual(all);
      expect(pages).toBe(Math.ceil(all.length / 4));
      envelope(await t.call('GET', '/uma-providers?cursor=not-a-cursor'), 400, 'INVALID_INPUT');
      envelope(await t.call('GET', '/uma-providers?limit=0'), 400, 'INVALID_INPUT');
      envelope(await t.call('GET', '/uma-providers?limit=101'), 400, 'INVALID_INPUT');
      envelope(await t.call('GET', '/uma-providers?sortOrder=sideways'), 400, 'INVALID_INPUT');
    });
  });

  describe('GET /vasps', () => {
    it('lists VASPs alphabetically, 20 per page by default', async () => {
      const first = await get<Page<{ vaspName: string; url?: string }>>('/vasps');
      expect(first.data).toHaveLength(20);
      expect(first.hasMore).toBe(true);
      expect(first).not.toHaveProperty('totalCount');
      const names = first.data.map((v) => v.vaspName);
      expect([...names].sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase()))).toEqual(names);
      expect(first.data.find((v) => v.vaspName === 'Kraken')).toEqual({ vaspName: 'Kraken', url: 'https://www.kraken.com' });
      const second = await get<Page<{ vaspName: string; url?: string }>>(`/vasps?cursor=${encodeURIComponent(first.nextCursor!)}`);
      expect(second.hasMore).toBe(false);
      expect(second.nextCursor).toBeUndefined();
      expect(second.data.length).toBeGreaterThan(0);
      expect(second.data.some((v) => names.includes(v.vaspName))).toBe(false);
      expect(second.data.find((v) => v.url === undefined)).toBeDefined();
      const small = await get<Page<{ vaspName: string }>>('/vasps?limit=3');
      expect(small.data.map((v) => v.vaspName)).toEqual(names.slice(0, 3));
      envelope(await t.call('GET', '/vasps?limit=500'), 400, 'INVALID_INPUT');
    });
  });

  it('needs Basic credentials', async () => {
    for (const url of ['/discoveries', '/uma-providers', '/vasps']) {
      envelope(await t.call('GET', url, undefined, { authorization: '' }), 401, 'UNAUTHORIZED');
    }
  });
});
