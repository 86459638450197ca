import { existsSync } from 'node:fs';
import { parse } from '@readme/openapi-parser';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { openInternalLedgerAccounts } from '../../src/api/ledger/service.js';
import { last4OfSuffix } from '../../src/sandbox/rules/card-rules.js';
import { advanceAndDeliver, envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { balanceOf, fund, newCustomer, otherPlatformAuth } from '../money-helpers.js';
import { Receiver } from '../webhook-receiver.js';
import { payloadText } from '../../src/kernel/event-bodies.js';

// Cards through HTTP as a platform sees them (docs/cards.md): issuance and its sandbox
// suffixes, the KYC gate, funding sources, freeze / unfreeze / close, reveal, and card
// transactions on the ledger through the ten simulators, with the webhooks a real local
// receiver gets and the ledger checked after every money scenario.

interface CardBody {
  id: string;
  cardholderId: string;
  platformCardId: string;
  state: string;
  stateReason: string | null;
  last4?: string;
  expMonth?: number;
  expYear?: number;
  fundingSources: string[];
  maxSpendPerTransaction: number | null;
  currency: string;
}
interface Amt { amount: number; currency: { code: string } }
interface CardTx {
  type: string;
  id: string;
  cardId: string;
  status: string;
  direction: string;
  authorizedAmount: Amt;
  settledAmount?: Amt;
  refundedAmount?: Amt;
  releasedAmount?: Amt;
  accountId: string;
  pullSummary: { count: number; totalAmount: number; pendingCount: number };
  refundSummary: { count: number; totalAmount: number };
  settlementSummary: { count: number; totalAmount: number };
  issuerTransactionToken: string;
}
/** What `sim` gives when the simulated event made or changed no card transaction (a decline, a balance inquiry). */
const NONE = 'NO_CARD_TRANSACTION';

describe(`cards (${STORE})`, () => {
  let t: TestApp;
  let receiver: Receiver;

  beforeAll(async () => {
    t = await makeApp();
    receiver = await new Receiver().start();
    expect((await t.call('PATCH', '/config', { webhookEndpoint: receiver.url })).statusCode).toBe(200);
  }, 30_000);
  afterAll(async () => {
    await receiver?.stop();
    await t?.close();
  });

  const deliver = () => t.running.webhooks.runDue();
  const hooksFor = (id: string) => receiver.got.filter((r) => (r.json.data as { id?: string }).id === id);
  const typesFor = (id: string) => hooksFor(id).map((r) => r.json.type);

  /** An APPROVED cardholder with a USD account funded with `amount`. */
  async function cardholder(amount = 50_000): Promise<{ id: string; account: string }> {
    const c = await newCustomer(t, ['USD', 'EUR']);
    if (amount > 0) await fund(t, c.accounts.USD!.id, amount);
    return { id: c.id, account: c.accounts.USD!.id };
  }

  async function issue(holder: { id: string; account: string }, extra: Record<string, unknown> = {}): Promise<CardBody> {
    const res = await t.call('POST', '/cards', { cardholderId: holder.id, form: 'VIRTUAL', fundingSources: [holder.account], ...extra });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as CardBody;
  }

  /** Answers of the simulators, each checked to be exactly {issuerTransactionToken}. */
  const simAnswers: Array<{ issuerTransactionToken: string }> = [];
  /**
   * A simulator call: 202 with the issuer's token only (the reference's answer), then the card
   * transaction carrying that token as the API shows it (GET /cards/{id}/transactions), or
   * `{status: NONE}` when the event made none (a decline, a balance inquiry).
   */
  async function sim(cardId: string, op: string, body: Record<string, unknown>, status = 202): Promise<CardTx> {
    const res = await t.call('POST', `/sandbox/cards/${encodeURIComponent(cardId)}/simulate/${op}`, body);
    expect(res.statusCode, res.body).toBe(status);
    const answer = res.json() as { issuerTransactionToken: string };
    expect(Object.keys(answer)).toEqual(['issuerTransactionToken']);
    expect(answer.issuerTransactionToken).toMatch(/^sbx_txn_[0-9a-f]{24}$/);
    simAnswers.push(answer);
    const list = (await t.call('GET', `/cards/${encodeURIComponent(cardId)}/transactions?limit=100`)).json() as { data: CardTx[] };
    return list.data.find((x) => x.issuerTransactionToken === answer.issuerTransactionToken) ?? ({ issuerTransactionToken: answer.issuerTransactionToken, status: NONE } as CardTx);
  }
  const auth = (cardId: string, amount: number, descriptor = 'BLUE BOTTLE COFFEE SF', op = 'authorization') =>
    sim(cardId, op, { amount, currency: { code: 'USD' }, merchant: { descriptor, mcc: '5814', country: 'US' } });
  const clear = (cardId: string, id: string, amount: number) => sim(cardId, 'clearing', { cardTransactionId: id, amount });
  const ret = (cardId: string, id: string, amount: number) => sim(cardId, 'return', { cardTransactionId: id, amount });

  /** Every card transaction's money is where its counters say (docs/cards.md "Ledger entries"). */
  async function assertCardLedger(): Promise<void> {
    await assertLedgerInvariants(t.store);
    const txs = await t.store.db.selectFrom('card_transactions').selectAll().execute();
    const problems: string[] = [];
    for (const tx of txs) {
      const rows = await t.store.db
        .selectFrom('ledger_postings as p')
        .innerJoin('ledger_entries as e', 'e.id', 'p.entry_id')
        .select(['p.account_id', 'p.bucket', 'p.amount'])
        .where('e.reference_id', '=', tx.id)
        .execute();
      const sum = (bucket: string) => rows.filter((r) => r.account_id === tx.account_id && r.bucket === bucket).reduce((s, r) => s + Number(r.amount), 0);
      const open = Number(tx.open_amount);
      if (tx.direction === 'DEBIT') {
        const want = -Number(tx.pull_total) + Number(tx.released_amount) + Number(tx.refunded_amount);
        if (sum('held') !== open) problems.push(`${tx.id}: held ${sum('held')} != open ${open}`);
        if (sum('available') !== want) problems.push(`${tx.id}: available ${sum('available')} != ${want}`);
      } else {
        if (sum('pending') !== open) problems.push(`${tx.id}: pending ${sum('pending')} != open ${open}`);
        if (sum('available') !== Number(tx.settled_amount)) problems.push(`${tx.id}: available ${sum('available')} != settled ${tx.settled_amount}`);
      }
    }
    expect(problems).toEqual([]);
  }

  describe('the end-to-end happy path of the sandbox testing page', () => {
    it('issue → activate → authorize → clear (over-auth) → refund, with webhooks and the ledger', async () => {
      const h = await cardholder(50_000);
      const card = await issue(h, { platformCardId: 'card-test-happy' });
      expect(card).toMatchObject({ cardholderId: h.id, platformCardId: 'card-test-happy', state: 'ACTIVE', stateReason: null, form: 'VIRTUAL', currency: 'USD', fundingSources: [h.account], maxSpendPerTransaction: null });
      expect(card.last4).toBe(last4OfSuffix('ppy'));
      expect(card.expMonth).toBeGreaterThanOrEqual(1);
      expect(card.expYear).toBeGreaterThan(2025);
      expect(card.id).toMatch(/^Card:[0-9a-f-]{36}$/);

      const a = await auth(card.id, 1250);
      expect(a).toMatchObject({ type: 'CARD', cardId: card.id, status: 'AUTHORIZED', direction: 'DEBIT', accountId: h.account, authorizedAmount: { amount: 1250, currency: { code: 'USD' } } });
      expect(a.pullSummary).toEqual({ count: 1, totalAmount: 1250, pendingCount: 0 });
      expect(a.id).toMatch(/^CardTransaction:/);
      expect(a.issuerTransactionToken).toBeTruthy();
      expect(await balanceOf(t, h.account)).toEqual({ available: 48_750, total: 50_000 });

      const c = await clear(card.id, a.id, 1500);
      expect(c).toMatchObject({ id: a.id, status: 'SETTLED', authorizedAmount: { amount: 1250 }, settledAmount: { amount: 1500 } });
      expect(c.pullSummary).toEqual({ count: 2, totalAmount: 1500, pendingCount: 0 });
      expect(c.settlementSummary).toEqual({ count: 1, totalAmount: 1500 });
      expect(await balanceOf(t, h.account)).toEqual({ available: 48_500, total: 48_500 });

      const r = await ret(card.id, a.id, 1500);
      expect(r).toMatchObject({ status: 'REFUNDED', refundedAmount: { amount: 1500 }, refundSummary: { count: 1, totalAmount: 1500 } });
      expect(await balanceOf(t, h.account)).toEqual({ available: 50_000, total: 50_000 });

      await deliver();
      expect(typesFor(card.id)).toEqual(['CARD.STATE_CHANGE']);
      expect((hooksFor(card.id)[0]!.json.data as CardBody).state).toBe('ACTIVE');
      expect(typesFor(a.id)).toEqual(['CARD_TRANSACTION.AUTHORIZED', 'CARD_TRANSACTION.SETTLED', 'CARD_TRANSACTION.REFUNDED']);
      const last = hooksFor(a.id).at(-1)!.json.data as CardTx;
      expect(last).toMatchObject({ type: 'CARD', id: a.id, status: 'REFUNDED', refundedAmount: { amount: 1500 }, settledAmount: { amount: 1500 } });

      const list = await t.call('GET', `/cards/${card.id}/transactions`);
      expect(list.statusCode).toBe(200);
      expect(list.json()).toMatchObject({ data: [{ id: a.id, status: 'REFUNDED' }], hasMore: false, totalCount: 1 });
      const one = await t.call('GET', `/cards/${card.id}/transactions/${a.id}`);
      expect(one.json()).toMatchObject({ id: a.id, status: 'REFUNDED' });
      await assertCardLedger();
    });
  });

  describe('issuance', () => {
    it('suffix 001 stays PROCESSING, with no webhook, however long', async () => {
      const card = await issue(await cardholder(0), { platformCardId: 'poll-001' });
      expect(card).toMatchObject({ state: 'PROCESSING', stateReason: null });
      expect(card.last4).toBeUndefined();
      await advanceAndDeliver(t, 3600);
      expect((await t.call('GET', `/cards/${card.id}`)).json()).toMatchObject({ state: 'PROCESSING' });
      expect(typesFor(card.id)).toEqual([]);
    });

    it('suffix 002 is rejected by the issuer: CLOSED, ISSUER_REJECTED, with its CARD.STATE_CHANGE', async () => {
      const card = await issue(await cardholder(0), { platformCardId: 'reject-002' });
      expect(card).toMatchObject({ state: 'CLOSED', stateReason: 'ISSUER_REJECTED' });
      await deliver();
      expect(hooksFor(card.id).map((r) => [r.json.type, (r.json.data as CardBody).state, (r.json.data as CardBody).stateReason])).toEqual([['CARD.STATE_CHANGE', 'CLOSED', 'ISSUER_REJECTED']]);
      const patch = await t.call('PATCH', `/cards/${card.id}`, { state: 'ACTIVE' });
      envelope(patch, 409, 'CARD_NOT_MUTABLE');
    });

    it('suffix 005 activates after about 30 seconds of the sandbox clock, then CARD.STATE_CHANGE', async () => {
      const card = await issue(await cardholder(0), { platformCardId: 'slow-005' });
      expect(card.state).toBe('PROCESSING');
      await advanceAndDeliver(t, 29);
      expect((await t.call('GET', `/cards/${card.id}`)).json()).toMatchObject({ state: 'PROCESSING' });
      expect(typesFor(card.id)).toEqual([]);
      await advanceAndDeliver(t, 1);
      const after = (await t.call('GET', `/cards/${card.id}`)).json() as CardBody;
      expect(after).toMatchObject({ state: 'ACTIVE', last4: last4OfSuffix('005') });
      expect(typesFor(card.id)).toEqual(['CARD.STATE_CHANGE']);
      expect((hooksFor(card.id)[0]!.json.data as CardBody).state).toBe('ACTIVE');
    });

    it('any other suffix activates at once; last4 is deterministic from the suffix', async () => {
      const h = await cardholder(0);
      const a = await issue(h, { platformCardId: 'emp-a-777' });
      const b = await issue(h, { platformCardId: 'emp-b-777' });
      const c = await issue(h, { platformCardId: 'emp-c-778' });
      expect([a.state, b.state, c.state]).toEqual(['ACTIVE', 'ACTIVE', 'ACTIVE']);
      expect(a.last4).toBe(b.last4);
      expect(a.last4).toBe(last4OfSuffix('777'));
      expect(c.last4).toBe(last4OfSuffix('778'));
    });

    it('without platformCardId one is generated and the cardholder id’s last 3 characters decide', async () => {
      const h = await cardholder(0);
      const card = await issue(h);
      expect(card.platformCardId).toMatch(/^card_[0-9a-f]{32}$/);
      const suffix = h.id.slice(-3);
      const expected = suffix === '001' || suffix === '005' ? 'PROCESSING' : suffix === '002' ? 'CLOSED' : 'ACTIVE';
      expect(card.state).toBe(expected);
    });

    it('the cardholder must be KYC APPROVED: 400 CARDHOLDER_KYC_NOT_APPROVED, nothing created', async () => {
      const c = await newCustomer(t, ['USD'], { approved: false });
      const res = await t.call('POST', '/cards', { cardholderId: c.id, form: 'VIRTUAL', fundingSources: [c.accounts.USD!.id] });
      const e = envelope(res, 400, 'CARDHOLDER_KYC_NOT_APPROVED');
      expect(e.details).toMatchObject({ cardholderId: c.id, kycStatus: 'UNVERIFIED' });
      expect((await t.call('GET', `/cards?cardholderId=${c.id}`)).json()).toMatchObject({ data: [], totalCount: 0 });
    });

    it('an unknown cardholder, or another platform’s, is 400 INVALID_INPUT naming cardholderId (createCard declares no 404)', async () => {
      const fields = (res: Awaited<ReturnType<typeof t.call>>) => (envelope(res, 400, 'INVALID_INPUT').details!.errors as Array<{ field: string }>).map((e) => e.field);
      expect(fields(await t.call('POST', '/cards', { cardholderId: 'Customer:019542f5-b3e7-7d02-8000-000000000001', form: 'VIRTUAL', fundingSources: ['InternalAccount:x'] }))).toEqual(['cardholderId']);
      const other = await otherPlatformAuth(t);
      const c = await newCustomer(t, ['USD'], { headers: other });
      expect(fields(await t.call('POST', '/cards', { cardholderId: c.id, form: 'VIRTUAL', fundingSources: [c.accounts.USD!.id] }))).toEqual(['cardholderId']);
    });

    it('an invalid body lists every invalid field', async () => {
      const res = await t.call('POST', '/cards', { form: 'PHYSICAL', fundingSources: [], maxSpendPerTransaction: 0 });
      const e = envelope(res, 400, 'INVALID_INPUT');
      const fields = (e.details!.errors as Array<{ field: string }>).map((x) => x.field).sort();
      expect(fields).toEqual(expect.arrayContaining(['cardholderId', 'form', 'fundingSources', 'maxSpendPerTransaction']));
    });

    it('a threeDSecurePassword is refused: this program has no static-password factor', async () => {
      const h = await cardholder(0);
      const e = envelope(await t.call('POST', '/cards', { cardholderId: h.id, form: 'VIRTUAL', fundingSources: [h.account], threeDSecurePassword: 'AbCd1234' }), 400, 'INVALID_INPUT');
      expect(e.details!.errors).toEqual([expect.objectContaining({ field: 'threeDSecurePassword' })]);
    });
  });

  describe('funding sources', () => {
    /** An internal account of the customer whose id ends with `suffix` (ids are random: written to the store). */
    async function accountEnding(customerId: string, suffix: string): Promise<string> {
      const id = `InternalAccount:019a0000-0000-7000-8000-000000000${suffix}`;
      const at = new Date().toISOString();
      const platform = await t.store.db.selectFrom('customers').select('platform_id').where('id', '=', customerId).executeTakeFirstOrThrow();
      await t.store.db.deleteFrom('internal_accounts').where('id', '=', id).execute();
      await t.store.db
        .insertInto('internal_accounts')
        .values({ id, platform_id: platform.platform_id, customer_id: customerId, currency: 'USD', type: 'EMBEDDED_WALLET', status: 'ACTIVE', funding_reference: `REF-${suffix}-${Math.random()}`, created_at: at, updated_at: at })
        .execute();
      await openInternalLedgerAccounts(t.store.db, platform.platform_id, [{ id, currency: 'USD' }], at);
      return id;
    }

    it('suffixes 002 and 003 are FUNDING_SOURCE_INELIGIBLE; any other binds', async () => {
      const h = await cardholder(0);
      for (const [suffix, reason] of [['002', 'INSUFFICIENT_BALANCE_CHECK'], ['003', 'ACCOUNT_CLOSED']] as const) {
        const acc = await accountEnding(h.id, suffix);
        const e = envelope(await t.call('POST', '/cards', { cardholderId: h.id, form: 'VIRTUAL', fundingSources: [acc] }), 400, 'FUNDING_SOURCE_INELIGIBLE');
        expect(e.details).toMatchObject({ accountId: acc, reason });
      }
      // The suffix rule comes first: an id ending in 002/003 that is not the cardholder's
      // (unknown, or another customer's) is refused for the sandbox rule, not as NOT_CARDHOLDER_ACCOUNT.
      const other = await cardholder(0);
      const othersAccount = await accountEnding(other.id, '003');
      for (const [acc, reason] of [
        ['InternalAccount:019542f5-b3e7-7d02-8000-000000000002', 'INSUFFICIENT_BALANCE_CHECK'],
        ['InternalAccount:019542f5-b3e7-7d02-8000-000000000003', 'ACCOUNT_CLOSED'],
        [othersAccount, 'ACCOUNT_CLOSED'],
      ] as const) {
        const e = envelope(await t.call('POST', '/cards', { cardholderId: h.id, form: 'VIRTUAL', fundingSources: [h.account, acc] }), 400, 'FUNDING_SOURCE_INELIGIBLE');
        expect(e.details).toMatchObject({ accountId: acc, reason, field: 'fundingSources.1' });
      }
      const ok = await accountEnding(h.id, '004');
      expect((await issue(h, { fundingSources: [ok], platformCardId: 'x-100' })).fundingSources).toEqual([ok]);
      await t.store.db.deleteFrom('internal_accounts').where('id', 'like', 'InternalAccount:019a0000-0000-7000-8000-%').execute();
      await t.store.db.deleteFrom('ledger_balances').where('account_id', 'like', 'InternalAccount:019a0000-0000-7000-8000-%').execute();
    });

    it('another customer’s account, an unknown one, or one not in a card-eligible currency is ineligible', async () => {
      const h = await cardholder(0);
      const other = await cardholder(0);
      const eur = (await newCustomer(t, ['EUR'])).accounts.EUR!.id;
      for (const [acc, reason] of [
        [other.account, 'NOT_CARDHOLDER_ACCOUNT'],
        ['InternalAccount:019542f5-b3e7-7d02-8000-000000000010', 'NOT_CARDHOLDER_ACCOUNT'],
        [eur, 'NOT_CARDHOLDER_ACCOUNT'],
      ] as const) {
        const e = envelope(await t.call('POST', '/cards', { cardholderId: h.id, form: 'VIRTUAL', fundingSources: [h.account, acc] }), 400, 'FUNDING_SOURCE_INELIGIBLE');
        expect(e.details).toMatchObject({ accountId: acc, reason, field: 'fundingSources.1' });
      }
      const own = await newCustomer(t, ['USD', 'EUR']);
      const e = envelope(await t.call('POST', '/cards', { cardholderId: own.id, form: 'VIRTUAL', fundingSources: [own.accounts.EUR!.id] }), 400, 'FUNDING_SOURCE_INELIGIBLE');
      expect(e.details).toMatchObject({ reason: 'CURRENCY_NOT_CARD_ELIGIBLE' });
    });

    it('PATCH replaces them (CARD.FUNDING_SOURCE_CHANGE), refuses an empty or ineligible list, and the accountId filter follows', async () => {
      const h = await cardholder(0);
      const card = await issue(h, { platformCardId: 'fs-swap-100' });
      const other = await cardholder(0);
      envelope(await t.call('PATCH', `/cards/${card.id}`, { fundingSources: [] }), 400, 'INVALID_INPUT');
      envelope(await t.call('PATCH', `/cards/${card.id}`, { fundingSources: [other.account] }), 400, 'FUNDING_SOURCE_INELIGIBLE');
      const res = await t.call('PATCH', `/cards/${card.id}`, { fundingSources: [h.account] });
      expect(res.statusCode, res.body).toBe(200);
      await deliver();
      expect(typesFor(card.id)).toEqual(['CARD.STATE_CHANGE', 'CARD.FUNDING_SOURCE_CHANGE']);
      expect((hooksFor(card.id)[1]!.json.data as CardBody).fundingSources).toEqual([h.account]);
      const filtered = (await t.call('GET', `/cards?accountId=${encodeURIComponent(h.account)}`)).json() as { data: CardBody[] };
      expect(filtered.data.map((c) => c.id)).toEqual([card.id]);
      expect(((await t.call('GET', `/cards?accountId=${encodeURIComponent(other.account)}`)).json() as { data: unknown[] }).data).toEqual([]);
    });
  });

  describe('freeze, unfreeze, close', () => {
    it('a frozen card declines CARD_PAUSED; unfrozen it approves; each change sends CARD.STATE_CHANGE', async () => {
      const h = await cardholder(10_000);
      const card = await issue(h, { platformCardId: 'freeze-100' });
      const frozen = await t.call('PATCH', `/cards/${card.id}`, { state: 'FROZEN' });
      expect(frozen.json()).toMatchObject({ state: 'FROZEN', stateReason: null });
      const d = await auth(card.id, 500);
      expect(d).toMatchObject({ status: NONE });
      expect(await balanceOf(t, h.account)).toEqual({ available: 10_000, total: 10_000 });
      envelope(await t.call('PATCH', `/cards/${card.id}`, { state: 'FROZEN' }), 409, 'INVALID_STATE_TRANSITION');
      expect((await t.call('PATCH', `/cards/${card.id}`, { state: 'ACTIVE' })).json()).toMatchObject({ state: 'ACTIVE' });
      expect((await auth(card.id, 500)).status).toBe('AUTHORIZED');
      await deliver();
      expect(hooksFor(card.id).map((r) => (r.json.data as CardBody).state)).toEqual(['ACTIVE', 'FROZEN', 'ACTIVE']);
      await assertCardLedger();
    });

    it('a frozen card still clears and refunds what was authorized before', async () => {
      const h = await cardholder(10_000);
      const card = await issue(h, { platformCardId: 'freeze-200' });
      const a = await auth(card.id, 1000);
      await t.call('PATCH', `/cards/${card.id}`, { state: 'FROZEN' });
      expect((await clear(card.id, a.id, 1000)).status).toBe('SETTLED');
      expect((await ret(card.id, a.id, 400)).status).toBe('SETTLED');
      expect(await balanceOf(t, h.account)).toEqual({ available: 9_400, total: 9_400 });
      await assertCardLedger();
    });

    it('close is final: open authorizations are released, funding sources detached, nothing changes after', async () => {
      const h = await cardholder(10_000);
      const card = await issue(h, { platformCardId: 'close-100' });
      const a = await auth(card.id, 2500);
      envelope(await t.call('PATCH', `/cards/${card.id}`, { state: 'CLOSED', fundingSources: [h.account] }), 400, 'INVALID_INPUT');
      envelope(await t.call('PATCH', `/cards/${card.id}`, { state: 'CLOSED', maxSpendPerTransaction: 5 }), 400, 'INVALID_INPUT');
      const closed = (await t.call('PATCH', `/cards/${card.id}`, { state: 'CLOSED' })).json() as CardBody;
      expect(closed).toMatchObject({ state: 'CLOSED', stateReason: 'CLOSED_BY_PLATFORM', fundingSources: [] });
      expect(await balanceOf(t, h.account)).toEqual({ available: 10_000, total: 10_000 });
      const tx = (await t.call('GET', `/cards/${card.id}/transactions/${a.id}`)).json() as CardTx;
      expect(tx).toMatchObject({ status: 'SETTLED', releasedAmount: { amount: 2500 }, settledAmount: { amount: 0 } });
      envelope(await t.call('PATCH', `/cards/${card.id}`, { state: 'CLOSED' }), 409, 'CARD_ALREADY_CLOSED');
      envelope(await t.call('PATCH', `/cards/${card.id}`, { state: 'ACTIVE' }), 409, 'CARD_NOT_MUTABLE');
      envelope(await t.call('PATCH', `/cards/${card.id}`, { maxSpendPerTransaction: 100 }), 409, 'CARD_NOT_MUTABLE');
      expect(await auth(card.id, 100)).toMatchObject({ status: NONE });
      envelope(await t.call('POST', `/sandbox/cards/${card.id}/simulate/clearing`, { cardTransactionId: a.id, amount: 2500 }), 400, 'INVALID_INPUT');
      await deliver();
      expect(typesFor(card.id)).toEqual(['CARD.STATE_CHANGE', 'CARD.STATE_CHANGE']);
      expect(typesFor(a.id)).toEqual(['CARD_TRANSACTION.AUTHORIZED', 'CARD_TRANSACTION.SETTLED']);
      await assertCardLedger();
    });

    it('a PROCESSING card cannot be frozen; an empty PATCH is refused', async () => {
      const card = await issue(await cardholder(0), { platformCardId: 'proc-001' });
      envelope(await t.call('PATCH', `/cards/${card.id}`, { state: 'FROZEN' }), 409, 'INVALID_STATE_TRANSITION');
      envelope(await t.call('PATCH', `/cards/${card.id}`, {}), 400, 'INVALID_INPUT');
      envelope(await t.call('PATCH', `/cards/${card.id}`, { state: 'PROCESSING' }), 400, 'INVALID_INPUT');
    });
  });

  describe('spending limit', () => {
    it('maxSpendPerTransaction allows exactly the limit, declines above it, and null clears it', async () => {
      const h = await cardholder(10_000);
      const card = await issue(h, { platformCardId: 'limit-100', maxSpendPerTransaction: 1000 });
      expect(card.maxSpendPerTransaction).toBe(1000);
      expect((await auth(card.id, 1000)).status).toBe('AUTHORIZED');
      expect(await auth(card.id, 1001)).toMatchObject({ status: NONE });
      expect((await t.call('PATCH', `/cards/${card.id}`, { maxSpendPerTransaction: null })).json()).toMatchObject({ maxSpendPerTransaction: null });
      expect((await auth(card.id, 1001)).status).toBe('AUTHORIZED');
      await assertCardLedger();
    });
  });

  describe('authorization decisioning by merchant descriptor suffix', () => {
    it('002 declines INSUFFICIENT_FUNDS and 003 CARD_PAUSED, with nothing recorded or moved', async () => {
      const h = await cardholder(10_000);
      const card = await issue(h, { platformCardId: 'dec-100' });
      expect(await auth(card.id, 100, 'AMAZON RETAIL US-002')).toMatchObject({ status: NONE });
      expect(await auth(card.id, 100, 'ACME-003')).toMatchObject({ status: NONE });
      expect(await auth(card.id, 20_000)).toMatchObject({ status: NONE });
      expect((await t.call('GET', `/cards/${card.id}/transactions`)).json()).toMatchObject({ totalCount: 0 });
      expect(await balanceOf(t, h.account)).toEqual({ available: 10_000, total: 10_000 });
      await assertCardLedger();
    });

    it('005: the pull stays PENDING about 30 seconds, then CONFIRMED (the transaction’s event again)', async () => {
      const h = await cardholder(10_000);
      const card = await issue(h, { platformCardId: 'pull-100' });
      const a = await auth(card.id, 700, 'SLOW PULL-005');
      expect(a).toMatchObject({ status: 'AUTHORIZED', pullSummary: { count: 1, totalAmount: 700, pendingCount: 1 } });
      await advanceAndDeliver(t, 29);
      expect(((await t.call('GET', `/cards/${card.id}/transactions/${a.id}`)).json() as CardTx).pullSummary.pendingCount).toBe(1);
      await advanceAndDeliver(t, 1);
      expect(((await t.call('GET', `/cards/${card.id}/transactions/${a.id}`)).json() as CardTx).pullSummary.pendingCount).toBe(0);
      expect(hooksFor(a.id).map((r) => [r.json.type, (r.json.data as CardTx).pullSummary.pendingCount])).toEqual([
        ['CARD_TRANSACTION.AUTHORIZED', 1],
        ['CARD_TRANSACTION.AUTHORIZED', 0],
      ]);
      await assertCardLedger();
    });

    it('006: approved, but the pull’s confirmation reports FAILED: EXCEPTION when it settles, nothing collected', async () => {
      const h = await cardholder(10_000);
      const card = await issue(h, { platformCardId: 'exc-100' });
      const a = await auth(card.id, 4200, 'UBER EATS-006');
      expect(a).toMatchObject({ status: 'AUTHORIZED', pullSummary: { count: 1, totalAmount: 4200, pendingCount: 1 } });
      const c = await clear(card.id, a.id, 4200);
      expect(c).toMatchObject({ status: 'EXCEPTION', settledAmount: { amount: 4200 }, settlementSummary: { count: 1, totalAmount: 4200 }, pullSummary: { count: 1, totalAmount: 0, pendingCount: 0 } });
      expect(await balanceOf(t, h.account)).toEqual({ available: 10_000, total: 10_000 });
      await deliver();
      expect(typesFor(a.id)).toEqual(['CARD_TRANSACTION.AUTHORIZED', 'CARD_TRANSACTION.EXCEPTION']);
      envelope(await t.call('POST', `/sandbox/cards/${card.id}/simulate/return`, { cardTransactionId: a.id, amount: 1 }), 400, 'INVALID_INPUT');
      await assertCardLedger();
    });

    it('an over-authorization clearing whose post-hoc pull the balance cannot cover is an EXCEPTION', async () => {
      const h = await cardholder(1_000);
      const card = await issue(h, { platformCardId: 'tip-100' });
      const a = await auth(card.id, 1000);
      const c = await clear(card.id, a.id, 1500);
      expect(c).toMatchObject({ status: 'EXCEPTION', settledAmount: { amount: 1500 }, pullSummary: { count: 2, totalAmount: 1000, pendingCount: 0 } });
      expect(await balanceOf(t, h.account)).toEqual({ available: 0, total: 0 });
      await assertCardLedger();
    });
  });

  describe('more decisioning and pull paths', () => {
    it('a PROCESSING card declines CARD_NOT_ACTIVE', async () => {
      const h = await cardholder(1_000);
      const card = await issue(h, { platformCardId: 'wait-001' });
      expect(await auth(card.id, 100)).toMatchObject({ status: NONE });
      expect(await sim(card.id, 'balance_inquiry', { merchant: { descriptor: 'X' } })).toMatchObject({ status: NONE });
    });

    it('005: an over-authorization’s post-hoc pull is delayed too, then confirmed', async () => {
      const h = await cardholder(10_000);
      const card = await issue(h, { platformCardId: 'slowtip-100' });
      const a = await auth(card.id, 1000, 'DINER-005');
      await advanceAndDeliver(t, 30);
      const c = await clear(card.id, a.id, 1300);
      expect(c).toMatchObject({ status: 'SETTLED', pullSummary: { count: 2, totalAmount: 1300, pendingCount: 1 } });
      expect(await balanceOf(t, h.account)).toEqual({ available: 8_700, total: 8_700 });
      await advanceAndDeliver(t, 30);
      expect(((await t.call('GET', `/cards/${card.id}/transactions/${a.id}`)).json() as CardTx).pullSummary.pendingCount).toBe(0);
      expect(typesFor(a.id)).toEqual(['CARD_TRANSACTION.AUTHORIZED', 'CARD_TRANSACTION.AUTHORIZED', 'CARD_TRANSACTION.SETTLED', 'CARD_TRANSACTION.SETTLED']);
      await assertCardLedger();
    });

    it('006 expiring without a clearing is no exception: the hold goes back, SETTLED', async () => {
      const h = await cardholder(10_000);
      const card = await issue(h, { platformCardId: 'exc-200' });
      const a = await auth(card.id, 900, 'X-006');
      expect(await clear(card.id, a.id, 0)).toMatchObject({ status: 'SETTLED', releasedAmount: { amount: 900 }, pullSummary: { pendingCount: 0 } });
      expect(await balanceOf(t, h.account)).toEqual({ available: 10_000, total: 10_000 });
      await assertCardLedger();
    });

    it('an advice below what settled is 400 INVALID_AMOUNT; a credit advice re-sizes the pending credit', async () => {
      const h = await cardholder(10_000);
      const card = await issue(h, { platformCardId: 'adv-200' });
      const a = await auth(card.id, 1000);
      await clear(card.id, a.id, 600);
      envelope(await t.call('POST', `/sandbox/cards/${card.id}/simulate/authorization_advice`, { cardTransactionId: a.id, amount: 500 }), 400, 'INVALID_AMOUNT');
      expect(await sim(card.id, 'authorization_advice', { cardTransactionId: a.id, amount: 600 })).toMatchObject({ status: 'SETTLED', releasedAmount: { amount: 400 } });
      const c = await auth(card.id, 1000, 'REFUND PUSH', 'credit_authorization');
      expect(await sim(card.id, 'authorization_advice', { cardTransactionId: c.id, amount: 1500 })).toMatchObject({ status: 'AUTHORIZED', direction: 'CREDIT', authorizedAmount: { amount: 1500 } });
      expect(await sim(card.id, 'authorization_advice', { cardTransactionId: c.id, amount: 200 })).toMatchObject({ status: 'AUTHORIZED', releasedAmount: { amount: 1300 } });
      expect(await balanceOf(t, h.account)).toEqual({ available: 9_400, total: 9_600 });
      expect(await clear(card.id, c.id, 500)).toMatchObject({ status: 'SETTLED', settledAmount: { amount: 500 } });
      expect(await balanceOf(t, h.account)).toEqual({ available: 9_900, total: 9_900 });
      await assertCardLedger();
    });

    it('a deleted cardholder is 400 naming cardholderId (createCard declares no 404); a funding source not ACTIVE is ACCOUNT_CLOSED; a CLOSED card has nothing to reveal', async () => {
      const h = await cardholder(0);
      const card = await issue(h, { platformCardId: 'gone-100' });
      await t.call('PATCH', `/cards/${card.id}`, { state: 'CLOSED' });
      envelope(await t.call('POST', `/cards/${card.id}/reveal`), 409, 'CONFLICT');
      await t.store.db.updateTable('internal_accounts').set({ status: 'FROZEN' }).where('id', '=', h.account).execute();
      const e = envelope(await t.call('POST', '/cards', { cardholderId: h.id, form: 'VIRTUAL', fundingSources: [h.account] }), 400, 'FUNDING_SOURCE_INELIGIBLE');
      expect(e.details).toMatchObject({ reason: 'ACCOUNT_CLOSED' });
      expect((await t.call('DELETE', `/customers/${h.id}`)).statusCode).toBeLessThan(300);
      const gone = envelope(await t.call('POST', '/cards', { cardholderId: h.id, form: 'VIRTUAL', fundingSources: [h.account] }), 400, 'INVALID_INPUT');
      expect(gone.details).toEqual({ errors: [{ field: 'cardholderId', message: expect.stringMatching(/deleted customer/) }] });
    });
  });

  describe('clearing, expiry, returns, reversals', () => {
    it('a smaller clearing is PARTIALLY_SETTLED; 0 then expires the rest (SETTLED, released)', async () => {
      const h = await cardholder(10_000);
      const card = await issue(h, { platformCardId: 'split-100' });
      const a = await auth(card.id, 3000);
      expect(await clear(card.id, a.id, 1000)).toMatchObject({ status: 'PARTIALLY_SETTLED', settledAmount: { amount: 1000 } });
      expect(await balanceOf(t, h.account)).toEqual({ available: 7_000, total: 9_000 });
      expect(await clear(card.id, a.id, 500)).toMatchObject({ status: 'PARTIALLY_SETTLED', settlementSummary: { count: 2, totalAmount: 1500 } });
      expect(await clear(card.id, a.id, 0)).toMatchObject({ status: 'SETTLED', settledAmount: { amount: 1500 }, releasedAmount: { amount: 1500 } });
      expect(await balanceOf(t, h.account)).toEqual({ available: 8_500, total: 8_500 });
      await deliver();
      expect(typesFor(a.id)).toEqual(['CARD_TRANSACTION.AUTHORIZED', 'CARD_TRANSACTION.PARTIALLY_SETTLED', 'CARD_TRANSACTION.PARTIALLY_SETTLED', 'CARD_TRANSACTION.SETTLED']);
      envelope(await t.call('POST', `/sandbox/cards/${card.id}/simulate/clearing`, { cardTransactionId: a.id, amount: 5 }), 400, 'INVALID_INPUT');
      await assertCardLedger();
    });

    it('clearing 0 on a fresh authorization is AUTHORIZATION_EXPIRY: the hold goes back', async () => {
      const h = await cardholder(10_000);
      const card = await issue(h, { platformCardId: 'exp-100' });
      const a = await auth(card.id, 2000);
      expect(await clear(card.id, a.id, 0)).toMatchObject({ status: 'SETTLED', settledAmount: { amount: 0 }, releasedAmount: { amount: 2000 }, settlementSummary: { count: 0, totalAmount: 0 } });
      expect(await balanceOf(t, h.account)).toEqual({ available: 10_000, total: 10_000 });
      await assertCardLedger();
    });

    it('a partial return keeps SETTLED with refundedAmount; more than the net settled is 400 INVALID_AMOUNT; the rest makes it REFUNDED', async () => {
      const h = await cardholder(10_000);
      const card = await issue(h, { platformCardId: 'ret-100' });
      const a = await auth(card.id, 2000);
      envelope(await t.call('POST', `/sandbox/cards/${card.id}/simulate/return`, { cardTransactionId: a.id, amount: 100 }), 400, 'INVALID_INPUT');
      await clear(card.id, a.id, 2000);
      expect(await ret(card.id, a.id, 500)).toMatchObject({ status: 'SETTLED', refundedAmount: { amount: 500 }, refundSummary: { count: 1, totalAmount: 500 } });
      envelope(await t.call('POST', `/sandbox/cards/${card.id}/simulate/return`, { cardTransactionId: a.id, amount: 1501 }), 400, 'INVALID_AMOUNT');
      expect(await ret(card.id, a.id, 1500)).toMatchObject({ status: 'REFUNDED', refundedAmount: { amount: 2000 }, refundSummary: { count: 2, totalAmount: 2000 } });
      expect(await balanceOf(t, h.account)).toEqual({ available: 10_000, total: 10_000 });
      await deliver();
      expect(typesFor(a.id)).toEqual(['CARD_TRANSACTION.AUTHORIZED', 'CARD_TRANSACTION.SETTLED', 'CARD_TRANSACTION.SETTLED', 'CARD_TRANSACTION.REFUNDED']);
      await assertCardLedger();
    });

    it('a return reversal takes a REFUNDED transaction back to SETTLED (pulled again); anything else is 400 INVALID_INPUT', async () => {
      const h = await cardholder(10_000);
      const card = await issue(h, { platformCardId: 'rev-100' });
      const a = await auth(card.id, 1200);
      await clear(card.id, a.id, 1200);
      const wrong = envelope(await t.call('POST', `/sandbox/cards/${card.id}/simulate/return_reversal`, { cardTransactionId: a.id }), 400, 'INVALID_INPUT');
      expect(wrong.details).toMatchObject({ cardTransactionId: a.id, status: 'SETTLED', allowed: ['REFUNDED'] });
      await ret(card.id, a.id, 1200);
      const r = await sim(card.id, 'return_reversal', { cardTransactionId: a.id });
      expect(r).toMatchObject({ status: 'SETTLED', refundSummary: { count: 1, totalAmount: 0 }, pullSummary: { count: 2 } });
      expect(await balanceOf(t, h.account)).toEqual({ available: 8_800, total: 8_800 });
      await deliver();
      expect(typesFor(a.id)).toEqual(['CARD_TRANSACTION.AUTHORIZED', 'CARD_TRANSACTION.SETTLED', 'CARD_TRANSACTION.REFUNDED', 'CARD_TRANSACTION.SETTLED']);
      await assertCardLedger();
    });

    it('a return reversal the balance cannot cover is an EXCEPTION', async () => {
      const h = await cardholder(1_000);
      const card = await issue(h, { platformCardId: 'rev-200' });
      const a = await auth(card.id, 1000);
      await clear(card.id, a.id, 1000);
      await ret(card.id, a.id, 1000);
      const other = await cardholder(0);
      // Spend the refund elsewhere: an authorization holds it.
      await auth(card.id, 1000);
      expect(other).toBeTruthy();
      expect(await sim(card.id, 'return_reversal', { cardTransactionId: a.id })).toMatchObject({ status: 'EXCEPTION', refundedAmount: { amount: 1000 } });
      await assertCardLedger();
    });

    it('an unknown transaction, or another card’s, is 404 TRANSACTION_NOT_FOUND; an unknown card 404', async () => {
      const h = await cardholder(5_000);
      const one = await issue(h, { platformCardId: 'a-100' });
      const two = await issue(h, { platformCardId: 'b-100' });
      const a = await auth(one.id, 100);
      envelope(await t.call('POST', `/sandbox/cards/${two.id}/simulate/clearing`, { cardTransactionId: a.id, amount: 100 }), 404, 'TRANSACTION_NOT_FOUND');
      envelope(await t.call('POST', `/sandbox/cards/${one.id}/simulate/clearing`, { cardTransactionId: 'CardTransaction:nope', amount: 100 }), 404, 'TRANSACTION_NOT_FOUND');
      envelope(await t.call('POST', '/sandbox/cards/Card:nope/simulate/authorization', { amount: 1, currency: { code: 'USD' }, merchant: { descriptor: 'X' } }), 404, 'REFERENCE_NOT_FOUND');
      envelope(await t.call('GET', `/cards/${two.id}/transactions/${a.id}`), 404, 'TRANSACTION_NOT_FOUND');
      envelope(await t.call('POST', `/sandbox/cards/${one.id}/simulate/authorization`, { amount: 1, currency: { code: 'EUR' }, merchant: { descriptor: 'X' } }), 400, 'INVALID_CURRENCY');
      const bad = envelope(await t.call('POST', `/sandbox/cards/${one.id}/simulate/authorization`, { amount: 0, merchant: { descriptor: '' } }), 400, 'INVALID_INPUT');
      expect((bad.details!.errors as Array<{ field: string }>).map((e) => e.field)).toEqual(expect.arrayContaining(['amount', 'currency', 'merchant.descriptor']));
    });
  });

  describe('the other simulators', () => {
    it('financial authorization authorizes and settles in one message (AUTHORIZED then SETTLED)', async () => {
      const h = await cardholder(10_000);
      const card = await issue(h, { platformCardId: 'atm-100' });
      const f = await auth(card.id, 8000, 'ATM WITHDRAWAL 24TH ST', 'financial_authorization');
      expect(f).toMatchObject({ status: 'SETTLED', direction: 'DEBIT', settledAmount: { amount: 8000 }, pullSummary: { count: 1, totalAmount: 8000 } });
      expect(await balanceOf(t, h.account)).toEqual({ available: 2_000, total: 2_000 });
      expect(await auth(card.id, 8000, 'ATM', 'financial_authorization')).toMatchObject({ status: NONE });
      const x = await auth(card.id, 500, 'ATM-006', 'financial_authorization');
      expect(x).toMatchObject({ status: 'EXCEPTION', pullSummary: { count: 1, totalAmount: 0 } });
      await deliver();
      expect(typesFor(f.id)).toEqual(['CARD_TRANSACTION.AUTHORIZED', 'CARD_TRANSACTION.SETTLED']);
      expect(hooksFor(f.id).map((r) => (r.json.data as CardTx).status)).toEqual(['AUTHORIZED', 'SETTLED']);
      expect(typesFor(x.id)).toEqual(['CARD_TRANSACTION.AUTHORIZED', 'CARD_TRANSACTION.EXCEPTION']);
      await assertCardLedger();
    });

    it('credit authorization (and its advice) credits pending, the clearing makes it available', async () => {
      const h = await cardholder(0);
      const card = await issue(h, { platformCardId: 'credit-100' });
      const ids: string[] = [];
      for (const op of ['credit_authorization', 'credit_authorization_advice']) {
        const c = await auth(card.id, 2500, 'ACME MARKETPLACE', op);
        ids.push(c.id);
        expect(c).toMatchObject({ status: 'AUTHORIZED', direction: 'CREDIT', pullSummary: { count: 0, totalAmount: 0 } });
        const before = await balanceOf(t, h.account);
        const s = await clear(card.id, c.id, 2500);
        expect(s).toMatchObject({ status: 'SETTLED', settledAmount: { amount: 2500 } });
        const after = await balanceOf(t, h.account);
        expect(after.available - before.available).toBe(2500);
        expect(after.total).toBe(before.total);
      }
      expect(await balanceOf(t, h.account)).toEqual({ available: 5_000, total: 5_000 });
      await deliver();
      for (const id of ids) expect(hooksFor(id).map((r) => [r.json.type, (r.json.data as CardTx).direction])).toEqual([['CARD_TRANSACTION.AUTHORIZED', 'CREDIT'], ['CARD_TRANSACTION.SETTLED', 'CREDIT']]);
      envelope(await t.call('POST', `/sandbox/cards/${card.id}/simulate/return`, { cardTransactionId: (await auth(card.id, 1, 'X', 'credit_authorization')).id, amount: 1 }), 400, 'INVALID_INPUT');
      await assertCardLedger();
    });

    it('financial credit authorization credits available at once (SETTLED)', async () => {
      const h = await cardholder(0);
      const card = await issue(h, { platformCardId: 'push-100' });
      const c = await auth(card.id, 4000, 'ACME PAYOUTS', 'financial_credit_authorization');
      expect(c).toMatchObject({ status: 'SETTLED', direction: 'CREDIT', settledAmount: { amount: 4000 } });
      expect(await balanceOf(t, h.account)).toEqual({ available: 4_000, total: 4_000 });
      await deliver();
      expect(typesFor(c.id)).toEqual(['CARD_TRANSACTION.AUTHORIZED', 'CARD_TRANSACTION.SETTLED']);
      await assertCardLedger();
    });

    it('authorization advice re-sizes the open hold up (declined when uncovered) and down', async () => {
      const h = await cardholder(3_000);
      const card = await issue(h, { platformCardId: 'adv-100' });
      const a = await auth(card.id, 1000);
      expect(await sim(card.id, 'authorization_advice', { cardTransactionId: a.id, amount: 2000 })).toMatchObject({ status: 'AUTHORIZED', authorizedAmount: { amount: 2000 }, pullSummary: { count: 2, totalAmount: 2000 } });
      expect(await balanceOf(t, h.account)).toEqual({ available: 1_000, total: 3_000 });
      // Declined: the authorization keeps its size, nothing moves.
      expect(await sim(card.id, 'authorization_advice', { cardTransactionId: a.id, amount: 9000 })).toMatchObject({ id: a.id, status: 'AUTHORIZED', authorizedAmount: { amount: 2000 } });
      expect(await balanceOf(t, h.account)).toEqual({ available: 1_000, total: 3_000 });
      expect(await sim(card.id, 'authorization_advice', { cardTransactionId: a.id, amount: 500 })).toMatchObject({ status: 'AUTHORIZED', authorizedAmount: { amount: 500 }, releasedAmount: { amount: 1500 } });
      expect(await balanceOf(t, h.account)).toEqual({ available: 2_500, total: 3_000 });
      await clear(card.id, a.id, 500);
      envelope(await t.call('POST', `/sandbox/cards/${card.id}/simulate/authorization_advice`, { cardTransactionId: a.id, amount: 600 }), 400, 'INVALID_INPUT');
      await deliver();
      expect(typesFor(a.id)).toEqual(['CARD_TRANSACTION.AUTHORIZED', 'CARD_TRANSACTION.AUTHORIZED', 'CARD_TRANSACTION.AUTHORIZED', 'CARD_TRANSACTION.SETTLED']);
      await assertCardLedger();
    });

    it('balance inquiry answers its token only and records, moves and sends nothing', async () => {
      const h = await cardholder(7_700);
      const card = await issue(h, { platformCardId: 'bal-100' });
      await deliver();
      const before = receiver.got.length;
      const b = await sim(card.id, 'balance_inquiry', { merchant: { descriptor: 'SHELL OIL 12345678', mcc: '5541', country: 'US' } });
      expect(b).toMatchObject({ status: NONE });
      expect(await sim(card.id, 'balance_inquiry', { merchant: { descriptor: 'SHELL-003' } })).toMatchObject({ status: NONE });
      expect((await t.call('GET', `/cards/${card.id}/transactions`)).json()).toMatchObject({ totalCount: 0 });
      expect(await balanceOf(t, h.account)).toEqual({ available: 7_700, total: 7_700 });
      await deliver();
      expect(receiver.got.length).toBe(before);
      envelope(await t.call('POST', '/sandbox/cards/Card:nope/simulate/balance_inquiry', { merchant: { descriptor: 'X' } }), 404, 'REFERENCE_NOT_FOUND');
    });
  });

  describe('reveal', () => {
    it('gives a short-lived URL of the page that shows the PAN, CVV and expiry, which never appear anywhere else', async () => {
      const h = await cardholder(1_000);
      const card = await issue(h, { platformCardId: 'reveal-100' });
      const now = Date.parse(((await t.call('GET', '/sandbox/clock')).json() as { now: string }).now);
      const res = await t.call('POST', `/cards/${card.id}/reveal`, undefined, { 'idempotency-key': `reveal-${card.id}` });
      expect(res.statusCode, res.body).toBe(200);
      const r = res.json() as { panEmbedUrl: string; expiresAt: string };
      expect(Object.keys(r).sort()).toEqual(['expiresAt', 'panEmbedUrl']);
      expect(Date.parse(r.expiresAt) - now).toBe(5 * 60_000);

      // The page behind the URL shows them while the URL lives.
      const url = new URL(r.panEmbedUrl);
      const page = await t.app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
      expect(page.statusCode).toBe(200);
      const [panText, expiry, cvv] = [...page.body.matchAll(/<dd>([^<]*)<\/dd>/g)].map((m) => m[1]!);
      const pan = panText!.replace(/\s/g, '');
      expect(pan).toMatch(/^4\d{15}$/);
      expect(pan.endsWith(card.last4!)).toBe(true);
      expect(cvv).toMatch(/^\d{3}$/);
      expect(expiry).toBe(`${String(card.expMonth).padStart(2, '0')}/${card.expYear}`);
      const revealed = { pan, cvv: cvv! };

      // Never in the card, its list, a webhook, an event, a stored answer, or the card row.
      await auth(card.id, 100);
      await deliver();
      const texts = [
        (await t.call('GET', `/cards/${card.id}`)).body,
        (await t.call('GET', '/cards?limit=100')).body,
        (await t.call('GET', `/cards/${card.id}/transactions`)).body,
        ...receiver.got.map((x) => x.body),
        JSON.stringify((await t.store.db.selectFrom('events').select(['id', 'resource_id', 'created_at', 'payload', 'body']).execute()).map(payloadText)),
        JSON.stringify(await t.store.db.selectFrom('idempotency_keys').selectAll().execute()),
        JSON.stringify(await t.store.db.selectFrom('cards').selectAll().execute()),
        JSON.stringify(await t.store.db.selectFrom('card_reveals').selectAll().execute()),
      ];
      for (const text of texts) {
        expect(text).not.toContain(revealed.pan);
        expect(text).not.toMatch(new RegExp(`"cvv"\\s*:\\s*"${revealed.cvv}"`));
        expect(text).not.toContain(url.searchParams.get('t')!);
      }
      expect((await t.call('GET', `/cards/${card.id}`)).json()).not.toHaveProperty('panEmbedUrl');
      // Recorded with the token that asked.
      const audit = await t.store.db.selectFrom('card_reveals').selectAll().where('card_id', '=', card.id).execute();
      expect(audit).toHaveLength(1);
      expect(audit[0]!.actor).toBeTruthy();

      // The URL expires.
      await advanceAndDeliver(t, 301);
      expect((await t.app.inject({ method: 'GET', url: `${url.pathname}${url.search}` })).statusCode).toBe(410);
      expect((await t.app.inject({ method: 'GET', url: `${url.pathname}?t=forged` })).statusCode).toBe(404);
    });

    it('a card not provisioned (PROCESSING) or CLOSED has nothing to reveal: 409', async () => {
      const card = await issue(await cardholder(0), { platformCardId: 'rv-001' });
      envelope(await t.call('POST', `/cards/${card.id}/reveal`), 409, 'CONFLICT');
    });
  });

  // The reference's schemas, when the reference is at hand (it is not shipped): every card
  // answer and webhook of a full scenario conforms to them.
  const REFERENCE = '/work/shared/reference/openapi.yaml';
  describe.skipIf(!existsSync(REFERENCE))('conformance to the reference', () => {
    it('the 10 simulate operations declare only the statuses the reference lists for them', async () => {
      const ref = (await parse(REFERENCE)) as unknown as { paths: Record<string, { post: { responses: Record<string, unknown> } }> };
      const served = (await t.call('GET', '/openapi.json', undefined, { authorization: '' })).json() as { paths: Record<string, { post?: { responses: Record<string, unknown> } }> };
      const simulators = Object.keys(ref.paths).filter((p) => p.startsWith('/sandbox/cards/{id}/simulate/'));
      expect(simulators).toHaveLength(10);
      for (const path of simulators) {
        const ours = served.paths[path]?.post;
        expect(ours, path).toBeDefined();
        const allowed = Object.keys(ref.paths[path]!.post.responses);
        expect(Object.keys(ours!.responses).filter((s) => !allowed.includes(s)), path).toEqual([]);
      }
    });

    it('cards, lists, card transactions, simulator answers, reveals and card webhooks match the reference schemas', async () => {
      const doc = (await parse(REFERENCE)) as unknown as { components: Record<string, unknown> };
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const ajv = new (Ajv2020 as any)({ strict: false, allErrors: true });
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      (addFormats as any)(ajv);
      ajv.addSchema({ $id: 'https://reference.local/openapi', components: doc.components });
      const check = (name: string, value: unknown) => {
        const validate = ajv.getSchema(`https://reference.local/openapi#/components/schemas/${name}`);
        const ok = validate(value);
        expect(ok ? [] : validate.errors, `${name}: ${JSON.stringify(value).slice(0, 300)}`).toEqual([]);
      };
      const h = await cardholder(20_000);
      const card = await issue(h, { platformCardId: 'conf-100', maxSpendPerTransaction: 9_000 });
      check('Card', card);
      const a = await auth(card.id, 1250);
      check('CardTransaction', a);
      check('CardTransaction', await clear(card.id, a.id, 1000));
      check('CardTransaction', await clear(card.id, a.id, 500));
      check('CardTransaction', await ret(card.id, a.id, 1500));
      check('CardTransaction', await sim(card.id, 'return_reversal', { cardTransactionId: a.id }));
      check('CardTransaction', await auth(card.id, 100, 'X', 'financial_authorization'));
      check('TransactionOneOf', (await t.call('GET', `/transactions/${a.id}`)).json());
      check('TransactionListResponse', (await t.call('GET', `/transactions?type=CARD&customerId=${h.id}`)).json());
      check('CardTransaction', await auth(card.id, 100, 'X', 'credit_authorization'));
      check('CardTransaction', await auth(card.id, 100, 'X-006', 'financial_authorization'));
      await auth(card.id, 100, 'X-002');
      await sim(card.id, 'balance_inquiry', { merchant: { descriptor: 'X' } });
      // Every simulator answer of the scenario is the reference's SandboxCardSimulationResponse.
      for (const answer of simAnswers) check('SandboxCardSimulationResponse', answer);
      await t.call('PATCH', `/cards/${card.id}`, { fundingSources: [h.account], state: 'FROZEN' });
      check('Card', (await t.call('GET', `/cards/${card.id}`)).json());
      check('CardListResponse', (await t.call('GET', `/cards?cardholderId=${h.id}`)).json());
      check('CardRevealResponse', (await t.call('POST', `/cards/${card.id}/reveal`)).json());
      await deliver();
      const payloads: Record<string, string> = { 'CARD.STATE_CHANGE': 'CardStateChangeWebhook', 'CARD.FUNDING_SOURCE_CHANGE': 'CardFundingSourceChangeWebhook' };
      const mine = receiver.got.filter((r) => (r.json.data as { id?: string; cardId?: string }).id === card.id || (r.json.data as { cardId?: string }).cardId === card.id);
      expect(mine.length).toBeGreaterThan(8);
      for (const r of mine) check(payloads[r.json.type] ?? 'CardTransactionWebhook', r.json);
    });
  });

  describe('lists and tenancy', () => {
    it('lists with filters and cursor pages, newest first (asc on request)', async () => {
      const h = await cardholder(0);
      const made: CardBody[] = [];
      for (let i = 0; i < 3; i++) made.push(await issue(h, { platformCardId: `page-${i}-10${i}` }));
      const p1 = (await t.call('GET', `/cards?cardholderId=${h.id}&limit=2`)).json() as { data: CardBody[]; hasMore: boolean; nextCursor: string; totalCount: number };
      expect(p1.data.map((c) => c.id)).toEqual([made[2]!.id, made[1]!.id]);
      expect(p1).toMatchObject({ hasMore: true, totalCount: 3 });
      const p2 = (await t.call('GET', `/cards?cardholderId=${h.id}&limit=2&cursor=${p1.nextCursor}`)).json() as { data: CardBody[]; hasMore: boolean };
      expect(p2.data.map((c) => c.id)).toEqual([made[0]!.id]);
      expect(p2.hasMore).toBe(false);
      const asc = (await t.call('GET', `/cards?cardholderId=${h.id}&sortOrder=asc`)).json() as { data: CardBody[] };
      expect(asc.data.map((c) => c.id)).toEqual(made.map((c) => c.id));
      expect(((await t.call('GET', `/cards?platformCardId=page-1-101`)).json() as { data: CardBody[] }).data.map((c) => c.id)).toEqual([made[1]!.id]);
      await t.call('PATCH', `/cards/${made[0]!.id}`, { state: 'FROZEN' });
      expect(((await t.call('GET', `/cards?cardholderId=${h.id}&state=FROZEN`)).json() as { data: CardBody[] }).data.map((c) => c.id)).toEqual([made[0]!.id]);
      envelope(await t.call('GET', '/cards?state=BROKEN'), 400, 'INVALID_INPUT');
      envelope(await t.call('GET', '/cards?color=red'), 400, 'INVALID_INPUT');
    });

    it('GET /transactions/{id} gives a card transaction (type CARD, the card’s own view); GET /transactions?type=CARD lists them with filters, pages and an exact totalCount', async () => {
      const h = await cardholder(10_000);
      const card = await issue(h, { platformCardId: 'gtx-100' });
      const a = await auth(card.id, 1200);
      await clear(card.id, a.id, 1200);
      const b = await auth(card.id, 300, 'X', 'credit_authorization');
      const c = await auth(card.id, 400);
      for (const id of [a.id, b.id, c.id]) {
        const res = await t.call('GET', `/transactions/${id}`);
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json()).toEqual((await t.call('GET', `/cards/${card.id}/transactions/${id}`)).json());
        expect(res.json()).toMatchObject({ type: 'CARD', id, cardId: card.id, customerId: h.id });
      }
      envelope(await t.call('GET', '/transactions/CardTransaction:019542f5-b3e7-7d02-8000-000000000010'), 404, 'TRANSACTION_NOT_FOUND');
      envelope(await t.call('GET', `/transactions/${a.id}`, undefined, await otherPlatformAuth(t)), 404, 'TRANSACTION_NOT_FOUND');

      type Page = { data: Array<{ id: string; type: string }>; hasMore: boolean; nextCursor?: string; totalCount: number };
      const list = async (query: string): Promise<Page> => {
        const res = await t.call('GET', `/transactions?type=CARD&${query}`);
        expect(res.statusCode, res.body).toBe(200);
        return res.json() as Page;
      };
      const all = await list(`customerId=${h.id}`);
      expect(all.data.map((x) => x.id)).toEqual([c.id, b.id, a.id]);
      expect(all.data.every((x) => x.type === 'CARD')).toBe(true);
      expect(all.totalCount).toBe(3);
      const p1 = await list(`customerId=${h.id}&limit=2`);
      expect(p1).toMatchObject({ hasMore: true, totalCount: 3 });
      expect(p1.data.map((x) => x.id)).toEqual([c.id, b.id]);
      const p2 = await list(`customerId=${h.id}&limit=2&cursor=${encodeURIComponent(p1.nextCursor!)}`);
      expect(p2.data.map((x) => x.id)).toEqual([a.id]);
      expect((await list(`customerId=${h.id}&sortOrder=asc`)).data.map((x) => x.id)).toEqual([a.id, b.id, c.id]);
      // The funding account: a debit is sent from it, a credit received by it.
      expect((await list(`accountIdentifier=${h.account}`)).totalCount).toBe(3);
      expect((await list(`senderAccountIdentifier=${h.account}`)).data.map((x) => x.id)).toEqual([c.id, a.id]);
      expect((await list(`receiverAccountIdentifier=${h.account}`)).data.map((x) => x.id)).toEqual([b.id]);
      expect((await list(`customerId=${h.id}&createdAfter=2999-01-01T00:00:00Z`)).totalCount).toBe(0);
      expect((await list(`customerId=${h.id}&reference=ABC`)).totalCount).toBe(0);
      // The other types do not show card transactions.
      const outgoing = (await t.call('GET', `/transactions?type=OUTGOING&customerId=${h.id}`)).json() as Page;
      expect(outgoing.data.some((x) => x.type === 'CARD')).toBe(false);
      await assertCardLedger();
    });

    it('another platform’s card is 404 everywhere, and its list does not show ours', async () => {
      const h = await cardholder(1_000);
      const card = await issue(h, { platformCardId: 'mine-100' });
      const other = await otherPlatformAuth(t);
      envelope(await t.call('GET', `/cards/${card.id}`, undefined, other), 404, 'REFERENCE_NOT_FOUND');
      envelope(await t.call('PATCH', `/cards/${card.id}`, { state: 'FROZEN' }, other), 404, 'REFERENCE_NOT_FOUND');
      envelope(await t.call('POST', `/cards/${card.id}/reveal`, undefined, other), 404, 'REFERENCE_NOT_FOUND');
      envelope(await t.call('GET', `/cards/${card.id}/transactions`, undefined, other), 404, 'REFERENCE_NOT_FOUND');
      envelope(await t.call('POST', `/sandbox/cards/${card.id}/simulate/authorization`, { amount: 1, currency: { code: 'USD' }, merchant: { descriptor: 'X' } }, other), 404, 'REFERENCE_NOT_FOUND');
      expect(((await t.call('GET', '/cards', undefined, other)).json() as { totalCount: number }).totalCount).toBe(0);
      expect(((await t.call('GET', `/cards/${card.id}`)).json() as CardBody).state).toBe('ACTIVE');
    });

    it('a simulator answers 202 with the issuer token only; the token correlates the CARD_TRANSACTION.* webhook and the transaction read through the API', async () => {
      const h = await cardholder(5_000);
      const card = await issue(h, { platformCardId: 'tok-100' });
      const res = await t.call('POST', `/sandbox/cards/${card.id}/simulate/authorization`, { amount: 700, currency: { code: 'USD' }, merchant: { descriptor: 'TOKEN SHOP' } });
      expect(res.statusCode).toBe(202);
      const { issuerTransactionToken } = res.json() as { issuerTransactionToken: string };
      expect(res.json()).toEqual({ issuerTransactionToken });
      await deliver();
      const hook = receiver.got.find((r) => (r.json.data as CardTx).issuerTransactionToken === issuerTransactionToken);
      expect(hook?.json.type).toBe('CARD_TRANSACTION.AUTHORIZED');
      const tx = hook!.json.data as CardTx;
      expect(tx).toMatchObject({ cardId: card.id, status: 'AUTHORIZED', authorizedAmount: { amount: 700 } });
      expect((await t.call('GET', `/cards/${card.id}/transactions/${tx.id}`)).json()).toMatchObject({ id: tx.id, issuerTransactionToken });
      expect((await t.call('GET', `/transactions/${tx.id}`)).statusCode).toBe(200);

      // A clearing answers the same token: the transaction it changed.
      const cleared = await t.call('POST', `/sandbox/cards/${card.id}/simulate/clearing`, { cardTransactionId: tx.id, amount: 700 });
      expect(cleared.statusCode).toBe(202);
      expect(cleared.json()).toEqual({ issuerTransactionToken });
      await deliver();
      expect(typesFor(tx.id)).toEqual(['CARD_TRANSACTION.AUTHORIZED', 'CARD_TRANSACTION.SETTLED']);

      // A decline: a token, and no transaction, no money, no webhook.
      const declined = await t.call('POST', `/sandbox/cards/${card.id}/simulate/authorization`, { amount: 100, currency: { code: 'USD' }, merchant: { descriptor: 'SHOP-002' } });
      expect(declined.statusCode).toBe(202);
      const other = (declined.json() as { issuerTransactionToken: string }).issuerTransactionToken;
      expect(Object.keys(declined.json() as object)).toEqual(['issuerTransactionToken']);
      expect(other).not.toBe(issuerTransactionToken);
      await deliver();
      expect(receiver.got.some((r) => (r.json.data as CardTx).issuerTransactionToken === other)).toBe(false);
      expect(((await t.call('GET', `/cards/${card.id}/transactions`)).json() as { totalCount: number }).totalCount).toBe(1);
      expect(await balanceOf(t, h.account)).toEqual({ available: 4_300, total: 4_300 });
    });

    it('an Idempotency-Key replays a simulated authorization without a second hold', async () => {
      const h = await cardholder(5_000);
      const card = await issue(h, { platformCardId: 'idem-100' });
      const body = { amount: 1000, currency: { code: 'USD' }, merchant: { descriptor: 'IDEM' } };
      const one = await t.call('POST', `/sandbox/cards/${card.id}/simulate/authorization`, body, { 'idempotency-key': `k-${card.id}` });
      const two = await t.call('POST', `/sandbox/cards/${card.id}/simulate/authorization`, body, { 'idempotency-key': `k-${card.id}` });
      expect(two.statusCode).toBe(202);
      expect(two.headers['idempotent-replayed']).toBe('true');
      expect(two.json()).toEqual(one.json());
      expect(await balanceOf(t, h.account)).toEqual({ available: 4_000, total: 5_000 });
      const count = await sql<{ n: number }>`select count(*) as n from card_transactions where card_id = ${card.id}`.execute(t.store.db);
      expect(Number(count.rows[0]!.n)).toBe(1);
      await assertCardLedger();
    });
  });
});
