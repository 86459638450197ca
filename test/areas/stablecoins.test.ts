import { existsSync } from 'node:fs';
import { parse } from '@readme/openapi-parser';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advanceAndDeliver, envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { type Account, balanceOf, fund, newCustomer, otherPlatformAuth, PERSON } from '../money-helpers.js';

// Stablecoins: provider account links (sandbox secrets ending invalid/revoked), selection
// among several ACTIVE links, registration, mints and burns through their states on the
// sandbox clock with their ledger postings (the platform's account, minted supply, burned
// supply), cursor pages, and the codes of the area.

interface Op { id: string; status: string; amount: string; operationType: string; stablecoinId: string; failureReason?: string; fundingInstructions?: unknown; estimatedDelivery?: { amount: string }; source?: Record<string, string> }
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
    const zero = envelope(await post(`/stablecoins/${c.id}/mints`, { amount: '000', fundingSource: { type: 'WIRE' }, destination: { accountId: wallet } }), 400, 'INVALID_INPUT');
    expect(zero.details!.errors).toEqual([{ field: 'amount', message: 'must be greater than 0' }]);
    envelope(await post(`/stablecoins/${c.id}/burns`, { amount: '0', source: { type: 'PROVIDER_INTERNAL_BALANCE' }, destination: { type: 'EXTERNAL_ACCOUNT', externalAccountId: wallet, rail: 'WIRE' } }), 400, 'INVALID_INPUT');
    envelope(await post(`/stablecoins/${c.id}/mints`, { amount: '-1', fundingSource: { type: 'WIRE' }, destination: { accountId: wallet } }), 400, 'INVALID_INPUT');
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
  it('an EXTERNAL_ACCOUNT burn source takes only its type: PENDING_FUNDING with Spark funding instructions, then PROCESSING (60 s) and COMPLETED (90 s)', async () => {
    // A coin of its own, so the supply accounts start at 0.
    const linkId = ((await t.call('GET', '/stablecoins?limit=100')).json() as { data: Coin[] }).data.find((x) => x.decimals === 6)!.stablecoinProviderAccountId;
    const c = await register({ decimals: 6, stablecoinProviderAccountId: linkId });
    const supply = await supplyAccounts(c.id);
    const m = (await post(`/stablecoins/${c.id}/mints`, { amount: '5000000', fundingSource: { type: 'GRID_INTERNAL_ACCOUNT', accountId: usdAccount }, destination: { accountId: wallet } })).json() as Op;
    await advanceAndDeliver(t, 30);
    expect((await op(m.id)).status).toBe('COMPLETED');
    const res = await post(`/stablecoins/${c.id}/burns`, { amount: '2000000', source: { type: 'EXTERNAL_ACCOUNT' }, destination: { type: 'EXTERNAL_ACCOUNT', externalAccountId: wallet, rail: 'WIRE' } });
    expect(res.statusCode, res.body).toBe(201);
    const b = res.json() as Op;
    expect(b).toMatchObject({ operationType: 'BURN', status: 'PENDING_FUNDING', source: { type: 'EXTERNAL_ACCOUNT' }, estimatedDelivery: { amount: '200' } });
    const instructions = b.fundingInstructions as { rail: string; network: string; address: string; valueType: string };
    expect(instructions).toMatchObject({ rail: 'SPARK', network: 'SPARK', valueType: (c as Coin & { providerTokenIdentifier: string }).providerTokenIdentifier });
    expect(instructions.address).toMatch(/^spark1/);
    expect((await op(b.id)).fundingInstructions).toEqual(instructions);
    expect(await ledger(supply.minted)).toEqual({ available: 300, held: 200 });
    await advanceAndDeliver(t, 59);
    expect((await op(b.id)).status).toBe('PENDING_FUNDING');
    await advanceAndDeliver(t, 1);
    expect((await op(b.id)).status).toBe('PROCESSING');
    await advanceAndDeliver(t, 30);
    expect((await op(b.id)).status).toBe('COMPLETED');
    expect(await ledger(supply.minted)).toEqual({ available: 300, held: 0 });
    expect(await ledger(supply.burned)).toEqual({ available: 200, held: 0 });
    expect((await coin(c.id)).outstandingSupply).toBe('3000000');
    // The reference's external-account burn source has no externalAccountId: it is not a field here.
    const extra = envelope(await post(`/stablecoins/${c.id}/burns`, { amount: '1000000', source: { type: 'EXTERNAL_ACCOUNT', externalAccountId: wallet }, destination: { type: 'EXTERNAL_ACCOUNT', externalAccountId: wallet, rail: 'WIRE' } }), 400, 'INVALID_INPUT');
    expect(JSON.stringify(extra.details)).toContain('source.externalAccountId');
    await assertLedgerInvariants(t.store);
  });

  it('mints funded by ACH debit (PROCESSING at 120 s, COMPLETED at 150 s), same-day ACH debit (45 s, 75 s) and the provider balance (5 s, 30 s)', async () => {
    const c = ((await t.call('GET', '/stablecoins?limit=100')).json() as { data: Coin[] }).data.find((x) => x.decimals === 6)!;
    const supply = await supplyAccounts(c.id);
    const mintedBefore = (await ledger(supply.minted)).available;
    const supplyBefore = BigInt((await coin(c.id)).outstandingSupply);
    const platformBefore = await balanceOf(t, usdAccount);
    const mint = async (fundingSource: Record<string, string>) => {
      const res = await post(`/stablecoins/${c.id}/mints`, { amount: '3000000', fundingSource, destination: { accountId: wallet } });
      expect(res.statusCode, res.body).toBe(201);
      return res.json() as Op;
    };
    const ach = await mint({ type: 'ACH_DEBIT', externalAccountId: wallet });
    const sameDay = await mint({ type: 'SAME_DAY_ACH_DEBIT', externalAccountId: wallet });
    const provider = await mint({ type: 'PROVIDER_INTERNAL_BALANCE', sourceTokenIdentifier: 'USDC', cryptoNetwork: 'SOLANA' });
    expect(ach).toMatchObject({ status: 'PENDING_FUNDING', source: { type: 'ACH_DEBIT', externalAccountId: wallet } });
    expect(ach.fundingInstructions).toBeUndefined(); // the provider pulls: nothing to send
    expect(sameDay).toMatchObject({ status: 'PENDING_FUNDING', source: { type: 'SAME_DAY_ACH_DEBIT', externalAccountId: wallet } });
    expect(provider).toMatchObject({ status: 'PENDING_PROVIDER', source: { type: 'PROVIDER_INTERNAL_BALANCE', sourceTokenIdentifier: 'USDC', cryptoNetwork: 'SOLANA' } });
    const statuses = async () => [(await op(ach.id)).status, (await op(sameDay.id)).status, (await op(provider.id)).status];
    await advanceAndDeliver(t, 5);
    expect(await statuses()).toEqual(['PENDING_FUNDING', 'PENDING_FUNDING', 'PROCESSING']);
    await advanceAndDeliver(t, 25);
    expect(await statuses()).toEqual(['PENDING_FUNDING', 'PENDING_FUNDING', 'COMPLETED']);
    await advanceAndDeliver(t, 15);
    expect(await statuses()).toEqual(['PENDING_FUNDING', 'PROCESSING', 'COMPLETED']);
    await advanceAndDeliver(t, 30);
    expect(await statuses()).toEqual(['PENDING_FUNDING', 'COMPLETED', 'COMPLETED']);
    await advanceAndDeliver(t, 44);
    expect(await statuses()).toEqual(['PENDING_FUNDING', 'COMPLETED', 'COMPLETED']);
    await advanceAndDeliver(t, 1);
    expect(await statuses()).toEqual(['PROCESSING', 'COMPLETED', 'COMPLETED']);
    await advanceAndDeliver(t, 30);
    expect(await statuses()).toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED']);
    // From outside the platform's ledger: its account is untouched, the minted supply grows by 3 × 3.00.
    expect(await balanceOf(t, usdAccount)).toEqual(platformBefore);
    expect((await ledger(supply.minted)).available).toBe(mintedBefore + 900);
    expect(BigInt((await coin(c.id)).outstandingSupply)).toBe(supplyBefore + 9_000_000n);
    // The ACH types name their external account; the provider balance its token and network.
    envelope(await post(`/stablecoins/${c.id}/mints`, { amount: '1000000', fundingSource: { type: 'ACH_DEBIT' }, destination: { accountId: wallet } }), 400, 'INVALID_INPUT');
    envelope(await post(`/stablecoins/${c.id}/mints`, { amount: '1000000', fundingSource: { type: 'PROVIDER_INTERNAL_BALANCE' }, destination: { accountId: wallet } }), 400, 'INVALID_INPUT');
    await assertLedgerInvariants(t.store);
  });

  it('an unknown or another platform’s referenced account is 404 REFERENCE_NOT_FOUND; an existing one of the wrong kind or currency 400', async () => {
    const c = ((await t.call('GET', '/stablecoins?limit=100')).json() as { data: Coin[] }).data.find((x) => x.decimals === 6)!;
    const other = await otherPlatformAuth(t);
    const theirs = ((await t.call('GET', '/platform/internal-accounts', undefined, other)).json() as { data: Account[] }).data[0]!.id;
    const dest = { accountId: wallet };
    const burnDest = { type: 'EXTERNAL_ACCOUNT', externalAccountId: wallet, rail: 'WIRE' };
    const notFound = async (url: string, body: unknown, field: string) => {
      const e = envelope(await post(url, body), 404, 'REFERENCE_NOT_FOUND');
      expect(e.details).toMatchObject({ field });
    };
    const mints = `/stablecoins/${c.id}/mints`;
    const burns = `/stablecoins/${c.id}/burns`;
    await notFound(mints, { amount: '1000000', fundingSource: { type: 'GRID_INTERNAL_ACCOUNT', accountId: 'InternalAccount:nope' }, destination: dest }, 'fundingSource.accountId');
    await notFound(mints, { amount: '1000000', fundingSource: { type: 'GRID_INTERNAL_ACCOUNT', accountId: theirs }, destination: dest }, 'fundingSource.accountId');
    await notFound(mints, { amount: '1000000', fundingSource: { type: 'ACH_DEBIT', externalAccountId: 'ExternalAccount:nope' }, destination: dest }, 'fundingSource.externalAccountId');
    await notFound(mints, { amount: '1000000', fundingSource: { type: 'WIRE' }, destination: { accountId: 'nope' } }, 'destination.accountId');
    await notFound(mints, { amount: '1000000', fundingSource: { type: 'WIRE' }, destination: { accountId: theirs } }, 'destination.accountId');
    await notFound(burns, { amount: '1000000', source: { type: 'PROVIDER_INTERNAL_BALANCE' }, destination: { ...burnDest, externalAccountId: 'ExternalAccount:nope' } }, 'destination.externalAccountId');
    await notFound(burns, { amount: '1000000', source: { type: 'GRID_INTERNAL_ACCOUNT', accountId: theirs }, destination: burnDest }, 'source.accountId');
    // Existing accounts of the wrong kind or currency stay 400 INVALID_INPUT.
    const customer = await newCustomer(t, ['USD']);
    const eur = ((await t.call('GET', '/platform/internal-accounts')).json() as { data: Account[] }).data.find((a) => a.balance.currency.code !== 'USD')!.id;
    const wrong = async (url: string, body: unknown, field: string) => {
      const e = envelope(await post(url, body), 400, 'INVALID_INPUT');
      expect((e.details!.errors as Array<{ field: string }>).map((x) => x.field)).toEqual([field]);
    };
    await wrong(mints, { amount: '1000000', fundingSource: { type: 'GRID_INTERNAL_ACCOUNT', accountId: customer.accounts.USD!.id }, destination: dest }, 'fundingSource.accountId');
    await wrong(mints, { amount: '1000000', fundingSource: { type: 'GRID_INTERNAL_ACCOUNT', accountId: eur }, destination: dest }, 'fundingSource.accountId');
    await wrong(burns, { amount: '1000000', source: { type: 'GRID_INTERNAL_ACCOUNT', accountId: customer.accounts.USD!.id }, destination: burnDest }, 'source.accountId');
  });

  const REFERENCE = '/work/shared/reference/openapi.yaml';
  it.skipIf(!existsSync(REFERENCE))('stablecoins and operations of every source conform to the reference schemas; the served Stablecoin has the optional currency', async () => {
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
    const list = (await t.call('GET', '/stablecoins?limit=100')).json() as { data: Coin[] };
    check('StablecoinListResponse', list);
    const c = list.data.find((x) => x.decimals === 6)!;
    const ops = (await t.call('GET', `/stablecoins/${c.id}/operations?limit=100`)).json() as { data: Op[] };
    check('StablecoinOperationListResponse', ops);
    for (const o of ops.data) check('StablecoinOperation', o);
    const served = (await t.call('GET', '/openapi.json', undefined, { authorization: '' })).json() as { components: { schemas: Record<string, { properties: Record<string, unknown>; required?: string[] }> } };
    expect(served.components.schemas.Stablecoin!.properties.currency).toBeDefined();
    expect(served.components.schemas.Stablecoin!.required ?? []).not.toContain('currency');
  });
});
