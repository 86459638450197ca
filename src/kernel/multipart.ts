import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { apiError, invalidInput } from './errors.js';
import { NUL_MESSAGE, nulFieldErrors } from './validation.js';

/** The largest file an upload takes: 10 MiB (a document, a bulk CSV). */
export const MAX_DOCUMENT_BYTES = 10 * 1024 * 1024;

// Reading multipart/form-data. The plugin is registered only inside the plugins that take
// uploads (the documents routes and the hosted KYC page), so JSON routes never see it.
// A file is never held in memory: it is streamed to a spool file in a private temporary
// directory (hashed and counted on the way, its first bytes kept to recognise its type),
// which the service copies into the store in chunks, and which is removed when the
// response is sent or the request aborted. busboy stops at MAX_DOCUMENT_BYTES: the
// documents API then answers 400 at once, without reading the rest of the body
// (`rejectOversized`); the hosted page marks the file truncated and shows the error with
// the form's others.

export interface UploadedFile {
  /** The name the client gave (may be empty). */
  fileName: string;
  /** Bytes received (at most MAX_DOCUMENT_BYTES). */
  size: number;
  /** The first bytes (up to 16), for recognising the type. */
  head: Buffer;
  /** SHA-256 of the bytes, hex. */
  sha256: string;
  /** The spool file holding the bytes (removed after the response). */
  path: string;
  /** True when the file was larger than the limit (the spool holds the first part only). */
  truncated: boolean;
}

/** A parsed form: every value of every text field and of every file field, in order. */
export interface MultipartForm {
  fields: Record<string, string[]>;
  files: Record<string, UploadedFile[]>;
}

const FIELD_LIMIT_BYTES = 64 * 1024;
const LIMITS = { fileSize: MAX_DOCUMENT_BYTES, files: 4, fields: 50, fieldSize: FIELD_LIMIT_BYTES, parts: 60, headerPairs: 100 };
const HEAD_BYTES = 16;

const LIMIT_MESSAGES: Record<string, string> = {
  FST_FILES_LIMIT: `Too many files in the form: at most ${LIMITS.files} file parts`,
  FST_FIELDS_LIMIT: `Too many fields in the form: at most ${LIMITS.fields}`,
  FST_PARTS_LIMIT: `Too many parts in the form: at most ${LIMITS.parts}`,
  FST_PROTO_VIOLATION: 'Malformed multipart body: a field name is not allowed',
  FST_INVALID_JSON_FIELD_ERROR: 'Malformed multipart body: a field declared application/json is not JSON',
};

/** The spool directory of each request that has one. */
const spools = new WeakMap<FastifyRequest, string>();

async function removeSpool(req: FastifyRequest): Promise<void> {
  const dir = spools.get(req);
  if (dir === undefined) return;
  spools.delete(req);
  await rm(dir, { recursive: true, force: true }).catch(() => {});
}

/** Register @fastify/multipart in this (encapsulated) plugin, and answer other body types with a clear 400. */
export async function registerMultipart(app: FastifyInstance): Promise<void> {
  await app.register(multipart, {
    throwFileSizeLimit: false,
    limits: LIMITS,
  });
  // Any other content type reaches the handler unparsed, which then says what to send.
  app.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));
  app.addHook('onResponse', async (req) => removeSpool(req));
  app.addHook('onRequestAbort', async (req) => removeSpool(req));
}

/** The 400 of a file over MAX_DOCUMENT_BYTES (field `file` unless named otherwise). */
export function fileTooLarge(field = 'file') {
  return apiError(400, 'INVALID_INPUT', `Invalid input: ${field} is larger than ${MAX_DOCUMENT_BYTES} bytes (10 MB)`, {
    errors: [{ field, constraint: { maxLength: MAX_DOCUMENT_BYTES }, message: `must be at most ${MAX_DOCUMENT_BYTES} bytes (10 MB)` }],
  });
}

/** Stream one file part to a spool file, hashing and counting it. */
async function spoolFile(req: FastifyRequest, stream: NodeJS.ReadableStream, index: number): Promise<Omit<UploadedFile, 'fileName' | 'truncated'>> {
  let dir = spools.get(req);
  if (dir === undefined) {
    dir = await mkdtemp(join(tmpdir(), 'payments-upload-'));
    spools.set(req, dir);
  }
  const path = join(dir, String(index));
  const hash = createHash('sha256');
  let size = 0;
  const head: Buffer[] = [];
  let headSize = 0;
  const tap = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk);
      size += chunk.length;
      if (headSize < HEAD_BYTES) {
        head.push(chunk.subarray(0, HEAD_BYTES - headSize));
        headSize += Math.min(chunk.length, HEAD_BYTES - headSize);
      }
      cb(null, chunk);
    },
  });
  await pipeline(stream, tap, createWriteStream(path));
  return { size, head: Buffer.concat(head), sha256: hash.digest('hex'), path };
}

/**
 * Read the whole form, files spooled to disk. Not multipart → 400 INVALID_REQUEST_FORMAT;
 * a malformed body → the same. With `rejectOversized`, a file over the limit is a 400 as
 * soon as the limit is reached, the rest of the body unread.
 */
export async function readMultipartForm(req: FastifyRequest, opts: { rejectOversized?: boolean } = {}): Promise<MultipartForm> {
  if (!req.isMultipart()) {
    throw apiError(400, 'INVALID_REQUEST_FORMAT', 'This operation takes a multipart/form-data body (fields and a file)', {
      contentType: req.headers['content-type'] ?? null,
    });
  }
  const form: MultipartForm = { fields: {}, files: {} };
  let index = 0;
  try {
    for await (const part of req.parts()) {
      if (part.type === 'file') {
        let over = false;
        if (opts.rejectOversized) {
          part.file.once('limit', () => {
            over = true;
            // Stop here: the spool is dropped with the request and the answer goes out now.
            part.file.destroy(fileTooLarge(part.fieldname));
          });
        }
        const spooled = await spoolFile(req, part.file, index++).catch((err: unknown) => {
          throw over ? fileTooLarge(part.fieldname) : err;
        });
        const file: UploadedFile = { fileName: part.filename ?? '', ...spooled, truncated: part.file.truncated };
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
