import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_AUTH, envelope, makeApp, STORE, storeSeries, type TestApp, V, waitFor } from '../helpers.js';
import { otherPlatformAuth } from '../money-helpers.js';
import { Receiver } from '../webhook-receiver.js';

// POST /customers/bulk/csv and GET /customers/bulk/jobs/{jobId}: the file's checks (400s),
// rows validated with POST /customers' rules, exact counts and per-row errors, the job's
// states (PENDING → PROCESSING → COMPLETED/FAILED) on the durable job queue, BULK_UPLOAD.*
// webhooks, 10,000 rows, and a restart in the middle of an import.

const HEADER = 'umaAddress,platformCustomerId,customerType,fullName,birthDate,addressLine1,city,state,postalCode,country,businessLegalName,businessTaxId,businessIncorporatedOn,email';

function multipart(parts: Array<{ name: string; fileName?: string; content: string | Buffer; type?: string }>): { payload: Buffer; contentType: string } {
  const boundary = `----bulk${Math.random().toString(16).slice(2)}`;
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const disp = p.fileName !== undefined ? `form-data; name="${p.name}"; filename="${p.fileName}"` : `form-data; name="${p.name}"`;
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disp}\r\n${p.fileName !== undefined ? `Content-Type: ${p.type ?? 'text/csv'}\r\n` : ''}\r\n`));
    chunks.push(Buffer.isBuffer(p.content) ? p.content : Buffer.from(p.content));
    chunks.push(Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

async function upload(t: TestApp, csv: string, auth = DEFAULT_AUTH) {
  const { payload, contentType } = multipart([{ name: 'file', fileName: 'customers.csv', content: csv }]);
  return t.app.inject({ method: 'POST', url: `${V}/customers/bulk/csv`, payload, headers: { authorization: auth, 'content-type': contentType } });
}

interface Job {
  id: string;
  status: string;
  progress: { total: number; processed: number; successful: number; failed: number };
  errors: Array<{ correlationId: string; row: number; line: number; field: string; code: string; message: string; details: { row: number; field: string } }>;
  completedAt?: string;
}

async function uploadOk(t: TestApp, csv: string): Promise<string> {
  const res = await upload(t, csv);
  expect(res.statusCode, res.body).toBe(202);
  const body = res.json() as { jobId: string; status: string };
  expect(body.status).toBe('PENDING');
  expect(body.jobId).toMatch(/^Job:[0-9a-f-]{36}$/);
  return body.jobId;
}

async function job(t: TestApp, id: string): Promise<Job> {
  const res = await t.call('GET', `/customers/bulk/jobs/${id}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as Job;
}

const uid = () => Math.random().toString(36).slice(2, 10);
function individual(id: string, extra: Partial<Record<'birthDate' | 'email' | 'country' | 'fullName' | 'uma', string>> = {}): string {
  const uma = extra.uma ?? `$${id}@bulk.example.com`;
  return `${uma},${id},INDIVIDUAL,${extra.fullName ?? 'Ann Example'},${extra.birthDate ?? '1990-01-15'},123 Main St,San Francisco,CA,94105,${extra.country ?? 'US'},,,,${extra.email ?? ''}`;
}
function business(id: string): string {
  return `$${id}@bulk.example.com,${id},BUSINESS,,,400 Commerce Way,Austin,TX,78701,US,Acme ${id} Inc,12-3456789,2015-03-01,`;
}

describe(`bulk customer import (${STORE})`, () => {
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

  it("reads rows shorter than the header as ending in empty cells (the reference's own example file)", async () => {
    const p = uid();
    // The reference's uploadCustomersCsv example: a 12-column header, 10-value rows.
    const csv = [
      'umaAddress,platformCustomerId,customerType,fullName,birthDate,addressLine1,city,state,postalCode,country,platformAccountId,businessLegalName',
      `${p}j@uma.domain.com,${p}j,INDIVIDUAL,John Doe,1990-01-15,123 Main St,San Francisco,CA,94105,US`,
      `${p}k@uma.domain.com,${p}k,BUSINESS,,,400 Commerce Way,Austin,TX,78701,US`,
      `${p}l@uma.domain.com,${p}l,INDIVIDUAL`, // three values: everything else absent
      `${p}m@uma.domain.com,${p}m,INDIVIDUAL,,,,,,,,,,x`, // 13 values: one too many
    ].join('\n');
    const id = await uploadOk(t, csv);
    await t.running.jobs.runDue();
    const done = await job(t, id);
    expect(done.status).toBe('COMPLETED');
    expect(done.progress).toEqual({ total: 4, processed: 4, successful: 2, failed: 2 });
    // The short business row is read: it fails on what a business needs, never on its length.
    const byRow = (row: number) => done.errors.filter((e) => e.row === row).map((e) => e.field);
    expect(byRow(1)).toEqual([]);
    expect(byRow(2)).toEqual(expect.arrayContaining(['businessLegalName']));
    expect(byRow(2)).not.toContain('row');
    expect(byRow(3)).toEqual([]);
    expect(byRow(4)).toEqual(['row']);
    expect(done.errors.find((e) => e.row === 4)!.message).toContain('has 13 values; the header has only 12 columns');
    for (const [pcid, name] of [[`${p}j`, 'John Doe'], [`${p}l`, undefined]] as const) {
      const list = (await t.call('GET', `/customers?platformCustomerId=${pcid}`)).json() as { data: Array<{ umaAddress: string; fullName?: string; address?: { country?: string } }> };
      expect(list.data).toHaveLength(1);
      expect(list.data[0]!.umaAddress).toBe(`$${pcid}@uma.domain.com`);
      expect(list.data[0]!.fullName).toBe(name);
    }
  });

  it('creates the good rows, reports every problem of the bad ones by row, column and message, and announces BULK_UPLOAD.COMPLETED', async () => {
    const p = uid();
    const csv = [
      HEADER,
      individual(`${p}a`),
      business(`${p}b`),
      individual(`${p}c`, { birthDate: '15/01/1990', email: 'not-an-email' }), // two invalid fields
      Array.from({ length: 15 }, () => 'nope').join(','), // more values than columns
      individual(`${p}a`, { uma: `$${p}other@bulk.example.com` }), // platformCustomerId repeated
      individual(`${p}e`, { uma: `$${p}a@bulk.example.com` }), // UMA address taken
      `$${p}f@bulk.example.com,${p}f,BUSINESS,,,1 Road,Austin,TX,78701,US,,,,`, // business without its required fields
      `$${p}g@bulk.example.com,${p}g,PERSON,,,,,,,,,,,`, // unknown type
      individual(`${p}h`, { country: 'USA' }),
      `${p}i@bulk.example.com,${p}i,INDIVIDUAL,Ian Example,,,,,,,,,,`, // no $: added
    ].join('\n');
    const id = await uploadOk(t, csv);
    const pending = await job(t, id);
    expect(pending).toMatchObject({ id, status: 'PENDING', progress: { total: 10, processed: 0, successful: 0, failed: 0 }, errors: [] });
    expect(pending.completedAt).toBeUndefined();

    await t.running.jobs.runDue();
    const done = await job(t, id);
    expect(done.status).toBe('COMPLETED');
    expect(done.progress).toEqual({ total: 10, processed: 10, successful: 3, failed: 7 });
    expect(typeof done.completedAt).toBe('string');
    const summary = done.errors.map((e) => [e.row, e.line, e.field, e.code, e.correlationId]);
    expect(summary).toEqual([
      [3, 4, 'birthDate', 'INVALID_INPUT', `${p}c`],
      [3, 4, 'email', 'INVALID_INPUT', `${p}c`],
      [4, 5, 'row', 'INVALID_INPUT', 'nope'],
      [5, 6, 'platformCustomerId', 'CONFLICT', `${p}a`],
      [6, 7, 'umaAddress', 'UMA_ADDRESS_EXISTS', `${p}e`],
      [7, 8, 'businessLegalName', 'INVALID_INPUT', `${p}f`],
      [7, 8, 'businessTaxId', 'INVALID_INPUT', `${p}f`],
      [7, 8, 'businessIncorporatedOn', 'INVALID_INPUT', `${p}f`],
      [8, 9, 'customerType', 'INVALID_INPUT', `${p}g`],
      [9, 10, 'country', 'INVALID_INPUT', `${p}h`],
    ]);
    for (const e of done.errors) {
      expect(e.message.length).toBeGreaterThan(0);
      expect(e.details).toMatchObject({ row: e.row, field: e.field });
    }
    expect(done.errors[2]!.message).toContain('has 15 values; the header has only 14 columns');

    // The created customers are ordinary customers.
    for (const [pcid, type] of [[`${p}a`, 'INDIVIDUAL'], [`${p}b`, 'BUSINESS'], [`${p}i`, 'INDIVIDUAL']] as const) {
      const list = (await t.call('GET', `/customers?platformCustomerId=${pcid}`)).json() as { data: Array<{ customerType: string; umaAddress: string; address?: { city?: string } }> };
      expect(list.data).toHaveLength(1);
      expect(list.data[0]!.customerType).toBe(type);
    }
    const ian = ((await t.call('GET', `/customers?platformCustomerId=${p}i`)).json() as { data: Array<{ umaAddress: string }> }).data[0]!;
    expect(ian.umaAddress).toBe(`$${p}i@bulk.example.com`);
    const none = (await t.call('GET', `/customers?platformCustomerId=${p}c`)).json() as { data: unknown[] };
    expect(none.data).toHaveLength(0);

    await t.running.webhooks.runDue();
    await waitFor(() => receiver.got.some((r) => (r.json.data as { id?: string }).id === id));
    const hooks = receiver.got.filter((r) => (r.json.data as { id?: string }).id === id);
    expect(hooks.map((h) => h.json.type)).toEqual(['BULK_UPLOAD.COMPLETED']);
    expect(hooks[0]!.json.data).toMatchObject({ id, status: 'COMPLETED', progress: { total: 10, processed: 10, successful: 3, failed: 7 } });
  });

  it('a file whose every row fails ends FAILED with BULK_UPLOAD.FAILED', async () => {
    const p = uid();
    const id = await uploadOk(t, [HEADER, individual(`${p}x`, { birthDate: 'soon' }), individual(`${p}y`, { country: 'ZZZ' })].join('\r\n'));
    await t.running.jobs.runDue();
    const done = await job(t, id);
    expect(done.status).toBe('FAILED');
    expect(done.progress).toEqual({ total: 2, processed: 2, successful: 0, failed: 2 });
    expect(done.errors.map((e) => e.row)).toEqual([1, 2]);
    await t.running.webhooks.runDue();
    await waitFor(() => receiver.got.some((r) => (r.json.data as { id?: string }).id === id));
    expect(receiver.got.filter((r) => (r.json.data as { id?: string }).id === id).map((h) => h.json.type)).toEqual(['BULK_UPLOAD.FAILED']);
  });

  it('moves PENDING → PROCESSING → COMPLETED a chunk of 250 rows per job run', async () => {
    const p = uid();
    const rows = Array.from({ length: 600 }, (_, i) => individual(`${p}r${i}`));
    const id = await uploadOk(t, [HEADER, ...rows].join('\n'));
    expect((await job(t, id)).status).toBe('PENDING');
    expect(await t.running.jobs.runOne()).toBe(true);
    expect(await job(t, id)).toMatchObject({ status: 'PROCESSING', progress: { total: 600, processed: 250, successful: 250, failed: 0 } });
    expect(await t.running.jobs.runOne()).toBe(true);
    expect((await job(t, id)).progress.processed).toBe(500);
    expect(await t.running.jobs.runOne()).toBe(true);
    expect(await job(t, id)).toMatchObject({ status: 'COMPLETED', progress: { total: 600, processed: 600, successful: 600, failed: 0 } });
    expect(await t.running.jobs.runOne()).toBe(false);
  });

  it('quoted values, a BOM, blank lines and a value spanning lines are read as CSV', async () => {
    const p = uid();
    const csv = `\uFEFF${HEADER}\n\n"$${p}q@bulk.example.com",${p}q,INDIVIDUAL,"Doe, Jane",1990-01-15,"1 Main St\nApt 2",SF,CA,94105,US,,,,\n\n${individual(`${p}s`)}\n`;
    const id = await uploadOk(t, csv);
    await t.running.jobs.runDue();
    const done = await job(t, id);
    expect(done.progress).toEqual({ total: 2, processed: 2, successful: 2, failed: 0 });
    const jane = ((await t.call('GET', `/customers?platformCustomerId=${p}q`)).json() as { data: Array<{ fullName: string; address: { line1: string } }> }).data[0]!;
    expect(jane.fullName).toBe('Doe, Jane');
    expect(jane.address.line1).toBe('1 Main St\nApt 2');
  });

  it('refuses what is not a usable CSV upload with a 400 that names the problem, creating no job', async () => {
    const bad = async (res: Awaited<ReturnType<typeof upload>>, code = 'INVALID_INPUT') => envelope(res, 400, code);
    // Not multipart at all.
    await bad(await t.call('POST', '/customers/bulk/csv', { file: 'x' }), 'INVALID_REQUEST_FORMAT');
    // No file part.
    const noFile = multipart([{ name: 'other', content: 'x' }]);
    const e1 = await bad(await t.app.inject({ method: 'POST', url: `${V}/customers/bulk/csv`, payload: noFile.payload, headers: { authorization: DEFAULT_AUTH, 'content-type': noFile.contentType } }));
    expect(e1.details!.errors).toEqual([expect.objectContaining({ field: 'file' })]);
    // Two files.
    const two = multipart([{ name: 'file', fileName: 'a.csv', content: HEADER }, { name: 'file', fileName: 'b.csv', content: HEADER }]);
    await bad(await t.app.inject({ method: 'POST', url: `${V}/customers/bulk/csv`, payload: two.payload, headers: { authorization: DEFAULT_AUTH, 'content-type': two.contentType } }));
    // Empty, header only.
    expect(((await bad(await upload(t, ''))).details!.errors as Array<{ message: string }>)[0]!.message).toContain('empty');
    expect(((await bad(await upload(t, `${HEADER}\n`))).details!.errors as Array<{ message: string }>)[0]!.message).toContain('no customer rows');
    // Not CSV: an unclosed quote.
    const notCsv = await bad(await upload(t, `${HEADER}\n"$a@b.com,x,INDIVIDUAL\n`));
    expect(notCsv.message).toContain('not valid CSV');
    // Every header problem at once.
    const header = await bad(await upload(t, 'umaAddress,shoeSize,umaAddress,\nx,y,z,\n'));
    const msgs = (header.details!.errors as Array<{ field: string; message: string }>).map((e) => e.message);
    expect(msgs).toHaveLength(4);
    expect(msgs.join('|')).toMatch(/shoeSize.*appears twice.*no name.*no customerType/);
    // Unauthenticated.
    envelope(await upload(t, `${HEADER}\n${individual(uid())}`, 'Basic eDp5'), 401, 'UNAUTHORIZED');
  });

  it('an upload with an Idempotency-Key replays its 202: one import', async () => {
    const { payload, contentType } = multipart([{ name: 'file', fileName: 'c.csv', content: `${HEADER}\n${individual(uid())}` }]);
    const send = () => t.app.inject({ method: 'POST', url: `${V}/customers/bulk/csv`, payload, headers: { authorization: DEFAULT_AUTH, 'content-type': contentType, 'idempotency-key': `bulk-${uid()}-fixed` } });
    const key = `bulk-${uid()}`;
    const withKey = () => t.app.inject({ method: 'POST', url: `${V}/customers/bulk/csv`, payload, headers: { authorization: DEFAULT_AUTH, 'content-type': contentType, 'idempotency-key': key } });
    const first = await withKey();
    expect(first.statusCode, first.body).toBe(202);
    const again = await withKey();
    expect(again.statusCode).toBe(202);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
    expect((await send()).statusCode).toBe(202);
    await t.running.jobs.runDue();
  });

  it('answers 404 BULK_UPLOAD_JOB_NOT_FOUND for an unknown job and for another platform’s', async () => {
    envelope(await t.call('GET', '/customers/bulk/jobs/Job:019542f5-b3e7-7d02-8000-000000000006'), 404, 'BULK_UPLOAD_JOB_NOT_FOUND');
    const id = await uploadOk(t, `${HEADER}\n${individual(uid())}`);
    const other = await otherPlatformAuth(t);
    envelope(await t.call('GET', `/customers/bulk/jobs/${id}`, undefined, other), 404, 'BULK_UPLOAD_JOB_NOT_FOUND');
    expect((await t.call('GET', `/customers/bulk/jobs/${id}`)).statusCode).toBe(200);
    await t.running.jobs.runDue();
  });

  it('imports 10,000 rows, some bad, in seconds, with exact counts and per-row errors', async () => {
    const p = uid();
    const bad = new Map<number, string>(); // row → column at fault
    const rows: string[] = [];
    for (let i = 1; i <= 10_000; i++) {
      if (i % 997 === 0) {
        rows.push(individual(`${p}n${i}`, { birthDate: '1990-13-45' }));
        bad.set(i, 'birthDate');
      } else if (i % 1_499 === 0) {
        rows.push(individual(`${p}n${i}`, { email: 'x@' }));
        bad.set(i, 'email');
      } else rows.push(individual(`${p}n${i}`));
    }
    const started = Date.now();
    const id = await uploadOk(t, [HEADER, ...rows].join('\n'));
    await t.running.jobs.runDue();
    const done = await job(t, id);
    const seconds = (Date.now() - started) / 1000;
    expect(done.status).toBe('COMPLETED');
    expect(done.progress).toEqual({ total: 10_000, processed: 10_000, successful: 10_000 - bad.size, failed: bad.size });
    expect(done.errors.map((e) => [e.row, e.line, e.field, e.correlationId])).toEqual([...bad.entries()].sort((a, b) => a[0] - b[0]).map(([r, f]) => [r, r + 1, f, `${p}n${r}`]));
    expect(seconds).toBeLessThan(STORE === 'postgres' ? 45 : 20);
  }, 90_000);
});

describe(`bulk import across a restart (${STORE})`, () => {
  it('an import interrupted by closing the app completes on the next start with exact counts', async () => {
    const series = await storeSeries();
    try {
      const p = uid();
      const rows = Array.from({ length: 3_000 }, (_, i) => (i % 100 === 7 ? individual(`${p}z${i}`, { birthDate: 'x' }) : individual(`${p}z${i}`)));
      // The first server accepts the file and commits two chunks, then stops.
      const first = await makeApp({ testStore: await series.open(), worker: false });
      let id: string;
      try {
        id = await uploadOk(first, [HEADER, ...rows].join('\n'));
        expect(await first.running.jobs.runOne()).toBe(true);
        expect(await first.running.jobs.runOne()).toBe(true);
        expect(await job(first, id)).toMatchObject({ status: 'PROCESSING', progress: { total: 3_000, processed: 500, successful: 495, failed: 5 } });
      } finally {
        await first.running.close();
      }
      // A new server on the same store: its job worker finds the import's next chunk and finishes it.
      const second = await makeApp({ testStore: await series.open(), worker: true });
      try {
        expect((await job(second, id)).progress.processed).toBeGreaterThanOrEqual(500);
        await waitFor(async () => (await job(second, id)).status === 'COMPLETED', 60_000, 20);
        const done = await job(second, id);
        expect(done.progress).toEqual({ total: 3_000, processed: 3_000, successful: 2_970, failed: 30 });
        expect(done.errors.map((e) => e.row)).toEqual(Array.from({ length: 30 }, (_, k) => k * 100 + 8));
        // Each row created once: the customers of the file are exactly the good rows.
        let count = 0;
        let cursor: string | undefined;
        do {
          const page = (await second.call('GET', `/customers?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)).json() as { data: Array<{ platformCustomerId: string }>; nextCursor?: string };
          count += page.data.filter((c) => c.platformCustomerId.startsWith(`${p}z`)).length;
          cursor = page.nextCursor;
        } while (cursor);
        expect(count).toBe(2_970);
      } finally {
        await second.running.close();
      }
    } finally {
      await series.drop();
    }
  }, 120_000);
});
