// The error envelope: every non-2xx answer is {status, code, message, details?}, with
// `status` equal to the HTTP status and `code` from the specification's list for it.

export interface FieldConstraint {
  format?: string;
  pattern?: string;
  enum?: string[];
  minLength?: number;
  maxLength?: number;
}

export interface FieldError {
  field: string;
  constraint?: FieldConstraint;
  message: string;
}

export interface ErrorEnvelope {
  status: number;
  code: string;
  message: string;
  details?: Record<string, unknown>;
  /** 401 UNAUTHORIZED only: the failed check, the same text as details.reason (see toEnvelope). */
  reason?: string;
}

/**
 * Codes per status, from the specification; 403, 405, 410, 501 and 503 (and 429 RATE_LIMITED)
 * come from the reference, which the specification does not contradict. 408 and 431 are the
 * service's own, for what the HTTP layer refuses before any operation (kernel/client-errors.ts:
 * a request not received in time, headers too large); neither the specification nor the
 * reference has a code for them, so the code is the status's HTTP name.
 */
export const ERROR_CODES = {
  400: [
    'INVALID_INPUT', 'END_USER_TERMS_VERSION_NOT_FOUND', 'MISSING_MANDATORY_USER_INFO', 'INVITATION_ALREADY_CLAIMED',
    'INVITATIONS_NOT_CONFIGURED', 'INVALID_UMA_ADDRESS', 'INVITATION_CANCELLED', 'QUOTE_REQUEST_FAILED',
    'INVALID_PAYREQ_RESPONSE', 'INVALID_RECEIVER', 'PARSE_PAYREQ_RESPONSE_ERROR', 'CERT_CHAIN_INVALID',
    'CERT_CHAIN_EXPIRED', 'INVALID_PUBKEY_FORMAT', 'MISSING_REQUIRED_UMA_PARAMETERS', 'SENDER_NOT_ACCEPTED',
    'AMOUNT_OUT_OF_RANGE', 'INVALID_CURRENCY', 'INVALID_TIMESTAMP', 'INVALID_NONCE', 'INVALID_REQUEST_FORMAT',
    'INVALID_BANK_ACCOUNT', 'SELF_PAYMENT', 'LOOKUP_REQUEST_FAILED', 'PARSE_LNURLP_RESPONSE_ERROR', 'INVALID_AMOUNT',
    'WEBHOOK_ENDPOINT_NOT_SET', 'WEBHOOK_DELIVERY_ERROR', 'LOW_QUALITY', 'DATA_MISMATCH', 'EXPIRED', 'SUSPECTED_FRAUD',
    'UNSUITABLE_DOCUMENT', 'INCOMPLETE', 'EMAIL_OTP_CREDENTIAL_ALREADY_EXISTS', 'SMS_OTP_CREDENTIAL_ALREADY_EXISTS',
    'PASSKEY_CREDENTIAL_ALREADY_EXISTS', 'STABLECOIN_PROVIDER_ACCOUNT_INVALID', 'STABLECOIN_PROVIDER_ACCOUNT_REVOKED',
    'STABLECOIN_PROVIDER_ACCOUNT_SELECTION_REQUIRED', 'CARDHOLDER_KYC_NOT_APPROVED', 'TRANSACTION_SIZE_LIMIT_EXCEEDED',
    'EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED',
    // Cards (reference createCard / updateCardById): a funding source the card may not use.
    'FUNDING_SOURCE_INELIGIBLE',
  ],
  401: [
    'UNAUTHORIZED', 'INVALID_SIGNATURE', 'WALLET_SIGNATURE_MISSING', 'WALLET_SIGNATURE_MALFORMED',
    'WALLET_SIGNATURE_BODY_MISMATCH', 'WALLET_SIGNATURE_INVALID', 'REQUEST_ID_MISSING',
  ],
  403: ['FORBIDDEN', 'USER_NOT_READY', 'COUNTERPARTY_NOT_ALLOWED', 'VELOCITY_LIMIT_EXCEEDED', 'END_USER_TERMS_NOT_ACCEPTED'],
  404: [
    'TRANSACTION_NOT_FOUND', 'INVITATION_NOT_FOUND', 'USER_NOT_FOUND', 'QUOTE_NOT_FOUND', 'LOOKUP_REQUEST_NOT_FOUND',
    'TOKEN_NOT_FOUND', 'BULK_UPLOAD_JOB_NOT_FOUND', 'REFERENCE_NOT_FOUND', 'UMA_NOT_FOUND',
    'STABLECOIN_PROVIDER_ACCOUNT_NOT_FOUND',
  ],
  405: ['METHOD_NOT_ALLOWED'],
  408: ['REQUEST_TIMEOUT'],
  409: [
    'TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL', 'TRANSACTION_NOT_CANCELLABLE', 'UMA_ADDRESS_EXISTS',
    'EMAIL_OTP_EMAIL_ALREADY_EXISTS', 'EMAIL_OTP_CREDENTIAL_SET_CHANGED', 'PASSKEY_ALREADY_ENROLLED',
    'SCA_SESSION_REQUIRED', 'BENEFICIARY_TRUSTED', 'INVALID_STATE_TRANSITION', 'CARD_ALREADY_CLOSED',
    'CARD_NOT_MUTABLE', 'CONFLICT',
  ],
  410: ['CUSTOMER_DELETED'],
  412: ['UNSUPPORTED_UMA_VERSION'],
  423: ['ACCOUNT_LOCKED'],
  424: [
    'PAYREQ_REQUEST_FAILED', 'COUNTERPARTY_PUBKEY_FETCH_ERROR', 'NO_COMPATIBLE_UMA_VERSION', 'LNURLP_REQUEST_FAILED',
    'EMAIL_OTP_CREDENTIAL_SYNC_FAILED',
  ],
  429: ['RATE_LIMITED', 'DAILY_VOLUME_LIMIT_EXCEEDED'],
  431: ['REQUEST_HEADER_FIELDS_TOO_LARGE'],
  500: ['SERVICE_SWITCH_ERROR', 'INTERNAL_ERROR'],
  501: ['NOT_IMPLEMENTED', 'UNRECOGNIZED_MANDATORY_PAYEE_DATA_KEY'],
  503: ['SERVICE_UNAVAILABLE'],
} as const;

export type ErrorStatus = keyof typeof ERROR_CODES;
export type ErrorCode<S extends ErrorStatus> = (typeof ERROR_CODES)[S][number];

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details?: Record<string, unknown>;

  constructor(status: number, code: string, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    if (details !== undefined) this.details = details;
  }

  toEnvelope(): ErrorEnvelope {
    const e: ErrorEnvelope = { status: this.status, code: this.code, message: this.message };
    if (this.details !== undefined) e.details = this.details;
    // The specification: "Sandbox 401 UNAUTHORIZED carries a `reason` field" (the hosted docs
    // write `reason: "Invalid OTP code"`). Beside details.reason, where every other code keeps
    // its specifics, so a client reading either finds it.
    if (this.status === 401 && this.code === 'UNAUTHORIZED' && typeof this.details?.reason === 'string') e.reason = this.details.reason;
    return e;
  }
}

/** Build an error whose status and code are checked against the specification's lists. */
export function apiError<S extends ErrorStatus>(
  status: S,
  code: ErrorCode<S>,
  message: string,
  details?: Record<string, unknown>,
): ApiError {
  return new ApiError(status, code, message, details);
}

/** 400 INVALID_INPUT listing every invalid field (`extra`: more details beside `errors`, e.g. a hint). */
export function invalidInput(errors: FieldError[], message?: string, extra?: Record<string, unknown>): ApiError {
  // Count fields, not problems: one field can fail two checks (format and length).
  const fields = new Set(errors.map((e) => e.field));
  const text =
    message ??
    (fields.size === 1 ? `Invalid input: ${errors[0]!.field} ${errors.map((e) => e.message).join(' and ')}` : `Invalid input: ${fields.size} fields are invalid`);
  return apiError(400, 'INVALID_INPUT', text, { errors, ...extra });
}

/** 404 for a resource that does not exist or belongs to another platform: the same answer. */
export function notFound(code: ErrorCode<404>, what: string, id: string): ApiError {
  return apiError(404, code, `${what} ${id} not found`);
}

/** 401 UNAUTHORIZED with the failed check named in details.reason. */
export function unauthorized(reason: string, message = 'Authentication failed'): ApiError {
  return apiError(401, 'UNAUTHORIZED', message, { reason });
}

/**
 * Collects field errors so a validator can report every problem in one 400.
 * `add` and then `throwIfAny()` at the end.
 */
export class FieldErrors {
  readonly list: FieldError[] = [];
  /** Details of the 400 besides `errors` (e.g. `hint`), set by the checks that add them. */
  readonly details: Record<string, unknown> = {};
  add(field: string, message: string, constraint?: FieldConstraint): this {
    const e: FieldError = { field, message };
    if (constraint && Object.keys(constraint).length > 0) e.constraint = constraint;
    this.list.push(e);
    return this;
  }
  get empty(): boolean {
    return this.list.length === 0;
  }
  throwIfAny(): void {
    if (this.list.length > 0) throw invalidInput(this.list, undefined, this.details);
  }
}
