import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { apiError, invalidInput } from '../../kernel/errors.js';
import { NUL_MESSAGE, nulFieldErrors } from '../../kernel/validation.js';
import { MAX_DOCUMENT_BYTES } from './schemas.js';

// Reading multipart/form-data. The plugin is registered only inside the plugins that take
// uploads (the documents routes and the hosted KYC page), so JSON routes never see it.
// A file is read into memory up to MAX_DOCUMENT_BYTES; busboy stops passing bytes at the
// limit and marks the file truncated, so an oversized upload is never held whole.

export interface UploadedFile {
  /** The name the client gave (may be empty). */
  fileName: string;
  /** At most MAX_DOCUMENT_BYTES: the bytes received before any cut-off. */
  bytes: Buffer;
  /** True when the file was larger than the limit (bytes holds the first part only). */
  truncated: boolean;
}

/** A parsed form: every value of every text field and of every file field, in order. */
export interface MultipartForm {
  fields: Record<string, string[]>;
  files: Record<string, UploadedFile[]>;
}

const FIELD_LIMIT_BYTES = 64 * 1024;
const LIMITS = { fileSize: MAX_DOCUMENT_BYTES, files: 4, fields: 50, fieldSize: FIELD_LIMIT_BYTES, parts: 60, headerPairs: 100 };

const LIMIT_MESSAGES: Record<string, string> = {
  FST_FILES_LIMIT: `Too many files in the form: at most ${LIMITS.files} file parts`,
  FST_FIELDS_LIMIT: `Too many fields in the form: at most ${LIMITS.fields}`,
  FST_PARTS_LIMIT: `Too many parts in the form: at most ${LIMITS.parts}`,
  FST_PROTO_VIOLATION: 'Malformed multipart body: a field name is not allowed',
  FST_INVALID_JSON_FIELD_ERROR: 'Malformed multipart body: a field declared application/json is not JSON',
};

/** Register @fastify/multipart in this (encapsulated) plugin, and answer other body types with a clear 400. */
export async function registerMultipart(app: FastifyInstance): Promise<void> {
  await app.register(multipart, {
    throwFileSizeLimit: false,
    limits: LIMITS,
  });
  // Any other content type reaches the handler unparsed, which then says what to send.
  app.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));
}

/** Read the whole form. Not multipart → 400 INVALID_REQUEST_FORMAT; a malformed body → the same. */
export async function readMultipartForm(req: FastifyRequest): Promise<MultipartForm> {
  if (!req.isMultipart()) {
    throw apiError(400, 'INVALID_REQUEST_FORMAT', 'This operation takes a multipart/form-data body (fields and a file)', {
      contentType: req.headers['content-type'] ?? null,
    });
  }
  const form: MultipartForm = { fields: {}, files: {} };
  try {
    for await (const part of req.parts()) {
      if (part.type === 'file') {
        const chunks: Buffer[] = [];
        for await (const chunk of part.file) chunks.push(chunk as Buffer);
        const file: UploadedFile = { fileName: part.filename ?? '', bytes: Buffer.concat(chunks), truncated: part.file.truncated };
        (form.files[part.fieldname] ??= []).push(file);
      } else {
        if (part.valueTruncated) {
          throw apiError(400, 'INVALID_INPUT', `Invalid input: ${part.fieldname} is too long`, {
            errors: [{ field: part.fieldname, constraint: { maxLength: FIELD_LIMIT_BYTES }, message: `must be at most ${FIELD_LIMIT_BYTES} bytes long` }],
          });
        }
        (form.fields[part.fieldname] ??= []).push(typeof part.value === 'string' ? part.value : JSON.stringify(part.value));
      }
    }
  } catch (err) {
    if (err instanceof Error && 'code' in err && typeof err.code === 'string' && err.code.startsWith('FST_')) {
      throw apiError(400, 'INVALID_REQUEST_FORMAT', LIMIT_MESSAGES[err.code] ?? `Malformed multipart body: ${err.message}`, { reason: err.code });
    }
    if (err instanceof Error && !('status' in err)) {
      // busboy's own parse errors (missing boundary, early end, bad part headers).
      throw apiError(400, 'INVALID_REQUEST_FORMAT', `Malformed multipart body: ${err.message}`);
    }
    throw err;
  }
  // U+0000 in a text field or a file name: refused like in a JSON body (kernel/validation.ts).
  const nul = [
    ...Object.entries(form.fields).flatMap(([name, values]) => (nulFieldErrors([name, ...values]).length > 0 ? [{ field: name, message: NUL_MESSAGE }] : [])),
    ...Object.entries(form.files).flatMap(([name, files]) => (nulFieldErrors(files.map((f) => f.fileName)).length > 0 ? [{ field: `${name}.fileName`, message: NUL_MESSAGE }] : [])),
  ];
  if (nul.length > 0) throw invalidInput(nul);
  return form;
}
