import type { Kysely, Selectable, Transaction } from 'kysely';
import type { DB, DocumentsTable } from '../../kernel/db/schema.js';

type Db = Kysely<DB> | Transaction<DB>;

/** The document types on file for a holder (customer or beneficial owner). */
export async function holderDocumentTypes(db: Db, platformId: string, holderId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('documents')
    .select('document_type')
    .where('platform_id', '=', platformId)
    .where('document_holder', '=', holderId)
    .execute();
  return [...new Set(rows.map((r) => r.document_type))];
}

/** Mark a holder's documents as submitted for verification (they can no longer be deleted). */
export async function markHolderDocumentsSubmitted(db: Db, platformId: string, holderId: string): Promise<void> {
  await db.updateTable('documents').set({ submitted: 1 }).where('platform_id', '=', platformId).where('document_holder', '=', holderId).execute();
}

// ---- Document records. Lists and reads select the metadata only; the bytes are read
// ---- by documentContent alone.

export type DocumentRow = Selectable<DocumentsTable>;
export type DocumentMeta = Omit<DocumentRow, 'content'>;

const META_COLUMNS = [
  'id', 'platform_id', 'document_holder', 'document_type', 'side', 'country', 'document_number', 'issuing_authority', 'file_name',
  'content_type', 'size_bytes', 'sha256', 'submitted', 'created_at', 'updated_at',
] as const satisfies ReadonlyArray<keyof DocumentMeta>;

export async function insertDocument(db: Db, row: DocumentRow): Promise<void> {
  await db.insertInto('documents').values(row).execute();
}

/** A document of the platform, without its bytes; another platform's id finds nothing. */
export async function findDocument(db: Db, platformId: string, id: string): Promise<DocumentMeta | undefined> {
  return db.selectFrom('documents').select(META_COLUMNS).where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}

export async function findDocumentForUpdate(db: Transaction<DB>, platformId: string, id: string, postgres: boolean): Promise<DocumentMeta | undefined> {
  let q = db.selectFrom('documents').select(META_COLUMNS).where('platform_id', '=', platformId).where('id', '=', id);
  if (postgres) q = q.forUpdate();
  return q.executeTakeFirst();
}

/** What describes a document's bytes (the bytes are read chunk by chunk: documentChunk). */
export async function documentContent(
  db: Db,
  platformId: string,
  id: string,
): Promise<Pick<DocumentRow, 'content_type' | 'file_name' | 'size_bytes' | 'sha256'> | undefined> {
  return db
    .selectFrom('documents')
    .select(['content_type', 'file_name', 'size_bytes', 'sha256'])
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function updateDocument(db: Db, platformId: string, id: string, patch: Partial<Omit<DocumentRow, 'id' | 'platform_id' | 'document_holder' | 'created_at'>>): Promise<void> {
  await db.updateTable('documents').set(patch).where('platform_id', '=', platformId).where('id', '=', id).execute();
}

export async function deleteDocumentRow(db: Db, platformId: string, id: string): Promise<void> {
  await deleteDocumentChunks(db, platformId, id);
  await db.deleteFrom('documents').where('platform_id', '=', platformId).where('id', '=', id).execute();
}

/** The list query for `paginate`: a subquery of metadata columns, so a page never reads the bytes. */
export function documentListQuery(db: Kysely<DB>, platformId: string, filter: { documentHolder?: string | undefined }) {
  let inner = db.selectFrom('documents').select(META_COLUMNS).where('platform_id', '=', platformId);
  if (filter.documentHolder !== undefined) inner = inner.where('document_holder', '=', filter.documentHolder);
  return db.selectFrom(inner.as('d'));
}

/** Who a holder id names on this platform: a customer (with its deleted flag), a beneficial owner, or nothing. */
export async function findHolder(db: Db, platformId: string, holderId: string): Promise<{ kind: 'customer'; deleted: boolean } | { kind: 'owner' } | undefined> {
  if (holderId.startsWith('BeneficialOwner:')) {
    const o = await db.selectFrom('beneficial_owners').select('id').where('platform_id', '=', platformId).where('id', '=', holderId).executeTakeFirst();
    return o ? { kind: 'owner' } : undefined;
  }
  const c = await db.selectFrom('customers').select(['id', 'is_deleted']).where('platform_id', '=', platformId).where('id', '=', holderId).executeTakeFirst();
  return c ? { kind: 'customer', deleted: c.is_deleted === 1 } : undefined;
}

// ---- Document bytes, in chunks (migration 0016).

export async function insertDocumentChunk(db: Db, platformId: string, documentId: string, seq: number, bytes: Buffer): Promise<void> {
  await db.insertInto('document_chunks').values({ document_id: documentId, seq, platform_id: platformId, bytes }).execute();
}

export async function deleteDocumentChunks(db: Db, platformId: string, documentId: string): Promise<void> {
  await db.deleteFrom('document_chunks').where('platform_id', '=', platformId).where('document_id', '=', documentId).execute();
}

/**
 * One chunk of a document's bytes while the document still holds the file `sha256` names
 * (read with its row, so a download never mixes two files), or undefined past the last.
 */
export async function documentChunk(db: Db, platformId: string, documentId: string, seq: number, sha256: string): Promise<Buffer | undefined> {
  const row = await db
    .selectFrom('document_chunks as c')
    .innerJoin('documents as d', (j) => j.onRef('d.id', '=', 'c.document_id').onRef('d.platform_id', '=', 'c.platform_id'))
    .select('c.bytes')
    .where('c.platform_id', '=', platformId)
    .where('c.document_id', '=', documentId)
    .where('c.seq', '=', seq)
    .where('d.sha256', '=', sha256)
    .executeTakeFirst();
  return row ? Buffer.from(row.bytes) : undefined;
}

/** The bytes of documents the platform keeps, and on PostgreSQL a lock on its row so uploads of one platform count in turn. */
export async function platformDocumentBytes(db: Transaction<DB>, platformId: string, postgres: boolean): Promise<number> {
  if (postgres) await db.selectFrom('platforms').select('id').where('id', '=', platformId).forUpdate().execute();
  const row = await db
    .selectFrom('documents')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('size_bytes'), eb.lit(0)).as('total'))
    .where('platform_id', '=', platformId)
    .executeTakeFirstOrThrow();
  return Number(row.total);
}
