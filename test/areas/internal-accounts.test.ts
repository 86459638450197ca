import { createHash } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureWorldAccount, postEntry } from '../../src/api/ledger/service.js';
import { ADMIN_KEY, basic, envelope, makeApp, STORE, storeSeries, type TestApp } from '../helpers.js';

// Internal accounts, black box: opened with the customer (one per currency, by kind) and
// with the platform (one per supported currency), listed with filters and pages, zero
// balances read from the ledger, deterministic sandbox funding instructions whose
// checksums hold, tenancy, and the start-up backfill for owners that predate them.

type Json = Record<string, unknown>;
interface CurrencyObj {
  code: string;
  name: string;
  symbol: string;
  decimals: number;
}
interface Instruction {
  instructionsNotes?: string;
  isPlatformAccount?: boolean;
  accountOrWalletInfo: Json & { accountType: string; reference: string };
}
interface Account {
  id: string;
  customerId?: string;
  type: string;
  status: string;
  balance: { amount: number; currency: CurrencyObj };
  totalBalance: { amount: number; currency: CurrencyObj };
  fundingPaymentInstructions: Instruction[];
  createdAt: string;
  updatedAt: string;
}
interface List {
  data: Account[];
  hasMore: boolean;
  nextCursor?: string;
  totalCount: number;
}

const ADMIN = { authorization: `Bearer ${ADMIN_KEY}` };
const ACCOUNT_ID = /^InternalAccount:[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

// ---- Independent validators (not the service's own code) --------------------------------

function abaOk(rn: string): boolean {
  if (!/^\d{9}$/.test(rn)) return false;
  const d = [...rn].map(Number);
  return (3 * (d[0]! + d[3]! + d[6]!) + 7 * (d[1]! + d[4]! + d[7]!) + (d[2]! + d[5]! + d[8]!)) % 10 === 0;
}

function ibanOk(iban: string): boolean {
  const moved = iban.slice(4) + iban.slice(0, 4);
  const digits = moved.replace(/[A-Z]/g, (c) => String(c.charCodeAt(0) - 55));
  return BigInt(digits) % 97n === 1n;
}

function clabeOk(clabe: string): boolean {
  if (!/^\d{18}$/.test(clabe)) return false;
  const w = [3, 7, 1];
  const sum = [...clabe.slice(0, 17)].reduce((s, ch, i) => s + ((Number(ch) * w[i % 3]!) % 10), 0);
  return (10 - (sum % 10)) % 10 === Number(clabe[17]);
}

function crc16(s: string): string {
  let crc = 0xffff;
  for (const b of Buffer.from(s)) {
    crc ^= b << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc.toString(16).toUpperCase().padStart(4, '0');
}

const BECH32 = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
function bech32Ok(addr: string): boolean {
  const pos = addr.lastIndexOf('1');
  const hrp = addr.slice(0, pos);
  const data = [...addr.slice(pos + 1)].map((c) => BECH32.indexOf(c));
  if (data.some((d) => d < 0)) return false;
  const gen = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];
  let chk = 1;
  const values = [...[...hrp].map((c) => c.charCodeAt(0) >> 5), 0, ...[...hrp].map((c) => c.charCodeAt(0) & 31), ...data];
  for (const v of values) {
    const top = chk >>> 25;
    chk = ((chk & 0x1ffffff) << 5) ^ v;
    for (let i = 0; i < 5; i++) if ((top >>> i) & 1) chk ^= gen[i]!;
  }
  return chk >>> 0 === 1;
}

const B58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
function base58Decode(s: string): Buffer {
  let v = 0n;
  for (const c of s) {
    const i = B58.indexOf(c);
    if (i < 0) throw new Error('not base58');
    v = v * 58n + BigInt(i);
  }
  let hex = v.toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  const lead = s.match(/^1*/)![0].length;
  return Buffer.concat([Buffer.alloc(lead), Buffer.from(hex, 'hex')]);
}
function tronOk(addr: string): boolean {
  const b = base58Decode(addr);
  if (b.length !== 25 || b[0] !== 0x41) return false;
  const sha = (x: Buffer) => createHash('sha256').update(x).digest();
  return sha(sha(b.subarray(0, 21))).subarray(0, 4).equals(b.subarray(21));
}

// ---- Helpers -------------------------------------------------------------------------------

/** The end-user terms accepted (an unregulated platform opens a customer's accounts only with them on file). */
const TERMS = { acceptedAt: '2025-10-01T00:00:00Z', ipAddress: '203.0.113.9', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' };

async function createCustomer(t: TestApp, body: Json = {}, headers?: Record<string, string>): Promise<Json & { id: string; currencies: string[]; createdAt: string }> {
  const res = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Ada Lovelace', birthDate: '1990-01-15', nationality: 'US', endUserTermsConsent: TERMS, ...body }, headers);
  expect(res.statusCode, res.body).toBe(201);
  return res.json();
}

async function list(t: TestApp, query = '', headers?: Record<string, string>): Promise<List> {
  const res = await t.call('GET', `/customers/internal-accounts${query}`, undefined, headers);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

async function platformList(t: TestApp, query = '', headers?: Record<string, string>): Promise<Account[]> {
  const res = await t.call('GET', `/platform/internal-accounts${query}`, undefined, headers);
  expect(res.statusCode, res.body).toBe(200);
  return (res.json() as { data: Account[] }).data;
}

async function supported(t: TestApp, headers?: Record<string, string>): Promise<string[]> {
  const res = await t.call('GET', '/config', undefined, headers);
  return (res.json().supportedCurrencies as Array<{ currencyCode: string }>).map((c) => c.currencyCode);
}

const byCurrency = (accounts: Account[]) => Object.fromEntries(accounts.map((a) => [a.balance.currency.code, a]));

describe(`internal accounts (${STORE})`, () => {
  let t: TestApp;
  let otherAuth: Record<string, string>;

  beforeAll(async () => {
    t = await makeApp();
    const res = await t.call('POST', '/admin/platforms', { name: 'Other platform' }, ADMIN);
    expect(res.statusCode).toBe(201);
    const c = res.json().credentials as { clientId: string; clientSecret: string };
    otherAuth = { authorization: basic(c.clientId, c.clientSecret) };
  });
  afterAll(async () => t.close());

  describe('opened with the customer', () => {
    it('opens one account per currency: INTERNAL_FIAT for USD and EUR, INTERNAL_CRYPTO for USDC', async () => {
      const customer = await createCustomer(t, { currencies: ['USD', 'EUR', 'USDC'] });
      const page = await list(t, `?customerId=${encodeURIComponent(customer.id)}`);
      expect(page.totalCount).toBe(3);
      expect(page.hasMore).toBe(false);
      expect(page.nextCursor).toBeUndefined();
      const accounts = byCurrency(page.data);
      expect(Object.keys(accounts).sort()).toEqual(['EUR', 'USD', 'USDC']);
      expect(accounts.USD!.type).toBe('INTERNAL_FIAT');
      expect(accounts.EUR!.type).toBe('INTERNAL_FIAT');
      expect(accounts.USDC!.type).toBe('INTERNAL_CRYPTO');
      for (const a of page.data) {
        expect(a.id).toMatch(ACCOUNT_ID);
        expect(a.customerId).toBe(customer.id);
        expect(a.status).toBe('ACTIVE');
        expect(a.createdAt).toBe(customer.createdAt);
        expect(a.updatedAt).toBe(customer.createdAt);
        expect(a.fundingPaymentInstructions.length).toBeGreaterThan(0);
      }
    });

    it('shows zero balances with full Currency objects', async () => {
      const customer = await createCustomer(t, { currencies: ['USD', 'BTC'] });
      const accounts = byCurrency((await list(t, `?customerId=${customer.id}`)).data);
      expect(accounts.USD!.balance).toEqual({ amount: 0, currency: { code: 'USD', name: 'United States Dollar', symbol: '$', decimals: 2 } });
      expect(accounts.USD!.totalBalance).toEqual(accounts.USD!.balance);
      expect(accounts.BTC!.balance).toEqual({ amount: 0, currency: { code: 'BTC', name: 'Bitcoin', symbol: '₿', decimals: 8 } });
      expect(accounts.BTC!.type).toBe('INTERNAL_CRYPTO');
    });

    it('opens an account in each platform currency for a customer created without currencies', async () => {
      const customer = await createCustomer(t);
      const platformCurrencies = ['USD', 'EUR', 'MXN', 'BRL', 'GBP', 'INR', 'USDC', 'USDT', 'BTC'];
      expect(customer.currencies).toEqual(platformCurrencies);
      const page = await list(t, `?customerId=${customer.id}`);
      expect(page.data.map((a) => a.balance.currency.code).sort()).toEqual([...platformCurrencies].sort());
    });

    it('opens the missing accounts when an update adds currencies, and keeps the existing ones', async () => {
      const customer = await createCustomer(t, { currencies: ['USD'] });
      const before = (await list(t, `?customerId=${customer.id}`)).data;
      const res = await t.call('PATCH', `/customers/${customer.id}`, { customerType: 'INDIVIDUAL', currencies: ['USD', 'GBP', 'MXN'] });
      expect(res.statusCode, res.body).toBe(200);
      const after = byCurrency((await list(t, `?customerId=${customer.id}`)).data);
      expect(Object.keys(after).sort()).toEqual(['GBP', 'MXN', 'USD']);
      expect(after.USD!.id).toBe(before[0]!.id);
      // Dropping a currency closes nothing (the account may hold money); repeating adds nothing.
      await t.call('PATCH', `/customers/${customer.id}`, { customerType: 'INDIVIDUAL', currencies: ['GBP'] });
      await t.call('PATCH', `/customers/${customer.id}`, { customerType: 'INDIVIDUAL', currencies: ['USD', 'GBP', 'MXN'] });
      expect((await list(t, `?customerId=${customer.id}`)).totalCount).toBe(3);
    });

    it('reads balances from the ledger: available in balance, pending and held in totalBalance', async () => {
      const customer = await createCustomer(t, { currencies: ['EUR'] });
      const [account] = (await list(t, `?customerId=${customer.id}`)).data;
      const platformId = t.running.bootstrap.platform.id;
      const at = new Date(t.clock.nowMs()).toISOString();
      await t.store.db.transaction().execute(async (trx) => {
        const world = await ensureWorldAccount(trx, platformId, 'EUR', at);
        await postEntry(trx, t.store, {
          platformId,
          kind: 'FUNDING',
          at,
          postings: [
            { accountId: world, currency: 'EUR', amount: -12_550 },
            { accountId: account!.id, currency: 'EUR', amount: 10_000 },
            { accountId: account!.id, currency: 'EUR', amount: 2_550, bucket: 'pending' },
          ],
        });
        await postEntry(trx, t.store, {
          platformId,
          kind: 'HOLD',
          at,
          postings: [
            { accountId: account!.id, currency: 'EUR', amount: -1_000 },
            { accountId: account!.id, currency: 'EUR', amount: 1_000, bucket: 'held' },
          ],
        });
      });
      const [after] = (await list(t, `?customerId=${customer.id}`)).data;
      expect(after!.balance.amount).toBe(9_000);
      expect(after!.totalBalance.amount).toBe(12_550);
      expect(after!.totalBalance.currency.code).toBe('EUR');
    });
  });

  describe('end-user terms (unregulated platforms)', () => {
    it('no accounts until the terms are on file; the update that records them opens them', async () => {
      const customer = await createCustomer(t, { currencies: ['USD', 'EUR'], endUserTermsConsent: undefined });
      expect(customer.endUserTermsConsent).toBeUndefined();
      expect(await list(t, `?customerId=${encodeURIComponent(customer.id)}`)).toEqual({ data: [], hasMore: false, totalCount: 0 });
      // An update without the terms (even one adding a currency) opens nothing.
      const more = await t.call('PATCH', `/customers/${customer.id}`, { customerType: 'INDIVIDUAL', currencies: ['USD', 'EUR', 'GBP'] });
      expect(more.statusCode, more.body).toBe(200);
      expect((await list(t, `?customerId=${customer.id}`)).totalCount).toBe(0);
      const rows = await t.store.db.selectFrom('internal_accounts').select('id').where('customer_id', '=', customer.id).execute();
      expect(rows).toEqual([]);

      t.clock.advance(5_000);
      const res = await t.call('PATCH', `/customers/${customer.id}`, { customerType: 'INDIVIDUAL', endUserTermsConsent: { ...TERMS, acceptanceMethod: 'CLICK_TO_ACCEPT' } });
      expect(res.statusCode, res.body).toBe(200);
      const updatedAt = (res.json() as { updatedAt: string }).updatedAt;
      const accounts = byCurrency((await list(t, `?customerId=${customer.id}`)).data);
      expect(Object.keys(accounts).sort()).toEqual(['EUR', 'GBP', 'USD']);
      for (const a of Object.values(accounts)) expect(a).toMatchObject({ customerId: customer.id, status: 'ACTIVE', createdAt: updatedAt, balance: { amount: 0 } });
      // Their ledger accounts exist too (the funding below posts to them).
      const fund = await t.call('POST', `/sandbox/internal-accounts/${encodeURIComponent(accounts.USD!.id)}/fund`, { amount: 500 });
      expect(fund.statusCode, fund.body).toBe(200);
      // Recording the terms again opens nothing more.
      await t.call('PATCH', `/customers/${customer.id}`, { customerType: 'INDIVIDUAL', endUserTermsConsent: TERMS });
      expect((await list(t, `?customerId=${customer.id}`)).totalCount).toBe(3);
    });

    it('a business without terms has none either; with terms at create it has them at once', async () => {
      const businessInfo = { legalName: 'Termless LLC', country: 'US', incorporatedOn: '2019-01-01', taxId: '12-3456789' };
      const without = await t.call('POST', '/customers', { customerType: 'BUSINESS', businessInfo, currencies: ['USD'] });
      expect(without.statusCode, without.body).toBe(201);
      expect((await list(t, `?customerId=${encodeURIComponent((without.json() as { id: string }).id)}`)).totalCount).toBe(0);
      const withTerms = await t.call('POST', '/customers', { customerType: 'BUSINESS', businessInfo, currencies: ['USD'], endUserTermsConsent: TERMS });
      expect((await list(t, `?customerId=${encodeURIComponent((withTerms.json() as { id: string }).id)}`)).totalCount).toBe(1);
    });

    it('a regulated platform opens the accounts without any terms', async () => {
      const res = await t.call('POST', '/admin/platforms', { name: 'Regulated bank', regulated: true }, ADMIN);
      expect(res.statusCode, res.body).toBe(201);
      const c = res.json().credentials as { clientId: string; clientSecret: string };
      const auth = { authorization: basic(c.clientId, c.clientSecret) };
      const customer = await createCustomer(t, { currencies: ['USD', 'EUR'], endUserTermsConsent: undefined }, auth);
      expect(customer.endUserTermsConsent).toBeUndefined();
      expect(Object.keys(byCurrency((await list(t, `?customerId=${customer.id}`, auth)).data)).sort()).toEqual(['EUR', 'USD']);
    });

    it('an invalid terms version opens nothing (400 END_USER_TERMS_VERSION_NOT_FOUND)', async () => {
      const customer = await createCustomer(t, { endUserTermsConsent: undefined });
      envelope(await t.call('PATCH', `/customers/${customer.id}`, { customerType: 'INDIVIDUAL', endUserTermsConsent: { ...TERMS, termsVersion: 'V0' } }), 400, 'END_USER_TERMS_VERSION_NOT_FOUND');
      expect((await list(t, `?customerId=${customer.id}`)).totalCount).toBe(0);
    });
  });

  describe('platform accounts', () => {
    it('exist for every supported currency of the platform, without customerId', async () => {
      const codes = await supported(t);
      const accounts = await platformList(t);
      expect(accounts.map((a) => a.balance.currency.code).sort()).toEqual([...codes].sort());
      for (const a of accounts) {
        expect(a.id).toMatch(ACCOUNT_ID);
        expect(a.customerId).toBeUndefined();
        expect(a.status).toBe('ACTIVE');
        expect(a.type).toBe(['USDC', 'BTC', 'USDT', 'ETH', 'SOL'].includes(a.balance.currency.code) ? 'INTERNAL_CRYPTO' : 'INTERNAL_FIAT');
        expect(a.balance.amount).toBe(0);
        expect(a.totalBalance.amount).toBe(0);
        for (const i of a.fundingPaymentInstructions) expect(i.isPlatformAccount).toBe(true);
      }
      // Not in the customers' list.
      const ids = new Set((await list(t, '?limit=100')).data.map((a) => a.id));
      for (const a of accounts) expect(ids.has(a.id)).toBe(false);
    });

    it('filters by currency and type', async () => {
      const usd = await platformList(t, '?currency=USD');
      expect(usd.map((a) => a.balance.currency.code)).toEqual(['USD']);
      const crypto = await platformList(t, '?type=INTERNAL_CRYPTO');
      expect(crypto.length).toBeGreaterThan(0);
      expect(crypto.every((a) => a.type === 'INTERNAL_CRYPTO')).toBe(true);
      expect(await platformList(t, '?currency=JPY')).toEqual([]);
    });

    it('a platform created through /admin has its own accounts, and a supported currency added later gets one', async () => {
      const mine = new Set((await platformList(t)).map((a) => a.id));
      const theirs = await platformList(t, '', otherAuth);
      expect(theirs.map((a) => a.balance.currency.code).sort()).toEqual((await supported(t, otherAuth)).sort());
      for (const a of theirs) expect(mine.has(a.id)).toBe(false);

      const config = (await t.call('GET', '/config', undefined, otherAuth)).json() as { supportedCurrencies: Json[] };
      const extra = { ...config.supportedCurrencies[0]!, currencyCode: 'CAD' };
      const res = await t.call('PATCH', '/config', { supportedCurrencies: [...config.supportedCurrencies, extra] }, otherAuth);
      expect(res.statusCode, res.body).toBe(200);
      // Opened by the PATCH itself (same transaction), not by a later read.
      const opened = await t.store.db.selectFrom('internal_accounts').select('id').where('currency', '=', 'CAD').where('customer_id', 'is', null).execute();
      expect(opened.length).toBeGreaterThanOrEqual(1);
      const cad = await platformList(t, '?currency=CAD', otherAuth);
      expect(cad).toHaveLength(1);
      expect(cad[0]!.fundingPaymentInstructions[0]!.accountOrWalletInfo.accountType).toBe('CAD_ACCOUNT');
      expect(await platformList(t, '?currency=CAD', otherAuth)).toEqual(cad);
    });
  });

  describe('listing customers’ accounts', () => {
    it('filters by customerId, currency and type', async () => {
      const a = await createCustomer(t, { currencies: ['USD', 'EUR'] });
      const b = await createCustomer(t, { currencies: ['EUR', 'USDC'] });
      const eurOfA = await list(t, `?customerId=${a.id}&currency=EUR`);
      expect(eurOfA.totalCount).toBe(1);
      expect(eurOfA.data[0]!.customerId).toBe(a.id);
      const eur = await list(t, '?currency=EUR&limit=100');
      const owners = new Set(eur.data.map((x) => x.customerId));
      expect(owners.has(a.id) && owners.has(b.id)).toBe(true);
      expect(eur.data.every((x) => x.balance.currency.code === 'EUR')).toBe(true);
      const crypto = await list(t, `?customerId=${b.id}&type=INTERNAL_CRYPTO`);
      expect(crypto.data.map((x) => x.balance.currency.code)).toEqual(['USDC']);
    });

    it('answers an empty page (not 404) for a customerId that names no customer of the platform', async () => {
      const unknown = await list(t, '?customerId=Customer:01950000-0000-7000-8000-000000000000');
      expect(unknown).toEqual({ data: [], hasMore: false, totalCount: 0 });
      const theirs = await createCustomer(t, { currencies: ['USD'] }, otherAuth);
      expect(await list(t, `?customerId=${theirs.id}`)).toEqual({ data: [], hasMore: false, totalCount: 0 });
      expect((await list(t, `?customerId=${theirs.id}`, otherAuth)).totalCount).toBe(1);
    });

    it('pages newest first with a cursor, each account once', async () => {
      const c = await createCustomer(t, { currencies: ['USD', 'EUR', 'GBP', 'MXN', 'BRL'] });
      const seen: Account[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await list(t, `?customerId=${c.id}&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        expect(page.totalCount).toBe(5);
        expect(page.data.length).toBeLessThanOrEqual(2);
        expect(page.hasMore).toBe(page.nextCursor !== undefined);
        seen.push(...page.data);
        cursor = page.nextCursor;
        pages += 1;
      } while (cursor);
      expect(pages).toBe(3);
      expect(new Set(seen.map((a) => a.id)).size).toBe(5);
      const ids = seen.map((a) => a.id);
      expect(ids).toEqual([...ids].sort().reverse());
    });

    it('rejects a bad limit and a bad cursor with 400 INVALID_INPUT', async () => {
      envelope(await t.call('GET', '/customers/internal-accounts?limit=0'), 400, 'INVALID_INPUT');
      envelope(await t.call('GET', '/customers/internal-accounts?limit=101'), 400, 'INVALID_INPUT');
      envelope(await t.call('GET', '/customers/internal-accounts?cursor=nonsense'), 400, 'INVALID_INPUT');
      envelope(await t.call('GET', '/customers/internal-accounts?type=SAVINGS'), 400, 'INVALID_INPUT');
    });

    it('needs credentials', async () => {
      envelope(await t.call('GET', '/customers/internal-accounts', undefined, { authorization: '' }), 401, 'UNAUTHORIZED');
      envelope(await t.call('GET', '/platform/internal-accounts', undefined, { authorization: '' }), 401, 'UNAUTHORIZED');
    });
  });

  describe('tenancy', () => {
    it('platform B sees none of platform A’s accounts', async () => {
      const a = await createCustomer(t, { currencies: ['USD', 'EUR'] });
      const aIds = new Set((await list(t, `?customerId=${a.id}`)).data.map((x) => x.id));
      const bAll: Account[] = [];
      let cursor: string | undefined;
      do {
        const page = await list(t, `?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, otherAuth);
        bAll.push(...page.data);
        cursor = page.nextCursor;
      } while (cursor);
      for (const x of bAll) expect(aIds.has(x.id)).toBe(false);
      const bPlatform = await platformList(t, '', otherAuth);
      const aPlatform = new Set((await platformList(t)).map((x) => x.id));
      for (const x of bPlatform) expect(aPlatform.has(x.id)).toBe(false);
    });
  });

  describe('funding instructions', () => {
    let accounts: Record<string, Account>;
    beforeAll(async () => {
      const c = await createCustomer(t, { currencies: ['USD', 'EUR', 'GBP', 'MXN', 'BRL', 'INR', 'USDC', 'BTC'] });
      accounts = byCurrency((await list(t, `?customerId=${c.id}`)).data);
    });
    const info = (code: string, i = 0) => accounts[code]!.fundingPaymentInstructions[i]!.accountOrWalletInfo;

    it('are the same on every read', async () => {
      const customerId = accounts.USD!.customerId!;
      const again = byCurrency((await list(t, `?customerId=${customerId}`)).data);
      for (const code of Object.keys(accounts)) expect(again[code]!.fundingPaymentInstructions).toEqual(accounts[code]!.fundingPaymentInstructions);
    });

    it('carry one reference per account, quoted in the notes, different between accounts', () => {
      const refs = new Set<string>();
      for (const a of Object.values(accounts)) {
        const mine = new Set(a.fundingPaymentInstructions.map((i) => i.accountOrWalletInfo.reference));
        expect(mine.size).toBe(1);
        const [ref] = [...mine];
        expect(ref).toMatch(/^UMA-[0-9A-Z]{10}$/);
        for (const i of a.fundingPaymentInstructions) {
          expect(i.instructionsNotes).toContain(ref);
          expect(i.isPlatformAccount).toBe(false);
        }
        refs.add(ref!);
      }
      expect(refs.size).toBe(Object.keys(accounts).length);
    });

    it('USD: account number and an ABA routing number that passes the checksum', () => {
      const u = info('USD');
      expect(u.accountType).toBe('USD_ACCOUNT');
      expect(u.accountNumber).toMatch(/^\d{6,17}$/);
      expect(abaOk(u.routingNumber as string)).toBe(true);
      expect(u.bankName).toEqual(expect.any(String));
      expect(u.paymentRails).toEqual(expect.arrayContaining(['ACH', 'WIRE']));
    });

    it('EUR: an IBAN whose mod-97 check digits hold, and a BIC', () => {
      const e = info('EUR');
      expect(e.accountType).toBe('EUR_ACCOUNT');
      expect(e.iban).toMatch(/^DE\d{20}$/);
      expect(ibanOk(e.iban as string)).toBe(true);
      // A changed digit breaks it (the validator is not vacuous).
      const s = e.iban as string;
      expect(ibanOk(s.slice(0, -1) + String((Number(s.slice(-1)) + 1) % 10))).toBe(false);
      expect(e.swiftCode).toMatch(/^[A-Z]{4}DE[A-Z0-9]{2}([A-Z0-9]{3})?$/);
    });

    it('MXN: an 18-digit CLABE with a valid check digit', () => {
      const m = info('MXN');
      expect(m.accountType).toBe('MXN_ACCOUNT');
      expect(clabeOk(m.clabeNumber as string)).toBe(true);
      const s = m.clabeNumber as string;
      expect(clabeOk(s.slice(0, -1) + String((Number(s.slice(-1)) + 1) % 10))).toBe(false);
    });

    it('GBP: sort code and 8-digit account number', () => {
      const g = info('GBP');
      expect(g).toMatchObject({ accountType: 'GBP_ACCOUNT', paymentRails: ['FASTER_PAYMENTS'] });
      expect(g.sortCode).toMatch(/^\d{6}$/);
      expect(g.accountNumber).toMatch(/^\d{8}$/);
    });

    it('BRL: a PIX BR Code with a valid CRC and the PIX key', () => {
      const b = info('BRL');
      expect(b.accountType).toBe('BRL_ACCOUNT');
      const qr = b.qrCode as string;
      expect(qr.startsWith('000201')).toBe(true);
      expect(qr).toContain('br.gov.bcb.pix');
      expect(qr).toContain(b.pixKey as string);
      expect(qr.slice(-4)).toBe(crc16(qr.slice(0, -4)));
    });

    it('INR: a UPI address', () => {
      const i = info('INR');
      expect(i.accountType).toBe('INR_ACCOUNT');
      expect(i.vpa).toMatch(/^[a-zA-Z0-9.\-_]+@[a-zA-Z0-9]+$/);
      expect(i.ifsc).toMatch(/^[A-Z]{4}0[A-Z0-9]{6}$/);
    });

    it('USDC: Solana, Ethereum, Base and Polygon addresses; BTC: a bech32 address', () => {
      const kinds = accounts.USDC!.fundingPaymentInstructions.map((i) => i.accountOrWalletInfo.accountType);
      expect(kinds).toEqual(['SOLANA_WALLET', 'ETHEREUM_WALLET', 'BASE_WALLET', 'POLYGON_WALLET']);
      const sol = info('USDC', 0);
      expect(base58Decode(sol.address as string)).toHaveLength(32);
      expect(sol.assetType).toBe('USDC');
      expect(info('USDC', 1).address).toMatch(/^0x[0-9a-fA-F]{40}$/);
      const btc = info('BTC');
      expect(btc).toMatchObject({ accountType: 'BITCOIN_L1', network: 'BITCOIN' });
      expect(btc.address).toMatch(/^bc1q[02-9ac-hj-np-z]{38}$/);
      expect(bech32Ok(btc.address as string)).toBe(true);
    });

    it('USDT: a Tron address with a valid base58check checksum', async () => {
      const config = (await t.call('GET', '/config')).json() as { supportedCurrencies: Json[] };
      if (!config.supportedCurrencies.some((c) => c.currencyCode === 'USDT')) {
        const res = await t.call('PATCH', '/config', { supportedCurrencies: [...config.supportedCurrencies, { ...config.supportedCurrencies[0]!, currencyCode: 'USDT' }] });
        expect(res.statusCode, res.body).toBe(200);
      }
      const c = await createCustomer(t, { currencies: ['USDT'] });
      const [a] = (await list(t, `?customerId=${c.id}`)).data;
      const tron = a!.fundingPaymentInstructions.find((i) => i.accountOrWalletInfo.accountType === 'TRON_WALLET')!.accountOrWalletInfo;
      expect(tron).toBeDefined();
      expect(tronOk(tron.address as string)).toBe(true);
    });
  });

  it('is in the OpenAPI document', async () => {
    const doc = (await t.call('GET', '/openapi.json', undefined, { authorization: '' })).json() as { paths: Record<string, Json> };
    expect(doc.paths['/customers/internal-accounts']).toBeDefined();
    expect(doc.paths['/platform/internal-accounts']).toBeDefined();
  });
});

// ---- Backfill ------------------------------------------------------------------------------


describe(`internal accounts backfill at start (${STORE})`, () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0)) await f();
  });

  it('opens the accounts of customers and platforms that have none, once', async () => {
    const s = await storeSeries();
    cleanup.push(() => s.drop());

    const first = await makeApp({ testStore: await s.open() });
    const platformId = first.running.bootstrap.platform.id;
    const at = new Date(first.clock.nowMs()).toISOString();
    const customerId = 'Customer:01950000-0000-7000-8000-0000000000aa';
    // A customer written before the accounts existed: no accounts.
    await first.store.db
      .insertInto('customers')
      .values({
        id: customerId,
        platform_id: platformId,
        customer_type: 'INDIVIDUAL',
        platform_customer_id: 'legacy-1',
        uma_address: '$legacy.1@example.com',
        region: null,
        email: null,
        phone_number: null,
        currencies: JSON.stringify(['USD', 'USDC']),
        status: 'APPROVED',
        fields: JSON.stringify({ fullName: 'Legacy Customer' }),
        end_user_terms_consent: JSON.stringify(TERMS),
        contact_verification: null,
        is_deleted: 0,
        created_at: at,
        updated_at: at,
      })
      .execute();
    // One without the end-user terms on file (an unregulated platform): it may hold no accounts yet.
    const termless = 'Customer:01950000-0000-7000-8000-0000000000bb';
    await first.store.db
      .insertInto('customers')
      .values({
        id: termless,
        platform_id: platformId,
        customer_type: 'INDIVIDUAL',
        platform_customer_id: 'legacy-2',
        uma_address: '$legacy.2@example.com',
        region: null,
        email: null,
        phone_number: null,
        currencies: JSON.stringify(['USD']),
        status: 'APPROVED',
        fields: JSON.stringify({ fullName: 'Legacy Termless' }),
        end_user_terms_consent: null,
        contact_verification: null,
        is_deleted: 0,
        created_at: at,
        updated_at: at,
      })
      .execute();
    // And a platform whose accounts are gone (as before the migration).
    const platformAccountIds = (await first.store.db.selectFrom('internal_accounts').select('id').where('platform_id', '=', platformId).where('customer_id', 'is', null).execute()).map((r) => r.id);
    expect(platformAccountIds.length).toBeGreaterThan(0);
    await first.store.db.deleteFrom('ledger_balances').where('account_id', 'in', platformAccountIds).execute();
    await first.store.db.deleteFrom('internal_accounts').where('id', 'in', platformAccountIds).execute();
    expect((await list(first, `?customerId=${customerId}`)).totalCount).toBe(0);
    await first.close();

    const second = await makeApp({ testStore: await s.open() });
    cleanup.unshift(() => second.close());
    const accounts = byCurrency((await list(second, `?customerId=${customerId}`)).data);
    expect(Object.keys(accounts).sort()).toEqual(['USD', 'USDC']);
    expect((await list(second, `?customerId=${termless}`)).totalCount).toBe(0);
    expect(accounts.USDC!.type).toBe('INTERNAL_CRYPTO');
    expect(accounts.USD!.balance.amount).toBe(0);
    const platform = await platformList(second);
    expect(platform.map((a) => a.balance.currency.code).sort()).toEqual((await supported(second)).sort());
    // Their ledger accounts exist too.
    const ids = [...Object.values(accounts).map((a) => a.id), ...platform.map((a) => a.id)];
    const balances = await second.store.db.selectFrom('ledger_balances').select('account_id').where('account_id', 'in', ids).execute();
    expect(balances).toHaveLength(ids.length);
    const count = async () => Number((await second.store.db.selectFrom('internal_accounts').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
    const before = await count();
    await second.close();
    cleanup.shift();

    const third = await makeApp({ testStore: await s.open() });
    cleanup.unshift(() => third.close());
    expect(Number((await third.store.db.selectFrom('internal_accounts').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n)).toBe(before);
    expect(byCurrency((await list(third, `?customerId=${customerId}`)).data).USD!.id).toBe(accounts.USD!.id);
    // Its terms recorded, the termless customer gets its account from the update, not from a start.
    const patched = await third.call('PATCH', `/customers/${termless}`, { customerType: 'INDIVIDUAL', endUserTermsConsent: TERMS });
    expect(patched.statusCode, patched.body).toBe(200);
    expect((await list(third, `?customerId=${termless}`)).data.map((a) => a.balance.currency.code)).toEqual(['USD']);
  });
});
