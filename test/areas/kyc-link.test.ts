import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { envelope, makeApp, STORE, type TestApp } from '../helpers.js';

// Hosted KYC links: POST /customers/{id}/kyc-link and the hosted page it points to (black box).

const TTL_MS = 60 * 60_000;
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('\0\0\0\rIHDR fake png body')]);

const COMPLETE = {
  birthDate: '1990-01-01',
  nationality: 'GB',
  idType: 'NON_US_TAX_ID',
  identifier: 'AB123456C',
  countryOfIssuance: 'GB',
  'address.line1': '10 Downing Street',
  'address.city': 'London',
  'address.postalCode': 'SW1A 2AA',
  'address.country': 'GB',
  documentType: 'PASSPORT',
  documentCountry: 'GB',
};

function form(fields: Record<string, string>, file?: { bytes: Buffer; name: string }): FormData {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  if (file) fd.append('document', new Blob([file.bytes], { type: 'application/octet-stream' }), file.name);
  return fd;
}

describe(`KYC links (${STORE})`, () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await makeApp();
  });
  afterEach(async () => t.close());

  async function customer(body: Record<string, unknown> = {}): Promise<Record<string, any>> {
    const res = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Ada Lovelace', ...body });
    expect(res.statusCode, res.body).toBe(201);
    return res.json();
  }

  async function link(customerId: string, body?: unknown): Promise<Record<string, any>> {
    const res = await t.call('POST', `/customers/${customerId}/kyc-link`, body);
    expect(res.statusCode, res.body).toBe(201);
    return res.json();
  }

  const pathOf = (kycUrl: string) => new URL(kycUrl).pathname;
  const open = (kycUrl: string) => t.app.inject({ method: 'GET', url: pathOf(kycUrl) });
  const submit = (kycUrl: string, fd: FormData) => t.app.inject({ method: 'POST', url: pathOf(kycUrl), payload: fd });

  describe('POST /customers/{id}/kyc-link', () => {
    it('returns a single-use hosted URL on this server, its expiry and the provider, and leaves the customer as it was', async () => {
      const c = await customer();
      t.clock.advance(5_000);
      const l = await link(c.id);
      expect(Object.keys(l).sort()).toEqual(['expiresAt', 'kycUrl', 'provider', 'token']);
      expect(l.provider).toBe('SUMSUB');
      expect(l.kycUrl).toMatch(/^http:\/\/localhost(:\d+)?\/hosted\/kyc\/[A-Za-z0-9_-]{32}$/);
      expect(l.kycUrl.endsWith(`/hosted/kyc/${l.token}`)).toBe(true);
      expect(l.expiresAt).toBe(new Date(t.clock.nowMs() + TTL_MS).toISOString());

      const again = await link(c.id);
      expect(again.token).not.toBe(l.token);
      const after = (await t.call('GET', `/customers/${c.id}`)).json();
      expect(after.kycStatus).toBe('UNVERIFIED');
      expect(after.updatedAt).toBe(c.updatedAt);
    });

    it('accepts a redirectUri and rejects one that is not an http(s) URL', async () => {
      const c = await customer();
      await link(c.id, { redirectUri: 'https://app.example.com/onboarding/done' });
      const e = envelope(await t.call('POST', `/customers/${c.id}/kyc-link`, { redirectUri: 'javascript:alert(1)' }), 400, 'INVALID_INPUT');
      expect((e.details!.errors as Array<{ field: string }>).map((x) => x.field)).toEqual(['redirectUri']);
    });

    it('answers 404 USER_NOT_FOUND for an unknown customer', async () => {
      envelope(await t.call('POST', '/customers/Customer:01950000-0000-7000-8000-000000000000/kyc-link'), 404, 'USER_NOT_FOUND');
    });

    it('answers 409 for an EU customer until every contact channel on file is VERIFIED', async () => {
      const c = await customer({ region: 'FR', email: 'ada@example.fr', phoneNumber: '+33612345678' });
      const e = envelope(await t.call('POST', `/customers/${c.id}/kyc-link`), 409, 'CONFLICT');
      expect(e.details!.unverifiedChannels).toEqual(['email', 'phone']);
      await t.call('POST', `/customers/${c.id}/verify-email`);
      expect((await t.call('POST', `/customers/${c.id}/verify-email/confirm`, { code: '123456' })).statusCode).toBe(200);
      envelope(await t.call('POST', `/customers/${c.id}/kyc-link`), 409, 'CONFLICT');
      await t.call('POST', `/customers/${c.id}/verify-phone`);
      expect((await t.call('POST', `/customers/${c.id}/verify-phone/confirm`, { code: '123456' })).statusCode).toBe(200);
      await link(c.id);
    });
  });

  describe('GET /customers/kyc-link (the official client\'s getKYCLink)', () => {
    const getLink = (query: Record<string, string>, headers?: Record<string, string>) => t.call('GET', `/customers/kyc-link?${new URLSearchParams(query).toString()}`, undefined, headers);

    it('an existing customer by platformCustomerId: {customerId, kycUrl, platformCustomerId}, a single-use link to the same page', async () => {
      const c = await customer({ platformCustomerId: 'cust-ada-1' });
      const res = await getLink({ platformCustomerId: 'cust-ada-1', redirectUri: 'https://app.example.com/onboarding/done' });
      expect(res.statusCode, res.body).toBe(200);
      const l = res.json() as { customerId: string; kycUrl: string; platformCustomerId: string };
      expect(Object.keys(l).sort()).toEqual(['customerId', 'kycUrl', 'platformCustomerId']);
      expect(l.customerId).toBe(c.id);
      expect(l.platformCustomerId).toBe('cust-ada-1');
      expect(l.kycUrl).toMatch(/^http:\/\/localhost(:\d+)?\/hosted\/kyc\/[A-Za-z0-9_-]{32}$/);
      const page = await open(l.kycUrl);
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('Ada Lovelace');
      // Submitting it completes the verification and uses the link up, as a POST-minted one.
      const done = await submit(l.kycUrl, form(COMPLETE, { bytes: PNG, name: 'passport.png' }));
      expect(done.statusCode, done.body).toBe(200);
      expect(done.body).toContain('href="https://app.example.com/onboarding/done"');
      expect((await t.call('GET', `/customers/${c.id}`)).json().kycStatus).toBe('APPROVED');
      expect((await open(l.kycUrl)).statusCode).not.toBe(200);
      // Each call mints a fresh link for the same customer.
      const again = (await getLink({ platformCustomerId: 'cust-ada-1' })).json() as { customerId: string; kycUrl: string };
      expect(again.customerId).toBe(c.id);
      expect(again.kycUrl).not.toBe(l.kycUrl);
    });

    it('an unknown platformCustomerId creates an UNVERIFIED INDIVIDUAL customer with that id (once)', async () => {
      const res = await getLink({ platformCustomerId: 'brand-new-7' });
      expect(res.statusCode, res.body).toBe(200);
      const l = res.json() as { customerId: string; kycUrl: string; platformCustomerId: string };
      expect(l.customerId).toMatch(/^Customer:[0-9a-f-]{36}$/);
      const created = (await t.call('GET', `/customers/${encodeURIComponent(l.customerId)}`)).json();
      expect(created).toMatchObject({ id: l.customerId, platformCustomerId: 'brand-new-7', customerType: 'INDIVIDUAL', kycStatus: 'UNVERIFIED', isDeleted: false });
      expect((await open(l.kycUrl)).statusCode).toBe(200);
      const second = (await getLink({ platformCustomerId: 'brand-new-7' })).json() as { customerId: string };
      expect(second.customerId).toBe(l.customerId);
      const list = (await t.call('GET', '/customers?platformCustomerId=brand-new-7')).json() as { data: unknown[] };
      expect(list.data).toHaveLength(1);
      // No end-user terms on this unregulated platform: no internal accounts yet.
      expect((await t.call('GET', `/customers/internal-accounts?customerId=${encodeURIComponent(l.customerId)}`)).json().data).toEqual([]);
    });

    it('400 without platformCustomerId or with a redirectUri that is not an http(s) URL, nothing created', async () => {
      const e = envelope(await t.call('GET', '/customers/kyc-link'), 400, 'INVALID_INPUT');
      expect((e.details!.errors as Array<{ field: string }>).map((x) => x.field)).toEqual(['platformCustomerId']);
      const bad = envelope(await getLink({ platformCustomerId: 'never-made', redirectUri: 'javascript:alert(1)' }), 400, 'INVALID_INPUT');
      expect((bad.details!.errors as Array<{ field: string }>).map((x) => x.field)).toEqual(['redirectUri']);
      expect((await t.call('GET', '/customers?platformCustomerId=never-made')).json().data).toEqual([]);
    });

    it('409 for an EU customer whose contact channels are not verified; another platform gets its own customer', async () => {
      const eu = await customer({ platformCustomerId: 'eu-1', region: 'FR', email: 'ada@example.fr' });
      const e = envelope(await getLink({ platformCustomerId: 'eu-1' }), 409, 'CONFLICT');
      expect(e.details).toMatchObject({ customerId: eu.id, unverifiedChannels: ['email'] });
      const other = await t.call('POST', '/admin/platforms', { name: 'Other' }, { authorization: 'Bearer test-admin-key' });
      const cred = other.json().credentials as { clientId: string; clientSecret: string };
      const auth = { authorization: `Basic ${Buffer.from(`${cred.clientId}:${cred.clientSecret}`).toString('base64')}` };
      const theirs = await getLink({ platformCustomerId: 'eu-1' }, auth);
      expect(theirs.statusCode, theirs.body).toBe(200);
      expect((theirs.json() as { customerId: string }).customerId).not.toBe(eu.id);
    });

    it('is marked as an extension in the OpenAPI document', async () => {
      const doc = (await t.app.inject({ method: 'GET', url: '/2025-10-13/openapi.json' })).json() as { paths: Record<string, Record<string, Record<string, unknown>>> };
      expect(doc.paths['/customers/kyc-link']!.get!['x-extension']).toBe(true);
      expect(doc.paths['/customers/kyc-link']!.get!.operationId).toBe('getCustomerKycLink');
    });
  });

  describe('the hosted page', () => {
    it('shows the customer’s name and what is missing, with no scripts or external assets', async () => {
      const c = await customer();
      const l = await link(c.id);
      const res = await open(l.kycUrl);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.headers['cache-control']).toBe('no-store');
      const page = res.body;
      expect(page).toContain('Ada Lovelace');
      expect(page).toContain('Still needed');
      for (const field of ['birthDate', 'nationality', 'idType', 'identifier', 'address']) expect(page).toContain(`<strong>${field}</strong>`);
      expect(page).not.toContain('<strong>fullName</strong>');
      expect(page).toMatch(/identity document/i);
      expect(page).toContain('enctype="multipart/form-data"');
      expect(page).toContain(`action="/hosted/kyc/${l.token}"`);
      expect(page).not.toMatch(/<script|<link|src=|https?:\/\//i);
    });

    it('completes the verification with data and a PNG: the customer is APPROVED and the link is used', async () => {
      const c = await customer();
      const l = await link(c.id, { redirectUri: 'https://app.example.com/onboarding/done' });
      t.clock.advance(60_000);
      const res = await submit(l.kycUrl, form(COMPLETE, { bytes: PNG, name: 'passport.png' }));
      expect(res.statusCode, res.body).toBe(200);
      expect(res.body).toContain('APPROVED');
      expect(res.body).toContain('href="https://app.example.com/onboarding/done"');

      const after = (await t.call('GET', `/customers/${c.id}`)).json();
      expect(after.kycStatus).toBe('APPROVED');
      expect(after.birthDate).toBe('1990-01-01');
      expect(after.address).toEqual({ line1: '10 Downing Street', city: 'London', postalCode: 'SW1A 2AA', country: 'GB' });
      expect(after.updatedAt).toBe(new Date(t.clock.nowMs()).toISOString());

      const docs = (await t.call('GET', `/documents?documentHolder=${encodeURIComponent(c.id)}`)).json();
      expect(docs.data).toHaveLength(1);
      expect(docs.data[0]).toMatchObject({ documentType: 'PASSPORT', country: 'GB', fileName: 'passport.png' });
      envelope(await t.call('DELETE', `/documents/${docs.data[0].id}`), 409, 'CONFLICT');

      const second = await open(l.kycUrl);
      expect(second.statusCode).toBe(410);
      expect(second.body).toMatch(/already used/i);
      const resubmit = await submit(l.kycUrl, form(COMPLETE, { bytes: PNG, name: 'passport.png' }));
      expect(resubmit.statusCode).toBe(410);
      expect((await t.call('GET', `/documents?documentHolder=${encodeURIComponent(c.id)}`)).json().totalCount).toBe(1);
    });

    it('decides by the name suffix like the API: 001 goes to manual review', async () => {
      const c = await customer({ fullName: 'Pat Pending 001' });
      const l = await link(c.id);
      const res = await submit(l.kycUrl, form(COMPLETE, { bytes: PNG, name: 'id.png' }));
      expect(res.statusCode, res.body).toBe(200);
      expect(res.body).toContain('PENDING_MANUAL_REVIEW');
      expect((await t.call('GET', `/customers/${c.id}`)).json().kycStatus).toBe('PENDING');
    });

    it('shows field errors for an invalid form and changes nothing; the link stays usable', async () => {
      const c = await customer();
      const l = await link(c.id);
      const res = await submit(l.kycUrl, form({ ...COMPLETE, birthDate: '1990-13-45', nationality: 'ZZ' }, { bytes: Buffer.from('plain text'), name: 'passport.jpg' }));
      expect(res.statusCode).toBe(400);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.body).toContain('calendar date');
      expect(res.body).toMatch(/JPEG, PNG or PDF/);
      expect(res.body).toContain('value="10 Downing Street"');
      expect(res.body).not.toContain('AB123456C'); // the identifier is write-only, on the page too
      const after = (await t.call('GET', `/customers/${c.id}`)).json();
      expect(after).not.toHaveProperty('birthDate');
      expect(after.updatedAt).toBe(c.updatedAt);
      expect((await t.call('GET', '/documents')).json().totalCount).toBe(0);
      expect((await open(l.kycUrl)).statusCode).toBe(200);
    });

    it('keeps the link open when the submission still misses something, and says what', async () => {
      const c = await customer();
      const l = await link(c.id);
      const res = await submit(l.kycUrl, form(COMPLETE));
      expect(res.statusCode, res.body).toBe(200);
      expect(res.body).toMatch(/identity document/i);
      expect(res.body).not.toContain('<strong>birthDate</strong>');
      const saved = (await t.call('GET', `/customers/${c.id}`)).json();
      expect(saved.birthDate).toBe('1990-01-01');
      expect(saved.kycStatus).toBe('UNVERIFIED');
      expect(saved).not.toHaveProperty('identifier');
      // The page shows the identifier as on file, never its value.
      const page = (await open(l.kycUrl)).body;
      expect(page).toContain('on file; leave empty to keep it');
      expect(page).not.toContain('AB123456C');
      expect(page).not.toContain('456C');

      const done = await submit(l.kycUrl, form({ documentType: 'NATIONAL_ID', documentCountry: 'GB' }, { bytes: PNG, name: 'id.png' }));
      expect(done.statusCode, done.body).toBe(200);
      expect((await t.call('GET', `/customers/${c.id}`)).json().kycStatus).toBe('APPROVED');
      expect((await open(l.kycUrl)).statusCode).toBe(410);
    });

    it('applies the API’s full-name rule: a single word (suffix aside) is marked invalid and keeps the link open', async () => {
      const c = await customer({ fullName: 'Ada' });
      const l = await link(c.id);
      const reason = 'Full name must contain a given name and a family name';
      const page = (await open(l.kycUrl)).body;
      expect(page).toContain(`<strong>fullName</strong>: ${reason}`);
      expect(page).toContain('Full name <span class="badge">invalid</span>');

      // Everything else complete, and the name typed again as one word plus the sandbox suffix.
      const res = await submit(l.kycUrl, form({ ...COMPLETE, fullName: 'Ada 001' }, { bytes: PNG, name: 'passport.png' }));
      expect(res.statusCode, res.body).toBe(200);
      expect(res.body).toContain(`<strong>fullName</strong>: ${reason}`);
      expect(res.body).not.toContain('<strong>birthDate</strong>');
      const saved = (await t.call('GET', `/customers/${c.id}`)).json();
      expect(saved.fullName).toBe('Ada 001');
      expect(saved.kycStatus).toBe('UNVERIFIED');
      const v = (await t.call('GET', `/verifications?customerId=${encodeURIComponent(c.id)}`)).json();
      expect(v.data[0].verificationStatus).toBe('RESOLVE_ERRORS');
      expect(v.data[0].errors).toEqual([{ resourceId: c.id, type: 'INVALID_FIELD', field: 'fullName', reason }]);
      expect((await open(l.kycUrl)).statusCode).toBe(200);

      const done = await submit(l.kycUrl, form({ fullName: 'Ada Lovelace 001' }));
      expect(done.statusCode, done.body).toBe(200);
      expect(done.body).toContain('PENDING_MANUAL_REVIEW');
      expect((await t.call('GET', `/customers/${c.id}`)).json().kycStatus).toBe('PENDING');
    });

    it('shows an expired page once the TTL has passed on the platform clock', async () => {
      const c = await customer();
      const l = await link(c.id);
      t.clock.advance(TTL_MS - 1);
      expect((await open(l.kycUrl)).statusCode).toBe(200);
      t.clock.advance(1);
      const res = await open(l.kycUrl);
      expect(res.statusCode).toBe(410);
      expect(res.body).toMatch(/expired/i);
      const post = await submit(l.kycUrl, form(COMPLETE, { bytes: PNG, name: 'p.png' }));
      expect(post.statusCode).toBe(410);
      expect((await t.call('GET', `/customers/${c.id}`)).json().kycStatus).toBe('UNVERIFIED');
    });

    it('shows a not-found page for an unknown token', async () => {
      const res = await t.app.inject({ method: 'GET', url: '/hosted/kyc/no-such-token' });
      expect(res.statusCode).toBe(404);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.body).toMatch(/does not exist/i);
    });

    it('runs the business flow: a registration number with an ordinary ending is approved without documents', async () => {
      const res = await t.call('POST', '/customers', {
        customerType: 'BUSINESS',
        businessInfo: { legalName: 'Acme Widgets Ltd', country: 'GB', incorporatedOn: '2010-05-01', taxId: 'GB123', registrationNumber: 'REG-777' },
      });
      expect(res.statusCode, res.body).toBe(201);
      const biz = res.json();
      const l = await link(biz.id);
      const page = await open(l.kycUrl);
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('Acme Widgets Ltd');
      expect(page.body).toContain('Everything needed is on file');
      const done = await submit(l.kycUrl, form({}));
      expect(done.statusCode, done.body).toBe(200);
      expect((await t.call('GET', `/customers/${biz.id}`)).json().kybStatus).toBe('APPROVED');
    });

    it('lists a business’s missing data, documents and owners under normal validation', async () => {
      const res = await t.call('POST', '/customers', {
        customerType: 'BUSINESS',
        businessInfo: { legalName: 'Review Co', country: 'GB', incorporatedOn: '2010-05-01', taxId: 'GB999', registrationNumber: 'REG-003' },
      });
      const biz = res.json();
      const l = await link(biz.id);
      const page = (await open(l.kycUrl)).body;
      expect(page).toContain('<strong>address</strong>');
      expect(page).toMatch(/CERTIFICATE_OF_INCORPORATION/);
      expect(page).toMatch(/beneficial owner/i);
    });
  });
});
