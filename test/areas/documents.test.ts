import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_KEY, basic, DEFAULT_AUTH, envelope, makeApp, STORE, type TestApp, V } from '../helpers.js';

// Documents: multipart upload, list, get, replace, delete and the content extension (black box).

interface FieldError {
  field: string;
  constraint?: Record<string, unknown>;
  message: string;
}

const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]), Buffer.from('JFIF\0 fake jpeg body')]);
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('\0\0\0\rIHDR fake png body')]);
const PDF = Buffer.from('%PDF-1.7\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n');
const GIF = Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;', 'latin1');
const TEXT = Buffer.from('just some text, not an image\n');

const MAX = 10 * 1024 * 1024;

function fieldErrors(details: Record<string, unknown> | undefined): FieldError[] {
  expect(Array.isArray(details?.errors)).toBe(true);
  return details!.errors as FieldError[];
}

function form(fields: Record<string, string>, file?: { bytes: Buffer; name: string; type?: string }): FormData {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  if (file) fd.append('file', new Blob([file.bytes], { type: file.type ?? 'application/octet-stream' }), file.name);
  return fd;
}

describe(`documents (${STORE})`, () => {
  let t: TestApp;
  let customerId: string;

  beforeEach(async () => {
    t = await makeApp();
    customerId = await createCustomer();
  });
  afterEach(async () => t.close());

  async function createCustomer(auth = DEFAULT_AUTH): Promise<string> {
    const res = await t.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Ada Lovelace', birthDate: '1990-01-01', nationality: 'GB' }, { authorization: auth });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().id as string;
  }

  function send(method: 'POST' | 'PUT', path: string, payload: FormData | string, headers: Record<string, string> = {}) {
    return t.app.inject({ method, url: `${V}${path}`, payload, headers: { authorization: DEFAULT_AUTH, ...headers } });
  }

  async function upload(fields: Record<string, string>, file?: { bytes: Buffer; name: string; type?: string }) {
    return send('POST', '/documents', form(fields, file));
  }

  const passport = () => ({ documentHolder: customerId, documentType: 'PASSPORT', country: 'GB' });

  async function uploaded(fields: Record<string, string> = passport(), file = { bytes: PNG, name: 'passport.png', type: 'image/png' }): Promise<Record<string, any>> {
    const res = await upload(fields, file);
    expect(res.statusCode, res.body).toBe(201);
    return res.json();
  }

  async function otherPlatformAuth(): Promise<string> {
    const res = await t.call('POST', '/admin/platforms', { name: 'Other platform' }, { authorization: `Bearer ${ADMIN_KEY}` });
    expect(res.statusCode, res.body).toBe(201);
    const c = res.json().credentials as { clientId: string; clientSecret: string };
    return basic(c.clientId, c.clientSecret);
  }

  describe('POST /documents', () => {
    it('accepts a JPEG with every field and returns the Document', async () => {
      const at = new Date(t.clock.nowMs()).toISOString();
      const res = await upload(
        { ...passport(), documentType: 'DRIVERS_LICENSE', side: 'FRONT', documentNumber: 'A12345678', issuingAuthority: 'DVLA' },
        { bytes: JPEG, name: 'licence_front.jpg', type: 'image/jpeg' },
      );
      expect(res.statusCode, res.body).toBe(201);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.json()).toEqual({
        id: expect.stringMatching(/^Document:[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
        documentHolder: customerId,
        documentType: 'DRIVERS_LICENSE',
        side: 'FRONT',
        country: 'GB',
        documentNumber: 'A12345678',
        issuingAuthority: 'DVLA',
        fileName: 'licence_front.jpg',
        createdAt: at,
        updatedAt: at,
      });
    });

    it('accepts PNG and PDF, omits the optional fields not given, and serves the bytes back', async () => {
      for (const [bytes, name, type] of [
        [PNG, 'scan.png', 'image/png'],
        [PDF, 'scan.pdf', 'application/pdf'],
      ] as const) {
        const doc = await uploaded(passport(), { bytes, name, type });
        expect(Object.keys(doc).sort()).toEqual(['country', 'createdAt', 'documentHolder', 'documentType', 'fileName', 'id', 'updatedAt']);
        expect(doc.fileName).toBe(name);
        const content = await t.call('GET', `/documents/${doc.id}/content`);
        expect(content.statusCode).toBe(200);
        expect(content.headers['content-type']).toBe(type);
        expect(content.rawPayload.equals(bytes)).toBe(true);
        expect(content.headers['etag']).toMatch(/^"sha256-[0-9a-f]{64}"$/);
      }
    });

    it('decides the type by the bytes: a PNG named .pdf is stored as a PNG', async () => {
      const doc = await uploaded(passport(), { bytes: PNG, name: 'not-really.pdf', type: 'application/pdf' });
      const content = await t.call('GET', `/documents/${doc.id}/content`);
      expect(content.headers['content-type']).toBe('image/png');
    });

    it('rejects a GIF, a text file, a text file named photo.jpg and a .pdf with wrong bytes', async () => {
      for (const file of [
        { bytes: GIF, name: 'image.gif', type: 'image/gif' },
        { bytes: TEXT, name: 'notes.txt', type: 'text/plain' },
        { bytes: TEXT, name: 'photo.jpg', type: 'image/jpeg' },
        { bytes: GIF, name: 'document.pdf', type: 'application/pdf' },
      ]) {
        const e = envelope(await upload(passport(), file), 400, 'INVALID_INPUT');
        const errors = fieldErrors(e.details);
        expect(errors).toEqual([{ field: 'file', constraint: { enum: ['image/jpeg', 'image/png', 'application/pdf'] }, message: expect.stringMatching(/JPEG, PNG or PDF/) }]);
      }
      const list = await t.call('GET', '/documents');
      expect(list.json().totalCount).toBe(0);
    });

    it('rejects an empty file', async () => {
      const e = envelope(await upload(passport(), { bytes: Buffer.alloc(0), name: 'empty.png', type: 'image/png' }), 400, 'INVALID_INPUT');
      expect(fieldErrors(e.details).map((x) => x.field)).toEqual(['file']);
    });

    it('accepts exactly 10 MB and rejects anything larger with a file error', async () => {
      const exact = Buffer.alloc(MAX, 0x20);
      PDF.copy(exact);
      expect((await upload(passport(), { bytes: exact, name: 'big.pdf' })).statusCode).toBe(201);

      const over = Buffer.alloc(MAX + 1, 0x20);
      PDF.copy(over);
      const e = envelope(await upload(passport(), { bytes: over, name: 'too-big.pdf' }), 400, 'INVALID_INPUT');
      expect(fieldErrors(e.details)).toEqual([{ field: 'file', constraint: { maxLength: MAX }, message: expect.stringMatching(/at most 10485760 bytes/) }]);
      expect((await t.call('GET', '/documents')).json().totalCount).toBe(1);
    });

    it('lists every missing or invalid field, and a missing file, in one 400', async () => {
      const e = envelope(await upload({ documentType: 'LIBRARY_CARD', country: 'XX', side: 'TOP' }), 400, 'INVALID_INPUT');
      const errors = fieldErrors(e.details);
      expect(errors.map((x) => x.field).sort()).toEqual(['country', 'documentHolder', 'documentType', 'file', 'side']);
      expect(errors.find((x) => x.field === 'documentType')!.constraint!.enum).toContain('PASSPORT');
      expect(errors.find((x) => x.field === 'country')!.constraint).toEqual({ format: 'iso3166-1-alpha-2' });
      expect(errors.find((x) => x.field === 'file')!.message).toBe('is required');

      const onlyFile = envelope(await upload({}, { bytes: PNG, name: 'p.png' }), 400, 'INVALID_INPUT');
      expect(fieldErrors(onlyFile.details).map((x) => x.field).sort()).toEqual(['country', 'documentHolder', 'documentType']);
    });

    it('reports unknown fields, a repeated field and a file sent as text', async () => {
      const fd = form({ ...passport(), colour: 'blue' });
      fd.append('country', 'FR');
      fd.append('file', 'not a file');
      const e = envelope(await send('POST', '/documents', fd), 400, 'INVALID_INPUT');
      expect(fieldErrors(e.details).map((x) => x.field).sort()).toEqual(['colour', 'country', 'file']);
    });

    it('answers a body that is not multipart with 400 INVALID_REQUEST_FORMAT', async () => {
      const json = await t.call('POST', '/documents', { ...passport() });
      envelope(json, 400, 'INVALID_REQUEST_FORMAT');
      const text = await send('POST', '/documents', 'hello', { 'content-type': 'text/plain' });
      envelope(text, 400, 'INVALID_REQUEST_FORMAT');
      const broken = await send('POST', '/documents', '--xyz\r\nContent-Disposition: form-data; name="a"\r\n\r\nb', { 'content-type': 'multipart/form-data; boundary=xyz' });
      expect(broken.statusCode).toBe(400);
    });

    it('accepts a beneficial owner as holder', async () => {
      const biz = await t.call('POST', '/customers', {
        customerType: 'BUSINESS',
        businessInfo: { legalName: 'Acme Ltd', country: 'GB', incorporatedOn: '2010-05-01', taxId: 'GB123' },
      });
      expect(biz.statusCode, biz.body).toBe(201);
      const owner = await t.call('POST', '/beneficial-owners', {
        customerId: biz.json().id,
        roles: ['UBO'],
        ownershipPercentage: 60,
        personalInfo: {
          firstName: 'Grace',
          lastName: 'Hopper',
          birthDate: '1980-02-02',
          nationality: 'US',
          address: { line1: '1 Main St', postalCode: '10001', country: 'US' },
          idType: 'SSN',
          identifier: '123-45-6789',
        },
      });
      expect(owner.statusCode, owner.body).toBe(201);
      const doc = await uploaded({ documentHolder: owner.json().id, documentType: 'PASSPORT', country: 'US' });
      expect(doc.documentHolder).toBe(owner.json().id);
    });

    it('answers 404 for unknown holders and for holders of another platform', async () => {
      envelope(await upload({ ...passport(), documentHolder: 'Customer:01950000-0000-7000-8000-000000000000' }, { bytes: PNG, name: 'p.png' }), 404, 'USER_NOT_FOUND');
      envelope(await upload({ ...passport(), documentHolder: 'BeneficialOwner:01950000-0000-7000-8000-000000000000' }, { bytes: PNG, name: 'p.png' }), 404, 'REFERENCE_NOT_FOUND');
      envelope(await upload({ ...passport(), documentHolder: 'nonsense' }, { bytes: PNG, name: 'p.png' }), 404, 'REFERENCE_NOT_FOUND');

      const other = await otherPlatformAuth();
      const foreign = await createCustomer(other);
      const e = envelope(await upload({ ...passport(), documentHolder: foreign }, { bytes: PNG, name: 'p.png' }), 404, 'USER_NOT_FOUND');
      const unknown = envelope(await upload({ ...passport(), documentHolder: 'Customer:01950000-0000-7000-8000-000000000001' }, { bytes: PNG, name: 'p.png' }), 404, 'USER_NOT_FOUND');
      expect(e.message.replace(foreign, 'X')).toBe(unknown.message.replace('Customer:01950000-0000-7000-8000-000000000001', 'X'));
    });

    it('leaves JSON routes alone', async () => {
      const res = await t.call('PATCH', `/customers/${customerId}`, { customerType: 'INDIVIDUAL', nationality: 'FR' });
      expect(res.statusCode, res.body).toBe(200);
    });
  });

  describe('GET /documents and GET /documents/{id}', () => {
    it('lists newest first with cursor pagination and a holder filter', async () => {
      const second = await createCustomer();
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        t.clock.advance(1000);
        ids.push((await uploaded()).id);
      }
      const theirs = (await uploaded({ documentHolder: second, documentType: 'NATIONAL_ID', country: 'FR' })).id;

      const page1 = await t.call('GET', '/documents?limit=2');
      expect(page1.statusCode, page1.body).toBe(200);
      const p1 = page1.json();
      expect(p1.data.map((d: { id: string }) => d.id)).toEqual([theirs, ids[2]]);
      expect(p1.hasMore).toBe(true);
      expect(p1.totalCount).toBe(4);
      expect(p1.data[0]).not.toHaveProperty('content');
      const p2 = (await t.call('GET', `/documents?limit=2&cursor=${p1.nextCursor}`)).json();
      expect(p2.data.map((d: { id: string }) => d.id)).toEqual([ids[1], ids[0]]);
      expect(p2.hasMore).toBe(false);
      expect(p2).not.toHaveProperty('nextCursor');

      const filtered = (await t.call('GET', `/documents?documentHolder=${encodeURIComponent(customerId)}`)).json();
      expect(filtered.totalCount).toBe(3);
      expect(filtered.data.every((d: { documentHolder: string }) => d.documentHolder === customerId)).toBe(true);
    });

    it('gets one document, and 404s an unknown id or another platform’s', async () => {
      const doc = await uploaded();
      const res = await t.call('GET', `/documents/${doc.id}`);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual(doc);

      const unknownId = 'Document:01950000-0000-7000-8000-000000000000';
      const unknown = envelope(await t.call('GET', `/documents/${unknownId}`), 404, 'REFERENCE_NOT_FOUND');
      const other = await otherPlatformAuth();
      const foreign = envelope(await t.call('GET', `/documents/${doc.id}`, undefined, { authorization: other }), 404, 'REFERENCE_NOT_FOUND');
      expect(foreign.message.replace(doc.id, 'X')).toBe(unknown.message.replace(unknownId, 'X'));
      envelope(await t.call('GET', `/documents/${doc.id}/content`, undefined, { authorization: other }), 404, 'REFERENCE_NOT_FOUND');
      expect((await t.call('GET', '/documents', undefined, { authorization: other })).json().totalCount).toBe(0);
    });
  });

  describe('PUT /documents/{id}', () => {
    it('replaces the file and the metadata', async () => {
      const doc = await uploaded({ ...passport(), documentNumber: 'OLD1' });
      t.clock.advance(5_000);
      const res = await send('PUT', `/documents/${doc.id}`, form({ documentType: 'NATIONAL_ID', side: 'BACK', country: 'FR' }, { bytes: PDF, name: 'id-back.pdf' }));
      expect(res.statusCode, res.body).toBe(200);
      const replaced = res.json();
      expect(replaced).toEqual({
        id: doc.id,
        documentHolder: customerId,
        documentType: 'NATIONAL_ID',
        side: 'BACK',
        country: 'FR',
        fileName: 'id-back.pdf',
        createdAt: doc.createdAt,
        updatedAt: new Date(t.clock.nowMs()).toISOString(),
      });
      expect((await t.call('GET', `/documents/${doc.id}`)).json()).toEqual(replaced);
      const content = await t.call('GET', `/documents/${doc.id}/content`);
      expect(content.headers['content-type']).toBe('application/pdf');
      expect(content.rawPayload.equals(PDF)).toBe(true);
    });

    it('validates like the upload, refuses a new holder and 404s unknown ids', async () => {
      const doc = await uploaded();
      const e = envelope(await send('PUT', `/documents/${doc.id}`, form({ country: 'GB' }, { bytes: TEXT, name: 'a.png' })), 400, 'INVALID_INPUT');
      expect(fieldErrors(e.details).map((x) => x.field).sort()).toEqual(['documentType', 'file']);
      const other = await createCustomer();
      const holder = envelope(await send('PUT', `/documents/${doc.id}`, form({ ...passport(), documentHolder: other }, { bytes: PNG, name: 'a.png' })), 400, 'INVALID_INPUT');
      expect(fieldErrors(holder.details).map((x) => x.field)).toEqual(['documentHolder']);
      expect((await send('PUT', `/documents/${doc.id}`, form(passport(), { bytes: JPEG, name: 'same-holder.jpg' }))).statusCode).toBe(200);
      envelope(await send('PUT', '/documents/Document:01950000-0000-7000-8000-000000000000', form(passport(), { bytes: PNG, name: 'a.png' })), 404, 'REFERENCE_NOT_FOUND');
      expect((await t.call('GET', `/documents/${doc.id}/content`)).rawPayload.equals(JPEG)).toBe(true);
    });
  });

  describe('DELETE /documents/{id}', () => {
    it('deletes a document, then 404s it', async () => {
      const doc = await uploaded();
      const res = await t.call('DELETE', `/documents/${doc.id}`);
      expect(res.statusCode).toBe(204);
      expect(res.body).toBe('');
      envelope(await t.call('GET', `/documents/${doc.id}`), 404, 'REFERENCE_NOT_FOUND');
      envelope(await t.call('DELETE', `/documents/${doc.id}`), 404, 'REFERENCE_NOT_FOUND');
    });

    it('answers 409 once the document was submitted for verification', async () => {
      const doc = await uploaded();
      await t.store.db.updateTable('documents').set({ submitted: 1 }).where('id', '=', doc.id).execute();
      envelope(await t.call('DELETE', `/documents/${doc.id}`), 409, 'CONFLICT');
      expect((await t.call('GET', `/documents/${doc.id}`)).statusCode).toBe(200);
    });

    it('does not delete another platform’s document', async () => {
      const doc = await uploaded();
      const other = await otherPlatformAuth();
      envelope(await t.call('DELETE', `/documents/${doc.id}`, undefined, { authorization: other }), 404, 'REFERENCE_NOT_FOUND');
      expect((await t.call('GET', `/documents/${doc.id}`)).statusCode).toBe(200);
    });
  });

  it('documents the endpoints in the OpenAPI description', async () => {
    const spec = (await t.call('GET', '/openapi.json')).json();
    expect(Object.keys(spec.paths['/documents'].post.requestBody.content)).toEqual(['multipart/form-data']);
    expect(spec.paths['/documents/{documentId}/content'].get).toBeDefined();
  });
});
