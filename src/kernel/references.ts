import type { FastifyRequest } from 'fastify';
import { ApiError, apiError, type ErrorCode, invalidInput } from './errors.js';

// One rule for an answer that names something that is not there (an unknown id, another
// platform's resource, a deleted customer): the operation answers with a status it
// declares. The route's response schemas are its declared statuses (and they match the
// reference's, test/foundation/declared-statuses.test.ts), so the rule reads them there:
//
// - 404 declared: 404 with the resource's code (USER_NOT_FOUND for a customer);
// - else 400 INVALID_INPUT with a field error naming the request field that holds the id.
//
// Services throw `missingReference(...)`; the error handler (`sendError` in app.ts) turns it
// into the operation's answer with `answerForMissing`. A deleted customer is missing like an
// unknown one everywhere (DELETE /customers/{id} keeps its own answer, see docs/decisions.md).
// The same step answers a 403 FORBIDDEN as 401 on an operation that declares no 403.

/** What was named and where: `field` is the path parameter or the dot path of the body or query field. */
export interface Reference {
  /** The resource's 404 code (USER_NOT_FOUND, QUOTE_NOT_FOUND, REFERENCE_NOT_FOUND, …). */
  code: ErrorCode<404>;
  /** The 404's message: 'Customer Customer:… not found'. */
  message: string;
  field: string;
  /** The field error's message when the answer is a 400 (default: what the 404 says). */
  fieldMessage?: string;
}

/** A reference to something that is not there; 404 until the error handler applies the operation's rule. */
export class MissingReference extends ApiError {
  readonly reference: Reference;
  constructor(ref: Reference) {
    super(404, ref.code, ref.message);
    this.reference = ref;
  }
}

/** `what` `id` (in request field `field`) is not there, or is a customer that was deleted. */
export function missingReference(code: ErrorCode<404>, what: string, id: string, field: string, deleted = false): MissingReference {
  return new MissingReference({
    code,
    message: deleted ? `${what} ${id} was deleted` : `${what} ${id} not found`,
    field,
    fieldMessage: deleted ? `names a deleted ${what.toLowerCase()} (${id})` : `names no ${what.toLowerCase()} of this platform (${id})`,
  });
}

/**
 * The lookup's 404, if it fails with one, as a missing reference held in request field
 * `field`: for the shared `require…` lookups that throw `notFound`.
 */
export async function referencedBy<T>(field: string, lookup: Promise<T>): Promise<T> {
  try {
    return await lookup;
  } catch (err) {
    if (err instanceof ApiError && err.status === 404 && !(err instanceof MissingReference)) {
      throw new MissingReference({ code: err.code as ErrorCode<404>, message: err.message, field, fieldMessage: `names nothing of this platform: ${err.message}` });
    }
    throw err;
  }
}

/** The answer for a missing reference on an operation that declares `declared` (its response statuses). */
export function answerForMissing(ref: Reference, declared: ReadonlySet<number>): ApiError {
  if (declared.has(404) || !declared.has(400)) return apiError(404, ref.code, ref.message);
  const message = ref.fieldMessage ?? ref.message;
  return invalidInput([{ field: ref.field, message }], `Invalid input: ${ref.field} ${message}`);
}

/** The statuses a route declares: the keys of its response schemas. */
export function declaredStatuses(req: FastifyRequest): Set<number> {
  const response = (req.routeOptions?.schema as { response?: Record<string, unknown> } | undefined)?.response;
  return new Set(Object.keys(response ?? {}).map(Number));
}

/**
 * A refusal for lack of a right (403 FORBIDDEN: the token lacks the permission, the agent is
 * paused or its policy says no) on an operation that declares no 403: 401 UNAUTHORIZED, the
 * reference's other answer about the caller's credentials, with the same message and details
 * (details.reason: the failed check).
 */
export function answerForForbidden(err: ApiError, declared: ReadonlySet<number>): ApiError {
  if (declared.has(403) || !declared.has(401)) return err;
  const reason = typeof err.details?.reason === 'string' ? err.details.reason : err.message;
  return apiError(401, 'UNAUTHORIZED', err.message, { ...err.details, reason });
}

/**
 * An error as the operation answers it, with a status it declares: a missing reference by the
 * rule above, a FORBIDDEN as 401 where 403 is not declared, anything else as thrown.
 */
export function declaredAnswer(err: ApiError, req: FastifyRequest): ApiError {
  if (err instanceof MissingReference) return answerForMissing(err.reference, declaredStatuses(req));
  if (err.status === 403 && err.code === 'FORBIDDEN') return answerForForbidden(err, declaredStatuses(req));
  return err;
}
