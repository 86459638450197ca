import { createReadStream } from 'node:fs';
import type { Kysely, Transaction } from 'kysely';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { invalidInput, notFound } from '../../kernel/errors.js';
import { emitEvent } from '../../kernel/events.js';
import { effectTransaction } from '../../kernel/idempotency.js';
import type { Hooks } from '../../kernel/hooks.js';
import { newId } from '../../kernel/ids.js';
import { iso } from '../../kernel/clock.js';
import type { JobContext, JobQueue } from '../../kernel/jobs.js';
import { createSettings, customerCreateErrors, insertNewCustomers, MAX_GENERATION_ATTEMPTS, newCustomerRow, platformCustomerIdConflict, takenIdentifiers, umaAddressConflict } from '../customers/service.js';
import type { CustomerCreateRequest } from '../customers/schemas.js';
import type { CustomerRow } from '../customers/store.js';
import type { MultipartForm } from '../../kernel/multipart.js';
import { findPlatform } from '../../operator/platforms/store.js';
import { columnOf, parseCsv, rowToBody } from './csv.js';
import type { BulkCustomerImportErrorEntry, BulkCustomerImportJob } from './schemas.js';
import {
  type BulkImportErrorsTable,
  type BulkImportsTable,
  deleteRowsThrough,
  errorsOf,
  findImport,
  importById,
  insertErrors,
  insertImport,
  insertRows,
  pendingRows,
  updateImport,
} from './store.js';
import type { PlatformRow } from '../../operator/platforms/store.js';

// The bulk customer import. The upload parses the whole file (a file that is not CSV, or
// whose header is wrong, is refused with a 400 and creates nothing), stores its rows and
// schedules a durable job; the job creates the customers a chunk of rows at a time, each
// chunk in one transaction with its progress and the next chunk's job, so a restart
// resumes after the last committed chunk and never creates a row's customer twice. Each
// row goes through POST /customers' own checks and creation (the customers service); a
// row that fails is recorded with its problems and never stops the others.

export const BULK_IMPORT_JOB = 'customers.bulk_import';
/** Rows per job run: one transaction each. */
export const CHUNK_ROWS = 250;

export interface BulkDeps {
  store: Store;
  hooks: Hooks;
  jobs: JobQueue;
}

type Db = Kysely<DB> | Transaction<DB>;

export async function view(db: Db, row: BulkImportsTable): Promise<BulkCustomerImportJob> {
  const errors: BulkCustomerImportErrorEntry[] = (await errorsOf(db, row.id)).map((e) => ({
    correlationId: e.correlation_id,
    row: Number(e.row_no),
    line: Number(e.line_no),
    field: e.field,
    code: e.code,
    message: e.message,
    details: { row: Number(e.row_no), line: Number(e.line_no), field: e.field },
  }));
  const v: BulkCustomerImportJob = {
    id: row.id,
    status: row.status as BulkCustomerImportJob['status'],
    progress: { total: Number(row.total), processed: Number(row.processed), successful: Number(row.successful), failed: Number(row.failed) },
    errors,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
  if (row.file_name) v.fileName = row.file_name;
  if (row.completed_at) v.completedAt = row.completed_at;
  return v;
}

export async function getImport(db: Kysely<DB>, platformId: string, id: string): Promise<BulkCustomerImportJob> {
  const row = await findImport(db, platformId, id);
  if (!row) throw notFound('BULK_UPLOAD_JOB_NOT_FOUND', 'Bulk upload job', id);
  return view(db, row);
}

/** POST /customers/bulk/csv: check and store the file, schedule its job. */
export async function startImport(deps: BulkDeps, platform: PlatformRow, now: { ms: number; at: string }, form: MultipartForm): Promise<{ jobId: string; status: 'PENDING' }> {
  const files = form.files.file ?? [];
  const others = Object.keys(form.files).filter((k) => k !== 'file');
  if (files.length !== 1 || others.length > 0) {
    const errors = [
      ...(files.length === 0 ? [{ field: 'file', message: 'is required: send the CSV as the form’s file part named file' }] : []),
      ...(files.length > 1 ? [{ field: 'file', message: 'must be sent once: one CSV file per upload' }] : []),
      ...others.map((k) => ({ field: k, message: 'is not a field of this form: send the CSV as file' })),
    ];
    throw invalidInput(errors);
  }
  const file = files[0]!;
  const parsed = await parseCsv(createReadStream(file.path));
  const id = newId('Job');
  // With an Idempotency-Key, the 202 is stored in the same transaction as the job (a retry replays it, never a second import).
  await effectTransaction(deps.store.db, async (trx) => {
    await insertImport(trx, {
      id,
      platform_id: platform.id,
      status: 'PENDING',
      file_name: file.fileName || null,
      columns: JSON.stringify(parsed.columns),
      total: parsed.rows.length,
      processed: 0,
      successful: 0,
      failed: 0,
      error_count: 0,
      created_at: now.at,
      updated_at: now.at,
      completed_at: null,
    });
    const rows = parsed.rows.map((r, i) => ({ import_id: id, row_no: i + 1, line_no: r.line, cells: JSON.stringify(r.cells) }));
    for (let i = 0; i < rows.length; i += 500) await insertRows(trx, rows.slice(i, i + 500));
    await deps.jobs.schedule(trx, { platformId: platform.id, kind: BULK_IMPORT_JOB, payload: { importId: id }, runAtMs: now.ms, at: now.at });
    return { jobId: id, status: 'PENDING' as const };
  });
  return { jobId: id, status: 'PENDING' };
}

/** One chunk of an import, in the job's transaction. */
async function runChunk(deps: BulkDeps, ctx: JobContext): Promise<void> {
  const { trx } = ctx;
  const { importId } = ctx.job.payload as { importId: string };
  const job = await importById(trx, importId);
  if (!job || job.status === 'COMPLETED' || job.status === 'FAILED') return;
  const platform = await findPlatform(trx as unknown as Kysely<DB>, job.platform_id);
  if (!platform) return;
  const at = iso(ctx.nowMs);
  const columns = JSON.parse(job.columns) as string[];
  const rows = await pendingRows(trx, importId, CHUNK_ROWS);
  const settings = await createSettings(trx, platform);
  let successful = 0;
  let failed = 0;
  let seq = Number(job.error_count);
  const errors: BulkImportErrorsTable[] = [];
  // Pass 1: each row's own problems (the file's shape and POST /customers' checks).
  const valid: Array<{ r: (typeof rows)[number]; correlationId: string; body: CustomerCreateRequest }> = [];
  const recordFor = (r: (typeof rows)[number], correlationId: string) => (field: string, code: string, message: string): void => {
    errors.push({ import_id: importId, seq: 0, row_no: Number(r.row_no), line_no: Number(r.line_no), correlation_id: correlationId, field, code, message });
  };
  for (const r of rows) {
    const cells = JSON.parse(r.cells) as string[];
    const pci = cells[columns.indexOf('platformCustomerId')];
    const correlationId = pci ? pci : `row:${r.row_no}`;
    const { body, problems } = rowToBody(columns, cells);
    const fieldErrors = body ? customerCreateErrors(body, settings) : [];
    if (problems.length === 0 && fieldErrors.length === 0) {
      valid.push({ r, correlationId, body: body as CustomerCreateRequest });
      continue;
    }
    failed += 1;
    const record = recordFor(r, correlationId);
    // One entry per column and message (a nested path names its column once), in the file's column order.
    const entries = [...problems, ...fieldErrors.map((e) => ({ field: columnOf(e.field), message: e.message }))];
    const seen = new Set<string>();
    const position = (field: string): number => (columns.includes(field) ? columns.indexOf(field) : columns.length);
    for (const e of entries.sort((a, b) => position(a.field) - position(b.field))) {
      const key = `${e.field}\u0000${e.message}`;
      if (seen.has(key)) continue;
      seen.add(key);
      record(e.field, 'INVALID_INPUT', e.message);
    }
  }
  // Pass 2: the identifiers already taken, in one query each for the chunk; then the creates,
  // in file order (a repeat inside the file is taken by its first row).
  // Generated values (UMA address, platformCustomerId) are checked with the named ones, and
  // one that is taken is drawn again: a row never fails on a value the file did not name.
  const drafts = valid.map((v) => ({ v, customer: newCustomerRow(platform, settings, at, v.body) }));
  const taken = await takenIdentifiers(
    trx,
    platform.id,
    drafts.map((d) => d.customer.platform_customer_id),
    drafts.map((d) => d.customer.uma_address),
  );
  const creates: CustomerRow[] = [];
  for (const { v, customer: first } of drafts) {
    let customer = first;
    for (let attempt = 3; attempt < 3 + MAX_GENERATION_ATTEMPTS; attempt++) {
      const pcidRedraw = v.body.platformCustomerId === undefined && taken.platformCustomerIds.has(customer.platform_customer_id);
      const umaRedraw = v.body.umaAddress === undefined && taken.umaAddresses.has(customer.uma_address);
      if (!pcidRedraw && !umaRedraw) break;
      // A longer random part (drawn from the fourth attempt on), checked one by one: rare.
      const next = newCustomerRow(platform, settings, at, v.body, attempt);
      customer = {
        ...customer,
        ...(pcidRedraw ? { platform_customer_id: next.platform_customer_id } : {}),
        ...(umaRedraw ? { uma_address: next.uma_address } : {}),
      };
      const again = await takenIdentifiers(trx, platform.id, [customer.platform_customer_id], [customer.uma_address]);
      for (const id of again.platformCustomerIds) taken.platformCustomerIds.add(id);
      for (const a of again.umaAddresses) taken.umaAddresses.add(a);
    }
    const conflict = taken.platformCustomerIds.has(customer.platform_customer_id)
      ? platformCustomerIdConflict(customer.platform_customer_id)
      : taken.umaAddresses.has(customer.uma_address)
        ? umaAddressConflict(customer.uma_address)
        : undefined;
    if (conflict) {
      failed += 1;
      recordFor(v.r, v.correlationId)(String(conflict.details?.field ?? 'row'), conflict.code, conflict.message);
      continue;
    }
    creates.push(customer);
    taken.platformCustomerIds.add(customer.platform_customer_id);
    taken.umaAddresses.add(customer.uma_address);
    successful += 1;
  }
  await insertNewCustomers(deps.hooks, trx, platform, creates, at);
  // Row order (the conflicts of pass 2 come after pass 1's problems), then numbered.
  errors.sort((a, b) => a.row_no - b.row_no);
  for (const e of errors) e.seq = seq++;
  await insertErrors(trx, errors);
  const last = rows.at(-1)?.row_no;
  if (last !== undefined) await deleteRowsThrough(trx, importId, last);
  const processed = Number(job.processed) + rows.length;
  const done = processed >= Number(job.total) || rows.length === 0;
  const next: BulkImportsTable = {
    ...job,
    processed,
    successful: Number(job.successful) + successful,
    failed: Number(job.failed) + failed,
    error_count: seq,
    updated_at: at,
    status: done ? (Number(job.successful) + successful > 0 ? 'COMPLETED' : 'FAILED') : 'PROCESSING',
    completed_at: done ? at : null,
  };
  await updateImport(trx, importId, {
    processed: next.processed,
    successful: next.successful,
    failed: next.failed,
    error_count: next.error_count,
    updated_at: next.updated_at,
    status: next.status,
    completed_at: next.completed_at,
  });
  if (done) {
    await emitEvent(trx, job.platform_id, at, { type: `BULK_UPLOAD.${next.status}`, resourceId: importId, data: await view(trx, next) });
  } else {
    await deps.jobs.schedule(trx, { platformId: job.platform_id, kind: BULK_IMPORT_JOB, payload: { importId }, runAtMs: ctx.nowMs, at });
  }
}

export function registerBulkImportJobs(deps: BulkDeps): void {
  deps.jobs.registerOnce(BULK_IMPORT_JOB, (ctx) => runChunk(deps, ctx));
}

