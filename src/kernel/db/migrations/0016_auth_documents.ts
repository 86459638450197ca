import { sql } from 'kysely';
import { type AnyDb, storeKind } from './support.js';

// Document bytes in chunks of at most 256 KiB (documents area), written and read one at a
// time so no upload or download holds a whole file; documents.content stays, emptied.
export async function up(db: AnyDb): Promise<void> {
  const kind = storeKind(db);
  const blob = kind === 'postgres' ? ('bytea' as const) : ('blob' as const);
  await db.schema
    .createTable('document_chunks')
    .addColumn('document_id', 'text', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('bytes', blob, (c) => c.notNull())
    .addPrimaryKeyConstraint('document_chunks_pk', ['document_id', 'seq'])
    .execute();
  // Documents from before: their bytes become chunk 0.
  await sql`insert into document_chunks (document_id, seq, platform_id, bytes)
    select id, 0, platform_id, content from documents where size_bytes > 0`.execute(db);
  await sql`update documents set content = ${Buffer.alloc(0)}`.execute(db);
}
