import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifySchemaCompiler } from 'fastify';
import { authOf, errorResponses, NoContent, nowOf } from '../../kernel/http.js';
import { validatorCompiler } from '../../kernel/validation.js';
import { MAX_DOCUMENT_BYTES, readMultipartForm, registerMultipart } from '../../kernel/multipart.js';
import {
  Document,
  DocumentContent,
  DocumentIdParams,
  DocumentListQuery,
  DocumentListResponse,
  DocumentReplaceForm,
  DocumentUploadForm,
} from './schemas.js';
import { deleteDocument, getDocument, getDocumentContent, listDocuments, replaceDocument, uploadDocument } from './service.js';

const tags = ['Documents'];

/**
 * Multipart routes: the body schema is for the OpenAPI document only. The form is read in
 * the handler and its text fields are checked there against the same TypeBox schema.
 */
const multipartValidator: FastifySchemaCompiler<unknown> = (route) =>
  route.httpPart === 'body' ? (data: unknown) => ({ value: data }) : validatorCompiler(route);

export const documentsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock } = app.deps;
  const deps = { store, documentQuotaBytes: app.deps.config.documentQuotaBytes };
  await registerMultipart(app);

  app.post(
    '/documents',
    {
      config: { auth: 'basic' },
      validatorCompiler: multipartValidator,
      schema: {
        tags,
                operationId: 'uploadDocument',
        summary: 'Upload a document',
        description:
          `Upload a verification document for a customer or beneficial owner as multipart/form-data: the file in \`file\`, metadata in the other fields. ` +
          `JPEG, PNG and PDF are accepted, recognised by the file's content (not its name or declared type); at most ${MAX_DOCUMENT_BYTES} bytes (10 MB).`,
        consumes: ['multipart/form-data'],
        body: DocumentUploadForm,
        response: { 201: Document, ...errorResponses(404) },
      },
    },
    async (req, reply) => reply.code(201).send(await uploadDocument(deps, authOf(req).platform.id, nowOf(req, clock).at, await readMultipartForm(req, { rejectOversized: true }))),
  );

  app.get(
    '/documents',
    { config: { auth: 'basic' }, schema: { tags, operationId: 'listDocuments', summary: 'List documents', querystring: DocumentListQuery, response: { 200: DocumentListResponse, ...errorResponses() } } },
    async (req) => listDocuments(store.db, authOf(req).platform.id, { documentHolder: req.query.documentHolder }, { limit: req.query.limit, cursor: req.query.cursor }),
  );

  app.get(
    '/documents/:documentId',
    { config: { auth: 'basic' }, schema: { tags, operationId: 'getDocument', summary: 'Get a document', params: DocumentIdParams, response: { 200: Document, ...errorResponses(404) } } },
    async (req) => getDocument(store.db, authOf(req).platform.id, req.params.documentId),
  );

  app.put(
    '/documents/:documentId',
    {
      config: { auth: 'basic' },
      validatorCompiler: multipartValidator,
      schema: {
        tags,
                operationId: 'replaceDocument',
        summary: 'Replace a document',
        description: 'Replace the file and metadata of a document (multipart/form-data, same fields and checks as the upload; the holder cannot change).',
        consumes: ['multipart/form-data'],
        params: DocumentIdParams,
        body: DocumentReplaceForm,
        response: { 200: Document, ...errorResponses(404) },
      },
    },
    async (req) => replaceDocument(deps, authOf(req).platform.id, nowOf(req, clock).at, req.params.documentId, await readMultipartForm(req, { rejectOversized: true })),
  );

  app.delete(
    '/documents/:documentId',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
                operationId: 'deleteDocument',
        summary: 'Delete a document',
        description: 'Delete a document. A document already submitted for verification cannot be deleted (409).',
        params: DocumentIdParams,
        response: { 204: NoContent, ...errorResponses(404, 409) },
      },
    },
    async (req, reply) => {
      await deleteDocument(deps, authOf(req).platform.id, req.params.documentId);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/documents/:documentId/content',
    {
      config: { auth: 'basic', extension: true },
      schema: {
        tags,
                operationId: 'getDocumentContent',
        summary: 'Download a document’s file (extension)',
        description:
          'Extension of this service (not in the reference API): the uploaded file itself, with the content type recognised from its bytes ' +
          '(image/jpeg, image/png or application/pdf). `ETag` carries its SHA-256.',
        params: DocumentIdParams,
        response: {
          200: { ...DocumentContent, description: 'The file' },
          ...errorResponses(404),
        },
        produces: ['image/jpeg', 'image/png', 'application/pdf'],
      },
    },
    async (req, reply) => {
      const c = await getDocumentContent(store.db, authOf(req).platform.id, req.params.documentId);
      const ascii = c.fileName.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
      return reply
        .type(c.contentType)
        .header('content-length', c.size)
        .header('etag', `"sha256-${c.sha256}"`)
        .header('x-content-type-options', 'nosniff')
        .header('content-disposition', `inline; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(c.fileName)}`)
        .send(c.stream as unknown as Buffer); // a stream: Fastify pipes it, no serializer
    },
  );
};
