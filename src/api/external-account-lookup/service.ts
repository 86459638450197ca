import type { Kysely } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';
import { idPattern, isIdOf } from '../../kernel/ids.js';
import { sandboxSuffix } from '../../sandbox/rules/identifiers.js';
import { externalAccountLookupFailure } from '../../sandbox/rules/lookup-rules.js';
import { accountInfoOf, requireExternalAccount } from '../external-accounts/service.js';
import { type LookupQuery, lookupQueryErrors, performLookup, resolveSender, throwLookupFieldErrors } from '../lookups/service.js';
import type { PlatformRow } from '../../operator/platforms/store.js';
import type { ReceiverExternalAccountLookupResponse } from './schemas.js';

// GET /receiver/external-account/{accountId} (lookupExternalAccount). Order of checks:
// every parameter problem in one 400; the external account (404, also for another
// platform's or a deleted one); the sender (404 USER_NOT_FOUND, 400 INVALID_CURRENCY); the
// receiving institution (sandbox 412 / 424 / 500 triggers by identifier suffix); then the
// priced answer, stored under a fresh lookupId for the quote.

export async function lookupExternalAccount(
  db: Kysely<DB>,
  platform: PlatformRow,
  now: { ms: number; at: string },
  accountId: string,
  query: LookupQuery,
): Promise<ReceiverExternalAccountLookupResponse> {
  const errors = lookupQueryErrors(query);
  if (!isIdOf('ExternalAccount', accountId)) {
    errors.invalid.unshift({ field: 'accountId', constraint: { pattern: idPattern('ExternalAccount') }, message: 'must be an external account id: ExternalAccount:<uuid>' });
  }
  throwLookupFieldErrors(errors);

  const account = await requireExternalAccount(db, platform.id, accountId);
  const sender = await resolveSender(db, platform.id, query);
  const failure = externalAccountLookupFailure(sandboxSuffix(accountInfoOf(account)), accountId);
  if (failure) throw failure;

  const answer = await performLookup(db, platform, now, {
    kind: 'EXTERNAL_ACCOUNT',
    target: accountId,
    query,
    sender,
    receiving: [{ currency: account.currency }],
    receiver: { kind: 'EXTERNAL_ACCOUNT', accountId },
  });
  return { accountId, ...answer };
}
