import { request } from 'node:http';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { migrations } from '../../src/kernel/db/migrations.js';
import { DEFAULT_AUTH, envelope, makeApp, STORE, type TestApp, V } from '../helpers.js';

// Issue 14: document bytes in the store in chunks, streamed in and out; a per-platform quota;
// an upload over the size limit refused as soon as the limit is reached.

const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const png = (size: number) => Buffer.concat([PNG_MAGIC, randomBytes(size - PNG_MAGIC.length)]);
const MAX = 10 * 1024 * 1024;
const PORT = 18350 + (STORE === 'postgres' ? 1 : 0);

function form(fields: Record<string, string>, bytes: Buffer): FormData {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  fd.append('file', new Blob([bytes], { type: 'image/png' }), 'scan.png');
  return fd;
}

describe(`document storage (${STORE})`, () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  async function customer(): Promise<string> {
    const res = await t!.call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Ada Lovelace', birthDate: '1990-01-01', nationality: 'GB' });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().id as string;
  }
  const send = (method: 'POST' | 'PUT', path: string, fd: FormData) => t!.app.inject({ method, url: `${V}${path}`, payload: fd, headers: { authorization: DEFAULT_AUTH } });
  const passport = (holder: string) => ({ documentHolder: holder, documentType: 'PASSPORT', country: 'GB' });

  it('keeps the bytes in 256 KiB chunks and gives them back whole', async () => {
    t = await makeApp();
    const holder = await customer();
    const bytes = png(600 * 1024);
    const res = await send('POST', '/documents', form(passport(holder), bytes));
    expect(res.statusCode, res.body).toBe(201);
    const id = res.json().id as string;
    const chunks = await t.store.db.selectFrom('document_chunks').select(['seq', 'bytes']).where('document_id', '=', id).orderBy('seq').execute();
    expect(chunks.map((c) => [c.seq, Buffer.from(c.bytes).length])).toEqual([[0, 262144], [1, 262144], [2, 600 * 1024 - 524288]]);
    const row = await t.store.db.selectFrom('documents').select(['content', 'size_bytes']).where('id', '=', id).executeTakeFirstOrThrow();
    expect([Buffer.from(row.content).length, Number(row.size_bytes)]).toEqual([0, bytes.length]);
    const got = await t.call('GET', `/documents/${id}/content`);
    expect(got.statusCode).toBe(200);
    expect(got.headers['content-length']).toBe(String(bytes.length));
    expect(got.rawPayload.equals(bytes)).toBe(true);

    // Replaced: the new bytes only; deleted: no chunk left.
    const smaller = png(1000);
    expect((await send('PUT', `/documents/${id}`, form({ documentType: 'PASSPORT', country: 'GB' }, smaller))).statusCode).toBe(200);
    expect((await t.call('GET', `/documents/${id}/content`)).rawPayload.equals(smaller)).toBe(true);
    expect((await t.call('DELETE', `/documents/${id}`)).statusCode).toBe(204);
    expect(await t.store.db.selectFrom('document_chunks').select('seq').where('document_id', '=', id).execute()).toEqual([]);
  });

  it('moves the bytes of documents from before into chunks, by migration 0016_auth_documents', async () => {
    t = await makeApp();
    const holder = await customer();
    const bytes = png(5000);
    const id = (await send('POST', '/documents', form(passport(holder), bytes))).json().id as string;
    // As before the migration: the bytes in documents.content, no chunk table. Then its step runs.
    await t.store.db.updateTable('documents').set({ content: bytes }).where('id', '=', id).execute();
    await sql`drop table document_chunks`.execute(t.store.db);
    await migrations()['0016_auth_documents']!.up(t.store.db as never);
    expect((await t.call('GET', `/documents/${id}/content`)).rawPayload.equals(bytes)).toBe(true);
    const row = await t.store.db.selectFrom('documents').select('content').where('id', '=', id).executeTakeFirstOrThrow();
    expect(Buffer.from(row.content).length).toBe(0);
  });

  it('refuses an upload past the platform quota with a 400 naming the file, and counts replacements and deletions', async () => {
    t = await makeApp({ env: { PAYMENTS_DOCUMENT_QUOTA_BYTES: '3000' } });
    const holder = await customer();
    const first = await send('POST', '/documents', form(passport(holder), png(1000)));
    expect(first.statusCode, first.body).toBe(201);
    expect((await send('POST', '/documents', form(passport(holder), png(1000)))).statusCode).toBe(201);
    const over = envelope(await send('POST', '/documents', form(passport(holder), png(1001))), 400, 'INVALID_INPUT');
    expect(over.details).toEqual({
      errors: [{ field: 'file', constraint: { maxLength: 1000 }, message: expect.stringMatching(/quota of 3000 bytes \(2000 bytes in use, 1000 left\)/) }],
    });
    // Nothing was written by the refused upload.
    expect((await t.call('GET', '/documents')).json().data).toHaveLength(2);
    // Exactly at the quota is fine; a replacement counts the file it replaces.
    expect((await send('POST', '/documents', form(passport(holder), png(1000)))).statusCode).toBe(201);
    const id = first.json().id as string;
    expect((await send('PUT', `/documents/${id}`, form({ documentType: 'PASSPORT', country: 'GB' }, png(1000)))).statusCode).toBe(200);
    envelope(await send('PUT', `/documents/${id}`, form({ documentType: 'PASSPORT', country: 'GB' }, png(1001))), 400, 'INVALID_INPUT');
    expect((await t.call('GET', `/documents/${id}/content`)).rawPayload.length).toBe(1000);
    expect((await t.call('DELETE', `/documents/${id}`)).statusCode).toBe(204);
    expect((await send('POST', '/documents', form(passport(holder), png(1000)))).statusCode).toBe(201);
  });

  it('answers an oversized upload 400 at the limit, before the client has sent the rest of the body', { timeout: 10_000 }, async () => {
    t = await makeApp();
    const holder = await customer();
    await t.app.listen({ port: PORT, host: '127.0.0.1' });
    const boundary = `----b${randomBytes(8).toString('hex')}`;
    const head = Buffer.from(
      Object.entries(passport(holder)).map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`).join('') +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.png"\r\nContent-Type: image/png\r\n\r\n`,
    );
    const declared = head.length + 50 * 1024 * 1024; // announces 50 MB, sends a little over 10 MB
    const answer = await new Promise<{ status: number; body: string; sent: number }>((resolve, reject) => {
      let sent = 0;
      const req = request(
        { host: '127.0.0.1', port: PORT, method: 'POST', path: `${V}/documents`, headers: { authorization: DEFAULT_AUTH, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': declared } },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => {
            resolve({ status: res.statusCode ?? 0, body, sent });
            req.destroy();
          });
        },
      );
      req.on('error', (err) => (sent > 0 ? undefined : reject(err)));
      req.write(head);
      const piece = png(64 * 1024);
      const pump = () => {
        // Never more than the limit and one more megabyte: the answer must come without the rest.
        while (sent < MAX + 1024 * 1024) {
          sent += piece.length;
          if (!req.write(piece)) return void req.once('drain', pump);
        }
      };
      pump();
    });
    expect(answer.status).toBe(400);
    expect(answer.sent).toBeLessThan(declared);
    expect(JSON.parse(answer.body)).toMatchObject({ status: 400, code: 'INVALID_INPUT', details: { errors: [{ field: 'file', constraint: { maxLength: MAX } }] } });
    expect((await t.call('GET', '/documents')).json().data).toEqual([]);
  });
});
