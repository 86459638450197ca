import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, advanceAndDeliver, envelope, makeApp, STORE, type TestApp, waitFor } from '../helpers.js';
import { otherPlatformAuth } from '../money-helpers.js';
import { Receiver } from '../webhook-receiver.js';

// UMA invitations: create (the platform's customer by UMA address, optional amount and
// expiry), get by code, claim from a second platform's customer (INVITATION.CLAIMED to the
// inviter's platform), claimed twice, cancel, expiry on the sandbox clock, and platforms
// without invitations configured.

interface Invitation {
  code: string;
  status: string;
  url: string;
  inviterUma: string;
  inviteeUma?: string;
  createdAt: string;
  claimedAt?: string;
  expiresAt?: string;
  firstName?: string;
  amountToSend?: { amount: number; currency: { code: string; decimals: number } };
}

describe(`invitations (${STORE})`, () => {
  let t: TestApp;
  let receiver: Receiver;
  let inviterUma: string;
  let other: Record<string, string>;
  let inviteeUma: string;

  const uid = () => Math.random().toString(36).slice(2, 10);
  async function customer(headers?: Record<string, string>): Promise<string> {
    const uma = `$inv${uid()}@sandbox.example.com`;
    const res = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Ivy Inviter', umaAddress: uma, currencies: ['USD'] }, headers);
    expect(res.statusCode, res.body).toBe(201);
    return uma;
  }
  async function create(body: Record<string, unknown>, headers?: Record<string, string>): Promise<Invitation> {
    const res = await t.call('POST', '/invitations', body, headers);
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as Invitation;
  }
  const nowOf = async (): Promise<number> => Date.parse(((await t.call('GET', '/sandbox/clock')).json() as { now: string }).now);

  beforeAll(async () => {
    t = await makeApp();
    receiver = await new Receiver().start();
    expect((await t.call('PATCH', '/config', { webhookEndpoint: receiver.url })).statusCode).toBe(200);
    inviterUma = await customer();
    other = await otherPlatformAuth(t);
    inviteeUma = await customer(other);
  });
  afterAll(async () => {
    await receiver.stop();
    await t.close();
  });

  it('creates a PENDING invitation with its code, url, amount in the inviter’s currency and expiry', async () => {
    const expiresAt = new Date((await nowOf()) + 3_600_000).toISOString();
    const inv = await create({ inviterUma, firstName: 'Alice', amountToSend: 5000, expiresAt });
    expect(inv).toMatchObject({ status: 'PENDING', inviterUma, firstName: 'Alice', amountToSend: { amount: 5000, currency: { code: 'USD', decimals: 2 } } });
    expect(inv.code).toMatch(/^[0-9a-f]{12}$/);
    expect(inv.url.endsWith(`/i/${inv.code}`)).toBe(true);
    expect(Date.parse(inv.expiresAt!)).toBe(Date.parse(expiresAt));
    expect(inv.inviteeUma).toBeUndefined();
    const got = await t.call('GET', `/invitations/${inv.code}`);
    expect(got.statusCode).toBe(200);
    expect(got.json()).toEqual(inv);
    // Its url is a page of this server showing it, without credentials.
    const page = await t.app.inject({ method: 'GET', url: new URL(inv.url).pathname });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.body).toContain(inv.code);
    expect(page.body).toContain('50.00 USD');
    expect(page.body).toContain('waiting to be claimed');
    expect((await t.app.inject({ method: 'GET', url: '/i/000000000000' })).statusCode).toBe(404);
    // A plain invitation has no amount and no expiry.
    const plain = await create({ inviterUma });
    expect(plain.amountToSend).toBeUndefined();
    expect(plain.expiresAt).toBeUndefined();
  });

  it('is claimed from a second platform’s UMA address once: INVITATION.CLAIMED to the inviter, then INVITATION_ALREADY_CLAIMED', async () => {
    const inv = await create({ inviterUma, amountToSend: 1250 });
    // The other platform reads and claims it by code.
    expect((await t.call('GET', `/invitations/${inv.code}`, undefined, other)).statusCode).toBe(200);
    const res = await t.call('POST', `/invitations/${inv.code}/claim`, { inviteeUma }, other);
    expect(res.statusCode, res.body).toBe(200);
    const claimed = res.json() as Invitation;
    expect(claimed).toMatchObject({ code: inv.code, status: 'CLAIMED', inviteeUma, inviterUma });
    expect(typeof claimed.claimedAt).toBe('string');
    expect(((await t.call('GET', `/invitations/${inv.code}`)).json() as Invitation).status).toBe('CLAIMED');

    const again = envelope(await t.call('POST', `/invitations/${inv.code}/claim`, { inviteeUma: `$x${uid()}@sandbox.example.com` }), 400, 'INVITATION_ALREADY_CLAIMED');
    expect(again.details).toMatchObject({ status: 'CLAIMED', inviteeUma });
    envelope(await t.call('POST', `/invitations/${inv.code}/cancel`), 400, 'INVITATION_ALREADY_CLAIMED');

    await t.running.webhooks.runDue();
    await waitFor(() => receiver.got.some((r) => (r.json.data as { code?: string }).code === inv.code));
    const hooks = receiver.got.filter((r) => (r.json.data as { code?: string }).code === inv.code);
    expect(hooks.map((h) => h.json.type)).toEqual(['INVITATION.CLAIMED']);
    expect(hooks[0]!.json.data).toMatchObject({ code: inv.code, status: 'CLAIMED', inviteeUma, amountToSend: { amount: 1250 } });
  });

  it('two concurrent claims: one wins, the other is INVITATION_ALREADY_CLAIMED', async () => {
    const inv = await create({ inviterUma });
    const [a, b] = await Promise.all([
      t.call('POST', `/invitations/${inv.code}/claim`, { inviteeUma }, other),
      t.call('POST', `/invitations/${inv.code}/claim`, { inviteeUma: `$y${uid()}@sandbox.example.com` }),
    ]);
    expect([a.statusCode, b.statusCode].sort()).toEqual([200, 400]);
    envelope([a, b].find((r) => r.statusCode === 400)!, 400, 'INVITATION_ALREADY_CLAIMED');
  });

  it('cancel: PENDING → CANCELLED, later claims INVITATION_CANCELLED; only the inviter’s platform cancels', async () => {
    const inv = await create({ inviterUma });
    const forbidden = envelope(await t.call('POST', `/invitations/${inv.code}/cancel`, undefined, other), 403, 'FORBIDDEN');
    expect(forbidden.message).toContain('only the platform that created it');
    expect(((await t.call('GET', `/invitations/${inv.code}`)).json() as { status: string }).status).toBe('PENDING');
    const res = await t.call('POST', `/invitations/${inv.code}/cancel`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ code: inv.code, status: 'CANCELLED' });
    envelope(await t.call('POST', `/invitations/${inv.code}/claim`, { inviteeUma }, other), 400, 'INVITATION_CANCELLED');
    envelope(await t.call('POST', `/invitations/${inv.code}/cancel`), 400, 'INVITATION_CANCELLED');
    expect(((await t.call('GET', `/invitations/${inv.code}`)).json() as Invitation).status).toBe('CANCELLED');
  });

  it('expires on the sandbox clock: EXPIRED, INVITATION.EXPIRED, and no claim or cancel after', async () => {
    const inv = await create({ inviterUma, expiresAt: new Date((await nowOf()) + 60_000).toISOString() });
    await advanceAndDeliver(t, 30);
    expect(((await t.call('GET', `/invitations/${inv.code}`)).json() as Invitation).status).toBe('PENDING');
    await advanceAndDeliver(t, 31);
    expect(((await t.call('GET', `/invitations/${inv.code}`)).json() as Invitation).status).toBe('EXPIRED');
    const claim = envelope(await t.call('POST', `/invitations/${inv.code}/claim`, { inviteeUma }, other), 400, 'INVALID_INPUT');
    expect(claim.details).toMatchObject({ status: 'EXPIRED' });
    envelope(await t.call('POST', `/invitations/${inv.code}/cancel`), 400, 'INVALID_INPUT');
    await waitFor(() => receiver.got.some((r) => (r.json.data as { code?: string }).code === inv.code));
    const hooks = receiver.got.filter((r) => (r.json.data as { code?: string }).code === inv.code);
    expect(hooks.map((h) => h.json.type)).toEqual(['INVITATION.EXPIRED']);
  });

  it('answers INVITATION_NOT_FOUND for an unknown code', async () => {
    envelope(await t.call('GET', '/invitations/000000000000'), 404, 'INVITATION_NOT_FOUND');
    envelope(await t.call('POST', '/invitations/000000000000/claim', { inviteeUma }), 404, 'INVITATION_NOT_FOUND');
    envelope(await t.call('POST', '/invitations/000000000000/cancel'), 404, 'INVITATION_NOT_FOUND');
  });

  it('refuses bad input: every invalid field, an inviter that is not the platform’s customer, a past expiry, the inviter claiming', async () => {
    const bad = envelope(await t.call('POST', '/invitations', { inviterUma: 'nope', amountToSend: 0, expiresAt: 'tomorrow' }), 400, 'INVALID_INPUT');
    expect((bad.details!.errors as Array<{ field: string }>).map((e) => e.field).sort()).toEqual(['amountToSend', 'expiresAt', 'inviterUma']);
    envelope(await t.call('POST', '/invitations', {}), 400, 'INVALID_INPUT');
    // The other platform's customer is not this platform's inviter.
    envelope(await t.call('POST', '/invitations', { inviterUma: inviteeUma }), 400, 'INVALID_UMA_ADDRESS');
    envelope(await t.call('POST', '/invitations', { inviterUma: `$nobody${uid()}@sandbox.example.com` }), 400, 'INVALID_UMA_ADDRESS');
    const past = envelope(await t.call('POST', '/invitations', { inviterUma, expiresAt: new Date((await nowOf()) - 1000).toISOString() }), 400, 'INVALID_INPUT');
    expect((past.details!.errors as Array<{ field: string }>)[0]!.field).toBe('expiresAt');
    const inv = await create({ inviterUma });
    envelope(await t.call('POST', `/invitations/${inv.code}/claim`, { inviteeUma: inviterUma }), 400, 'INVALID_UMA_ADDRESS');
    const badClaim = envelope(await t.call('POST', `/invitations/${inv.code}/claim`, { inviteeUma: 'not-an-address' }), 400, 'INVALID_INPUT');
    expect((badClaim.details!.errors as Array<{ field: string }>)[0]!.field).toBe('inviteeUma');
  });

  it('a platform without invitations configured gets INVITATIONS_NOT_CONFIGURED to create and to claim', async () => {
    const admin = { authorization: `Bearer ${ADMIN_KEY}` };
    const res = await t.call('POST', '/admin/platforms', { name: `NoInv ${uid()}`, invitationsConfigured: false }, admin);
    expect(res.statusCode, res.body).toBe(201);
    const created = res.json() as { platform?: { id: string; invitationsConfigured: boolean }; id?: string; credentials: { clientId: string; clientSecret: string } };
    const auth = { authorization: `Basic ${Buffer.from(`${created.credentials.clientId}:${created.credentials.clientSecret}`).toString('base64')}` };
    const uma = await customer(auth);
    envelope(await t.call('POST', '/invitations', { inviterUma: uma }, auth), 400, 'INVITATIONS_NOT_CONFIGURED');
    const inv = await create({ inviterUma });
    envelope(await t.call('POST', `/invitations/${inv.code}/claim`, { inviteeUma: uma }, auth), 400, 'INVITATIONS_NOT_CONFIGURED');
    // Turned on through /admin: it works.
    const platformId = created.platform?.id ?? created.id!;
    const patched = await t.call('PATCH', `/admin/platforms/${platformId}`, { invitationsConfigured: true }, admin);
    expect(patched.statusCode, patched.body).toBe(200);
    expect((patched.json() as { invitationsConfigured: boolean }).invitationsConfigured).toBe(true);
    expect((await t.call('POST', '/invitations', { inviterUma: uma }, auth)).statusCode).toBe(201);
    expect((await t.call('POST', `/invitations/${inv.code}/claim`, { inviteeUma: uma }, auth)).statusCode).toBe(200);
  });
});
