import type { Kysely, Transaction } from 'kysely';
import { literalLimit } from '../../kernel/db/limit.js';
import type { DB } from '../../kernel/db/schema.js';

// The import's tables (migration 0025_customers_bulk). Typed here, beside their only user.

export interface BulkImportsTable {
  /** `Job:<uuid v7>`. */
  id: string;
  platform_id: string;
  /** PENDING | PROCESSING | COMPLETED | FAILED. */
  status: string;
  file_name: string | null;
  /** JSON: the header's column names, in file order. */
  columns: string;
  total: number;
  processed: number;
  successful: number;
  failed: number;
  /** Errors recorded so far (the next error's seq). */
  error_count: number;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
}

/** The file's data rows, waiting to be processed (removed once processed). */
export interface BulkImportRowsTable {
  import_id: string;
  row_no: number;
  line_no: number;
  /** JSON: the row's cells, in column order. */
  cells: string;
}

export interface BulkImportErrorsTable {
  import_id: string;
  seq: number;
  row_no: number;
  line_no: number;
  correlation_id: string;
  field: string;
  code: string;
  message: string;
}

export type BulkTables = {
  bulk_imports: BulkImportsTable;
  bulk_import_rows: BulkImportRowsTable;
  bulk_import_errors: BulkImportErrorsTable;
};

type Db = Kysely<DB> | Transaction<DB>;
const t = (db: Db) => db.withTables<BulkTables>();

export async function insertImport(db: Db, row: BulkImportsTable): Promise<void> {
  await t(db).insertInto('bulk_imports').values(row).execute();
}

export async function insertRows(db: Db, rows: BulkImportRowsTable[]): Promise<void> {
  if (rows.length > 0) await t(db).insertInto('bulk_import_rows').values(rows).execute();
}

export async function findImport(db: Db, platformId: string, id: string): Promise<BulkImportsTable | undefined> {
  return t(db).selectFrom('bulk_imports').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}

export async function importById(db: Db, id: string): Promise<BulkImportsTable | undefined> {
  return t(db).selectFrom('bulk_imports').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The next `limit` rows still to process, in file order. */
export async function pendingRows(db: Db, importId: string, limit: number): Promise<BulkImportRowsTable[]> {
  return t(db).selectFrom('bulk_import_rows').selectAll().where('import_id', '=', importId).orderBy('row_no', 'asc').limit(literalLimit(limit)).execute();
}

export async function deleteRowsThrough(db: Db, importId: string, lastRow: number): Promise<void> {
  await t(db).deleteFrom('bulk_import_rows').where('import_id', '=', importId).where('row_no', '<=', lastRow).execute();
}

export async function insertErrors(db: Db, rows: BulkImportErrorsTable[]): Promise<void> {
  // In slices: each row binds 8 parameters.
  for (let i = 0; i < rows.length; i += 500) await t(db).insertInto('bulk_import_errors').values(rows.slice(i, i + 500)).execute();
}

export async function errorsOf(db: Db, importId: string): Promise<BulkImportErrorsTable[]> {
  return t(db).selectFrom('bulk_import_errors').selectAll().where('import_id', '=', importId).orderBy('seq', 'asc').execute();
}

export async function updateImport(db: Db, id: string, patch: Partial<Omit<BulkImportsTable, 'id' | 'platform_id'>>): Promise<void> {
  await t(db).updateTable('bulk_imports').set(patch).where('id', '=', id).execute();
}
