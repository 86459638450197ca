import { Type, type Static } from 'typebox';

// The bulk customer import: a CSV upload answered 202 with the job, and the job's status.

export const BULK_IMPORT_STATUSES = ['PENDING', 'PROCESSING', 'COMPLETED', 'FAILED'] as const;

export const BulkCustomerImportJobAccepted = Type.Object(
  {
    jobId: Type.String({ description: 'Job:<uuid>: the import job, for GET /customers/bulk/jobs/{jobId}' }),
    status: Type.Enum(['PENDING', 'PROCESSING'], { description: 'PENDING: accepted, no row processed yet' }),
  },
  { title: 'BulkCustomerImportJobAccepted' },
);

export const BulkCustomerImportErrorEntry = Type.Object(
  {
    correlationId: Type.String({ description: 'The row’s platformCustomerId when it has one, else `row:<n>`' }),
    row: Type.Integer({ minimum: 1, description: 'Data row of the file, 1 = the first row after the header' }),
    line: Type.Integer({ minimum: 1, description: 'Line of the file where the row starts (the header is line 1)' }),
    field: Type.String({ description: 'The CSV column at fault (`row` when the row itself is malformed)' }),
    code: Type.String({ description: 'INVALID_INPUT (the value breaks a rule of POST /customers), CONFLICT (platformCustomerId taken) or UMA_ADDRESS_EXISTS' }),
    message: Type.String({ description: 'What is wrong with the value' }),
    details: Type.Optional(Type.Object({ row: Type.Integer(), line: Type.Integer(), field: Type.String() }, { additionalProperties: true })),
  },
  { title: 'BulkCustomerImportErrorEntry', description: 'One problem of one row; a row with several invalid fields has one entry per field' },
);

export const BulkCustomerImportJob = Type.Object(
  {
    id: Type.String({ description: 'Job:<uuid>' }),
    status: Type.Enum([...BULK_IMPORT_STATUSES], {
      description: 'PENDING (accepted), PROCESSING (rows being created), COMPLETED (every row processed, at least one customer created), FAILED (every row processed, none created)',
    }),
    progress: Type.Object({
      total: Type.Integer({ description: 'Data rows in the file' }),
      processed: Type.Integer({ description: 'Rows processed so far' }),
      successful: Type.Integer({ description: 'Customers created' }),
      failed: Type.Integer({ description: 'Rows that created no customer' }),
    }),
    errors: Type.Array(BulkCustomerImportErrorEntry, { description: 'Every problem of the failed rows so far, in row order' }),
    fileName: Type.Optional(Type.String()),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
    completedAt: Type.Optional(Type.String({ format: 'date-time', description: 'When the last row was processed (COMPLETED or FAILED)' })),
  },
  { title: 'BulkCustomerImportJob' },
);
export type BulkCustomerImportJob = Static<typeof BulkCustomerImportJob>;
export type BulkCustomerImportErrorEntry = Static<typeof BulkCustomerImportErrorEntry>;

export const BulkJobIdParams = Type.Object({ jobId: Type.String({ description: 'Job:<uuid>' }) });

/** For the OpenAPI document only: the form is read by the handler. */
export const BulkCsvUploadForm = Type.Object({
  file: Type.String({ format: 'binary', description: 'The CSV file: a header row, then one customer per row (see docs/customers-bulk.md for the columns)' }),
});
