import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifySchemaCompiler } from 'fastify';
import { authOf, errorResponses, nowOf } from '../../kernel/http.js';
import { validatorCompiler } from '../../kernel/validation.js';
import { MAX_DOCUMENT_BYTES, readMultipartForm, registerMultipart } from '../../kernel/multipart.js';
import { BulkCsvUploadForm, BulkCustomerImportJob, BulkCustomerImportJobAccepted, BulkJobIdParams } from './schemas.js';
import { getImport, registerBulkImportJobs, startImport } from './service.js';
import { MAX_ROWS } from './csv.js';

const tags = ['Customers'];

/** The multipart body is read by the handler; its schema is for the OpenAPI document. */
const multipartValidator: FastifySchemaCompiler<unknown> = (route) => (route.httpPart === 'body' ? (data: unknown) => ({ value: data }) : validatorCompiler(route));

// Its own plugin: the multipart parser (documents area) is registered only here.
export const customersBulkRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock, hooks, jobs } = app.deps;
  const deps = { store, hooks, jobs };
  registerBulkImportJobs(deps);
  await registerMultipart(app);

  app.post(
    '/customers/bulk/csv',
    {
      config: { auth: 'basic' },
      validatorCompiler: multipartValidator,
      schema: {
        tags,
        operationId: 'uploadCustomersCsv',
        summary: 'Upload customers as a CSV file',
        description:
          `A multipart/form-data upload whose file part \`file\` is a CSV: a header row naming the columns, then one customer per row, each checked and created as POST /customers would. ` +
          `The file is checked at once (not CSV, an unknown column or no customerType column: 400, nothing created); the rows are created by a durable job whose status ` +
          `GET /customers/bulk/jobs/{jobId} shows, and BULK_UPLOAD.COMPLETED or BULK_UPLOAD.FAILED announces. At most ${MAX_DOCUMENT_BYTES} bytes and ${MAX_ROWS} rows.`,
        consumes: ['multipart/form-data'],
        body: BulkCsvUploadForm,
        response: { 202: BulkCustomerImportJobAccepted, ...errorResponses() },
      },
    },
    async (req, reply) => reply.code(202).send(await startImport(deps, authOf(req).platform, nowOf(req, clock), await readMultipartForm(req, { rejectOversized: true }))),
  );

  app.get(
    '/customers/bulk/jobs/:jobId',
    {
      config: { auth: 'basic' },
      schema: { tags, operationId: 'getBulkCustomerImportJob', summary: 'Get a bulk import job', params: BulkJobIdParams, response: { 200: BulkCustomerImportJob, ...errorResponses(404) } },
    },
    async (req) => getImport(store.db, authOf(req).platform.id, req.params.jobId),
  );
};
