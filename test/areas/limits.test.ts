import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/kernel/clock.js';
import { DEFAULT_LIMITS } from '../../src/sandbox/rules/limits.js';
import { ADMIN_KEY, basic, envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { balanceOf, eurExternal, fund, newCustomer, PERSON, type QuoteBody, quoteRequest, TERMS, usdExternal } from '../money-helpers.js';

// Transaction limits: the single-transaction maximum at quote creation (400
// TRANSACTION_SIZE_LIMIT_EXCEEDED) and the daily volume when money moves (429
// DAILY_VOLUME_LIMIT_EXCEEDED), the sandbox defaults, a platform's overrides through
// PATCH /admin/platforms/{id} `limits`, the UTC day of the platform clock, and tenancy.

const ADMIN = { authorization: `Bearer ${ADMIN_KEY}` };
/** 2025-10-14 09:00 UTC: far from a day boundary. */
const START = Date.UTC(2025, 9, 14, 9, 0, 0);

type Headers = Record<string, string>;
interface Platform { id: string; headers: Headers }
interface Sender { id: string; usd: string; eur?: string; usdDest: string; eurDest?: string }
interface Limits { transactionSize?: Record<string, unknown>; dailyVolume?: Record<string, unknown> }

describe(`transaction limits (${STORE})`, () => {
  let t: TestApp;
  let defaultPlatformId: string;

  beforeAll(async () => {
    t = await makeApp({ clock: new ManualClock(START) });
    defaultPlatformId = (await t.store.db.selectFrom('platforms').select('id').where('is_default', '=', 1).executeTakeFirstOrThrow()).id;
  });
  afterAll(async () => t.close());

  const newPlatform = async (): Promise<Platform> => {
    const res = await t.call('POST', '/admin/platforms', { name: `Limits ${Math.random().toString(36).slice(2, 8)}` }, ADMIN);
    expect(res.statusCode, res.body).toBe(201);
    const created = res.json() as { platform: { id: string }; credentials: { clientId: string; clientSecret: string } };
    return { id: created.platform.id, headers: { authorization: basic(created.credentials.clientId, created.credentials.clientSecret) } };
  };

  const patchLimits = async (platformId: string, limits: unknown): Promise<{ limits?: Limits }> => {
    const res = await t.call('PATCH', `/admin/platforms/${platformId}`, { limits }, ADMIN);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { limits?: Limits };
  };

  const eurExternalOn = async (customerId: string, headers: Headers): Promise<string> => {
    const res = await t.call(
      'POST',
      '/customers/external-accounts',
      { customerId, currency: 'EUR', accountInfo: { accountType: 'EUR_ACCOUNT', iban: 'DE89370400440532013000', swiftCode: 'COBADEFF', beneficiary: PERSON } },
      headers,
    );
    expect(res.statusCode, res.body).toBe(201);
    return (res.json() as { id: string }).id;
  };

  /** An APPROVED customer with USD (and EUR) accounts and external accounts in both currencies. */
  const sender = async (headers: Headers = {}, opts: { eurAccount?: boolean; fundUsd?: number } = {}): Promise<Sender> => {
    const onDefault = headers.authorization === undefined;
    const c = await newCustomer(t, opts.eurAccount ? ['USD', 'EUR'] : ['USD'], onDefault ? {} : { headers });
    const usdDest = await usdExternal(t, c.id, '123456789', onDefault ? undefined : headers);
    const eurDest = onDefault ? await eurExternal(t, c.id) : await eurExternalOn(c.id, headers);
    if (opts.fundUsd) await fund(t, c.accounts.USD!.id, opts.fundUsd, onDefault ? undefined : headers);
    const s: Sender = { id: c.id, usd: c.accounts.USD!.id, usdDest, eurDest };
    if (c.accounts.EUR) s.eur = c.accounts.EUR.id;
    return s;
  };

  const quote = (body: unknown, headers: Headers = {}) => t.call('POST', '/quotes', body, headers);
  const created = async (body: unknown, headers: Headers = {}): Promise<QuoteBody> => {
    const res = await quote(body, headers);
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as QuoteBody;
  };
  const execute = (id: string, headers: Headers = {}) => t.call('POST', `/quotes/${encodeURIComponent(id)}/execute`, undefined, headers);
  const send = async (source: string, dest: string, amount: number, headers: Headers = {}): Promise<QuoteBody> => {
    const q = await created(quoteRequest(source, dest, amount), headers);
    const res = await execute(q.id, headers);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as QuoteBody;
  };
  const platformNow = async (headers: Headers): Promise<number> => Date.parse(((await t.call('GET', '/sandbox/clock', undefined, headers)).json() as { now: string }).now);

  describe('single-transaction maximum (quote creation)', () => {
    it('sandbox default: US$100,000 out of USD, in the sending currency, per corridor', async () => {
      expect(DEFAULT_LIMITS.USD).toEqual({ transactionSize: 10_000_000, dailyVolume: 100_000_000 });
      const s = await sender();
      await created(quoteRequest(s.usd, s.eurDest!, 10_000_000));
      const e = envelope(await quote(quoteRequest(s.usd, s.eurDest!, 10_000_001)), 400, 'TRANSACTION_SIZE_LIMIT_EXCEEDED');
      expect(e.details).toEqual({
        corridor: 'USD:EUR',
        sendingCurrency: 'USD',
        receivingCurrency: 'EUR',
        withdrawal: false,
        currency: 'USD',
        limit: 10_000_000,
        maximum: 10_000_000,
        requestedAmount: 10_000_001,
        usedToday: 0,
        limitSource: 'SANDBOX_DEFAULT',
      });
      expect(e.message).toContain('USD:EUR');
      // Locked on the receiving side: €100,000 costs more than US$100,000, within the EUR corridor but above the maximum.
      const r = envelope(await quote(quoteRequest(s.usd, s.eurDest!, 10_000_000, { lockedCurrencySide: 'RECEIVING' })), 400, 'TRANSACTION_SIZE_LIMIT_EXCEEDED');
      expect(r.details!.requestedAmount as number).toBeGreaterThan(10_000_000);
      // A USD withdrawal: the default equals the USD corridor's maximum, so every priced amount fits.
      await created(quoteRequest(s.usd, s.usdDest, 10_000_000));
      envelope(await quote(quoteRequest(s.usd, s.usdDest, 10_000_001)), 400, 'AMOUNT_OUT_OF_RANGE');
    });

    it('per-platform overrides: corridor, withdrawal currency, a USD-cent default converted to the sending currency, null clears', async () => {
      const p = await newPlatform();
      const s = await sender(p.headers, { eurAccount: true });

      const set = await patchLimits(p.id, { transactionSize: { withdrawals: { USD: 500_000 }, corridors: { 'USD:EUR': 200_000 } } });
      expect(set.limits).toEqual({ transactionSize: { withdrawals: { USD: 500_000 }, corridors: { 'USD:EUR': 200_000 } } });
      const got = await t.call('GET', `/admin/platforms/${p.id}`, undefined, ADMIN);
      expect(got.json()).toEqual(set);
      const listed = ((await t.call('GET', '/admin/platforms', undefined, ADMIN)).json() as { data: Array<{ id: string; limits?: Limits }> }).data;
      expect(listed.find((x) => x.id === p.id)!.limits).toEqual(set.limits);

      // USD → USD: the withdrawal override.
      await created(quoteRequest(s.usd, s.usdDest, 500_000), p.headers);
      const w = envelope(await quote(quoteRequest(s.usd, s.usdDest, 500_001), p.headers), 400, 'TRANSACTION_SIZE_LIMIT_EXCEEDED');
      expect(w.details).toMatchObject({ corridor: 'USD:USD', withdrawal: true, currency: 'USD', limit: 500_000, maximum: 500_000, requestedAmount: 500_001, limitSource: 'PLATFORM_WITHDRAWAL' });
      // USD → EUR: the corridor override.
      await created(quoteRequest(s.usd, s.eurDest!, 200_000), p.headers);
      const c = envelope(await quote(quoteRequest(s.usd, s.eurDest!, 200_001), p.headers), 400, 'TRANSACTION_SIZE_LIMIT_EXCEEDED');
      expect(c.details).toMatchObject({ corridor: 'USD:EUR', withdrawal: false, limit: 200_000, requestedAmount: 200_001, limitSource: 'PLATFORM_CORRIDOR' });

      // A default (US cents) for every corridor without its own value; clearing the corridor's override.
      const merged = await patchLimits(p.id, { transactionSize: { default: 300_000, corridors: { 'USD:EUR': null } } });
      expect(merged.limits).toEqual({ transactionSize: { default: 300_000, withdrawals: { USD: 500_000 } } });
      await created(quoteRequest(s.usd, s.eurDest!, 300_000), p.headers);
      const d = envelope(await quote(quoteRequest(s.usd, s.eurDest!, 300_001), p.headers), 400, 'TRANSACTION_SIZE_LIMIT_EXCEEDED');
      expect(d.details).toMatchObject({ corridor: 'USD:EUR', limit: 300_000, limitSource: 'PLATFORM_DEFAULT' });
      await created(quoteRequest(s.usd, s.usdDest, 500_000), p.headers); // the withdrawal override still wins
      // EUR → EUR: US$3,000 is €2,760 at the sandbox mid rate (0.92).
      await created(quoteRequest(s.eur!, s.eurDest!, 276_000), p.headers);
      const eur = envelope(await quote(quoteRequest(s.eur!, s.eurDest!, 276_001), p.headers), 400, 'TRANSACTION_SIZE_LIMIT_EXCEEDED');
      expect(eur.details).toMatchObject({ corridor: 'EUR:EUR', currency: 'EUR', limit: 276_000, limitSource: 'PLATFORM_DEFAULT' });

      // Other fields of the PATCH leave the limits alone; limits: null clears every override.
      const renamed = await t.call('PATCH', `/admin/platforms/${p.id}`, { name: 'Renamed' }, ADMIN);
      expect((renamed.json() as { limits?: Limits }).limits).toEqual(merged.limits);
      const cleared = await patchLimits(p.id, null);
      expect(cleared).not.toHaveProperty('limits');
      expect(await t.call('GET', `/admin/platforms/${p.id}`, undefined, ADMIN).then((r) => r.json())).not.toHaveProperty('limits');
      await created(quoteRequest(s.usd, s.usdDest, 500_001), p.headers);
      await created(quoteRequest(s.usd, s.eurDest!, 300_001), p.headers);
    });

    it('a limit of 0 refuses every amount; clearing the last value of a kind removes it', async () => {
      const p = await newPlatform();
      const s = await sender(p.headers);
      await patchLimits(p.id, { transactionSize: { withdrawals: { USD: 0 } }, dailyVolume: { default: 1_000_000 } });
      envelope(await quote(quoteRequest(s.usd, s.usdDest, 100), p.headers), 400, 'TRANSACTION_SIZE_LIMIT_EXCEEDED');
      const v = await patchLimits(p.id, { transactionSize: { withdrawals: { USD: null } } });
      expect(v.limits).toEqual({ dailyVolume: { default: 1_000_000 } });
      await created(quoteRequest(s.usd, s.usdDest, 100), p.headers);
      const none = await patchLimits(p.id, { dailyVolume: null });
      expect(none).not.toHaveProperty('limits');
    });
  });

  describe('daily volume (money moves)', () => {
    it('429 on execute and on immediatelyExecute; the refused payment moves nothing; other corridors are counted apart', async () => {
      const p = await newPlatform();
      const s = await sender(p.headers, { fundUsd: 1_000_000 });
      await patchLimits(p.id, { dailyVolume: { withdrawals: { USD: 100_000 } } });

      await send(s.usd, s.usdDest, 60_000, p.headers);
      await send(s.usd, s.usdDest, 40_000, p.headers); // exactly the limit
      const before = await balanceOf(t, s.usd, p.headers);
      const txCount = async () => ((await t.call('GET', '/transactions?type=OUTGOING&limit=100', undefined, p.headers)).json() as { data: unknown[] }).data.length; // payouts (the fundings are INCOMING)
      expect(await txCount()).toBe(2);

      const q = await created(quoteRequest(s.usd, s.usdDest, 100), p.headers); // creation checks only the size
      const e = envelope(await execute(q.id, p.headers), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED');
      expect(e.details).toEqual({
        corridor: 'USD:USD',
        sendingCurrency: 'USD',
        receivingCurrency: 'USD',
        withdrawal: true,
        currency: 'USD',
        limit: 100_000,
        usedToday: 100_000,
        requestedAmount: 100,
        remaining: 0,
        day: '2025-10-14',
        resetsAt: '2025-10-15T00:00:00.000Z',
        limitSource: 'PLATFORM_WITHDRAWAL',
      });
      // Nothing moved: the same balances, the quote and its transaction still PENDING.
      expect(await balanceOf(t, s.usd, p.headers)).toEqual(before);
      expect((await t.call('GET', `/transactions/${encodeURIComponent(q.transactionId)}`, undefined, p.headers)).json()).toMatchObject({ status: 'PENDING' });
      expect(((await t.call('GET', `/quotes/${encodeURIComponent(q.id)}`, undefined, p.headers)).json() as QuoteBody).status).toBe('PENDING');

      // immediatelyExecute: the same 429, and no quote, no transaction, no money.
      const imm = envelope(await quote(quoteRequest(s.usd, s.usdDest, 5_000, { immediatelyExecute: true }), p.headers), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED');
      expect(imm.details).toMatchObject({ corridor: 'USD:USD', limit: 100_000, usedToday: 100_000, requestedAmount: 5_000 });
      expect(await balanceOf(t, s.usd, p.headers)).toEqual(before);
      expect(await txCount()).toBe(3); // the two sent, and the refused quote's PENDING one

      // USD → EUR is another corridor: its own (sandbox default) volume.
      await send(s.usd, s.eurDest!, 50_000, p.headers);
      const imm2 = await quote(quoteRequest(s.usd, s.eurDest!, 1_000, { immediatelyExecute: true }), p.headers);
      expect(imm2.statusCode, imm2.body).toBe(201);
      expect(await txCount()).toBe(5);
      await assertLedgerInvariants(t.store);
    });

    // On PostgreSQL the first run of the request leaves the check to the trigger at commit,
    // where the short balance refuses it first; the run again with the check first answers 429,
    // as on SQLite, where the check runs before the money moves.
    it('over the day\'s volume and short of money at once: the 429, with the figures of the day, and nothing moves', async () => {
      const p = await newPlatform();
      const s = await sender(p.headers, { fundUsd: 50_000 });
      await patchLimits(p.id, { dailyVolume: { withdrawals: { USD: 100_000 } } });
      await send(s.usd, s.usdDest, 30_000, p.headers);
      const before = await balanceOf(t, s.usd, p.headers);
      const e = envelope(await quote(quoteRequest(s.usd, s.usdDest, 80_000, { immediatelyExecute: true }), p.headers), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED');
      expect(e.details).toMatchObject({ corridor: 'USD:USD', limit: 100_000, usedToday: 30_000, requestedAmount: 80_000, remaining: 70_000 });
      expect(await balanceOf(t, s.usd, p.headers)).toEqual(before);
      // Within the volume, the same shortfall is the balance's 400.
      await patchLimits(p.id, { dailyVolume: { withdrawals: { USD: 1_000_000 } } });
      const short = await quote(quoteRequest(s.usd, s.usdDest, 80_000, { immediatelyExecute: true }), p.headers);
      expect(short.statusCode, short.body).toBe(400);
      expect(await balanceOf(t, s.usd, p.headers)).toEqual(before);
      await assertLedgerInvariants(t.store);
    });

    // The check refuses before the payment starts, whatever it would become (here a payout the
    // sandbox fails a second later, suffix 002; on PostgreSQL the check's statement goes with
    // the commit, and the request runs again with it first).
    it('over the day\'s volume to an account whose payout fails: the 429, and nothing moves', async () => {
      const p = await newPlatform();
      const s = await sender(p.headers, { fundUsd: 200_000 });
      const failing = await usdExternal(t, s.id, '000000002', p.headers);
      await patchLimits(p.id, { dailyVolume: { withdrawals: { USD: 100_000 } } });
      await send(s.usd, s.usdDest, 90_000, p.headers);
      const before = await balanceOf(t, s.usd, p.headers);
      const e = envelope(await quote(quoteRequest(s.usd, failing, 20_000, { immediatelyExecute: true }), p.headers), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED');
      expect(e.details).toMatchObject({ usedToday: 90_000, requestedAmount: 20_000, remaining: 10_000 });
      expect(await balanceOf(t, s.usd, p.headers)).toEqual(before);
      // Within the volume the payment starts (and fails later).
      const failed = await quote(quoteRequest(s.usd, failing, 5_000, { immediatelyExecute: true }), p.headers);
      expect(failed.statusCode, failed.body).toBe(201);
      await assertLedgerInvariants(t.store);
    });

    // An EU customer's payment waits for strong customer authentication: its transaction
    // (PENDING_AUTHORIZATION) is not counted in the day's volume, so no check at commit would
    // see it; over the volume it must still be the 429, before the hold for authorization.
    it('over the day\'s volume, a payment that would wait for authorization: the 429, not the hold', async () => {
      const p = await newPlatform();
      const tag = Math.random().toString(36).slice(2, 8);
      const res = await t.call(
        'POST',
        '/customers',
        { customerType: 'INDIVIDUAL', fullName: `Erika Muster ${tag}x`, region: 'DE', email: `erika.${tag}@example.eu`, phoneNumber: '+4915112345678', currencies: ['EUR'], endUserTermsConsent: TERMS },
        p.headers,
      );
      expect(res.statusCode, res.body).toBe(201);
      const customerId = (res.json() as { id: string }).id;
      await t.store.db.updateTable('customers').set({ status: 'APPROVED' }).where('id', '=', customerId).execute();
      const accounts = (await t.call('GET', `/customers/internal-accounts?customerId=${encodeURIComponent(customerId)}`, undefined, p.headers)).json() as { data: Array<{ id: string; balance: { currency: { code: string } } }> };
      const eur = accounts.data.find((a) => a.balance.currency.code === 'EUR')!.id;
      await fund(t, eur, 100_000, p.headers);
      const dest = await eurExternalOn(customerId, p.headers);
      await patchLimits(p.id, { dailyVolume: { withdrawals: { EUR: 500 } } });
      const e = envelope(await quote(quoteRequest(eur, dest, 1_000, { immediatelyExecute: true }), p.headers), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED');
      expect(e.details).toMatchObject({ corridor: 'EUR:EUR', limit: 500, usedToday: 0, requestedAmount: 1_000 });
      // Within the volume: held for authorization.
      const held = await quote(quoteRequest(eur, dest, 400, { immediatelyExecute: true }), p.headers);
      expect(held.statusCode, held.body).toBe(201);
      expect((held.json() as QuoteBody).status).toBe('PENDING_AUTHORIZATION');
    });

    it('the volume frees up on the next UTC day of the platform clock', async () => {
      const p = await newPlatform();
      const s = await sender(p.headers, { fundUsd: 1_000_000 });
      await patchLimits(p.id, { dailyVolume: { withdrawals: { USD: 100_000 } } });
      await send(s.usd, s.usdDest, 100_000, p.headers);
      const q = await created(quoteRequest(s.usd, s.usdDest, 100), p.headers);
      envelope(await execute(q.id, p.headers), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED');

      // One second before midnight: still the same day.
      const now = await platformNow(p.headers);
      const midnight = (Math.floor(now / 86_400_000) + 1) * 86_400_000;
      const advance = async (seconds: number) => {
        const res = await t.call('POST', '/sandbox/clock/advance', { seconds }, p.headers);
        expect(res.statusCode, res.body).toBe(200);
      };
      await advance(Math.ceil((midnight - now) / 1_000) - 1);
      const late = await created(quoteRequest(s.usd, s.usdDest, 100), p.headers); // the first quote has expired by now
      envelope(await execute(late.id, p.headers), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED');
      // Midnight UTC: a new day.
      await advance(1);
      expect(await platformNow(p.headers)).toBe(midnight);
      await send(s.usd, s.usdDest, 99_900, p.headers);
      await send(s.usd, s.usdDest, 100, p.headers);
      const e = envelope(await quote(quoteRequest(s.usd, s.usdDest, 100, { immediatelyExecute: true }), p.headers), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED');
      expect(e.details).toMatchObject({ usedToday: 100_000, day: '2025-10-15', resetsAt: '2025-10-16T00:00:00.000Z' });
      // Another platform's clock did not move: the default platform is still on 2025-10-14.
      expect(new Date(await platformNow({})).toISOString().slice(0, 10)).toBe('2025-10-14');
      await assertLedgerInvariants(t.store);
    });

    it('failed (and refunded) payments do not count', async () => {
      const p = await newPlatform();
      const s = await sender(p.headers, { fundUsd: 1_000_000 });
      // A US account number ending in 002: the sandbox fails the payout a second later and refunds it.
      const failing = await usdExternal(t, s.id, '000000002', p.headers);
      await patchLimits(p.id, { dailyVolume: { withdrawals: { USD: 100_000 } } });
      const first = await send(s.usd, failing, 80_000, p.headers);
      const q = await created(quoteRequest(s.usd, s.usdDest, 30_000), p.headers);
      // In flight, it counts.
      const e = envelope(await execute(q.id, p.headers), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED');
      expect(e.details).toMatchObject({ usedToday: 80_000, requestedAmount: 30_000, remaining: 20_000 });
      const advanced = await t.call('POST', '/sandbox/clock/advance', { seconds: 5 }, p.headers);
      expect(advanced.statusCode, advanced.body).toBe(200);
      const tx = (await t.call('GET', `/transactions/${encodeURIComponent(first.transactionId)}`, undefined, p.headers)).json() as { status: string };
      expect(tx.status).toBe('FAILED');
      // Failed, it no longer does: the same quote now fits.
      const res = await execute(q.id, p.headers);
      expect(res.statusCode, res.body).toBe(200);
      await assertLedgerInvariants(t.store);
    });

    it('sandbox default: US$1,000,000 a day per corridor', async () => {
      const p = await newPlatform();
      const s = await sender(p.headers, { fundUsd: 101_000_000 });
      for (let i = 0; i < 10; i++) {
        const res = await quote(quoteRequest(s.usd, s.usdDest, 10_000_000, { immediatelyExecute: true }), p.headers);
        expect(res.statusCode, res.body).toBe(201);
      }
      const e = envelope(await quote(quoteRequest(s.usd, s.usdDest, 100, { immediatelyExecute: true }), p.headers), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED');
      expect(e.details).toMatchObject({ corridor: 'USD:USD', limit: 100_000_000, usedToday: 100_000_000, requestedAmount: 100, limitSource: 'SANDBOX_DEFAULT' });
      expect(await balanceOf(t, s.usd, p.headers)).toMatchObject({ available: 1_000_000 });
      await assertLedgerInvariants(t.store);
    });

    it('two executions racing for the last of the day: one passes', async () => {
      const p = await newPlatform();
      const s = await sender(p.headers, { fundUsd: 1_000_000 });
      await patchLimits(p.id, { dailyVolume: { withdrawals: { USD: 100_000 } } });
      const a = await created(quoteRequest(s.usd, s.usdDest, 60_000), p.headers);
      const b = await created(quoteRequest(s.usd, s.usdDest, 60_000), p.headers);
      const results = await Promise.all([execute(a.id, p.headers), execute(b.id, p.headers)]);
      expect(results.map((r) => r.statusCode).sort()).toEqual([200, 429]);
      expect(await balanceOf(t, s.usd, p.headers)).toMatchObject({ available: 940_000 });
      await assertLedgerInvariants(t.store);
    });
  });

  describe('tenancy', () => {
    it("one platform's overrides and volume do not affect another's", async () => {
      const a = await newPlatform();
      const b = await newPlatform();
      const sa = await sender(a.headers, { fundUsd: 1_000_000 });
      const sb = await sender(b.headers, { fundUsd: 1_000_000 });
      const sd = await sender({}, { fundUsd: 1_000_000 });
      await patchLimits(a.id, { transactionSize: { withdrawals: { USD: 100_000 } }, dailyVolume: { withdrawals: { USD: 100_000 } } });
      await patchLimits(b.id, { dailyVolume: { withdrawals: { USD: 100_000 } } });

      // Size: only platform A is limited.
      envelope(await quote(quoteRequest(sa.usd, sa.usdDest, 100_001), a.headers), 400, 'TRANSACTION_SIZE_LIMIT_EXCEEDED');
      await created(quoteRequest(sb.usd, sb.usdDest, 100_001), b.headers);
      await created(quoteRequest(sd.usd, sd.usdDest, 100_001));
      // Volume: A's day is used up; B's is untouched.
      await send(sa.usd, sa.usdDest, 100_000, a.headers);
      envelope(await quote(quoteRequest(sa.usd, sa.usdDest, 100, { immediatelyExecute: true }), a.headers), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED');
      await send(sb.usd, sb.usdDest, 100_000, b.headers);
      await send(sd.usd, sd.usdDest, 100_000);
      // The default platform has no overrides.
      expect((await t.call('GET', `/admin/platforms/${defaultPlatformId}`, undefined, ADMIN)).json()).not.toHaveProperty('limits');
      // Another platform's quote is still unknown here.
      const q = await created(quoteRequest(sb.usd, sb.usdDest, 1_000), b.headers);
      envelope(await execute(q.id, a.headers), 404, 'QUOTE_NOT_FOUND');
      await assertLedgerInvariants(t.store);
    });
  });

  describe('operator API validation', () => {
    const errorsOf = async (platformId: string, body: unknown): Promise<Array<{ field: string; message: string }>> =>
      (envelope(await t.call('PATCH', `/admin/platforms/${platformId}`, body, ADMIN), 400, 'INVALID_INPUT').details as { errors: Array<{ field: string; message: string }> }).errors;

    it('lists every invalid field of a PATCH in one 400 and changes nothing', async () => {
      const p = await newPlatform();
      await patchLimits(p.id, { dailyVolume: { withdrawals: { USD: 5_000 } } });
      const before = (await t.call('GET', `/admin/platforms/${p.id}`, undefined, ADMIN)).json() as { name: string; limits: Limits };

      const errors = await errorsOf(p.id, {
        name: '',
        regulated: true,
        limits: {
          transactionSize: {
            default: -1,
            corridors: { 'USD-EUR': 5, 'XXX:EUR': 1, 'USD:USD': 5, 'USD:EUR': 1.5, 'EUR:GBP': null },
            withdrawals: { usd: 1, EUR: 'x', GBP: 9_007_199_254_740_992 },
            maximum: 1,
          },
          dailyVolume: 5,
          weekly: {},
        },
      });
      expect(errors.map((e) => e.field).sort()).toEqual(
        [
          'name',
          'regulated',
          'limits.transactionSize.default',
          'limits.transactionSize.corridors.USD-EUR',
          'limits.transactionSize.corridors.XXX:EUR',
          'limits.transactionSize.corridors.USD:USD',
          'limits.transactionSize.corridors.USD:EUR',
          'limits.transactionSize.withdrawals.usd',
          'limits.transactionSize.withdrawals.EUR',
          'limits.transactionSize.withdrawals.GBP',
          'limits.transactionSize.maximum',
          'limits.dailyVolume',
          'limits.weekly',
        ].sort(),
      );
      const message = (field: string) => errors.find((e) => e.field === field)!.message;
      expect(message('limits.transactionSize.corridors.USD:USD')).toContain('withdrawals.USD');
      expect(message('limits.transactionSize.corridors.XXX:EUR')).toContain('XXX');
      expect(message('limits.transactionSize.default')).toBe('must be >= 0');
      expect(message('limits.transactionSize.maximum')).toBe('is not a recognised field');

      // The wrong shapes at the top.
      expect((await errorsOf(p.id, { limits: 'low' })).map((e) => e.field)).toEqual(['limits']);
      expect((await errorsOf(p.id, { limits: { transactionSize: { corridors: [] } } })).map((e) => e.field)).toEqual(['limits.transactionSize.corridors']);
      // Nothing changed.
      expect((await t.call('GET', `/admin/platforms/${p.id}`, undefined, ADMIN)).json()).toEqual(before);
      // An empty change is fine.
      expect((await patchLimits(p.id, {})).limits).toEqual(before.limits);
    });
  });
});
