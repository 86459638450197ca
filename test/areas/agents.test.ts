import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advanceAndDeliver, envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { assertLedgerInvariants, assertTransactionsAccounted } from '../ledger-invariants.js';
import { balanceOf, fund, newCustomer, otherPlatformAuth, quoteRequest, usdExternal } from '../money-helpers.js';
import { Receiver } from '../webhook-receiver.js';

// Agents through HTTP: the install flow, AgentAuth, each permission, each limit at and over
// its boundary (with period rollover on the sandbox clock), execution modes and thresholds,
// approval / rejection / expiry, pause and delete, tenancy, webhooks and the audit trail.

const ALL = ['VIEW_TRANSACTIONS', 'CREATE_TRANSFERS', 'CREATE_QUOTES', 'EXECUTE_QUOTES', 'MANAGE_EXTERNAL_ACCOUNTS'];

interface Policy {
  permissions: string[];
  defaultExecutionMode: string;
  spendingLimits: Record<string, unknown>;
  accountRestrictions?: Record<string, unknown>;
  approvalThresholds?: Record<string, unknown>;
}

interface Action {
  id: string;
  agentId: string;
  status: string;
  type: string;
  quote?: { id: string; status: string; transactionId: string };
  transaction?: { id: string; status: string; agentId?: string; type: string };
  transferDetails?: { amount: number; currency: string };
  rejectionReason?: string;
  failureReason?: string;
  decidedBy?: string;
  policyDecision?: { executionMode: string; reasons: string[] };
}

function policy(over: Partial<Policy> = {}): Policy {
  return { permissions: ALL, defaultExecutionMode: 'AUTO', spendingLimits: { currency: 'USD', perTransactionLimit: 100_000 }, ...over };
}

describe(`agents (${STORE})`, () => {
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

  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const platformNow = async () => Date.parse(((await t.call('GET', '/sandbox/clock')).json() as { now: string }).now);

  /** A funded USD customer, an external account, an installed agent with `p`. */
  async function setup(p: Policy = policy(), funds = 1_000_000) {
    const c = await newCustomer(t, ['USD']);
    const src = c.accounts.USD!.id;
    if (funds > 0) await fund(t, src, funds);
    const ext = await usdExternal(t, c.id, '555000789');
    const created = await t.call('POST', '/agents', { name: 'Helper', customerId: c.id, policy: p });
    expect(created.statusCode, created.body).toBe(201);
    const { agent, deviceCode } = created.json() as { agent: { id: string }; deviceCode: { code: string } };
    const redeemed = await t.call('POST', `/agents/device-codes/${deviceCode.code}/redeem`, undefined, { authorization: '' });
    expect(redeemed.statusCode, redeemed.body).toBe(200);
    const token = (redeemed.json() as { accessToken: string }).accessToken;
    return { customerId: c.id, src, ext, agentId: agent.id, token, h: bearer(token) };
  }

  const execute = async (h: Record<string, string>, src: string, ext: string, amount: number) => {
    const q = await t.call('POST', '/agents/me/quotes', quoteRequest(src, ext, amount), h);
    expect(q.statusCode, q.body).toBe(201);
    const quote = q.json() as { id: string; totalSendingAmount: number; transactionId: string };
    return { quote, res: await t.call('POST', `/agents/me/quotes/${quote.id}/execute`, undefined, h) };
  };
  const transferOut = (h: Record<string, string>, src: string, ext: string, amount: number) =>
    t.call('POST', '/agents/me/transfer-out', { source: { accountId: src }, destination: { accountId: ext }, amount }, h);

  // ---- Installation ------------------------------------------------------------------------

  it('installs: create, status PENDING, redeem once, status REDEEMED, the token works, a second redeem is refused', async () => {
    const c = await newCustomer(t, ['USD']);
    const res = await t.call('POST', '/agents', { name: 'Payroll agent', customerId: c.id, policy: policy() });
    expect(res.statusCode, res.body).toBe(201);
    const { agent, deviceCode } = res.json() as { agent: Record<string, unknown>; deviceCode: { code: string; agentId: string; expiresAt: string; redeemed: boolean } };
    expect(agent).toMatchObject({ name: 'Payroll agent', customerId: c.id, isPaused: false, isConnected: false, policy: policy() });
    expect(agent.usage).toMatchObject({ dailyTransactionCount: 0, dailySpend: 0, monthlySpend: 0 });
    expect(deviceCode).toMatchObject({ agentId: agent.id, redeemed: false });
    expect(deviceCode.code).toMatch(/^AGENT-[A-Z2-9]{4}-[A-Z2-9]{4}-[A-Z2-9]{4}$/);
    expect(Date.parse(deviceCode.expiresAt) - (await platformNow())).toBeGreaterThan(24 * 3600_000 - 5_000);

    const status = async () => (await t.call('GET', `/agents/device-codes/${deviceCode.code}/status`)).json() as { status: string; redeemed: boolean };
    expect(await status()).toMatchObject({ status: 'PENDING', redeemed: false });
    // Codes are read whatever their case; another platform does not see them.
    expect((await t.call('GET', `/agents/device-codes/${deviceCode.code.toLowerCase()}/status`)).json()).toMatchObject({ status: 'PENDING', agentId: agent.id });
    envelope(await t.call('GET', `/agents/device-codes/${deviceCode.code}/status`, undefined, await otherPlatformAuth(t)), 404, 'REFERENCE_NOT_FOUND');

    const redeem = await t.call('POST', `/agents/device-codes/${deviceCode.code}/redeem`, undefined, { authorization: '' });
    expect(redeem.statusCode, redeem.body).toBe(200);
    const body = redeem.json() as { agentId: string; agentName: string; accessToken: string; policy: Policy };
    expect(body).toMatchObject({ agentId: agent.id, agentName: 'Payroll agent', policy: policy() });
    expect(await status()).toMatchObject({ status: 'REDEEMED', redeemed: true });

    const me = await t.call('GET', '/agents/me', undefined, bearer(body.accessToken));
    expect(me.statusCode, me.body).toBe(200);
    expect(me.json()).toMatchObject({ id: agent.id, isConnected: true });
    expect(((await t.call('GET', `/agents/${agent.id as string}`)).json() as { isConnected: boolean }).isConnected).toBe(true);

    const again = envelope(await t.call('POST', `/agents/device-codes/${deviceCode.code}/redeem`, undefined, { authorization: '' }), 400, 'INVALID_INPUT');
    expect(again.details?.reason).toBe('DEVICE_CODE_ALREADY_REDEEMED');
    // A connected agent gets no new code.
    envelope(await t.call('POST', `/agents/${agent.id as string}/device-codes`), 409, 'CONFLICT');

    // Only the token's hash is stored.
    const row = await t.store.db.withTables<{ agents: { id: string; token_hash: string | null } }>().selectFrom('agents').select('token_hash').where('id', '=', agent.id as string).executeTakeFirstOrThrow();
    expect(row.token_hash).toBe(createHash('sha256').update(body.accessToken).digest('hex'));
    expect(JSON.stringify(await t.store.db.withTables<{ agents: Record<string, unknown> }>().selectFrom('agents').selectAll().execute())).not.toContain(body.accessToken);
  });

  it('expires a device code on the sandbox clock (24 hours), and a regenerated code replaces the old one', async () => {
    const c = await newCustomer(t, ['USD']);
    const res = await t.call('POST', '/agents', { name: 'Late', customerId: c.id, policy: policy() });
    const { agent, deviceCode } = res.json() as { agent: { id: string }; deviceCode: { code: string; expiresAt: string } };
    const status = async (code: string) => ((await t.call('GET', `/agents/device-codes/${code}/status`)).json() as { status: string }).status;
    const left = Math.floor((Date.parse(deviceCode.expiresAt) - (await platformNow())) / 1000);
    await advanceAndDeliver(t, left - 2);
    expect(await status(deviceCode.code)).toBe('PENDING');
    await advanceAndDeliver(t, 3);
    expect(await status(deviceCode.code)).toBe('EXPIRED');
    const expired = envelope(await t.call('POST', `/agents/device-codes/${deviceCode.code}/redeem`, undefined, { authorization: '' }), 400, 'INVALID_INPUT');
    expect(expired.details?.reason).toBe('DEVICE_CODE_EXPIRED');

    // A new code; the one before it (even unexpired) stops working.
    const first = await t.call('POST', `/agents/${agent.id}/device-codes`);
    expect(first.statusCode, first.body).toBe(201);
    const second = await t.call('POST', `/agents/${agent.id}/device-codes`);
    const a = (first.json() as { code: string }).code;
    const b = (second.json() as { code: string; redeemed: boolean; agentId: string }).code;
    expect(a).not.toBe(b);
    expect(await status(a)).toBe('EXPIRED');
    envelope(await t.call('POST', `/agents/device-codes/${a}/redeem`, undefined, { authorization: '' }), 400, 'INVALID_INPUT');
    expect((await t.call('POST', `/agents/device-codes/${b}/redeem`, undefined, { authorization: '' })).statusCode).toBe(200);

    envelope(await t.call('GET', '/agents/device-codes/AGENT-AAAA-BBBB-CCCC/status'), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('POST', '/agents/device-codes/AGENT-AAAA-BBBB-CCCC/redeem', undefined, { authorization: '' }), 404, 'REFERENCE_NOT_FOUND');
  });

  // ---- AgentAuth -----------------------------------------------------------------------------

  it('AgentAuth: only the agent routes take the token, and they take nothing else', async () => {
    const a = await setup();
    for (const [method, url] of [
      ['GET', '/config'],
      ['GET', '/agents'],
      ['GET', `/agents/${a.agentId}`],
      ['GET', '/transactions'],
      ['POST', '/quotes'],
      ['GET', '/customers/internal-accounts'],
    ] as const) {
      const res = await t.call(method, url, method === 'POST' ? quoteRequest(a.src, a.ext, 100) : undefined, a.h);
      envelope(res, 401, 'UNAUTHORIZED');
    }
    // Basic credentials on an agent route, an unknown token, no credentials: 401.
    envelope(await t.call('GET', '/agents/me'), 401, 'UNAUTHORIZED');
    envelope(await t.call('GET', '/agents/me', undefined, bearer('agt_not-a-token')), 401, 'UNAUTHORIZED');
    envelope(await t.call('GET', '/agents/me/transactions', undefined, { authorization: '' }), 401, 'UNAUTHORIZED');
    expect((await t.call('GET', '/agents/me', undefined, a.h)).statusCode).toBe(200);
  });

  it('documents the schemes: AgentAuth on /agents/me/*, BasicAuth on management, none on redeem', async () => {
    const doc = (await t.call('GET', '/openapi.json', undefined, { authorization: '' })).json() as { paths: Record<string, Record<string, { security: unknown[] }>> };
    const ops = Object.entries(doc.paths).filter(([p]) => p.startsWith('/agents'));
    expect(ops.flatMap(([, m]) => Object.keys(m)).length).toBeGreaterThanOrEqual(27);
    for (const [path, methods] of ops) {
      for (const [method, op] of Object.entries(methods)) {
        const want = path.startsWith('/agents/me') ? [{ AgentAuth: [] }] : path.endsWith('/redeem') ? [] : [{ BasicAuth: [] }];
        expect(op.security, `${method} ${path}`).toEqual(want);
      }
    }
    expect(doc.paths['/customers']!.post!.security).toEqual([{ BasicAuth: [] }]);
  });

  // ---- Permissions ------------------------------------------------------------------------

  it('each permission allows its operations, and its absence answers 403 FORBIDDEN (401 where the operation declares no 403)', async () => {
    const a = await setup(policy());
    const none = await setup(policy({ permissions: [] }));
    const reasonOf = (res: Awaited<ReturnType<TestApp['call']>>, perm: string, status: 401 | 403 = 403) => {
      const e = envelope(res, status, status === 403 ? 'FORBIDDEN' : 'UNAUTHORIZED');
      expect(e.details).toMatchObject({ reason: 'PERMISSION_DENIED', requiredPermission: perm });
    };
    // VIEW_TRANSACTIONS: transactions and account balances.
    expect((await t.call('GET', '/agents/me/transactions', undefined, a.h)).statusCode).toBe(200);
    expect((await t.call('GET', '/agents/me/internal-accounts', undefined, a.h)).statusCode).toBe(200);
    reasonOf(await t.call('GET', '/agents/me/transactions', undefined, none.h), 'VIEW_TRANSACTIONS', 401);
    reasonOf(await t.call('GET', '/agents/me/internal-accounts', undefined, none.h), 'VIEW_TRANSACTIONS', 401);
    // CREATE_QUOTES.
    expect((await t.call('POST', '/agents/me/quotes', quoteRequest(a.src, a.ext, 1_000), a.h)).statusCode).toBe(201);
    reasonOf(await t.call('POST', '/agents/me/quotes', quoteRequest(none.src, none.ext, 1_000), none.h), 'CREATE_QUOTES');
    // EXECUTE_QUOTES (quotes by an agent that may create but not execute).
    const creator = await setup(policy({ permissions: ['CREATE_QUOTES'] }));
    const { res: denied } = await execute(creator.h, creator.src, creator.ext, 1_000);
    reasonOf(denied, 'EXECUTE_QUOTES');
    const { res: ok, quote } = await execute(a.h, a.src, a.ext, 1_000);
    expect(ok.statusCode, ok.body).toBe(200);
    // The agent reads its own quote (executed now) and its actions, filtered by status.
    expect((await t.call('GET', `/agents/me/quotes/${quote.id}`, undefined, a.h)).json()).toMatchObject({ id: quote.id, status: 'PROCESSING' });
    const mine = (await t.call('GET', '/agents/me/actions?status=APPROVED', undefined, a.h)).json() as { data: Action[] };
    expect(mine.data.map((x) => x.quote?.id)).toEqual([quote.id]);
    expect(((await t.call('GET', '/agents/me/actions?status=PENDING_APPROVAL', undefined, a.h)).json() as { data: unknown[] }).data).toEqual([]);
    // CREATE_TRANSFERS.
    expect((await transferOut(a.h, a.src, a.ext, 1_000)).statusCode).toBe(201);
    reasonOf(await transferOut(none.h, none.src, none.ext, 1_000), 'CREATE_TRANSFERS');
    // MANAGE_EXTERNAL_ACCOUNTS: list, get, create, delete.
    expect((await t.call('GET', '/agents/me/external-accounts', undefined, a.h)).statusCode).toBe(200);
    expect((await t.call('GET', `/agents/me/external-accounts/${a.ext}`, undefined, a.h)).statusCode).toBe(200);
    reasonOf(await t.call('GET', '/agents/me/external-accounts', undefined, none.h), 'MANAGE_EXTERNAL_ACCOUNTS', 401);
    reasonOf(await t.call('GET', `/agents/me/external-accounts/${none.ext}`, undefined, none.h), 'MANAGE_EXTERNAL_ACCOUNTS', 401);
    const body = { currency: 'USD', accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: '987654321', routingNumber: '021000021', bankName: 'B', beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Al Agent' } } };
    const made = await t.call('POST', '/agents/me/external-accounts', body, a.h);
    expect(made.statusCode, made.body).toBe(201);
    expect(made.json()).toMatchObject({ customerId: a.customerId });
    reasonOf(await t.call('POST', '/agents/me/external-accounts', body, none.h), 'MANAGE_EXTERNAL_ACCOUNTS', 401);
    reasonOf(await t.call('DELETE', `/agents/me/external-accounts/${none.ext}`, undefined, none.h), 'MANAGE_EXTERNAL_ACCOUNTS', 401);
    const id = (made.json() as { id: string }).id;
    expect((await t.call('DELETE', `/agents/me/external-accounts/${id}`, undefined, a.h)).statusCode).toBe(204);
    envelope(await t.call('GET', `/agents/me/external-accounts/${id}`, undefined, a.h), 404, 'REFERENCE_NOT_FOUND');
    await assertLedgerInvariants(t.store);
  });

  // ---- Limits --------------------------------------------------------------------------------

  it('per-transaction limit: at the limit executes, one over is denied; an account rule overrides it', async () => {
    const a = await setup(policy({ spendingLimits: { currency: 'USD', perTransactionLimit: 5_000 } }));
    const at = await transferOut(a.h, a.src, a.ext, 5_000);
    expect(at.statusCode, at.body).toBe(201);
    expect(at.json()).toMatchObject({ status: 'APPROVED', type: 'TRANSFER_OUT', transferDetails: { amount: 5_000, currency: 'USD' } });
    const over = envelope(await transferOut(a.h, a.src, a.ext, 5_001), 403, 'FORBIDDEN');
    expect(over.details).toMatchObject({ reason: 'PER_TRANSACTION_LIMIT_EXCEEDED', limit: 5_000, amount: 5_001 });
    // An account rule's limit replaces the default for that account.
    const r = await t.call('PATCH', `/agents/${a.agentId}/policy`, { accountRestrictions: { accountRules: [{ accountId: a.src, perTransactionLimit: 2_000 }] } });
    expect(r.statusCode, r.body).toBe(200);
    expect((await transferOut(a.h, a.src, a.ext, 2_000)).statusCode).toBe(201);
    expect(envelope(await transferOut(a.h, a.src, a.ext, 2_001), 403, 'FORBIDDEN').details?.reason).toBe('PER_TRANSACTION_LIMIT_EXCEEDED');
    await assertLedgerInvariants(t.store);
  });

  it('daily count and daily total: at the limit allowed, over denied, and the next UTC day (sandbox clock) starts again', async () => {
    const a = await setup(policy({ spendingLimits: { currency: 'USD', perTransactionLimit: 10_000, dailyLimit: 3_000, dailyTransactionLimit: 3 } }));
    // Move to the start of a day, so the three actions share it.
    const me0 = (await t.call('GET', '/agents/me', undefined, a.h)).json() as { usage: { dailyResetDate: string } };
    await advanceAndDeliver(t, Math.ceil((Date.parse(`${me0.usage.dailyResetDate}T00:00:00Z`) - (await platformNow())) / 1000) + 60);
    expect((await transferOut(a.h, a.src, a.ext, 1_000)).statusCode).toBe(201);
    expect((await transferOut(a.h, a.src, a.ext, 2_000)).statusCode).toBe(201); // total 3,000: at the daily limit
    const total = envelope(await transferOut(a.h, a.src, a.ext, 1), 403, 'FORBIDDEN');
    expect(total.details).toMatchObject({ reason: 'DAILY_LIMIT_EXCEEDED', limit: 3_000, used: 3_000 });
    const me = (await t.call('GET', '/agents/me', undefined, a.h)).json() as { usage: { dailyTransactionCount: number; dailySpend: number; monthlySpend: number; dailyResetDate: string } };
    expect(me.usage).toMatchObject({ dailyTransactionCount: 2, dailySpend: 3_000 });

    // The count: raise the total, make the 3rd (at the count), the 4th is over.
    await t.call('PATCH', `/agents/${a.agentId}/policy`, { spendingLimits: { dailyLimit: null } });
    const third = await transferOut(a.h, a.src, a.ext, 100);
    expect(third.statusCode, third.body).toBe(201);
    const count = envelope(await transferOut(a.h, a.src, a.ext, 100), 403, 'FORBIDDEN');
    expect(count.details).toMatchObject({ reason: 'DAILY_TRANSACTION_LIMIT_EXCEEDED', limit: 3, used: 3 });

    // Rollover: the next UTC day of the sandbox clock.
    const next = Date.parse(`${me.usage.dailyResetDate}T00:00:00Z`);
    await advanceAndDeliver(t, Math.ceil((next - (await platformNow())) / 1000) + 1);
    expect((await transferOut(a.h, a.src, a.ext, 100)).statusCode).toBe(201);
    const after = (await t.call('GET', '/agents/me', undefined, a.h)).json() as { usage: { dailyTransactionCount: number; dailySpend: number } };
    expect(after.usage).toMatchObject({ dailyTransactionCount: 1, dailySpend: 100 });
    await assertLedgerInvariants(t.store);
  });

  it('monthly total: at the limit allowed, over denied, the next month starts again', async () => {
    const a = await setup(policy({ spendingLimits: { currency: 'USD', perTransactionLimit: 10_000, monthlyLimit: 4_000 } }));
    const me0 = (await t.call('GET', '/agents/me', undefined, a.h)).json() as { usage: { monthlyResetMonth: string } };
    // Start of a month, so both actions share it.
    await advanceAndDeliver(t, Math.ceil((Date.parse(`${me0.usage.monthlyResetMonth}-01T00:00:00Z`) - (await platformNow())) / 1000) + 60);
    expect((await transferOut(a.h, a.src, a.ext, 4_000)).statusCode).toBe(201);
    expect(envelope(await transferOut(a.h, a.src, a.ext, 1), 403, 'FORBIDDEN').details).toMatchObject({ reason: 'MONTHLY_LIMIT_EXCEEDED', limit: 4_000, used: 4_000 });
    // A day later, still the same month: still over.
    await advanceAndDeliver(t, 86_400);
    expect(envelope(await transferOut(a.h, a.src, a.ext, 1), 403, 'FORBIDDEN').details?.reason).toBe('MONTHLY_LIMIT_EXCEEDED');
    const me = (await t.call('GET', '/agents/me', undefined, a.h)).json() as { usage: { monthlySpend: number; monthlyResetMonth: string } };
    expect(me.usage.monthlySpend).toBe(4_000);
    await advanceAndDeliver(t, Math.ceil((Date.parse(`${me.usage.monthlyResetMonth}-01T00:00:00Z`) - (await platformNow())) / 1000) + 1);
    expect((await transferOut(a.h, a.src, a.ext, 4_000)).statusCode).toBe(201);
    await assertLedgerInvariants(t.store);
  });

  it('account restrictions: an account outside allowedAccountIds is denied, and hidden from the account list', async () => {
    const c = await newCustomer(t, ['USD', 'EUR']);
    const usd = c.accounts.USD!.id;
    const eur = c.accounts.EUR!.id;
    await fund(t, usd, 10_000);
    const ext = await usdExternal(t, c.id, '555000789');
    const created = await t.call('POST', '/agents', { name: 'R', customerId: c.id, policy: policy({ accountRestrictions: { allowedAccountIds: [eur] } }) });
    expect(created.statusCode, created.body).toBe(201);
    const code = (created.json() as { deviceCode: { code: string } }).deviceCode.code;
    const h = bearer(((await t.call('POST', `/agents/device-codes/${code}/redeem`, undefined, { authorization: '' })).json() as { accessToken: string }).accessToken);
    const e = envelope(await transferOut(h, usd, ext, 100), 403, 'FORBIDDEN');
    expect(e.details).toMatchObject({ reason: 'ACCOUNT_NOT_ALLOWED', accountId: usd });
    envelope(await t.call('POST', '/agents/me/quotes', quoteRequest(usd, ext, 100), h), 403, 'FORBIDDEN');
    const list = (await t.call('GET', '/agents/me/internal-accounts', undefined, h)).json() as { data: Array<{ id: string }> };
    expect(list.data.map((x) => x.id)).toEqual([eur]);
    // A policy naming another customer's account is refused at once.
    const other = await newCustomer(t, ['USD']);
    const bad = envelope(await t.call('POST', '/agents', { name: 'X', customerId: c.id, policy: policy({ accountRestrictions: { allowedAccountIds: [other.accounts.USD!.id] } }) }), 400, 'INVALID_INPUT');
    expect(bad.details?.errors).toEqual([expect.objectContaining({ field: 'policy.accountRestrictions.allowedAccountIds.0' })]);
    expect(await balanceOf(t, usd)).toEqual({ available: 10_000, total: 10_000 });
  });

  // ---- Execution mode, thresholds, approval --------------------------------------------------

  it('approval threshold: at the threshold executes automatically; above it waits, nothing moves, approval then settlement', async () => {
    const a = await setup(policy({ approvalThresholds: { currency: 'USD', amount: 2_500 } }), 100_000);
    const { res: auto } = await execute(a.h, a.src, a.ext, 2_500);
    expect(auto.statusCode, auto.body).toBe(200);
    const done = auto.json() as Action;
    expect(done).toMatchObject({ status: 'APPROVED', type: 'EXECUTE_QUOTE', decidedBy: 'POLICY', policyDecision: { executionMode: 'AUTO', reasons: ['WITHIN_POLICY'] } });
    expect(done.transaction).toMatchObject({ status: 'PROCESSING', agentId: a.agentId });
    await advanceAndDeliver(t, 5);
    const before = await balanceOf(t, a.src);
    expect(before).toEqual({ available: 97_500, total: 97_500 });

    const { res, quote } = await execute(a.h, a.src, a.ext, 2_501);
    expect(res.statusCode, res.body).toBe(200);
    const pending = res.json() as Action;
    expect(pending).toMatchObject({ status: 'PENDING_APPROVAL', policyDecision: { executionMode: 'APPROVAL_REQUIRED', reasons: ['APPROVAL_THRESHOLD_EXCEEDED'] } });
    expect(pending.transaction).toBeUndefined();
    expect(pending.quote).toMatchObject({ id: quote.id, status: 'PENDING_AUTHORIZATION' });
    // The transaction is pending, and nothing moved.
    const tx = (await t.call('GET', `/transactions/${quote.transactionId}`)).json() as { status: string; agentId: string };
    expect(tx).toMatchObject({ status: 'PENDING', agentId: a.agentId });
    await advanceAndDeliver(t, 1);
    expect(await balanceOf(t, a.src)).toEqual(before);
    // The platform sees it, and the webhook said so.
    const approvals = (await t.call('GET', `/agents/approvals?agentId=${a.agentId}`)).json() as { data: Action[] };
    expect(approvals.data.map((x) => x.id)).toEqual([pending.id]);
    expect(receiver.got.some((r) => r.json.type === 'AGENT_ACTION.PENDING_APPROVAL' && (r.json.data as Action).id === pending.id)).toBe(true);

    const approved = await t.call('POST', `/agents/${a.agentId}/actions/${pending.id}/approve`);
    expect(approved.statusCode, approved.body).toBe(200);
    const after = approved.json() as Action;
    expect(after).toMatchObject({ status: 'APPROVED', decidedBy: expect.any(String) });
    expect(after.transaction).toMatchObject({ status: 'PROCESSING', agentId: a.agentId });
    expect(await balanceOf(t, a.src)).toEqual({ available: before.available - 2_501, total: before.total });
    await advanceAndDeliver(t, 5);
    expect(((await t.call('GET', `/agents/me/transactions/${after.transaction!.id}`, undefined, a.h)).json() as { status: string }).status).toBe('COMPLETED');
    expect(((await t.call('GET', `/agents/me/actions/${pending.id}`, undefined, a.h)).json() as Action).status).toBe('APPROVED');
    expect(receiver.got.some((r) => r.json.type === 'AGENT_ACTION.APPROVED' && (r.json.data as Action).id === pending.id)).toBe(true);
    // Decided: a second decision is 409; the approval queue is empty.
    envelope(await t.call('POST', `/agents/${a.agentId}/actions/${pending.id}/approve`), 409, 'TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL');
    envelope(await t.call('POST', `/agents/${a.agentId}/actions/${pending.id}/reject`, {}), 409, 'TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL');
    expect(((await t.call('GET', `/agents/approvals?agentId=${a.agentId}`)).json() as { data: unknown[] }).data).toEqual([]);
    await assertLedgerInvariants(t.store);
    await assertTransactionsAccounted(t.store);
  });

  it('APPROVAL_REQUIRED: a transfer waits; POST /transactions/{id}/approve executes it; an account rule AUTO skips approval', async () => {
    const a = await setup(policy({ defaultExecutionMode: 'APPROVAL_REQUIRED' }), 50_000);
    const res = await transferOut(a.h, a.src, a.ext, 7_000);
    expect(res.statusCode, res.body).toBe(201);
    const pending = res.json() as Action;
    expect(pending).toMatchObject({ status: 'PENDING_APPROVAL', policyDecision: { reasons: ['EXECUTION_MODE'] } });
    const txId = ((await t.call('GET', `/agents/approvals?agentId=${a.agentId}`)).json() as { data: Array<{ quote?: unknown }> }).data.length;
    expect(txId).toBe(1);
    // The transaction id: the platform finds it pending in its list.
    const list = (await t.call('GET', `/transactions?customerId=${a.customerId}&status=PENDING`)).json() as { data: Array<{ id: string; agentId?: string }> };
    const tx = list.data.find((x) => x.agentId === a.agentId)!;
    expect(tx).toBeDefined();
    expect(await balanceOf(t, a.src)).toEqual({ available: 50_000, total: 50_000 });
    const approved = await t.call('POST', `/transactions/${tx.id}/approve`);
    expect(approved.statusCode, approved.body).toBe(200);
    expect(approved.json()).toMatchObject({ id: tx.id, type: 'OUTGOING', status: 'PROCESSING' });
    expect(((await t.call('GET', `/agents/me/actions/${pending.id}`, undefined, a.h)).json() as Action)).toMatchObject({ status: 'APPROVED', transaction: { id: tx.id } });
    await advanceAndDeliver(t, 5);
    expect(await balanceOf(t, a.src)).toEqual({ available: 43_000, total: 43_000 });

    await t.call('PATCH', `/agents/${a.agentId}/policy`, { accountRestrictions: { accountRules: [{ accountId: a.src, executionMode: 'AUTO' }] } });
    expect(((await transferOut(a.h, a.src, a.ext, 1_000)).json() as Action).status).toBe('APPROVED');
    await assertLedgerInvariants(t.store);
    await assertTransactionsAccounted(t.store);
  });

  it('rejection: nothing moves, the action is REJECTED with its reason, the transaction ends', async () => {
    const a = await setup(policy({ defaultExecutionMode: 'APPROVAL_REQUIRED' }), 20_000);
    const { res } = await execute(a.h, a.src, a.ext, 3_000);
    const pending = res.json() as Action;
    const rej = await t.call('POST', `/agents/${a.agentId}/actions/${pending.id}/reject`, { reason: 'Too risky' });
    expect(rej.statusCode, rej.body).toBe(200);
    expect(rej.json()).toMatchObject({ status: 'REJECTED', rejectionReason: 'Too risky' });
    expect((rej.json() as Action).transaction).toBeUndefined();
    const tx = (await t.call('GET', `/transactions/${pending.quote!.transactionId}`)).json() as { status: string; failureReason: string };
    expect(tx).toMatchObject({ status: 'FAILED', failureReason: 'COMPLIANCE_REJECTED' });
    await advanceAndDeliver(t, 10);
    expect(await balanceOf(t, a.src)).toEqual({ available: 20_000, total: 20_000 });
    envelope(await t.call('POST', `/agents/${a.agentId}/actions/${pending.id}/approve`), 409, 'TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL');
    envelope(await t.call('POST', `/transactions/${pending.quote!.transactionId}/approve`), 409, 'TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL');
    expect(receiver.got.some((r) => r.json.type === 'AGENT_ACTION.REJECTED' && (r.json.data as Action).id === pending.id)).toBe(true);
    // Through POST /transactions/{id}/reject too.
    const second = (await transferOut(a.h, a.src, a.ext, 1_000)).json() as Action;
    const list = (await t.call('GET', `/agents/approvals?agentId=${a.agentId}`)).json() as { data: Action[] };
    expect(list.data.map((x) => x.id)).toEqual([second.id]);
    const row = await t.store.db.withTables<{ agent_actions: { id: string; transaction_id: string } }>().selectFrom('agent_actions').select('transaction_id').where('id', '=', second.id).executeTakeFirstOrThrow();
    expect((await t.call('POST', `/transactions/${row.transaction_id}/reject`, {})).statusCode).toBe(200);
    expect(((await t.call('GET', `/agents/me/actions/${second.id}`, undefined, a.h)).json() as Action).status).toBe('REJECTED');
    expect(await balanceOf(t, a.src)).toEqual({ available: 20_000, total: 20_000 });
    await assertLedgerInvariants(t.store);
  });

  it('an approval after expiry fails: the action FAILS (APPROVAL_EXPIRED) when its quote expires, nothing moved', async () => {
    const a = await setup(policy({ defaultExecutionMode: 'APPROVAL_REQUIRED' }), 20_000);
    const { res } = await execute(a.h, a.src, a.ext, 3_000);
    const pending = res.json() as Action;
    await advanceAndDeliver(t, 5 * 60 + 1);
    const failed = (await t.call('GET', `/agents/me/actions/${pending.id}`, undefined, a.h)).json() as Action;
    expect(failed).toMatchObject({ status: 'FAILED', failureReason: 'APPROVAL_EXPIRED', decidedBy: 'SYSTEM' });
    envelope(await t.call('POST', `/agents/${a.agentId}/actions/${pending.id}/approve`), 409, 'TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL');
    envelope(await t.call('POST', `/transactions/${pending.quote!.transactionId}/approve`), 409, 'TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL');
    expect(((await t.call('GET', `/transactions/${pending.quote!.transactionId}`)).json() as { status: string }).status).toBe('EXPIRED');
    expect(await balanceOf(t, a.src)).toEqual({ available: 20_000, total: 20_000 });
    expect(receiver.got.some((r) => r.json.type === 'AGENT_ACTION.FAILED' && (r.json.data as Action).id === pending.id)).toBe(true);
    await assertLedgerInvariants(t.store);
  });

  it('an approval re-checks the policy: a pending action of a paused agent fails, nothing moves', async () => {
    const a = await setup(policy({ defaultExecutionMode: 'APPROVAL_REQUIRED' }), 20_000);
    const pending = (await transferOut(a.h, a.src, a.ext, 2_000)).json() as Action;
    await t.call('PATCH', `/agents/${a.agentId}`, { isPaused: true });
    const res = await t.call('POST', `/agents/${a.agentId}/actions/${pending.id}/approve`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ status: 'FAILED', failureReason: 'POLICY_DENIED' });
    expect(await balanceOf(t, a.src)).toEqual({ available: 20_000, total: 20_000 });
    await assertLedgerInvariants(t.store);
  });

  it('an approved action whose execution is refused FAILS (EXECUTION_FAILED) and moves nothing; a deleted agent’s pending action fails too', async () => {
    const a = await setup(policy({ defaultExecutionMode: 'APPROVAL_REQUIRED' }), 10_000);
    const pending = (await transferOut(a.h, a.src, a.ext, 7_000)).json() as Action;
    // The platform spends the balance meanwhile.
    const spent = await t.call('POST', '/quotes', { ...quoteRequest(a.src, a.ext, 9_000), immediatelyExecute: true });
    expect(spent.statusCode, spent.body).toBe(201);
    const res = await t.call('POST', `/agents/${a.agentId}/actions/${pending.id}/approve`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ status: 'FAILED', failureReason: 'EXECUTION_FAILED' });
    expect((res.json() as Action).transaction).toBeUndefined();
    await advanceAndDeliver(t, 5);
    expect(await balanceOf(t, a.src)).toEqual({ available: 1_000, total: 1_000 });

    const second = (await transferOut(a.h, a.src, a.ext, 500)).json() as Action;
    expect((await t.call('DELETE', `/agents/${a.agentId}`)).statusCode).toBe(204);
    // The action still belongs to the (deleted) agent's id: approving it fails, nothing moves.
    const row = await t.store.db.withTables<{ agent_actions: { id: string; transaction_id: string } }>().selectFrom('agent_actions').select('transaction_id').where('id', '=', second.id).executeTakeFirstOrThrow();
    const tx = await t.call('POST', `/transactions/${row.transaction_id}/approve`);
    expect(tx.statusCode, tx.body).toBe(200);
    expect(tx.json()).toMatchObject({ status: 'FAILED' });
    expect(await balanceOf(t, a.src)).toEqual({ available: 1_000, total: 1_000 });
    await assertLedgerInvariants(t.store);
    await assertTransactionsAccounted(t.store);
  });

  it('an Idempotency-Key replays an agent’s transfer: one action, one payment', async () => {
    const a = await setup(policy(), 10_000);
    const headers = { ...a.h, 'idempotency-key': 'agent-key-1' };
    const first = await t.call('POST', '/agents/me/transfer-out', { source: { accountId: a.src }, destination: { accountId: a.ext }, amount: 1_000 }, headers);
    const again = await t.call('POST', '/agents/me/transfer-out', { source: { accountId: a.src }, destination: { accountId: a.ext }, amount: 1_000 }, headers);
    expect(first.statusCode, first.body).toBe(201);
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect((again.json() as Action).id).toBe((first.json() as Action).id);
    expect(((await t.call('GET', '/agents/me/actions', undefined, a.h)).json() as { data: unknown[] }).data).toHaveLength(1);
    expect(await balanceOf(t, a.src)).toEqual({ available: 9_000, total: 10_000 });
    await assertLedgerInvariants(t.store);
  });

  it('limits in another currency: amounts are converted at the sandbox mid rate before the comparison', async () => {
    const a = await setup(policy({ spendingLimits: { currency: 'EUR', perTransactionLimit: 1_000_000, dailyLimit: 1_000_000 } }), 10_000);
    expect((await transferOut(a.h, a.src, a.ext, 1_000)).statusCode).toBe(201);
    const me = (await t.call('GET', '/agents/me', undefined, a.h)).json() as { usage: { dailySpend: number } };
    // 10.00 USD in EUR cents: less than 1,000 (EUR is worth more than USD), more than 0.
    expect(me.usage.dailySpend).toBeGreaterThan(500);
    expect(me.usage.dailySpend).toBeLessThan(1_000);
    await t.call('PATCH', `/agents/${a.agentId}/policy`, { spendingLimits: { perTransactionLimit: me.usage.dailySpend - 1 } });
    expect(envelope(await transferOut(a.h, a.src, a.ext, 1_000), 403, 'FORBIDDEN').details).toMatchObject({ reason: 'PER_TRANSACTION_LIMIT_EXCEEDED', currency: 'EUR', originalCurrency: 'USD', originalAmount: 1_000 });
    // The partial update kept the other limits.
    const p = ((await t.call('GET', `/agents/${a.agentId}`)).json() as { policy: Policy }).policy;
    expect(p.spendingLimits).toMatchObject({ currency: 'EUR', dailyLimit: 1_000_000, perTransactionLimit: me.usage.dailySpend - 1 });
    await assertLedgerInvariants(t.store);
  });

  it('lists agents with filters and pages', async () => {
    const c = await newCustomer(t, ['USD']);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(((await t.call('POST', '/agents', { name: `L${i}`, customerId: c.id, policy: policy() })).json() as { agent: { id: string } }).agent.id);
    const page1 = (await t.call('GET', `/agents?customerId=${c.id}&limit=2`)).json() as { data: Array<{ id: string }>; hasMore: boolean; nextCursor: string; totalCount: number };
    expect(page1).toMatchObject({ hasMore: true, totalCount: 3 });
    expect(page1.data.map((x) => x.id)).toEqual([ids[2], ids[1]]);
    const page2 = (await t.call('GET', `/agents?customerId=${c.id}&limit=2&cursor=${page1.nextCursor}`)).json() as { data: Array<{ id: string }>; hasMore: boolean };
    expect(page2.data.map((x) => x.id)).toEqual([ids[0]]);
    expect(((await t.call('GET', `/agents?customerId=${c.id}&isConnected=true`)).json() as { data: unknown[] }).data).toEqual([]);
    envelope(await t.call('PATCH', `/agents/${ids[0]}`, {}), 400, 'INVALID_INPUT');
    envelope(await t.call('GET', '/agents?colour=blue'), 400, 'INVALID_INPUT');
  });

  // ---- Pause, delete, tenancy -------------------------------------------------------------

  it('pause refuses the agent at once (GET /agents/me still answers); resume restores it; delete revokes the token at once', async () => {
    const a = await setup();
    expect((await t.call('GET', '/agents/me/transactions', undefined, a.h)).statusCode).toBe(200);
    const paused = await t.call('PATCH', `/agents/${a.agentId}`, { isPaused: true, name: 'Renamed' });
    expect(paused.json()).toMatchObject({ isPaused: true, name: 'Renamed' });
    // agentListTransactions declares no 403: the refusal is a 401 with the same reason.
    expect(envelope(await t.call('GET', '/agents/me/transactions', undefined, a.h), 401, 'UNAUTHORIZED').details?.reason).toBe('AGENT_PAUSED');
    expect(envelope(await transferOut(a.h, a.src, a.ext, 100), 403, 'FORBIDDEN').details?.reason).toBe('AGENT_PAUSED');
    expect(((await t.call('GET', '/agents/me', undefined, a.h)).json() as { isPaused: boolean }).isPaused).toBe(true);
    const audit = (await t.call('GET', `/agents/${a.agentId}/audit`)).json() as { data: Array<{ decision: string; reason: string; operation: string }> };
    expect(audit.data[0]).toMatchObject({ decision: 'DENIED', reason: 'AGENT_PAUSED', operation: 'TRANSFER_OUT' });
    expect(((await t.call('GET', `/agents?isPaused=true&customerId=${a.customerId}`)).json() as { data: Array<{ id: string }> }).data.map((x) => x.id)).toEqual([a.agentId]);
    await t.call('PATCH', `/agents/${a.agentId}`, { isPaused: false });
    expect((await t.call('GET', '/agents/me/transactions', undefined, a.h)).statusCode).toBe(200);

    expect((await t.call('DELETE', `/agents/${a.agentId}`)).statusCode).toBe(204);
    envelope(await t.call('GET', '/agents/me', undefined, a.h), 401, 'UNAUTHORIZED');
    envelope(await t.call('GET', `/agents/${a.agentId}`), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('DELETE', `/agents/${a.agentId}`), 404, 'REFERENCE_NOT_FOUND');
  });

  it('binds the agent to its customer and platform: other customers’ and platforms’ ids answer 404', async () => {
    const a = await setup();
    const b = await setup();
    // b's transaction, external account, internal account, quote and action.
    const bAction = (await transferOut(b.h, b.src, b.ext, 100)).json() as Action;
    const bTx = bAction.transaction!.id;
    const bQuote = ((await t.call('POST', '/agents/me/quotes', quoteRequest(b.src, b.ext, 100), b.h)).json() as { id: string }).id;
    envelope(await t.call('GET', `/agents/me/transactions/${bTx}`, undefined, a.h), 404, 'TRANSACTION_NOT_FOUND');
    expect(((await t.call('GET', '/agents/me/transactions', undefined, a.h)).json() as { data: Array<{ id: string }> }).data.map((x) => x.id)).not.toContain(bTx);
    envelope(await t.call('GET', `/agents/me/external-accounts/${b.ext}`, undefined, a.h), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('DELETE', `/agents/me/external-accounts/${b.ext}`, undefined, a.h), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('GET', `/agents/me/quotes/${bQuote}`, undefined, a.h), 404, 'QUOTE_NOT_FOUND');
    envelope(await t.call('POST', `/agents/me/quotes/${bQuote}/execute`, undefined, a.h), 404, 'QUOTE_NOT_FOUND');
    envelope(await t.call('GET', `/agents/me/actions/${bAction.id}`, undefined, a.h), 404, 'REFERENCE_NOT_FOUND');
    envelope(await transferOut(a.h, b.src, a.ext, 100), 404, 'REFERENCE_NOT_FOUND');
    envelope(await transferOut(a.h, a.src, b.ext, 100), 404, 'REFERENCE_NOT_FOUND');
    // Creates that declare no 404 name the field instead (400 INVALID_INPUT).
    const named = (res: Awaited<ReturnType<TestApp['call']>>) => (envelope(res, 400, 'INVALID_INPUT').details?.errors as Array<{ field: string }>).map((e) => e.field);
    expect(named(await t.call('POST', '/agents/me/quotes', quoteRequest(b.src, a.ext, 100), a.h))).toEqual(['source.accountId']);
    expect(named(await t.call('POST', '/agents/me/quotes', quoteRequest(a.src, b.ext, 100), a.h))).toEqual(['destination.accountId']);
    expect(named(await t.call('POST', '/agents/me/external-accounts', { customerId: b.customerId, currency: 'USD', accountInfo: {} }, a.h))).toEqual(['customerId']);
    envelope(await t.call('POST', `/agents/${a.agentId}/actions/${bAction.id}/approve`), 404, 'REFERENCE_NOT_FOUND');

    // Another platform sees none of it.
    const other = await otherPlatformAuth(t);
    envelope(await t.call('GET', `/agents/${a.agentId}`, undefined, other), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('PATCH', `/agents/${a.agentId}`, { isPaused: true }, other), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('PATCH', `/agents/${a.agentId}/policy`, { permissions: [] }, other), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('POST', `/agents/${a.agentId}/device-codes`, undefined, other), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('POST', `/agents/${b.agentId}/actions/${bAction.id}/reject`, {}, other), 404, 'REFERENCE_NOT_FOUND');
    expect(envelope(await t.call('POST', '/agents', { name: 'X', customerId: a.customerId, policy: policy() }, other), 400, 'INVALID_INPUT').details?.errors).toEqual([expect.objectContaining({ field: 'customerId' })]);
    expect(((await t.call('GET', '/agents', undefined, other)).json() as { data: unknown[] }).data).toEqual([]);
    expect(((await t.call('GET', '/agents/approvals', undefined, other)).json() as { data: unknown[] }).data).toEqual([]);
    expect(((await t.call('GET', `/agents/${a.agentId}`)).json() as { isPaused: boolean }).isPaused).toBe(false);
    await assertLedgerInvariants(t.store);
  });

  // ---- Audit, validation, pulls ---------------------------------------------------------------

  it('keeps an audit trail: denials with their rule, decisions with their approver and transaction', async () => {
    const a = await setup(policy({ spendingLimits: { currency: 'USD', perTransactionLimit: 1_000 }, approvalThresholds: { amount: 500 } }));
    envelope(await transferOut(a.h, a.src, a.ext, 1_001), 403, 'FORBIDDEN');
    const pending = (await transferOut(a.h, a.src, a.ext, 600)).json() as Action;
    await t.call('POST', `/agents/${a.agentId}/actions/${pending.id}/approve`);
    const res = await t.call('GET', `/agents/${a.agentId}/audit`);
    expect(res.statusCode, res.body).toBe(200);
    const entries = (res.json() as { data: Array<{ decision: string; reason: string; actor: string; operation: string; transactionId?: string; actionId?: string }> }).data;
    expect(entries.map((e) => e.decision)).toEqual(['APPROVED', 'APPROVAL_REQUIRED', 'DENIED']);
    expect(entries[2]).toMatchObject({ operation: 'TRANSFER_OUT', reason: 'PER_TRANSACTION_LIMIT_EXCEEDED', actor: a.agentId });
    expect(entries[1]).toMatchObject({ actionId: pending.id, reason: 'APPROVAL_THRESHOLD_EXCEEDED', transactionId: expect.stringMatching(/^Transaction:/) });
    expect(entries[0]).toMatchObject({ actionId: pending.id, actor: expect.not.stringMatching(new RegExp(a.agentId)), transactionId: entries[1]!.transactionId });
    envelope(await t.call('GET', '/agents/Agent:00000000-0000-7000-8000-000000000000/audit'), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('GET', `/agents/${a.agentId}/audit`, undefined, await otherPlatformAuth(t)), 404, 'REFERENCE_NOT_FOUND');
    await assertLedgerInvariants(t.store);
  });

  it('a pull (transfer-in) by an agent is an action too', async () => {
    const a = await setup(policy(), 0);
    const res = await t.call('POST', '/agents/me/transfer-in', { source: { accountId: a.ext }, destination: { accountId: a.src }, amount: 2_000 }, a.h);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ status: 'APPROVED', type: 'TRANSFER_IN', transaction: { type: 'INCOMING', agentId: a.agentId } });
    await advanceAndDeliver(t, 5);
    expect((await balanceOf(t, a.src)).total).toBe(2_000);
    await assertLedgerInvariants(t.store);
  });

  it('refuses bad input with every invalid field, and unknown ids with 404 (400 naming the field on a create that declares no 404)', async () => {
    const c = await newCustomer(t, ['USD']);
    const bad = envelope(await t.call('POST', '/agents', { name: '', customerId: c.id, policy: { permissions: ['FLY'], defaultExecutionMode: 'SOMETIMES' } }), 400, 'INVALID_INPUT');
    const fields = (bad.details?.errors as Array<{ field: string }>).map((e) => e.field);
    expect(fields).toEqual(expect.arrayContaining(['name', 'policy.permissions.0', 'policy.defaultExecutionMode', 'policy.spendingLimits']));
    const cur = envelope(await t.call('POST', '/agents', { name: 'A', customerId: c.id, policy: policy({ spendingLimits: { currency: 'XYZ', perTransactionLimit: 1 } }) }), 400, 'INVALID_INPUT');
    expect(cur.details?.errors).toEqual([expect.objectContaining({ field: 'policy.spendingLimits.currency' })]);
    // createAgent declares no 404: an unknown customer is 400 naming customerId.
    expect(envelope(await t.call('POST', '/agents', { name: 'A', customerId: 'Customer:00000000-0000-7000-8000-000000000000', policy: policy() }), 400, 'INVALID_INPUT').details?.errors).toEqual([expect.objectContaining({ field: 'customerId' })]);
    envelope(await t.call('PATCH', '/agents/Agent:00000000-0000-7000-8000-000000000000', { name: 'x' }), 404, 'REFERENCE_NOT_FOUND');
    envelope(await t.call('PATCH', '/agents/nope', {}), 400, 'INVALID_INPUT');
    const a = await setup();
    envelope(await t.call('POST', '/agents/me/quotes', { ...quoteRequest(a.src, a.ext, 100), immediatelyExecute: true }, a.h), 400, 'INVALID_INPUT');
    // A real-time funded quote would be paid by a deposit, never by an execute the policy decides.
    const realtime = envelope(await t.call('POST', '/agents/me/quotes', { ...quoteRequest(a.src, a.ext, 100), source: { sourceType: 'REALTIME_FUNDING', currency: 'USD' } }, a.h), 400, 'INVALID_INPUT');
    expect(realtime.details?.errors).toEqual([expect.objectContaining({ field: 'source.sourceType' })]);
    envelope(await t.call('POST', '/agents/me/quotes/Quote:00000000-0000-7000-8000-000000000000/execute', undefined, a.h), 404, 'QUOTE_NOT_FOUND');
    envelope(await transferOut(a.h, a.src, a.ext, -5), 400, 'INVALID_INPUT');
  });
});
