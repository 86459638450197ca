import type { Kysely } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';
import { idPattern, isIdOf } from '../../kernel/ids.js';
import { sandboxSuffix } from '../../sandbox/rules/identifiers.js';
import { externalAccountLookupFailure } from '../../sandbox/rules/lookup-rules.js';
import { accountInfoOf, requireExternalAccount } from '../external-accounts/service.js';
import type { ExternalAccountRow } from '../external-accounts/store.js';
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
  const failure = externalAccountLookupFailure(suffixOf(account), accountId);
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

/**
 * The sandbox suffix of the account's identifier. A row read through the external accounts'
 * TableCache is frozen and stands for one version of the account, so its suffix is worked
 * out (the account's JSON parsed) once, not on every lookup (issue 35).
 */
function suffixOf(account: ExternalAccountRow): string {
  if (!Object.isFrozen(account)) return sandboxSuffix(accountInfoOf(account));
  let suffix = suffixes.get(account);
  if (suffix === undefined) suffixes.set(account, (suffix = sandboxSuffix(accountInfoOf(account))));
  return suffix;
}

const suffixes = new WeakMap<ExternalAccountRow, string>();
