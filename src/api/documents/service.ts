import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import type { Transaction } from 'kysely';
import type { Kysely } from 'kysely';
import type { TSchema } from 'typebox';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { DEFAULT_DOCUMENT_QUOTA_BYTES } from '../../config.js';
import { apiError, type FieldError, FieldErrors, notFound } from '../../kernel/errors.js';
import { missingReference } from '../../kernel/references.js';
import { newId } from '../../kernel/ids.js';
import { paginate, type Page } from '../../kernel/pagination.js';
import { checkSchema } from '../../kernel/validation.js';
import { MAX_DOCUMENT_BYTES, type MultipartForm, type UploadedFile } from '../../kernel/multipart.js';
import {
  ACCEPTED_CONTENT_TYPES,
  type AcceptedContentType,
  type Document,
  DocumentReplaceFields,
  DocumentUploadFields,
} from './schemas.js';
import {
  deleteDocumentRow,
  type DocumentMeta,
  type DocumentRow,
  documentChunk,
  documentContent,
  deleteDocumentChunks,
  documentListQuery,
  insertDocumentChunk,
  platformDocumentBytes,
  findDocument,
  findDocumentForUpdate,
  findHolder,
  insertDocument,
  updateDocument,
} from './store.js';
import { effectTransaction } from '../../kernel/idempotency.js';

// Documents of customers and beneficial owners. The file type is decided by the file's
// first bytes only: JPEG, PNG and PDF are accepted, whatever the name or declared type.
// The bytes are kept in the store in chunks (document_chunks), copied from the upload's
// spool file one chunk at a time inside the transaction that writes the document, and
// sent back one chunk at a time: no request holds a whole file in memory. Each platform
// keeps at most its quota of bytes (PAYMENTS_DOCUMENT_QUOTA_BYTES).

export interface DocumentDeps {
  store: Store;
  /** Bytes of documents a platform may keep; DEFAULT_DOCUMENT_QUOTA_BYTES when absent. */
  documentQuotaBytes?: number;
}

/** The size of the chunks a document's bytes are stored in. */
export const DOCUMENT_CHUNK_BYTES = 256 * 1024;

const SIGNATURES: Array<{ type: AcceptedContentType; magic: Buffer; ext: string }> = [
  { type: 'image/jpeg', magic: Buffer.from([0xff, 0xd8, 0xff]), ext: 'jpg' },
  { type: 'image/png', magic: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), ext: 'png' },
  { type: 'application/pdf', magic: Buffer.from('%PDF-', 'latin1'), ext: 'pdf' },
];

/** The accepted type a file's bytes show, if any. */
export function sniffContentType(bytes: Buffer): { type: AcceptedContentType; ext: string } | undefined {
  const s = SIGNATURES.find((sig) => bytes.length >= sig.magic.length && bytes.subarray(0, sig.magic.length).equals(sig.magic));
  return s ? { type: s.type, ext: s.ext } : undefined;
}

export function documentView(r: DocumentMeta): Document {
  const v: Document = {
    id: r.id,
    documentHolder: r.document_holder,
    documentType: r.document_type as Document['documentType'],
    country: r.country,
    fileName: r.file_name,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
  if (r.side) v.side = r.side as NonNullable<Document['side']>;
  if (r.document_number) v.documentNumber = r.document_number;
  if (r.issuing_authority) v.issuingAuthority = r.issuing_authority;
  return v;
}

interface CheckedFile {
  fileName: string;
  /** The spool file holding the bytes. */
  path: string;
  size: number;
  contentType: AcceptedContentType;
  sha256: string;
}

/** The file name to keep: the last path segment, without control characters, at most 255 characters. */
function cleanFileName(name: string, ext: string): string {
  // eslint-disable-next-line no-control-regex
  const base = (name.split(/[\\/]/).pop() ?? '').replace(/[\u0000-\u001f\u007f]/g, '').trim().slice(-255);
  return base || `document.${ext}`;
}

/**
 * Check a form: its text fields against `schema` and its `file`, collecting every problem
 * in one 400. Empty optional text fields count as absent (HTML forms send them empty).
 */
function checkForm<T>(form: MultipartForm, schema: TSchema): { fields: T; file: CheckedFile } {
  const { errors, fields, file } = collectForm<T>(form, schema);
  errors.throwIfAny();
  return { fields, file: file! };
}

/** The problems an upload form has (empty when uploadDocument would accept it, holder aside). */
export function uploadFormErrors(form: MultipartForm): FieldError[] {
  return collectForm(form, DocumentUploadFields).errors.list;
}

function collectForm<T>(form: MultipartForm, schema: TSchema): { errors: FieldErrors; fields: T; file: CheckedFile | undefined } {
  const errors = new FieldErrors();
  const values: Record<string, string> = {};
  for (const [name, list] of Object.entries(form.fields)) {
    if (name === 'file') {
      errors.add('file', 'must be a file part (with a filename), not a text field');
      continue;
    }
    if (list.length > 1) errors.add(name, 'must be given once');
    const v = list[0]!;
    if (v !== '') values[name] = v;
  }
  for (const error of checkSchema(schema, values)) errors.list.push(error);

  for (const name of Object.keys(form.files)) if (name !== 'file') errors.add(name, 'is not a recognised field (the file goes in `file`)');
  const files: UploadedFile[] = form.files.file ?? [];
  let checked: CheckedFile | undefined;
  if (files.length === 0) {
    if (!('file' in form.fields)) errors.add('file', 'is required');
  } else if (files.length > 1) {
    errors.add('file', 'must be a single file');
  } else {
    const f = files[0]!;
    const sniffed = sniffContentType(f.head);
    if (f.truncated) {
      errors.add('file', `must be at most ${MAX_DOCUMENT_BYTES} bytes (10 MB)`, { maxLength: MAX_DOCUMENT_BYTES });
    } else if (f.size === 0) {
      errors.add('file', 'must not be empty', { minLength: 1 });
    } else if (!sniffed) {
      errors.add('file', 'must be a JPEG, PNG or PDF file (recognised from its content, not its name or declared type)', { enum: [...ACCEPTED_CONTENT_TYPES] });
    } else {
      checked = { fileName: cleanFileName(f.fileName, sniffed.ext), path: f.path, size: f.size, contentType: sniffed.type, sha256: f.sha256 };
    }
  }
  return { errors, fields: values as T, file: checked };
}

/** 404 for a holder that is not this platform's or a deleted customer. */
async function requireHolder(db: Kysely<DB>, platformId: string, holderId: string): Promise<void> {
  const holder = await findHolder(db, platformId, holderId);
  if (!holder) throw notFound(holderId.startsWith('Customer:') ? 'USER_NOT_FOUND' : 'REFERENCE_NOT_FOUND', 'Document holder', holderId);
  if (holder.kind === 'customer' && holder.deleted) throw missingReference('USER_NOT_FOUND', 'Customer', holderId, 'documentHolder', true);
}

/** The columns a form writes: its metadata and the checked file. */
function documentColumns(fields: Omit<DocumentUploadFields, 'documentHolder'>, file: ReturnType<typeof checkForm>['file']) {
  return {
    document_type: fields.documentType,
    side: fields.side ?? null,
    country: fields.country,
    document_number: fields.documentNumber ?? null,
    issuing_authority: fields.issuingAuthority ?? null,
    file_name: file.fileName,
    content_type: file.contentType,
    size_bytes: file.size,
    sha256: file.sha256,
    content: Buffer.alloc(0),
  };
}

/** 400 when `adding` more bytes would take the platform past its quota (`freeing`: bytes of the file replaced). */
async function checkQuota(deps: DocumentDeps, trx: Transaction<DB>, platformId: string, adding: number, freeing: number): Promise<void> {
  const quota = deps.documentQuotaBytes ?? DEFAULT_DOCUMENT_QUOTA_BYTES;
  const used = (await platformDocumentBytes(trx, platformId, deps.store.kind === 'postgres')) - freeing;
  if (used + adding <= quota) return;
  const left = Math.max(0, quota - used);
  new FieldErrors()
    .add('file', `would take the platform's documents past its quota of ${quota} bytes (${used} bytes in use, ${left} left): delete documents first`, { maxLength: left })
    .throwIfAny();
}

/** Copy a spooled file into the document's chunks, one chunk in memory at a time. */
async function writeChunks(trx: Transaction<DB>, platformId: string, documentId: string, path: string): Promise<void> {
  let seq = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: DOCUMENT_CHUNK_BYTES })) {
    await insertDocumentChunk(trx, platformId, documentId, seq++, chunk as Buffer);
  }
}

export async function uploadDocument(deps: DocumentDeps, platformId: string, at: string, form: MultipartForm): Promise<Document> {
  const { fields, file } = checkForm<DocumentUploadFields>(form, DocumentUploadFields);
  const db = deps.store.db;
  await requireHolder(db, platformId, fields.documentHolder);
  const row: DocumentRow = {
    id: newId('Document'),
    platform_id: platformId,
    document_holder: fields.documentHolder,
    ...documentColumns(fields, file),
    submitted: 0,
    created_at: at,
    updated_at: at,
  };
  const { content: _bytes, ...meta } = row;
  // The document and the request's Idempotency-Key answer commit together (kernel/idempotency.ts).
  return effectTransaction(db, async (trx) => {
    await checkQuota(deps, trx, platformId, file.size, 0);
    await insertDocument(trx, row);
    await writeChunks(trx, platformId, row.id, file.path);
    return documentView(meta);
  });
}

export async function requireDocument(db: Kysely<DB>, platformId: string, id: string): Promise<DocumentMeta> {
  const row = await findDocument(db, platformId, id);
  if (!row) throw notFound('REFERENCE_NOT_FOUND', 'Document', id);
  return row;
}

export async function getDocument(db: Kysely<DB>, platformId: string, id: string): Promise<Document> {
  return documentView(await requireDocument(db, platformId, id));
}

export async function listDocuments(
  db: Kysely<DB>,
  platformId: string,
  filter: { documentHolder?: string | undefined },
  page: { limit?: number | undefined; cursor?: string | undefined },
): Promise<Page<Document>> {
  return paginate<DocumentMeta, Document>(documentListQuery(db, platformId, filter), 'id', page, documentView);
}

/** Replace the file and metadata of a document (the holder stays). */
export async function replaceDocument(deps: DocumentDeps, platformId: string, at: string, id: string, form: MultipartForm): Promise<Document> {
  const { store } = deps;
  await requireDocument(store.db, platformId, id);
  const { fields, file } = checkForm<{ documentHolder?: string } & Omit<DocumentUploadFields, 'documentHolder'>>(form, DocumentReplaceFields);
  return store.db.transaction().execute(async (trx) => {
    const current = await findDocumentForUpdate(trx, platformId, id, store.kind === 'postgres');
    if (!current) throw notFound('REFERENCE_NOT_FOUND', 'Document', id);
    if (fields.documentHolder !== undefined && fields.documentHolder !== current.document_holder) {
      new FieldErrors().add('documentHolder', `cannot change: the document belongs to ${current.document_holder}`, { enum: [current.document_holder] }).throwIfAny();
    }
    const patch = { ...documentColumns(fields, file), updated_at: at };
    await checkQuota(deps, trx, platformId, file.size, Number(current.size_bytes));
    await updateDocument(trx, platformId, id, patch);
    await deleteDocumentChunks(trx, platformId, id);
    await writeChunks(trx, platformId, id, file.path);
    const { content: _bytes, ...meta } = patch;
    return documentView({ ...current, ...meta });
  });
}

/** Delete a document; one already submitted for verification stays (409). */
export async function deleteDocument(deps: DocumentDeps, platformId: string, id: string): Promise<void> {
  const { store } = deps;
  await store.db.transaction().execute(async (trx) => {
    const current = await findDocumentForUpdate(trx, platformId, id, store.kind === 'postgres');
    if (!current) throw notFound('REFERENCE_NOT_FOUND', 'Document', id);
    if (Number(current.submitted) === 1) {
      throw apiError(409, 'CONFLICT', `Document ${id} was submitted for verification and can no longer be deleted; replace it with PUT /documents/${id} instead`);
    }
    await deleteDocumentRow(trx, platformId, id);
  });
}

/** A document's bytes as a stream read chunk by chunk from the store, with their sniffed type. */
export async function getDocumentContent(
  db: Kysely<DB>,
  platformId: string,
  id: string,
): Promise<{ stream: Readable; size: number; contentType: string; fileName: string; sha256: string }> {
  const row = await documentContent(db, platformId, id);
  if (!row) throw notFound('REFERENCE_NOT_FOUND', 'Document', id);
  async function* chunks(): AsyncGenerator<Buffer> {
    for (let seq = 0; ; seq++) {
      const chunk = await documentChunk(db, platformId, id, seq, row!.sha256);
      if (!chunk) return;
      yield chunk;
    }
  }
  return { stream: Readable.from(chunks(), { objectMode: false }), size: Number(row.size_bytes), contentType: row.content_type, fileName: row.file_name, sha256: row.sha256 };
}
