import type { AnyDb } from './support.js';

export async function up(db: AnyDb): Promise<void> {
  // The bulk customer import (customers-bulk area): the job, its rows waiting to be
  // processed, and the problems of the rows that failed.
  await db.schema
    .createTable('bulk_imports')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('platform_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('file_name', 'text')
    .addColumn('columns', 'text', (c) => c.notNull())
    .addColumn('total', 'integer', (c) => c.notNull())
    .addColumn('processed', 'integer', (c) => c.notNull())
    .addColumn('successful', 'integer', (c) => c.notNull())
    .addColumn('failed', 'integer', (c) => c.notNull())
    .addColumn('error_count', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('completed_at', 'text')
    .execute();
  await db.schema.createIndex('bulk_imports_platform').on('bulk_imports').columns(['platform_id', 'id']).execute();
  await db.schema
    .createTable('bulk_import_rows')
    .addColumn('import_id', 'text', (c) => c.notNull())
    .addColumn('row_no', 'integer', (c) => c.notNull())
    .addColumn('line_no', 'integer', (c) => c.notNull())
    .addColumn('cells', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('bulk_import_rows_pk', ['import_id', 'row_no'])
    .execute();
  await db.schema
    .createTable('bulk_import_errors')
    .addColumn('import_id', 'text', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('row_no', 'integer', (c) => c.notNull())
    .addColumn('line_no', 'integer', (c) => c.notNull())
    .addColumn('correlation_id', 'text', (c) => c.notNull())
    .addColumn('field', 'text', (c) => c.notNull())
    .addColumn('code', 'text', (c) => c.notNull())
    .addColumn('message', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('bulk_import_errors_pk', ['import_id', 'seq'])
    .execute();
}
