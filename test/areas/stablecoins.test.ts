import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advanceAndDeliver, envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { type Account, balanceOf, fund, otherPlatformAuth, PERSON } from '../money-helpers.js';

// Stablecoins: provider account links (sandbox secrets ending invalid/revoked), selection
// among several ACTIVE links, registration, mints and burns through their states on the
// sandbox clock with their ledger postings (the platform's account, minted supply, burned
// supply), cursor pages, and the codes of the area.

interface Op { id: string; status: string; amount: string; operationType: string; stablecoinId: string; failureReason?: string; fundingInstructions?: unknown; estimatedDelivery?: { amount: string } }
interface Coin { id: string; decimals: number; outstandingSupply: string; stablecoinProviderAccountId: string; issuanceStatus: string; network: string }

describe(`stablecoins (${STORE})`, () => {
  let t: TestApp;
  let n = 0;
  const key = () => ({ 'idempotency-key': `k-${Date.now()}-${n++}` });
  const post = (url: string, body: unknown, headers: Record<string, string> = {}) => t.call('POST', url, body, { ...key(), ...headers });
  let usdAccount: string;
  let wallet: string;

  async function link(secret: string, headers: Record<string, string> = {}): Promise<{ id: string; status: string }> {
    const res = await post('/stablecoin-provider-accounts', { provider: 'BRALE', apiClientId: `client-${n}`, apiClientSecret: secret }, headers);
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as { id: string; status: string };
  }
  async function register(body: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<Coin> {
    const res = await post('/stablecoins', { providerTokenIdentifier: `tok${n}`, networkTokenIdentifier: `spark-token-${n}`, network: 'SPARK', ...body }, headers);
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as Coin;
  }
  const op = async (id: string): Promise<Op> => (await t.call('GET', `/stablecoin-operations/${id}`)).json() as Op;
  const coin = async (id: string): Promise<Coin> => (await t.call('GET', `/stablecoins/${id}`)).json() as Coin;
  async function ledger(accountId: string): Promise<{ available: number; held: number }> {
    const r = await t.store.db.selectFrom('ledger_balances').select(['available', 'held']).where('account_id', '=', accountId).executeTakeFirstOrThrow();
    return { available: Number(r.available), held: Number(r.held) };
  }
  async function supplyAccounts(coinId: string): Promise<{ minted: string; burned: string }> {
    const r = await t.store.db.withTables<{ stablecoins: { id: string; minted_account_id: string; burned_account_id: string } }>().selectFrom('stablecoins').select(['minted_account_id', 'burned_account_id']).where('id', '=', coinId).executeTakeFirstOrThrow();
    return { minted: r.minted_account_id, burned: r.burned_account_id };
  }

  beforeAll(async () => {
    t = await makeApp();
    const accounts = (await t.call('GET', '/platform/internal-accounts')).json() as { data: Account[] };
    usdAccount = accounts.data.find((a) => a.balance.currency.code === 'USD')!.id;
    await fund(t, usdAccount, 1_000_000);
    const ext = await t.call('POST', '/platform/external-accounts', {
      currency: 'USD',
      accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: '123456789', routingNumber: '021000021', bankName: 'Sandbox Bank', beneficiary: PERSON },
    });
    expect(ext.statusCode, ext.body).toBe(201);
    wallet = (ext.json() as { id: string }).id;
  });
  afterAll(async () => {
    await assertLedgerInvariants(t.store);
    await t.close();
  });

  it('without a link: register is 404 STABLECOIN_PROVIDER_ACCOUNT_NOT_FOUND; an invalid or revoked link gives its code', async () => {
    envelope(await post('/stablecoins', { providerTokenIdentifier: 'X', networkTokenIdentifier: 'x', network: 'SPARK' }), 404, 'STABLECOIN_PROVIDER_ACCOUNT_NOT_FOUND');
    const invalid = await link('secret-invalid');
    expect(invalid.status).toBe('INVALID');
    envelope(await post('/stablecoins', { providerTokenIdentifier: 'X', networkTokenIdentifier: 'x', network: 'SPARK' }), 400, 'STABLECOIN_PROVIDER_ACCOUNT_INVALID');
    const revoked = await link('secret-revoked');
    expect(revoked.status).toBe('REVOKED');
    envelope(await post('/stablecoins', { providerTokenIdentifier: 'X', networkTokenIdentifier: 'x', network: 'SPARK', stablecoinProviderAccountId: revoked.id }), 400, 'STABLECOIN_PROVIDER_ACCOUNT_REVOKED');
    envelope(await post('/stablecoins', { providerTokenIdentifier: 'X', networkTokenIdentifier: 'x', network: 'SPARK', stablecoinProviderAccountId: invalid.id }), 400, 'STABLECOIN_PROVIDER_ACCOUNT_INVALID');
    envelope(await post('/stablecoins', { providerTokenIdentifier: 'X', networkTokenIdentifier: 'x', network: 'SPARK', stablecoinProviderAccountId: 'StablecoinProviderAccount:nope' }), 404, 'STABLECOIN_PROVIDER_ACCOUNT_NOT_FOUND');
    envelope(await t.call('GET', `/stablecoin-provider-accounts/StablecoinProviderAccount:nope`), 404, 'STABLECOIN_PROVIDER_ACCOUNT_NOT_FOUND');
    // The secret never comes back.
    const got = await t.call('GET', `/stablecoin-provider-accounts/${invalid.id}`);
    expect(got.statusCode).toBe(200);
    expect(got.body).not.toContain('secret-invalid');
  });

  it('one ACTIVE link is chosen alone; with two, SELECTION_REQUIRED unless stablecoinProviderAccountId is given', async () => {
    const a = await link('good-secret-1');
    expect(a.status).toBe('ACTIVE');
    const c1 = await register({ decimals: 6 });
    expect(c1).toMatchObject({ stablecoinProviderAccountId: a.id, decimals: 6, network: 'SPARK', issuanceStatus: 'PROVISIONED', outstandingSupply: '0' });
    const b = await link('good-secret-2');
    const sel = envelope(await post('/stablecoins', { providerTokenIdentifier: 'Y', networkTokenIdentifier: 'y', network: 'SPARK' }), 400, 'STABLECOIN_PROVIDER_ACCOUNT_SELECTION_REQUIRED');
    expect((sel.details!.stablecoinProviderAccountIds as string[]).sort()).toEqual([a.id, b.id].sort());
    const c2 = await register({ stablecoinProviderAccountId: b.id, decimals: 8 });
    expect(c2.stablecoinProviderAccountId).toBe(b.id);
    // The same token twice on one link: 409.
    envelope(await post('/stablecoins', { providerTokenIdentifier: `tok-dup`, networkTokenIdentifier: 'd', network: 'SPARK', stablecoinProviderAccountId: b.id }).then(async () => post('/stablecoins', { providerTokenIdentifier: `tok-dup`, networkTokenIdentifier: 'd', network: 'SPARK', stablecoinProviderAccountId: b.id })), 409, 'CONFLICT');
    // Lists with cursor pages and filters.
    const p1 = (await t.call('GET', '/stablecoin-provider-accounts?limit=2')).json() as { data: Array<{ id: string }>; hasMore: boolean; nextCursor: string; totalCount: number };
    expect(p1.data).toHaveLength(2);
    expect(p1.hasMore).toBe(true);
    expect(p1.totalCount).toBe(4);
    const p2 = (await t.call('GET', `/stablecoin-provider-accounts?limit=2&cursor=${encodeURIComponent(p1.nextCursor)}`)).json() as { data: Array<{ id: string }>; hasMore: boolean };
    expect(p2.data).toHaveLength(2);
    expect(p2.hasMore).toBe(false);
    expect(((await t.call('GET', '/stablecoin-provider-accounts?status=ACTIVE')).json() as { totalCount: number }).totalCount).toBe(2);
    expect(((await t.call('GET', '/stablecoins?issuanceStatus=PROVISIONED')).json() as { totalCount: number }).totalCount).toBe(3);
    // Another platform sees none of it.
    const other = await otherPlatformAuth(t);
    envelope(await t.call('GET', `/stablecoin-provider-accounts/${a.id}`, undefined, other), 404, 'STABLECOIN_PROVIDER_ACCOUNT_NOT_FOUND');
    envelope(await t.call('GET', `/stablecoins/${c1.id}`, undefined, other), 404, 'REFERENCE_NOT_FOUND');
  });

  it('mint from the platform account: held at once, PENDING_PROVIDER → PROCESSING (5 s) → COMPLETED (30 s) into minted supply; burn moves it to burned supply', async () => {
    const c = ((await t.call('GET', '/stablecoins?limit=100')).json() as { data: Coin[] }).data.find((x) => x.decimals === 6)!;
    const supply = await supplyAccounts(c.id);
    const before = await balanceOf(t, usdAccount);
    const res = await post(`/stablecoins/${c.id}/mints`, { amount: '25000000', fundingSource: { type: 'GRID_INTERNAL_ACCOUNT', accountId: usdAccount }, destination: { accountId: wallet } });
    expect(res.statusCode, res.body).toBe(201);
    const m = res.json() as Op;
    expect(m).toMatchObject({ operationType: 'MINT', status: 'PENDING_PROVIDER', amount: '25000000', stablecoinId: c.id });
    expect(await balanceOf(t, usdAccount)).toEqual({ available: before.available - 2500, total: before.total });
    await advanceAndDeliver(t, 5);
    expect((await op(m.id)).status).toBe('PROCESSING');
    await advanceAndDeliver(t, 25);
    expect((await op(m.id)).status).toBe('COMPLETED');
    expect(await balanceOf(t, usdAccount)).toEqual({ available: before.available - 2500, total: before.total - 2500 });
    expect(await ledger(supply.minted)).toEqual({ available: 2500, held: 0 });
    expect((await coin(c.id)).outstandingSupply).toBe('25000000');

    // Burn 10.00 of it to the external account.
    const b = (await post(`/stablecoins/${c.id}/burns`, { amount: '10000000', source: { type: 'PROVIDER_INTERNAL_BALANCE' }, destination: { type: 'EXTERNAL_ACCOUNT', externalAccountId: wallet, rail: 'ACH_CREDIT' } })).json() as Op;
    expect(b).toMatchObject({ operationType: 'BURN', status: 'PENDING_PROVIDER', estimatedDelivery: { amount: '1000' } });
    expect(await ledger(supply.minted)).toEqual({ available: 1500, held: 1000 });
    await advanceAndDeliver(t, 5);
    expect((await op(b.id)).status).toBe('PROCESSING');
    await advanceAndDeliver(t, 25);
    expect((await op(b.id)).status).toBe('COMPLETED');
    expect(await ledger(supply.minted)).toEqual({ available: 1500, held: 0 });
    expect(await ledger(supply.burned)).toEqual({ available: 1000, held: 0 });
    expect((await coin(c.id)).outstandingSupply).toBe('15000000');

    // Operations of the coin, newest first, with cursor pages and a type filter.
    const page = (await t.call('GET', `/stablecoins/${c.id}/operations?limit=1`)).json() as { data: Op[]; hasMore: boolean; nextCursor: string };
    expect(page.data.map((o) => o.id)).toEqual([b.id]);
    expect(page.hasMore).toBe(true);
    const next = (await t.call('GET', `/stablecoins/${c.id}/operations?limit=1&cursor=${encodeURIComponent(page.nextCursor)}`)).json() as { data: Op[] };
    expect(next.data.map((o) => o.id)).toEqual([m.id]);
    expect(((await t.call('GET', `/stablecoins/${c.id}/operations?operationType=MINT`)).json() as { data: Op[] }).data.map((o) => o.id)).toEqual([m.id]);
    await assertLedgerInvariants(t.store);
  });

  it('a wire-funded mint waits PENDING_FUNDING with instructions, then PROCESSING (60 s) and COMPLETED (90 s)', async () => {
    const c = ((await t.call('GET', '/stablecoins?limit=100')).json() as { data: Coin[] }).data.find((x) => x.decimals === 8)!;
    const supply = await supplyAccounts(c.id);
    const m = (await post(`/stablecoins/${c.id}/mints`, { amount: '700000000', fundingSource: { type: 'WIRE' }, destination: { accountId: wallet } })).json() as Op;
    expect(m.status).toBe('PENDING_FUNDING');
    expect(m.fundingInstructions).toMatchObject({ rail: 'WIRE' });
    await advanceAndDeliver(t, 59);
    expect((await op(m.id)).status).toBe('PENDING_FUNDING');
    await advanceAndDeliver(t, 1);
    expect((await op(m.id)).status).toBe('PROCESSING');
    await advanceAndDeliver(t, 30);
    expect((await op(m.id)).status).toBe('COMPLETED');
    expect(await ledger(supply.minted)).toEqual({ available: 700, held: 0 });
  });

  it('an amount ending in 05 cents fails at the provider: FAILED, the hold released', async () => {
    const c = ((await t.call('GET', '/stablecoins?limit=100')).json() as { data: Coin[] }).data.find((x) => x.decimals === 6)!;
    const before = await balanceOf(t, usdAccount);
    const m = (await post(`/stablecoins/${c.id}/mints`, { amount: '10050000', fundingSource: { type: 'GRID_INTERNAL_ACCOUNT', accountId: usdAccount }, destination: { accountId: wallet } })).json() as Op;
    expect(await balanceOf(t, usdAccount)).toEqual({ available: before.available - 1005, total: before.total });
    await advanceAndDeliver(t, 30);
    expect(await op(m.id)).toMatchObject({ status: 'FAILED', failureReason: 'PROVIDER_REJECTED' });
    expect(await balanceOf(t, usdAccount)).toEqual(before);
    const supplyBefore = (await coin(c.id)).outstandingSupply;
    const b = (await post(`/stablecoins/${c.id}/burns`, { amount: '50000', source: { type: 'PROVIDER_INTERNAL_BALANCE' }, destination: { type: 'EXTERNAL_ACCOUNT', externalAccountId: wallet, rail: 'WIRE' } })).json() as Op;
    await advanceAndDeliver(t, 30);
    expect((await op(b.id)).status).toBe('FAILED');
    expect((await coin(c.id)).outstandingSupply).toBe(supplyBefore);
    await assertLedgerInvariants(t.store);
  });

  it('refuses: no Idempotency-Key, amounts that are not whole cents, more than the balance or the supply, unknown accounts and ids', async () => {
    const c = ((await t.call('GET', '/stablecoins?limit=100')).json() as { data: Coin[] }).data.find((x) => x.decimals === 6)!;
    const noKey = envelope(await t.call('POST', `/stablecoins/${c.id}/mints`, { amount: '1000000', fundingSource: { type: 'WIRE' }, destination: { accountId: wallet } }), 400, 'INVALID_INPUT');
    expect((noKey.details!.errors as Array<{ field: string }>)[0]!.field).toBe('Idempotency-Key');
    const cents = envelope(await post(`/stablecoins/${c.id}/mints`, { amount: '1000001', fundingSource: { type: 'WIRE' }, destination: { accountId: wallet } }), 400, 'INVALID_INPUT');
    expect((cents.details!.errors as Array<{ field: string }>)[0]!.field).toBe('amount');
    envelope(await post(`/stablecoins/${c.id}/mints`, { amount: '0', fundingSource: { type: 'WIRE' }, destination: { accountId: wallet } }), 400, 'INVALID_INPUT');
    envelope(await post(`/stablecoins/${c.id}/mints`, { amount: '99999990000000', fundingSource: { type: 'GRID_INTERNAL_ACCOUNT', accountId: usdAccount }, destination: { accountId: wallet } }), 400, 'INVALID_AMOUNT');
    const bad = envelope(await post(`/stablecoins/${c.id}/mints`, { amount: '1000000', fundingSource: { type: 'GRID_INTERNAL_ACCOUNT', accountId: 'InternalAccount:nope' }, destination: { accountId: 'nope' } }), 400, 'INVALID_INPUT');
    expect((bad.details!.errors as Array<{ field: string }>).map((e) => e.field).sort()).toEqual(['destination.accountId', 'fundingSource.accountId']);
    envelope(await post(`/stablecoins/${c.id}/burns`, { amount: '999000000000', source: { type: 'PROVIDER_INTERNAL_BALANCE' }, destination: { type: 'EXTERNAL_ACCOUNT', externalAccountId: wallet, rail: 'WIRE' } }), 400, 'INVALID_AMOUNT');
    envelope(await post('/stablecoins/Stablecoin:nope/mints', { amount: '1000000', fundingSource: { type: 'WIRE' }, destination: { accountId: wallet } }), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('GET', '/stablecoin-operations/StablecoinOperation:nope'), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('GET', '/stablecoins/Stablecoin:nope/operations'), 404, 'REFERENCE_NOT_FOUND');
    // A keyed mint replays: one operation.
    const h = key();
    const first = await t.call('POST', `/stablecoins/${c.id}/mints`, { amount: '2000000', fundingSource: { type: 'WIRE' }, destination: { accountId: wallet } }, h);
    const again = await t.call('POST', `/stablecoins/${c.id}/mints`, { amount: '2000000', fundingSource: { type: 'WIRE' }, destination: { accountId: wallet } }, h);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect((again.json() as Op).id).toBe((first.json() as Op).id);
  });
});
