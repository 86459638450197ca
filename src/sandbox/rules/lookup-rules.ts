import type { ApiError } from '../../kernel/errors.js';
import { apiError } from '../../kernel/errors.js';

// Counterparty failures of the external-account lookup, steered like every other sandbox
// outcome by the last 3 digits of the account's primary identifier (src/sandbox/rules/identifiers.ts).
// They sit outside the transfer suffixes (00x), the quote suffixes (00x) and the beneficiary
// suffixes (1xx), so an account chosen for one never triggers another.

export interface LookupTrigger {
  status: 412 | 424 | 500;
  code: string;
  message: string;
}

export const EXTERNAL_ACCOUNT_LOOKUP_TRIGGERS: Readonly<Record<string, LookupTrigger>> = {
  '412': { status: 412, code: 'UNSUPPORTED_UMA_VERSION', message: "The receiving institution does not support this service's UMA version" },
  '424': { status: 424, code: 'LNURLP_REQUEST_FAILED', message: 'The request to the receiving institution failed' },
  '425': { status: 424, code: 'NO_COMPATIBLE_UMA_VERSION', message: 'The receiving institution and this service share no UMA version' },
  '426': { status: 424, code: 'COUNTERPARTY_PUBKEY_FETCH_ERROR', message: "The receiving institution's public keys could not be fetched" },
  '500': { status: 500, code: 'SERVICE_SWITCH_ERROR', message: 'The payment switch failed while contacting the receiving institution' },
};

/** The error a lookup of an account with this identifier suffix answers, if any. */
export function externalAccountLookupFailure(suffix: string, accountId: string): ApiError | undefined {
  const t = EXTERNAL_ACCOUNT_LOOKUP_TRIGGERS[suffix];
  if (!t) return undefined;
  const details = { accountId, sandboxTrigger: true };
  if (t.status === 412) return apiError(412, 'UNSUPPORTED_UMA_VERSION', t.message, details);
  if (t.status === 500) return apiError(500, 'SERVICE_SWITCH_ERROR', t.message, details);
  return apiError(424, t.code as 'LNURLP_REQUEST_FAILED', t.message, details);
}
