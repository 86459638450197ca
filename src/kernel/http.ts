import type { FastifyReply, FastifyRequest, FastifySchemaCompiler, FastifySerializerCompiler } from 'fastify';
import { type TSchema, Type } from 'typebox';
import type { AuthContext, AuthMode, Permission } from './auth.js';
import { iso, platformNowMs, type Clock } from './clock.js';
import { apiError, ERROR_CODES, type ErrorStatus, invalidInput } from './errors.js';
import { checkSchema, validatorCompiler } from './validation.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Which security schemes the route accepts (default 'basic-or-agent' under the version
     * path, which takes Basic only: an agent's Bearer token works only where it is 'agent').
     */
    auth?: AuthMode;
    /** Permission the route needs (default: VIEW for GET, MANAGE otherwise). */
    permission?: Permission;
    /** Response fields that are secrets: never stored for an Idempotency-Key replay. */
    secretFields?: readonly string[];
    /**
     * The answer carries sensitive values (a beneficial owner's identifier): the answer kept
     * for an Idempotency-Key replay is stored sealed (kernel/sealed.ts) and opened to replay.
     */
    sealStoredAnswer?: boolean;
    /**
     * An operation that is not in the 2025-10-13 reference (one the official clients call that
     * is newer than it, or one of the sandbox's own): served, and marked in the OpenAPI document
     * with `x-extension: true` (docs/operations.md lists them apart).
     */
    extension?: boolean;
  }
  interface FastifyRequest {
    auth: AuthContext | null;
    idempotency: import('./idempotency.js').IdempotencyContext | null;
  }
}

/** The error envelope as a response schema, with the codes of its status. */
export function ErrorSchema(status: ErrorStatus) {
  return Type.Object(
    {
      status: Type.Integer({ enum: [status], description: 'HTTP status code' }),
      code: Type.String({ enum: [...ERROR_CODES[status]], description: 'Error code' }),
      message: Type.String({ description: 'Error message' }),
      details: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'Additional details; shape depends on the code' })),
      ...(status === 401 ? { reason: Type.Optional(Type.String({ description: 'UNAUTHORIZED only: the failed check (the same text as details.reason)' })) } : {}),
    },
    { title: `Error${status}` },
  );
}

const DESCRIPTIONS: Partial<Record<ErrorStatus, string>> = {
  400: 'Bad request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not found',
  405: 'Method not allowed',
  409: 'Conflict',
  410: 'Gone',
  412: 'Precondition failed',
  424: 'Failed dependency',
  429: 'Too many requests',
  500: 'Internal service error',
  501: 'Not implemented',
};

/** Error responses for a route's schema; 400, 401 and 500 are always possible. */
export function errorResponses(...statuses: ErrorStatus[]): Record<number, ReturnType<typeof ErrorSchema>> {
  const out: Record<number, ReturnType<typeof ErrorSchema>> = {};
  for (const s of new Set<ErrorStatus>([400, 401, ...statuses, 500])) {
    out[s] = { ...ErrorSchema(s), description: DESCRIPTIONS[s] ?? `Error ${s}` } as ReturnType<typeof ErrorSchema>;
  }
  return out;
}

/** The authenticated caller of a versioned route. */
export function authOf(req: FastifyRequest): AuthContext {
  if (!req.auth) throw new Error('route reached without authentication');
  return req.auth;
}

/** Now on the caller's platform clock: epoch ms and ISO text. */
export function nowOf(req: FastifyRequest, clock: Clock): { ms: number; at: string } {
  const ms = platformNowMs(clock, Number(authOf(req).platform.clock_offset_ms));
  return { ms, at: iso(ms) };
}

export const NoContent = Type.Null({ description: 'No content' });

/** The header that carries a signed action's wallet stamp (specification: Authentication). */
export const WALLET_SIGNATURE_HEADER = 'Service-Wallet-Signature';
/** The vendor's name of the same header, which its CLI and SDK helpers send: accepted as an alias. */
export const WALLET_SIGNATURE_ALIAS = 'Grid-Wallet-Signature';

/**
 * The wallet stamp of a signed action, read under both names: `Service-Wallet-Signature`
 * or its alias `Grid-Wallet-Signature` (an empty value counts as absent). Both sent with
 * different stamps is ambiguous: 401 WALLET_SIGNATURE_MALFORMED (docs/decisions.md).
 */
export function walletSignatureOf(req: FastifyRequest): string | undefined {
  const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  const service = one(req.headers[WALLET_SIGNATURE_HEADER.toLowerCase()]);
  const alias = one(req.headers[WALLET_SIGNATURE_ALIAS.toLowerCase()]);
  const s = service?.trim() || undefined;
  const a = alias?.trim() || undefined;
  if (s !== undefined && a !== undefined && s !== a) {
    throw apiError(401, 'WALLET_SIGNATURE_MALFORMED', `${WALLET_SIGNATURE_HEADER} and ${WALLET_SIGNATURE_ALIAS} carry different stamps: send one of them, or the same stamp in both`);
  }
  return s ?? a ?? service ?? alias;
}

/** The headers of an embedded-wallet signed retry: the stamp and the Request-Id it echoes. */
export interface SignedHeaders {
  signature?: string | undefined;
  requestId?: string | undefined;
}

/** The signed-retry headers of a request (the stamp under either name: kernel/http.ts walletSignatureOf). */
export function signedHeadersOf(req: FastifyRequest): SignedHeaders {
  const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  return { signature: walletSignatureOf(req), requestId: one(req.headers['request-id']) };
}

/**
 * A challenge's requestId also as the `Request-Id` response header (the header the signed
 * retry, or the passkey verify, echoes), besides the body field. Nothing for other answers.
 */
export function requestIdHeader(reply: FastifyReply, body: unknown): void {
  const rid = body !== null && typeof body === 'object' ? (body as { requestId?: unknown }).requestId : undefined;
  if (typeof rid === 'string') reply.header('request-id', rid);
}

/**
 * The create body (46 accountInfo shapes) is compiled once per process, on first use, and
 * shared with the preValidation check: compiling it at every app start would cost every
 * process a second or more.
 */
export function lazyBody(body: TSchema): FastifySchemaCompiler<unknown> {
  return (route) => {
    if (route.httpPart !== 'body') return validatorCompiler(route);
    return (data: unknown) => {
      const errors = checkSchema(body, data);
      return errors.length > 0 ? { error: invalidInput(errors) } : { value: data };
    };
  };
}

/**
 * Responses carrying an ExternalAccount are built field by field from stored data that
 * keeps only declared fields (service.ts), so they are sent with JSON.stringify:
 * fast-json-stringify would compile a validator per accountInfo shape in every app.
 */
export const jsonSerializer: FastifySerializerCompiler<unknown> = () => (data) => JSON.stringify(data);
