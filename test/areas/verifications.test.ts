import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listEvents } from '../../src/kernel/events.js';
import { ADMIN_KEY, basic, DEFAULT_AUTH, envelope, makeApp, STORE, type TestApp, V } from '../helpers.js';

// KYC/KYB verification, row by row of the specification's "Customer and verification
// (sandbox)" table: the default unregulated flow (collect, submit, resolve), regulated
// platforms, the "Skip verification paperwork" option, businesses and their owners.

interface VerificationError {
  resourceId: string;
  type: string;
  field?: string;
  acceptedDocumentTypes?: string[];
  reason: string;
}
interface Verification {
  id: string;
  customerId: string;
  verificationStatus: string;
  errors: VerificationError[];
  createdAt: string;
  updatedAt: string;
}

const ADMIN = { authorization: `Bearer ${ADMIN_KEY}` };
const ADDRESS = { line1: '1 Market Street', city: 'San Francisco', state: 'CA', postalCode: '94105', country: 'US' };
const IDENTITY = { birthDate: '1990-04-12', nationality: 'US', address: ADDRESS, idType: 'SSN', identifier: '123-45-6789' };
const IDENTITY_DOCS = ['PASSPORT', 'DRIVERS_LICENSE', 'NATIONAL_ID'];
const OWNER_INFO = { firstName: 'Ada', birthDate: '1980-01-02', nationality: 'US', address: ADDRESS, idType: 'SSN', identifier: '234-56-7890' };
const VERIFICATION_ID = /^Verification:[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A platform's credentials as request headers (the default platform: none needed). */
type Auth = Record<string, string>;

interface Harness {
  t: TestApp;
  call(method: 'GET' | 'POST' | 'PATCH', url: string, body?: unknown, auth?: Auth): Promise<LightMyRequestResponse>;
}

function harness(t: TestApp): Harness {
  return { t, call: (method, url, body, auth = {}) => t.call(method, url, body, auth) };
}

async function newPlatform(t: TestApp, opts: { regulated?: boolean; skipVerificationPaperwork?: boolean } = {}): Promise<{ id: string; auth: Auth }> {
  const res = await t.call('POST', '/admin/platforms', { name: `Platform ${Math.random().toString(36).slice(2, 8)}`, ...opts }, ADMIN);
  expect(res.statusCode, res.body).toBe(201);
  const body = res.json() as { platform: { id: string }; credentials: { clientId: string; clientSecret: string } };
  return { id: body.platform.id, auth: { authorization: basic(body.credentials.clientId, body.credentials.clientSecret) } };
}

async function setSkipPaperwork(t: TestApp, platformId: string, on: boolean): Promise<void> {
  const res = await t.call('PATCH', `/admin/platforms/${platformId}`, { skipVerificationPaperwork: on }, ADMIN);
  expect(res.statusCode, res.body).toBe(200);
  expect(res.json().skipVerificationPaperwork).toBe(on);
}

async function createIndividual(h: Harness, body: Record<string, unknown>, auth?: Auth): Promise<{ id: string; kycStatus: string }> {
  const res = await h.call('POST', '/customers', { customerType: 'INDIVIDUAL', ...body }, auth);
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: string; kycStatus: string };
}

async function createBusiness(h: Harness, registrationNumber: string | undefined, opts: { address?: boolean } = {}, auth?: Auth): Promise<{ id: string; kybStatus: string }> {
  const businessInfo: Record<string, unknown> = { legalName: `Acme ${registrationNumber ?? 'none'}`, country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789' };
  if (registrationNumber !== undefined) businessInfo.registrationNumber = registrationNumber;
  const res = await h.call('POST', '/customers', { customerType: 'BUSINESS', businessInfo, ...(opts.address ? { address: ADDRESS } : {}) }, auth);
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: string; kybStatus: string };
}

async function addOwner(h: Harness, customerId: string, lastName: string, auth?: Auth): Promise<{ id: string; kycStatus: string }> {
  const res = await h.call('POST', '/beneficial-owners', { customerId, roles: ['UBO'], ownershipPercentage: 40, personalInfo: { ...OWNER_INFO, lastName } }, auth);
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: string; kycStatus: string };
}

/** Upload a document for a holder through POST /documents (multipart). */
async function fileDocument(t: TestApp, holderId: string, documentType: string, auth: Auth = {}): Promise<string> {
  const fd = new FormData();
  fd.append('documentHolder', holderId);
  fd.append('documentType', documentType);
  fd.append('country', 'US');
  fd.append('documentNumber', 'X1234567');
  fd.append('file', new Blob([Buffer.from('%PDF-1.4\n% sandbox document\n%%EOF\n')], { type: 'application/pdf' }), `${documentType.toLowerCase()}.pdf`);
  const res = await t.app.inject({ method: 'POST', url: `${V}/documents`, payload: fd, headers: { authorization: DEFAULT_AUTH, ...auth } });
  expect(res.statusCode, res.body).toBe(201);
  return (res.json() as { id: string }).id;
}

async function documentSubmitted(t: TestApp, id: string): Promise<boolean> {
  const row = await t.store.db.selectFrom('documents').select('submitted').where('id', '=', id).executeTakeFirstOrThrow();
  return Number(row.submitted) === 1;
}

async function verify(h: Harness, customerId: string, auth?: Auth): Promise<Verification> {
  const res = await h.call('POST', '/verifications', { customerId }, auth);
  expect(res.statusCode, res.body).toBe(200);
  const v = res.json() as Verification;
  expect(v.id).toMatch(VERIFICATION_ID);
  expect(v.customerId).toBe(customerId);
  return v;
}

async function statusOf(h: Harness, customerId: string, auth?: Auth): Promise<string> {
  const res = await h.call('GET', `/customers/${customerId}`, undefined, auth);
  expect(res.statusCode, res.body).toBe(200);
  const c = res.json() as { kycStatus?: string; kybStatus?: string };
  return (c.kycStatus ?? c.kybStatus)!;
}

async function ownerStatus(h: Harness, ownerId: string, auth?: Auth): Promise<string> {
  const res = await h.call('GET', `/beneficial-owners/${ownerId}`, undefined, auth);
  expect(res.statusCode, res.body).toBe(200);
  return (res.json() as { kycStatus: string }).kycStatus;
}

/** The problems of a RESOLVE_ERRORS answer as "TYPE field" strings, in order. */
function problems(v: Verification): string[] {
  return v.errors.map((e) => (e.field ? `${e.type} ${e.field}` : e.type));
}

function expectWellFormedErrors(v: Verification, resourceId: string): void {
  for (const e of v.errors) {
    expect(e.resourceId).toBe(resourceId);
    expect(typeof e.reason).toBe('string');
    expect(e.reason.length).toBeGreaterThan(5);
    if (e.type === 'MISSING_FIELD' || e.type === 'INVALID_FIELD') expect(e.field).toBeTruthy();
    else expect(e.field).toBeUndefined();
  }
}

async function expectSettled(h: Harness, customerId: string, auth?: Auth): Promise<void> {
  const e = envelope(await h.call('POST', '/verifications', { customerId }, auth), 400, 'INVALID_INPUT');
  expect(e.message).toMatch(/settled/);
}

const ALL_INDIVIDUAL_MISSING = [
  'MISSING_FIELD birthDate',
  'MISSING_FIELD nationality',
  'MISSING_FIELD idType',
  'MISSING_FIELD identifier',
  'MISSING_FIELD address',
  'MISSING_IDENTITY_DOCUMENT',
];

describe(`verifications: individuals, default unregulated flow (${STORE})`, () => {
  let t: TestApp;
  let h: Harness;
  beforeAll(async () => {
    t = await makeApp();
    h = harness(t);
  });
  afterAll(async () => t.close());

  const cases: Array<{ suffix: string; verificationStatus: string; kycStatus: string; settled: boolean }> = [
    { suffix: '001', verificationStatus: 'PENDING_MANUAL_REVIEW', kycStatus: 'PENDING', settled: false },
    { suffix: '002', verificationStatus: 'REJECTED', kycStatus: 'REJECTED', settled: true },
    { suffix: '003', verificationStatus: 'RESOLVE_ERRORS', kycStatus: 'UNVERIFIED', settled: false },
    { suffix: '777', verificationStatus: 'APPROVED', kycStatus: 'APPROVED', settled: true },
  ];

  for (const c of cases) {
    it(`fullName ending ${c.suffix}: UNVERIFIED at create, RESOLVE_ERRORS until complete, then ${c.verificationStatus} / kycStatus ${c.kycStatus}`, async () => {
      const customer = await createIndividual(h, { fullName: `Jane Doe ${c.suffix}` });
      expect(customer.kycStatus).toBe('UNVERIFIED');

      // Nothing but the name: every missing field and the document, one entry each.
      const first = await verify(h, customer.id);
      expect(first.verificationStatus).toBe('RESOLVE_ERRORS');
      expect(problems(first)).toEqual(ALL_INDIVIDUAL_MISSING);
      expectWellFormedErrors(first, customer.id);
      expect(first.errors.find((e) => e.type === 'MISSING_IDENTITY_DOCUMENT')?.acceptedDocumentTypes).toEqual(IDENTITY_DOCS);
      expect(await statusOf(h, customer.id)).toBe('UNVERIFIED');

      // Fix the fields: only the document is missing, on the same verification record.
      const patched = await h.call('PATCH', `/customers/${customer.id}`, { customerType: 'INDIVIDUAL', ...IDENTITY });
      expect(patched.statusCode, patched.body).toBe(200);
      const second = await verify(h, customer.id);
      expect(second.id).toBe(first.id);
      expect(second.createdAt).toBe(first.createdAt);
      expect(second.verificationStatus).toBe('RESOLVE_ERRORS');
      expect(problems(second)).toEqual(['MISSING_IDENTITY_DOCUMENT']);
      expect(await statusOf(h, customer.id)).toBe('UNVERIFIED');

      // Upload an identity document and resubmit: the suffix decides.
      const doc = await fileDocument(t, customer.id, 'PASSPORT');
      expect(await documentSubmitted(t, doc)).toBe(false);
      t.clock.advance(1000);
      const third = await verify(h, customer.id);
      expect(third.id).toBe(first.id);
      expect(third.verificationStatus).toBe(c.verificationStatus);
      expect(third.updatedAt > third.createdAt).toBe(true);
      if (c.suffix === '003') {
        expect(third.errors).toHaveLength(1);
        expect(third.errors[0]).toMatchObject({ resourceId: customer.id, type: 'POOR_QUALITY_DOCUMENT' });
        expect(third.errors[0]!.reason.length).toBeGreaterThan(5);
      } else {
        expect(third.errors).toEqual([]);
      }
      expect(await statusOf(h, customer.id)).toBe(c.kycStatus);
      expect(await documentSubmitted(t, doc)).toBe(true);

      // A settled result cannot be resubmitted; an unsettled one can.
      if (c.settled) {
        await expectSettled(h, customer.id);
      } else {
        const again = await verify(h, customer.id);
        expect(again.id).toBe(first.id);
        expect(again.verificationStatus).toBe(c.verificationStatus);
      }
      expect(await statusOf(h, customer.id)).toBe(c.kycStatus);

      const get = await h.call('GET', `/verifications/${first.id}`);
      expect(get.statusCode).toBe(200);
      expect((get.json() as Verification).verificationStatus).toBe(c.verificationStatus);
    });
  }

  it('reports a missing fullName too', async () => {
    const customer = await createIndividual(h, { birthDate: '1990-04-12' });
    const v = await verify(h, customer.id);
    expect(problems(v)).toEqual([
      'MISSING_FIELD fullName',
      'MISSING_FIELD nationality',
      'MISSING_FIELD idType',
      'MISSING_FIELD identifier',
      'MISSING_FIELD address',
      'MISSING_IDENTITY_DOCUMENT',
    ]);
    expectWellFormedErrors(v, customer.id);
  });

  it('refuses a fullName without a given name and a family name: INVALID_FIELD on fullName, whatever the suffix', async () => {
    const reason = 'Full name must contain a given name and a family name';
    const alone = await createIndividual(h, { fullName: 'Jane' });
    const v = await verify(h, alone.id);
    expect(v.verificationStatus).toBe('RESOLVE_ERRORS');
    expect(problems(v)).toEqual(['INVALID_FIELD fullName', ...ALL_INDIVIDUAL_MISSING]);
    expect(v.errors[0]).toEqual({ resourceId: alone.id, type: 'INVALID_FIELD', field: 'fullName', reason });
    expectWellFormedErrors(v, alone.id);

    // Complete otherwise: the name alone keeps the submission open, and nothing is decided.
    for (const fullName of ['Madonna', '  Cher  ', 'Jane001', 'Jane 001', 'Jane 002', '777 Jane', 'Jane - 001']) {
      const c = await createIndividual(h, { fullName, ...IDENTITY });
      const doc = await fileDocument(t, c.id, 'PASSPORT');
      const r = await verify(h, c.id);
      expect(r.verificationStatus, fullName).toBe('RESOLVE_ERRORS');
      expect(r.errors, fullName).toEqual([{ resourceId: c.id, type: 'INVALID_FIELD', field: 'fullName', reason }]);
      expect(await statusOf(h, c.id)).toBe('UNVERIFIED');
      expect(await documentSubmitted(t, doc)).toBe(false);
      expect((await listEvents(t.store.db, t.running.bootstrap.platform.id, { resourceId: c.id })).map((e) => e.type)).toEqual([]);
    }

    // Two words, the sandbox suffix on its own or attached to the family name: accepted.
    const fixed = await createIndividual(h, { fullName: 'Jane 001', ...IDENTITY });
    await fileDocument(t, fixed.id, 'PASSPORT');
    expect(problems(await verify(h, fixed.id))).toEqual(['INVALID_FIELD fullName']);
    expect((await h.call('PATCH', `/customers/${fixed.id}`, { customerType: 'INDIVIDUAL', fullName: 'Jane Doe 001' })).statusCode).toBe(200);
    expect((await verify(h, fixed.id)).verificationStatus).toBe('PENDING_MANUAL_REVIEW');
    expect(await statusOf(h, fixed.id)).toBe('PENDING');
    for (const [fullName, status] of [['Jane Doe001', 'PENDING_MANUAL_REVIEW'], ['José Álvarez', 'APPROVED'], ['Mary Ann Smith 002', 'REJECTED']] as const) {
      const c = await createIndividual(h, { fullName, ...IDENTITY });
      await fileDocument(t, c.id, 'NATIONAL_ID');
      expect((await verify(h, c.id)).verificationStatus, fullName).toBe(status);
    }
  });

  it('asks for an identity document: a business document does not count', async () => {
    const customer = await createIndividual(h, { fullName: 'Sam Lee', ...IDENTITY });
    await fileDocument(t, customer.id, 'UTILITY_BILL');
    const v = await verify(h, customer.id);
    expect(problems(v)).toEqual(['MISSING_IDENTITY_DOCUMENT']);
    await fileDocument(t, customer.id, 'DRIVERS_LICENSE');
    expect((await verify(h, customer.id)).verificationStatus).toBe('APPROVED');
  });

  it('never overwrites a settled result when the customer is renamed', async () => {
    const approved = await createIndividual(h, { fullName: 'Rita Settled', ...IDENTITY });
    await fileDocument(t, approved.id, 'NATIONAL_ID');
    expect((await verify(h, approved.id)).verificationStatus).toBe('APPROVED');
    const renamed = await h.call('PATCH', `/customers/${approved.id}`, { customerType: 'INDIVIDUAL', fullName: 'Rita Settled 002' });
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect(renamed.json().kycStatus).toBe('APPROVED');
    expect(await statusOf(h, approved.id)).toBe('APPROVED');
    await expectSettled(h, approved.id);

    const rejected = await createIndividual(h, { fullName: 'Rex Settled 002', ...IDENTITY });
    await fileDocument(t, rejected.id, 'PASSPORT');
    expect((await verify(h, rejected.id)).verificationStatus).toBe('REJECTED');
    await h.call('PATCH', `/customers/${rejected.id}`, { customerType: 'INDIVIDUAL', fullName: 'Rex Settled' });
    expect(await statusOf(h, rejected.id)).toBe('REJECTED');
    await expectSettled(h, rejected.id);
  });

  it('lets a 003 customer fix the name and resubmit', async () => {
    const customer = await createIndividual(h, { fullName: 'Poor Scan 003', ...IDENTITY });
    await fileDocument(t, customer.id, 'PASSPORT');
    const first = await verify(h, customer.id);
    expect(problems(first)).toEqual(['POOR_QUALITY_DOCUMENT']);
    await h.call('PATCH', `/customers/${customer.id}`, { customerType: 'INDIVIDUAL', fullName: 'Poor Scan 001' });
    const second = await verify(h, customer.id);
    expect(second.id).toBe(first.id);
    expect(second.verificationStatus).toBe('PENDING_MANUAL_REVIEW');
    expect(await statusOf(h, customer.id)).toBe('PENDING');
  });

  it('writes VERIFICATION.* and CUSTOMER.KYC_* events with the resources as data', async () => {
    const platformId = (await t.store.db.selectFrom('platforms').select('id').where('is_default', '=', 1).executeTakeFirstOrThrow()).id;
    const customer = await createIndividual(h, { fullName: 'Eve Events 001' });
    const incomplete = await verify(h, customer.id);
    let events = await listEvents(t.store.db, platformId, { resourceId: incomplete.id });
    expect(events.map((e) => e.type)).toEqual(['VERIFICATION.RESOLVE_ERRORS']);
    expect(events[0]!.payload.data).toEqual(incomplete);
    expect(await listEvents(t.store.db, platformId, { resourceId: customer.id })).toEqual([]);

    await h.call('PATCH', `/customers/${customer.id}`, { customerType: 'INDIVIDUAL', ...IDENTITY });
    await fileDocument(t, customer.id, 'PASSPORT');
    const done = await verify(h, customer.id);
    events = await listEvents(t.store.db, platformId, { resourceId: done.id });
    expect(events.map((e) => e.type)).toEqual(['VERIFICATION.RESOLVE_ERRORS', 'VERIFICATION.PENDING_MANUAL_REVIEW']);
    expect(events[1]!.payload.data).toEqual(done);
    const customerEvents = await listEvents(t.store.db, platformId, { resourceId: customer.id });
    expect(customerEvents.map((e) => e.type)).toEqual(['CUSTOMER.KYC_PENDING']);
    expect(customerEvents[0]!.payload.data).toMatchObject({ id: customer.id, kycStatus: 'PENDING' });

    // A resubmission that leaves the status as it is announces the verification only.
    await verify(h, customer.id);
    expect((await listEvents(t.store.db, platformId, { resourceId: customer.id })).map((e) => e.type)).toEqual(['CUSTOMER.KYC_PENDING']);
    expect((await listEvents(t.store.db, platformId, { resourceId: done.id })).map((e) => e.type)).toEqual([
      'VERIFICATION.RESOLVE_ERRORS',
      'VERIFICATION.PENDING_MANUAL_REVIEW',
      'VERIFICATION.PENDING_MANUAL_REVIEW',
    ]);

    const approved = await createIndividual(h, { fullName: 'Al Approved', ...IDENTITY });
    await fileDocument(t, approved.id, 'PASSPORT');
    const v = await verify(h, approved.id);
    expect((await listEvents(t.store.db, platformId, { resourceId: v.id })).map((e) => e.type)).toEqual(['VERIFICATION.APPROVED']);
    const kyc = await listEvents(t.store.db, platformId, { resourceId: approved.id });
    expect(kyc.map((e) => e.type)).toEqual(['CUSTOMER.KYC_APPROVED']);
    expect(kyc[0]!.payload.data).toMatchObject({ id: approved.id, kycStatus: 'APPROVED' });

    const rejected = await createIndividual(h, { fullName: 'Ron Rejected 002', ...IDENTITY });
    await fileDocument(t, rejected.id, 'PASSPORT');
    expect((await verify(h, rejected.id)).verificationStatus).toBe('REJECTED');
    expect((await listEvents(t.store.db, platformId, { resourceId: rejected.id })).map((e) => e.type)).toEqual(['CUSTOMER.KYC_REJECTED']);
  });

  it('requires verified contact channels for customers whose provider mandates it (409)', async () => {
    const customer = await createIndividual(h, { fullName: 'Eu Person', region: 'DE', email: 'eu.person@example.com', ...IDENTITY });
    const e = envelope(await h.call('POST', '/verifications', { customerId: customer.id }), 409, 'CONFLICT');
    expect(e.message).toMatch(/email/);
    expect(await statusOf(h, customer.id)).toBe('UNVERIFIED');
    const list = await h.call('GET', `/verifications?customerId=${encodeURIComponent(customer.id)}`);
    expect(list.json().data).toEqual([]);
  });

  it('answers 404 USER_NOT_FOUND for an unknown customer and 400 for a bad body', async () => {
    envelope(await h.call('POST', '/verifications', { customerId: 'Customer:01950000-0000-7000-8000-000000000000' }), 404, 'USER_NOT_FOUND');
    envelope(await h.call('POST', '/verifications', { customerId: 'nonsense' }), 404, 'USER_NOT_FOUND');
    const e = envelope(await h.call('POST', '/verifications', {}), 400, 'INVALID_INPUT');
    expect((e.details?.errors as Array<{ field: string }>).map((x) => x.field)).toEqual(['customerId']);
    envelope(await h.call('GET', '/verifications/Verification:01950000-0000-7000-8000-000000000000'), 404, 'REFERENCE_NOT_FOUND');
  });

  it('lists verifications with filters and cursor pagination', async () => {
    const a = await createIndividual(h, { fullName: 'List One' });
    const b = await createIndividual(h, { fullName: 'List Two', ...IDENTITY });
    await fileDocument(t, b.id, 'PASSPORT');
    const va = await verify(h, a.id);
    const vb = await verify(h, b.id);

    const byCustomer = (await h.call('GET', `/verifications?customerId=${encodeURIComponent(a.id)}`)).json();
    expect(byCustomer).toEqual({ data: [va], hasMore: false, totalCount: 1 });

    const approved = (await h.call('GET', '/verifications?verificationStatus=APPROVED&limit=100')).json() as { data: Verification[] };
    expect(approved.data.map((v) => v.id)).toContain(vb.id);
    expect(approved.data.every((v) => v.verificationStatus === 'APPROVED')).toBe(true);
    envelope(await h.call('GET', '/verifications?verificationStatus=MAYBE'), 400, 'INVALID_INPUT');

    const all = (await h.call('GET', '/verifications?limit=100')).json() as { data: Verification[]; totalCount: number };
    expect(all.totalCount).toBeGreaterThanOrEqual(2);
    const seen: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = (await h.call('GET', `/verifications?limit=2${cursor ? `&cursor=${cursor}` : ''}`)).json() as { data: Verification[]; hasMore: boolean; nextCursor?: string };
      seen.push(...page.data.map((v) => v.id));
      if (!page.hasMore) break;
      cursor = page.nextCursor;
    }
    expect(seen).toEqual(all.data.map((v) => v.id));
    expect(seen[0]).toBe(vb.id); // newest first
  });
});

describe(`verifications: regulated platform (${STORE})`, () => {
  let t: TestApp;
  let h: Harness;
  let auth: Auth;
  beforeAll(async () => {
    t = await makeApp();
    h = harness(t);
    auth = (await newPlatform(t, { regulated: true })).auth;
  });
  afterAll(async () => t.close());

  it('resolves individuals at create by the suffix of fullName', async () => {
    for (const [name, status] of [['Reg A 001', 'PENDING'], ['Reg B 002', 'REJECTED'], ['Reg C 003', 'UNVERIFIED'], ['Reg D', 'APPROVED']] as const) {
      const c = await createIndividual(h, { fullName: name }, auth);
      expect(c.kycStatus, name).toBe(status);
    }
  });

  it('refuses to resubmit APPROVED and REJECTED customers (400)', async () => {
    const approved = await createIndividual(h, { fullName: 'Reg Approved', ...IDENTITY }, auth);
    const rejected = await createIndividual(h, { fullName: 'Reg Rejected 002', ...IDENTITY }, auth);
    await expectSettled(h, approved.id, auth);
    await expectSettled(h, rejected.id, auth);
  });

  it('001: PENDING at create, PENDING_MANUAL_REVIEW once data and an identity document are complete', async () => {
    const c = await createIndividual(h, { fullName: 'Reg Review 001', ...IDENTITY }, auth);
    expect(c.kycStatus).toBe('PENDING');
    const first = await verify(h, c.id, auth);
    expect(problems(first)).toEqual(['MISSING_IDENTITY_DOCUMENT']);
    expect(await statusOf(h, c.id, auth)).toBe('PENDING');
    await fileDocument(t, c.id, 'PASSPORT', auth);
    const second = await verify(h, c.id, auth);
    expect(second.id).toBe(first.id);
    expect(second.verificationStatus).toBe('PENDING_MANUAL_REVIEW');
    expect(second.errors).toEqual([]);
    expect(await statusOf(h, c.id, auth)).toBe('PENDING');
  });

  it('003: complete data gives RESOLVE_ERRORS with a POOR_QUALITY_DOCUMENT error', async () => {
    const c = await createIndividual(h, { fullName: 'Reg Blurry 003', ...IDENTITY }, auth);
    await fileDocument(t, c.id, 'NATIONAL_ID', auth);
    const v = await verify(h, c.id, auth);
    expect(v.verificationStatus).toBe('RESOLVE_ERRORS');
    expect(problems(v)).toEqual(['POOR_QUALITY_DOCUMENT']);
    expect(v.errors[0]!.resourceId).toBe(c.id);
    expect(await statusOf(h, c.id, auth)).toBe('UNVERIFIED');
  });

  it('businesses: 002 is REJECTED at once, without the missing-data round', async () => {
    const b = await createBusiness(h, 'REG-002', {}, auth);
    expect(b.kybStatus).toBe('UNVERIFIED');
    const v = await verify(h, b.id, auth);
    expect(v.verificationStatus).toBe('REJECTED');
    expect(v.errors).toEqual([]);
    expect(await statusOf(h, b.id, auth)).toBe('REJECTED');
    await expectSettled(h, b.id, auth);
  });

  it('businesses: 001 needs info, a legal-presence document and an owner, then PENDING_MANUAL_REVIEW', async () => {
    const b = await createBusiness(h, 'REG-001', { address: true }, auth);
    expect(problems(await verify(h, b.id, auth))).toEqual(['MISSING_LEGAL_PRESENCE_DOCUMENT', 'MISSING_BENEFICIAL_OWNER']);
    await fileDocument(t, b.id, 'ARTICLES_OF_ASSOCIATION', auth);
    await addOwner(h, b.id, 'Owner', auth);
    expect((await verify(h, b.id, auth)).verificationStatus).toBe('PENDING_MANUAL_REVIEW');
    expect(await statusOf(h, b.id, auth)).toBe('PENDING');
  });
});

describe(`verifications: Skip verification paperwork (${STORE})`, () => {
  let t: TestApp;
  let h: Harness;
  let platform: { id: string; auth: Auth };
  beforeAll(async () => {
    t = await makeApp();
    h = harness(t);
    platform = await newPlatform(t);
  });
  afterAll(async () => t.close());

  it('keeps the status of customers created before the option changes, both ways', async () => {
    const before = await createIndividual(h, { fullName: 'Early Bird', ...IDENTITY }, platform.auth);
    expect(before.kycStatus).toBe('UNVERIFIED');
    await setSkipPaperwork(t, platform.id, true);
    expect(await statusOf(h, before.id, platform.auth)).toBe('UNVERIFIED');

    const during = await createIndividual(h, { fullName: 'Quick Start' }, platform.auth);
    expect(during.kycStatus).toBe('APPROVED');

    // The earlier customer is now submitted without paperwork.
    const v = await verify(h, before.id, platform.auth);
    expect(v.verificationStatus).toBe('APPROVED');
    expect(await statusOf(h, before.id, platform.auth)).toBe('APPROVED');

    await setSkipPaperwork(t, platform.id, false);
    expect(await statusOf(h, during.id, platform.auth)).toBe('APPROVED');
    const after = await createIndividual(h, { fullName: 'Late Comer' }, platform.auth);
    expect(after.kycStatus).toBe('UNVERIFIED');
    await setSkipPaperwork(t, platform.id, true);
  });

  it('resolves individuals at create by the suffix', async () => {
    for (const [name, status] of [['Skip A 001', 'PENDING'], ['Skip B 002', 'REJECTED'], ['Skip C 003', 'UNVERIFIED'], ['Skip D 999', 'APPROVED']] as const) {
      expect((await createIndividual(h, { fullName: name }, platform.auth)).kycStatus, name).toBe(status);
    }
  });

  it('asks for no document: 001 and 003 resolve on complete data alone', async () => {
    const review = await createIndividual(h, { fullName: 'Skip Review 001' }, platform.auth);
    const missing = await verify(h, review.id, platform.auth);
    expect(problems(missing)).toEqual(ALL_INDIVIDUAL_MISSING.filter((p) => p !== 'MISSING_IDENTITY_DOCUMENT'));
    await h.call('PATCH', `/customers/${review.id}`, { customerType: 'INDIVIDUAL', ...IDENTITY }, platform.auth);
    expect((await verify(h, review.id, platform.auth)).verificationStatus).toBe('PENDING_MANUAL_REVIEW');
    expect(await statusOf(h, review.id, platform.auth)).toBe('PENDING');

    const blurry = await createIndividual(h, { fullName: 'Skip Blurry 003', ...IDENTITY }, platform.auth);
    expect(problems(await verify(h, blurry.id, platform.auth))).toEqual(['POOR_QUALITY_DOCUMENT']);
  });

  it('resolves businesses at the first submission, with no documents', async () => {
    const approve = await createBusiness(h, 'SKIP-100', {}, platform.auth);
    expect(approve.kybStatus).toBe('UNVERIFIED');
    expect((await verify(h, approve.id, platform.auth)).verificationStatus).toBe('APPROVED');
    expect(await statusOf(h, approve.id, platform.auth)).toBe('APPROVED');

    const reject = await createBusiness(h, 'SKIP-002', {}, platform.auth);
    expect((await verify(h, reject.id, platform.auth)).verificationStatus).toBe('REJECTED');
    expect(await statusOf(h, reject.id, platform.auth)).toBe('REJECTED');

    const review = await createBusiness(h, 'SKIP-001', { address: true }, platform.auth);
    expect(problems(await verify(h, review.id, platform.auth))).toEqual(['MISSING_BENEFICIAL_OWNER']);
    await addOwner(h, review.id, 'Owner', platform.auth);
    expect((await verify(h, review.id, platform.auth)).verificationStatus).toBe('PENDING_MANUAL_REVIEW');
    expect(await statusOf(h, review.id, platform.auth)).toBe('PENDING');
  });
});

describe(`verifications: businesses, default unregulated flow (${STORE})`, () => {
  let t: TestApp;
  let h: Harness;
  let platformId: string;
  beforeAll(async () => {
    t = await makeApp();
    h = harness(t);
    platformId = (await t.store.db.selectFrom('platforms').select('id').where('is_default', '=', 1).executeTakeFirstOrThrow()).id;
  });
  afterAll(async () => t.close());

  it('any other ending: APPROVED at once, skipping validation; owners resolve by lastName suffix', async () => {
    const b = await createBusiness(h, 'RN-12345');
    expect(b.kybStatus).toBe('UNVERIFIED');
    const pending = await addOwner(h, b.id, 'Smith001');
    const rejected = await addOwner(h, b.id, 'Jones002');
    const approved = await addOwner(h, b.id, 'Brown');
    for (const o of [pending, rejected, approved]) expect(o.kycStatus).toBe('UNVERIFIED');

    const v = await verify(h, b.id);
    expect(v.verificationStatus).toBe('APPROVED');
    expect(v.errors).toEqual([]);
    expect(await statusOf(h, b.id)).toBe('APPROVED');
    expect(await ownerStatus(h, pending.id)).toBe('PENDING');
    expect(await ownerStatus(h, rejected.id)).toBe('REJECTED');
    expect(await ownerStatus(h, approved.id)).toBe('APPROVED');

    // An owner added after the business resolved resolves at once.
    expect((await addOwner(h, b.id, 'Late002')).kycStatus).toBe('REJECTED');
    expect((await addOwner(h, b.id, 'Later')).kycStatus).toBe('APPROVED');

    await expectSettled(h, b.id);

    const events = await listEvents(t.store.db, platformId, { resourceId: b.id });
    expect(events.map((e) => e.type)).toEqual(['CUSTOMER.KYB_APPROVED']);
    const data = events[0]!.payload.data as { kybStatus: string; beneficialOwners: Array<{ kycStatus: string }> };
    expect(data.kybStatus).toBe('APPROVED');
    expect(data.beneficialOwners.map((o) => o.kycStatus)).toEqual(['PENDING', 'REJECTED', 'APPROVED']);
    expect((await listEvents(t.store.db, platformId, { resourceId: v.id })).map((e) => e.type)).toEqual(['VERIFICATION.APPROVED']);
  });

  it('no registration number counts as any other ending', async () => {
    const b = await createBusiness(h, undefined);
    expect((await verify(h, b.id)).verificationStatus).toBe('APPROVED');
  });

  it('002: missing-data errors first, then REJECTED; owners resolve', async () => {
    const b = await createBusiness(h, 'RN-99002');
    const owner = await addOwner(h, b.id, 'Keeper');
    const first = await verify(h, b.id);
    expect(first.verificationStatus).toBe('RESOLVE_ERRORS');
    expect(problems(first)).toEqual(['MISSING_FIELD address']);
    expectWellFormedErrors(first, b.id);
    expect(await statusOf(h, b.id)).toBe('UNVERIFIED');
    expect(await ownerStatus(h, owner.id)).toBe('UNVERIFIED');

    const patched = await h.call('PATCH', `/customers/${b.id}`, { customerType: 'BUSINESS', address: ADDRESS });
    expect(patched.statusCode, patched.body).toBe(200);
    const second = await verify(h, b.id);
    expect(second.id).toBe(first.id);
    expect(second.verificationStatus).toBe('REJECTED');
    expect(second.errors).toEqual([]);
    expect(await statusOf(h, b.id)).toBe('REJECTED');
    expect(await ownerStatus(h, owner.id)).toBe('APPROVED');
    expect((await listEvents(t.store.db, platformId, { resourceId: b.id })).map((e) => e.type)).toEqual(['CUSTOMER.KYB_REJECTED']);
    await expectSettled(h, b.id);
  });

  for (const suffix of ['001', '003']) {
    it(`${suffix}: RESOLVE_ERRORS until info, a legal-presence document and an owner are complete, then PENDING_MANUAL_REVIEW`, async () => {
      const b = await createBusiness(h, `RN-55${suffix}`);
      const first = await verify(h, b.id);
      expect(first.verificationStatus).toBe('RESOLVE_ERRORS');
      expect(problems(first)).toEqual(['MISSING_FIELD address', 'MISSING_LEGAL_PRESENCE_DOCUMENT', 'MISSING_BENEFICIAL_OWNER']);
      expectWellFormedErrors(first, b.id);
      expect(first.errors[1]!.acceptedDocumentTypes).toEqual(expect.arrayContaining(['CERTIFICATE_OF_INCORPORATION', 'ARTICLES_OF_INCORPORATION', 'ARTICLES_OF_ASSOCIATION', 'STATE_REGISTRY_EXCERPT']));

      await h.call('PATCH', `/customers/${b.id}`, { customerType: 'BUSINESS', address: ADDRESS });
      expect(problems(await verify(h, b.id))).toEqual(['MISSING_LEGAL_PRESENCE_DOCUMENT', 'MISSING_BENEFICIAL_OWNER']);

      // An identity document is not a business document.
      await fileDocument(t, b.id, 'PASSPORT');
      expect(problems(await verify(h, b.id))).toEqual(['MISSING_LEGAL_PRESENCE_DOCUMENT', 'MISSING_BENEFICIAL_OWNER']);
      const doc = await fileDocument(t, b.id, 'CERTIFICATE_OF_INCORPORATION');
      expect(problems(await verify(h, b.id))).toEqual(['MISSING_BENEFICIAL_OWNER']);
      expect(await statusOf(h, b.id)).toBe('UNVERIFIED');

      const owner = await addOwner(h, b.id, 'Reviewed002');
      const done = await verify(h, b.id);
      expect(done.id).toBe(first.id);
      expect(done.verificationStatus).toBe('PENDING_MANUAL_REVIEW');
      expect(done.errors).toEqual([]);
      expect(await statusOf(h, b.id)).toBe('PENDING');
      expect(await documentSubmitted(t, doc)).toBe(true);
      // Not a terminal result: owners stay unresolved.
      expect(await ownerStatus(h, owner.id)).toBe('UNVERIFIED');
      expect((await listEvents(t.store.db, platformId, { resourceId: b.id })).map((e) => e.type)).toEqual(['CUSTOMER.KYB_PENDING']);
      expect((await listEvents(t.store.db, platformId, { resourceId: done.id })).map((e) => e.type)).toEqual([
        'VERIFICATION.RESOLVE_ERRORS',
        'VERIFICATION.RESOLVE_ERRORS',
        'VERIFICATION.RESOLVE_ERRORS',
        'VERIFICATION.RESOLVE_ERRORS',
        'VERIFICATION.PENDING_MANUAL_REVIEW',
      ]);
    });
  }
});

describe(`verifications: tenancy (${STORE})`, () => {
  let t: TestApp;
  let h: Harness;
  let other: Auth;
  beforeAll(async () => {
    t = await makeApp();
    h = harness(t);
    other = (await newPlatform(t)).auth;
  });
  afterAll(async () => t.close());

  it("answers another platform's customer and verification exactly like unknown ones", async () => {
    const mine = await createIndividual(h, { fullName: 'Mine Only' });
    const v = await verify(h, mine.id);
    const unknownCustomer = envelope(await h.call('POST', '/verifications', { customerId: 'Customer:01950000-0000-7000-8000-000000000000' }, other), 404, 'USER_NOT_FOUND');
    const foreignCustomer = envelope(await h.call('POST', '/verifications', { customerId: mine.id }, other), 404, 'USER_NOT_FOUND');
    expect(foreignCustomer.message).toBe(unknownCustomer.message.replace('Customer:01950000-0000-7000-8000-000000000000', mine.id));
    const foreign = envelope(await h.call('GET', `/verifications/${v.id}`, undefined, other), 404, 'REFERENCE_NOT_FOUND');
    expect(foreign.message).toContain(v.id);
    const list = (await h.call('GET', '/verifications', undefined, other)).json();
    expect(list).toEqual({ data: [], hasMore: false, totalCount: 0 });
    const filtered = (await h.call('GET', `/verifications?customerId=${encodeURIComponent(mine.id)}`, undefined, other)).json();
    expect(filtered.data).toEqual([]);
    // Untouched by the foreign attempts.
    expect((await h.call('GET', `/verifications/${v.id}`)).json()).toEqual(v);
  });
});
