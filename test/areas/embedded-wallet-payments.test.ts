import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advanceAndDeliver, envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants } from '../ledger-invariants.js';
import { balanceOf, fund, quoteRequest, type QuoteBody, usdExternal } from '../money-helpers.js';
import { Receiver } from '../webhook-receiver.js';
import { clientKey, stamp } from '../wallet-client.js';
import { enc, otpLogin, signed, walletCustomer } from '../wallet-flows.js';

// Money out of an embedded wallet: the quote carries the payload to sign, execute needs the
// wallet's stamp (202 without one), then the payout settles like any other. And delegated keys.

interface WalletQuote extends QuoteBody {
  paymentInstructions: Array<{ accountOrWalletInfo: { accountType: string; payloadToSign: string } }>;
}

describe(`embedded wallet payouts and delegated keys (${STORE})`, () => {
  let t: TestApp;
  let receiver: Receiver;
  beforeAll(async () => {
    t = await makeApp();
    receiver = await new Receiver().start();
    expect((await t.call('PATCH', '/config', { webhookEndpoint: receiver.url })).statusCode).toBe(200);
  });
  afterAll(async () => {
    await receiver.stop();
    await t.close();
  });

  async function fundedWallet() {
    const w = await walletCustomer(t);
    await fund(t, w.accountId, 50_000_000); // 50 USDC
    const ext = await usdExternal(t, w.customerId, '555000789');
    const { key } = await otpLogin(t, w.emailCredentialId);
    return { w, ext, key };
  }

  async function walletQuote(src: string, ext: string, amount = 10_000_000, extra: Record<string, unknown> = {}) {
    const res = await t.call('POST', '/quotes', quoteRequest(src, ext, amount, extra));
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as WalletQuote;
  }

  it('end to end: fund, quote with payloadToSign, 202, signed execute, settle, webhooks', async () => {
    const { w, ext, key } = await fundedWallet();
    expect(await balanceOf(t, w.accountId)).toEqual({ available: 50_000_000, total: 50_000_000 });
    const q = await walletQuote(w.accountId, ext);
    const info = q.paymentInstructions[0]!.accountOrWalletInfo;
    expect(info.accountType).toBe('EMBEDDED_WALLET');
    expect(JSON.parse(info.payloadToSign)).toMatchObject({ type: 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2' });
    const url = `/quotes/${enc(q.id)}/execute`;
    // Without a signature: 202 with the quote's payload; nothing moved.
    const first = await t.call('POST', url, undefined, { 'idempotency-key': `exec-${q.id}` });
    expect(first.statusCode, first.body).toBe(202);
    const c = first.json() as { payloadToSign: string; requestId: string; expiresAt: string };
    expect(c.payloadToSign).toBe(info.payloadToSign);
    expect(c.expiresAt).toBe(q.expiresAt);
    expect(first.headers['request-id']).toBe(c.requestId);
    expect(await balanceOf(t, w.accountId)).toEqual({ available: 50_000_000, total: 50_000_000 });
    // Refusals (the same Idempotency-Key throughout: a 202 or a 401 is not kept under it).
    const h = { 'idempotency-key': `exec-${q.id}` };
    envelope(await t.call('POST', url, undefined, { ...h, 'service-wallet-signature': stamp(key.privateKey, c.payloadToSign) }), 401, 'REQUEST_ID_MISSING');
    envelope(await t.call('POST', url, undefined, { ...h, 'request-id': c.requestId }), 401, 'WALLET_SIGNATURE_MISSING');
    envelope(await t.call('POST', url, undefined, { ...h, 'service-wallet-signature': stamp(clientKey().privateKey, c.payloadToSign), 'request-id': c.requestId }), 401, 'WALLET_SIGNATURE_INVALID');
    const ok = await t.call('POST', url, undefined, { ...h, 'service-wallet-signature': stamp(key.privateKey, c.payloadToSign), 'request-id': c.requestId });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json()).toMatchObject({ id: q.id, status: 'PROCESSING' });
    // The key replays the 200.
    const replay = await t.call('POST', url, undefined, { ...h, 'service-wallet-signature': stamp(key.privateKey, c.payloadToSign), 'request-id': c.requestId });
    expect(replay.statusCode).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    await advanceAndDeliver(t, 1);
    const tx = (await t.call('GET', `/transactions/${enc(q.transactionId)}`)).json() as { status: string };
    expect(tx.status).toBe('COMPLETED');
    expect(await balanceOf(t, w.accountId)).toEqual({ available: 40_000_000, total: 40_000_000 });
    const types = receiver.got.filter((r) => (r.json.data as { id?: string }).id === q.transactionId).map((r) => r.json.type);
    expect(types).toEqual(['OUTGOING_PAYMENT.PENDING', 'OUTGOING_PAYMENT.PROCESSING', 'OUTGOING_PAYMENT.COMPLETED']);
    const balances = receiver.got.filter((r) => r.json.type === 'INTERNAL_ACCOUNT.BALANCE_UPDATED' && (r.json.data as { id: string }).id === w.accountId);
    expect(balances.length).toBeGreaterThanOrEqual(2);
    expect(balances.at(-1)!.json.data).toMatchObject({ type: 'EMBEDDED_WALLET', balance: { amount: 40_000_000 } });
    await assertLedgerInvariants(t.store);
  });

  it('a stamp over the quote payload without a prior 202 executes at once (the hosted docs flow); the legacy value too', async () => {
    const { w, ext, key } = await fundedWallet();
    const q = await walletQuote(w.accountId, ext, 2_000_000);
    const res = await t.call('POST', `/quotes/${enc(q.id)}/execute`, undefined, { 'service-wallet-signature': stamp(key.privateKey, q.paymentInstructions[0]!.accountOrWalletInfo.payloadToSign) });
    expect(res.statusCode, res.body).toBe(200);
    const q2 = await walletQuote(w.accountId, ext, 2_000_000);
    envelope(await t.call('POST', `/quotes/${enc(q2.id)}/execute`, undefined, { 'service-wallet-signature': 'garbage' }), 401, 'WALLET_SIGNATURE_MALFORMED');
    envelope(await t.call('POST', `/quotes/${enc(q2.id)}/execute`, undefined, { 'service-wallet-signature': stamp(key.privateKey, q.paymentInstructions[0]!.accountOrWalletInfo.payloadToSign) }), 401, 'WALLET_SIGNATURE_INVALID');
    expect((await t.call('POST', `/quotes/${enc(q2.id)}/execute`, undefined, { 'service-wallet-signature': 'sandbox-valid-signature' })).statusCode).toBe(200);
    await assertLedgerInvariants(t.store);
  });

  it('a session of another wallet cannot execute; immediatelyExecute is refused from a wallet; other sources are unchanged', async () => {
    const { w, ext } = await fundedWallet();
    const other = await walletCustomer(t);
    const { key: otherKey } = await otpLogin(t, other.emailCredentialId);
    const q = await walletQuote(w.accountId, ext, 2_000_000);
    const res = await t.call('POST', `/quotes/${enc(q.id)}/execute`, undefined, { 'service-wallet-signature': stamp(otherKey.privateKey, q.paymentInstructions[0]!.accountOrWalletInfo.payloadToSign) });
    expect(envelope(res, 401, 'WALLET_SIGNATURE_INVALID').details).toMatchObject({ reason: 'signing key is not an active session of the wallet' });
    const imm = envelope(await t.call('POST', '/quotes', quoteRequest(w.accountId, ext, 2_000_000, { immediatelyExecute: true })), 400, 'INVALID_INPUT');
    expect(imm.details?.errors).toEqual([expect.objectContaining({ field: 'immediatelyExecute' })]);
    // Nor the deprecated transfer-out, which executes at once.
    const sol = await t.call('POST', '/customers/external-accounts', { customerId: w.customerId, currency: 'USDC', accountInfo: { accountType: 'SOLANA_WALLET', address: '4Nd1m6Qkq7RfKuE5vQ9qP9Tn6H94Ueqb4xXHzsAbd8Wg' } });
    expect(sol.statusCode, sol.body).toBe(201);
    const out = envelope(await t.call('POST', '/transfer-out', { source: { accountId: w.accountId }, destination: { accountId: (sol.json() as { id: string }).id }, amount: 2_000_000 }), 400, 'INVALID_INPUT');
    expect(out.details?.errors).toEqual([expect.objectContaining({ field: 'source.accountId' })]);
    // A holding-account source needs no signature and has no wallet instructions.
    const holding = ((await t.call('GET', `/customers/internal-accounts?customerId=${enc(w.customerId)}&type=INTERNAL_FIAT`)).json() as { data: Array<{ id: string }> }).data[0]!.id;
    await fund(t, holding, 10_000);
    const hq = (await t.call('POST', '/quotes', quoteRequest(holding, ext, 1_000))).json() as { id: string; paymentInstructions?: unknown };
    expect(hq.paymentInstructions).toBeUndefined();
    expect((await t.call('POST', `/quotes/${enc(hq.id)}/execute`)).statusCode).toBe(200);
  });

  // ---- Agents spending from a wallet ----

  /** An installed agent of the wallet's customer (every permission, at most $10 a transaction; AUTO unless `mode` says otherwise). */
  async function walletAgent(customerId: string, mode = 'AUTO') {
    const created = await t.call('POST', '/agents', {
      name: 'Wallet helper',
      customerId,
      policy: { permissions: ['VIEW_TRANSACTIONS', 'CREATE_TRANSFERS', 'CREATE_QUOTES', 'EXECUTE_QUOTES', 'MANAGE_EXTERNAL_ACCOUNTS'], defaultExecutionMode: mode, spendingLimits: { currency: 'USD', perTransactionLimit: 1_000 } },
    });
    expect(created.statusCode, created.body).toBe(201);
    const { agent, deviceCode } = created.json() as { agent: { id: string }; deviceCode: { code: string } };
    const redeemed = await t.call('POST', `/agents/device-codes/${deviceCode.code}/redeem`, undefined, { authorization: '' });
    expect(redeemed.statusCode, redeemed.body).toBe(200);
    return { agentId: agent.id, h: { authorization: `Bearer ${(redeemed.json() as { accessToken: string }).accessToken}` } };
  }

  async function agentWalletQuote(h: Record<string, string>, src: string, ext: string, amount: number) {
    const res = await t.call('POST', '/agents/me/quotes', quoteRequest(src, ext, amount), h);
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as WalletQuote & { transactionId: string };
  }

  it('an agent executes from a wallet only with the wallet signature: 202 first, refusals, the signed retry executes', async () => {
    const { w, ext, key } = await fundedWallet();
    const a = await walletAgent(w.customerId);
    const q = await agentWalletQuote(a.h, w.accountId, ext, 2_000_000);
    const payload = q.paymentInstructions[0]!.accountOrWalletInfo.payloadToSign;
    const url = `/agents/me/quotes/${enc(q.id)}/execute`;
    const h = { ...a.h, 'idempotency-key': `agent-exec-${q.id}` };
    // Without a signature: the challenge over the quote's payload; no action, nothing moved.
    const first = await t.call('POST', url, undefined, h);
    expect(first.statusCode, first.body).toBe(202);
    const c = first.json() as { payloadToSign: string; requestId: string; expiresAt: string };
    expect(c).toMatchObject({ payloadToSign: payload, requestId: expect.stringMatching(/^Request:/), expiresAt: q.expiresAt });
    expect(first.headers['request-id']).toBe(c.requestId);
    expect(await balanceOf(t, w.accountId)).toEqual({ available: 50_000_000, total: 50_000_000 });
    expect(((await t.call('GET', '/agents/me/actions', undefined, a.h)).json() as { data: unknown[] }).data).toEqual([]);
    // The 401s of the platform route.
    envelope(await t.call('POST', url, undefined, { ...h, 'service-wallet-signature': stamp(key.privateKey, payload) }), 401, 'REQUEST_ID_MISSING');
    envelope(await t.call('POST', url, undefined, { ...h, 'request-id': c.requestId }), 401, 'WALLET_SIGNATURE_MISSING');
    envelope(await t.call('POST', url, undefined, { ...h, 'service-wallet-signature': 'garbage', 'request-id': c.requestId }), 401, 'WALLET_SIGNATURE_MALFORMED');
    envelope(await t.call('POST', url, undefined, { ...h, 'service-wallet-signature': stamp(clientKey().privateKey, payload), 'request-id': c.requestId }), 401, 'WALLET_SIGNATURE_INVALID');
    expect(await balanceOf(t, w.accountId)).toEqual({ available: 50_000_000, total: 50_000_000 });
    // Signed: the policy's decision (AUTO) takes effect; the same key replays the 200.
    const ok = await t.call('POST', url, undefined, { ...h, 'service-wallet-signature': stamp(key.privateKey, payload), 'request-id': c.requestId });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json()).toMatchObject({ agentId: a.agentId, type: 'EXECUTE_QUOTE', status: 'APPROVED', transaction: { id: q.transactionId } });
    const replay = await t.call('POST', url, undefined, { ...h, 'service-wallet-signature': stamp(key.privateKey, payload), 'request-id': c.requestId });
    expect(replay.statusCode).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect((await balanceOf(t, w.accountId)).available).toBeLessThan(50_000_000);
    // A stamp over the quote's payload without a prior 202 is accepted, as on the platform route; another wallet's session is not.
    const other = await walletCustomer(t);
    const { key: otherKey } = await otpLogin(t, other.emailCredentialId);
    const q2 = await agentWalletQuote(a.h, w.accountId, ext, 1_500_000);
    const payload2 = q2.paymentInstructions[0]!.accountOrWalletInfo.payloadToSign;
    envelope(await t.call('POST', `/agents/me/quotes/${enc(q2.id)}/execute`, undefined, { ...a.h, 'service-wallet-signature': stamp(otherKey.privateKey, payload2) }), 401, 'WALLET_SIGNATURE_INVALID');
    const direct = await t.call('POST', `/agents/me/quotes/${enc(q2.id)}/execute`, undefined, { ...a.h, 'service-wallet-signature': stamp(key.privateKey, payload2) });
    expect(direct.statusCode, direct.body).toBe(200);
    expect(direct.json()).toMatchObject({ status: 'APPROVED' });
    await assertLedgerInvariants(t.store);
  });

  it('an agent action from a wallet that needs approval is signed at submission; the approval then executes it; a policy denial comes before any challenge', async () => {
    const { w, ext, key } = await fundedWallet();
    const a = await walletAgent(w.customerId, 'APPROVAL_REQUIRED');
    const q = await agentWalletQuote(a.h, w.accountId, ext, 2_000_000);
    const url = `/agents/me/quotes/${enc(q.id)}/execute`;
    const first = await t.call('POST', url, undefined, a.h);
    expect(first.statusCode, first.body).toBe(202);
    expect(((await t.call('GET', `/agents/approvals?agentId=${enc(a.agentId)}`)).json() as { data: unknown[] }).data).toEqual([]);
    const c = first.json() as { payloadToSign: string; requestId: string };
    const held = await t.call('POST', url, undefined, { ...a.h, 'service-wallet-signature': stamp(key.privateKey, c.payloadToSign), 'request-id': c.requestId });
    expect(held.statusCode, held.body).toBe(200);
    const action = held.json() as { id: string; status: string };
    expect(action.status).toBe('PENDING_APPROVAL');
    expect(await balanceOf(t, w.accountId)).toEqual({ available: 50_000_000, total: 50_000_000 });
    // The platform's approval needs no further signature.
    const approved = await t.call('POST', `/agents/${enc(a.agentId)}/actions/${enc(action.id)}/approve`);
    expect(approved.statusCode, approved.body).toBe(200);
    expect(approved.json()).toMatchObject({ id: action.id, status: 'APPROVED', transaction: { id: q.transactionId } });
    expect((await balanceOf(t, w.accountId)).available).toBeLessThan(50_000_000);
    // Over the limit: 403 at once, no challenge issued.
    const big = await agentWalletQuote(a.h, w.accountId, ext, 20_000_000);
    envelope(await t.call('POST', `/agents/me/quotes/${enc(big.id)}/execute`, undefined, a.h), 403, 'FORBIDDEN');
    await assertLedgerInvariants(t.store);
  });

  // ---- Delegated keys ----

  it('delegated keys: three legs (202, 202 PENDING, 201 ACTIVE), one ACTIVE per funding source, revoke', async () => {
    const w = await walletCustomer(t);
    const { key } = await otpLogin(t, w.emailCredentialId);
    // A card of the wallet's owner (POST /cards: the cardholder is APPROVED, a USD funding account).
    const usd = ((await t.call('GET', `/customers/internal-accounts?customerId=${enc(w.customerId)}&currency=USD`)).json() as { data: Array<{ id: string }> }).data[0]!.id;
    const issued = await t.call('POST', '/cards', { cardholderId: w.customerId, form: 'VIRTUAL', fundingSources: [usd] });
    expect(issued.statusCode, issued.body).toBe(201);
    const body = { cardId: (issued.json() as { id: string }).id, internalAccountId: w.accountId, nickname: 'Card payments key' };
    // An unknown card, or another customer's, is refused before any challenge.
    envelope(await t.call('POST', '/auth/delegated-keys', { ...body, cardId: 'Card:019542f5-b3e7-7d02-8000-000000000010' }), 404, 'REFERENCE_NOT_FOUND');
    const other = await walletCustomer(t);
    envelope(await t.call('POST', '/auth/delegated-keys', { ...body, internalAccountId: other.accountId }), 404, 'REFERENCE_NOT_FOUND');
    const leg1 = await t.call('POST', '/auth/delegated-keys', body);
    expect(leg1.statusCode, leg1.body).toBe(202);
    const c1 = leg1.json() as { payloadToSign: string; requestId: string };
    expect(leg1.headers['request-id']).toBe(c1.requestId);
    const leg2 = await t.call('POST', '/auth/delegated-keys', body, { 'service-wallet-signature': stamp(key.privateKey, c1.payloadToSign), 'request-id': c1.requestId });
    expect(leg2.statusCode, leg2.body).toBe(202);
    const c2 = leg2.json() as { payloadToSign: string; requestId: string };
    expect(c2.requestId).not.toBe(c1.requestId);
    const pending = ((await t.call('GET', `/auth/delegated-keys?accountId=${enc(w.accountId)}`)).json() as { data: Array<{ status: string; id: string }> }).data;
    expect(pending).toEqual([expect.objectContaining({ status: 'PENDING', accountId: w.accountId, cardId: body.cardId, nickname: body.nickname, publicKey: expect.stringMatching(/^0[23][0-9a-f]{64}$/) })]);
    envelope(await t.call('POST', '/auth/delegated-keys', { ...body, nickname: 'changed' }, { 'service-wallet-signature': stamp(key.privateKey, c2.payloadToSign), 'request-id': c2.requestId }), 401, 'WALLET_SIGNATURE_BODY_MISMATCH');
    const leg3 = await t.call('POST', '/auth/delegated-keys', body, { 'service-wallet-signature': stamp(key.privateKey, c2.payloadToSign), 'request-id': c2.requestId });
    expect(leg3.statusCode, leg3.body).toBe(201);
    const dk = leg3.json() as { id: string; status: string; fundingSourceId: string };
    expect(dk).toMatchObject({ id: pending[0]!.id, status: 'ACTIVE', fundingSourceId: expect.stringMatching(/^CardFundingSource:/) });
    expect((await t.call('GET', `/auth/delegated-keys/${enc(dk.id)}`)).json()).toMatchObject({ id: dk.id, status: 'ACTIVE' });
    expect(((await t.call('GET', `/auth/delegated-keys?fundingSourceId=${enc(dk.fundingSourceId)}`)).json() as { data: unknown[] }).data).toHaveLength(1);
    envelope(await t.call('POST', '/auth/delegated-keys', body), 409, 'CONFLICT');
    expect((await t.call('DELETE', `/auth/delegated-keys/${enc(dk.id)}`)).statusCode).toBe(204);
    envelope(await t.call('DELETE', `/auth/delegated-keys/${enc(dk.id)}`), 400, 'INVALID_INPUT');
    expect((await t.call('GET', `/auth/delegated-keys/${enc(dk.id)}`)).json()).toMatchObject({ status: 'REVOKED' });
    // Revoked: a new one may be created.
    expect((await t.call('POST', '/auth/delegated-keys', body)).statusCode).toBe(202);
    envelope(await t.call('GET', '/auth/delegated-keys'), 400, 'INVALID_INPUT');
    envelope(await t.call('GET', '/auth/delegated-keys/DelegatedKey:00000000-0000-7000-8000-000000000000'), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('POST', '/auth/delegated-keys', { ...body, internalAccountId: 'InternalAccount:00000000-0000-7000-8000-000000000000' }), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('POST', '/auth/delegated-keys', { ...body, nickname: '' }), 400, 'INVALID_INPUT');
  });

  it('PATCH an embedded wallet needs a field; export needs an uncompressed key', async () => {
    const w = await walletCustomer(t);
    envelope(await t.call('PATCH', `/internal-accounts/${enc(w.accountId)}`, {}), 400, 'INVALID_INPUT');
    envelope(await t.call('POST', `/internal-accounts/${enc(w.accountId)}/export`, { clientPublicKey: clientKey().compressed }), 400, 'INVALID_INPUT');
    const { key } = await otpLogin(t, w.emailCredentialId);
    const { retry } = await signed(t, 'POST', `/internal-accounts/${enc(w.accountId)}/export`, { clientPublicKey: clientKey().uncompressed }, key);
    expect(retry.statusCode).toBe(200);
  });
});
