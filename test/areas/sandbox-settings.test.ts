import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_KEY, basic, envelope, makeApp, STORE, type TestApp } from '../helpers.js';
import { otherPlatformAuth } from '../money-helpers.js';

// GET/PATCH /sandbox/settings: a platform reads and sets its own sandbox options ("Skip
// verification paperwork", invitations set up), the options the operator's PATCH
// /admin/platforms/{id} sets; both go through the same service function, so each sees the other's change.

const ADMIN = { authorization: `Bearer ${ADMIN_KEY}` };

describe(`sandbox settings (${STORE})`, () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await makeApp();
  });
  afterEach(async () => t.close());

  const settings = async (headers?: Record<string, string>) => {
    const res = await t.call('GET', '/sandbox/settings', undefined, headers);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { skipVerificationPaperwork: boolean; invitationsConfigured: boolean };
  };
  const defaultPlatformId = async () => {
    const res = await t.call('GET', '/admin/platforms', undefined, ADMIN);
    return (res.json() as { data: Array<{ id: string; isDefault: boolean }> }).data.find((p) => p.isDefault)!.id;
  };

  it('reads the defaults, sets one option leaving the other, and the operator API sees the change (and the reverse)', async () => {
    expect(await settings()).toEqual({ skipVerificationPaperwork: false, invitationsConfigured: true });
    const res = await t.call('PATCH', '/sandbox/settings', { skipVerificationPaperwork: true });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ skipVerificationPaperwork: true, invitationsConfigured: true });
    expect(await settings()).toEqual({ skipVerificationPaperwork: true, invitationsConfigured: true });
    const id = await defaultPlatformId();
    expect((await t.call('GET', `/admin/platforms/${id}`, undefined, ADMIN)).json()).toMatchObject({ skipVerificationPaperwork: true, invitationsConfigured: true });
    const op = await t.call('PATCH', `/admin/platforms/${id}`, { invitationsConfigured: false }, ADMIN);
    expect(op.statusCode, op.body).toBe(200);
    expect(await settings()).toEqual({ skipVerificationPaperwork: true, invitationsConfigured: false });
    // An empty body changes nothing.
    const empty = await t.call('PATCH', '/sandbox/settings', {});
    expect(empty.json()).toEqual({ skipVerificationPaperwork: true, invitationsConfigured: false });
  });

  it('the options take effect: the name suffix decides KYC at create, invitations answer INVITATIONS_NOT_CONFIGURED', async () => {
    const person = async (fullName: string, umaAddress?: string) => {
      const res = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName, currencies: ['USD'], ...(umaAddress ? { umaAddress } : {}) });
      expect(res.statusCode, res.body).toBe(201);
      return res.json() as { kycStatus: string; umaAddress: string };
    };
    expect((await person('Before Change 002')).kycStatus).toBe('UNVERIFIED');
    expect((await t.call('PATCH', '/sandbox/settings', { skipVerificationPaperwork: true })).statusCode).toBe(200);
    expect((await person('After Change 002')).kycStatus).toBe('REJECTED');
    const uma = `$settings${Date.now().toString(36)}@sandbox.example.com`;
    await person('Ivy Inviter', uma);
    expect((await t.call('PATCH', '/sandbox/settings', { invitationsConfigured: false })).statusCode).toBe(200);
    envelope(await t.call('POST', '/invitations', { inviterUma: uma }), 400, 'INVITATIONS_NOT_CONFIGURED');
    expect((await t.call('PATCH', '/sandbox/settings', { invitationsConfigured: true })).statusCode).toBe(200);
    const inv = await t.call('POST', '/invitations', { inviterUma: uma });
    expect(inv.statusCode, inv.body).toBe(201);
  });

  it('is per platform; kept by a reset', async () => {
    const other = await otherPlatformAuth(t);
    expect((await t.call('PATCH', '/sandbox/settings', { skipVerificationPaperwork: true }, other)).statusCode).toBe(200);
    expect(await settings(other)).toEqual({ skipVerificationPaperwork: true, invitationsConfigured: true });
    expect(await settings()).toEqual({ skipVerificationPaperwork: false, invitationsConfigured: true });
    expect((await t.call('POST', '/sandbox/reset', undefined, other)).statusCode).toBe(200);
    expect((await settings(other)).skipVerificationPaperwork).toBe(true);
  });

  it('refuses a wrong body with every field named, a token without MANAGE with 403, no credentials with 401', async () => {
    const bad = envelope(await t.call('PATCH', '/sandbox/settings', { skipVerificationPaperwork: 'yes', invitationsConfigured: 1, other: true }), 400, 'INVALID_INPUT');
    const fields = (bad.details!.errors as Array<{ field: string }>).map((e) => e.field).sort();
    expect(fields).toEqual(['invitationsConfigured', 'other', 'skipVerificationPaperwork']);
    envelope(await t.call('PATCH', '/sandbox/settings', '[]'), 400);
    expect(await settings()).toEqual({ skipVerificationPaperwork: false, invitationsConfigured: true });
    const token = await t.call('POST', '/tokens', { name: 'viewer', permissions: ['VIEW'] });
    const viewer = { authorization: basic(token.json().clientId as string, token.json().clientSecret as string) };
    expect(await settings(viewer)).toEqual({ skipVerificationPaperwork: false, invitationsConfigured: true });
    envelope(await t.call('PATCH', '/sandbox/settings', { skipVerificationPaperwork: true }, viewer), 403, 'FORBIDDEN');
    envelope(await t.call('GET', '/sandbox/settings', undefined, { authorization: '' }), 401, 'UNAUTHORIZED');
    envelope(await t.call('PATCH', '/sandbox/settings', { skipVerificationPaperwork: true }, { authorization: basic('nobody', 'wrong') }), 401, 'UNAUTHORIZED');
    expect(await settings()).toEqual({ skipVerificationPaperwork: false, invitationsConfigured: true });
  });

  it('is declared in the served OpenAPI document as a sandbox extension', async () => {
    const doc = (await t.call('GET', '/openapi.json', undefined, { authorization: '' })).json() as {
      paths: Record<string, Record<string, { operationId: string; 'x-extension'?: boolean; tags: string[]; responses: Record<string, unknown>; requestBody?: unknown }>>;
    };
    const path = doc.paths['/sandbox/settings']!;
    expect(path.get).toMatchObject({ operationId: 'getSandboxSettings', 'x-extension': true, tags: ['Sandbox'] });
    expect(path.patch).toMatchObject({ operationId: 'updateSandboxSettings', 'x-extension': true, tags: ['Sandbox'] });
    expect(Object.keys(path.patch!.responses).sort()).toEqual(['200', '400', '401', '403', '500']);
    expect(path.patch!.requestBody).toBeDefined();
  });
});
