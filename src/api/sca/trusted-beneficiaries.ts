import type { Kysely, Transaction } from 'kysely';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, invalidInput, notFound } from '../../kernel/errors.js';
import { missingReference } from '../../kernel/references.js';
import { findCustomer } from '../customers/store.js';
import { requireExternalAccount } from '../external-accounts/service.js';
import type { BeneficiaryTrustConfirmRequest, BeneficiaryTrustStart, ScaFactor } from './schemas.js';
import { cancelPendingChallenges, insertChallenge, isTrusted, listFactors, pendingChallenge, settleChallenge, trust, untrust } from './store.js';
import { challengeView } from './payment-challenges.js';
import { type Now, active, assertInScope, assertNotLocked, clearFailures, newChallenge, proofIsValid, proofShape, wrongProof } from './service.js';

// Trusted beneficiaries: a customer's external accounts exempt from payment challenges,
// changed with a proof; a trusted one cannot be deleted.

type Db = Kysely<DB> | Transaction<DB>;

// ---- Trusted beneficiaries --------------------------------------------------------------

/** The external account (a customer's: the platform's own are not under /customers, 404 as for GET) and its in-scope customer. */
async function requireBeneficiary(db: Db, platformId: string, externalAccountId: string): Promise<{ customerId: string }> {
  const account = await requireExternalAccount(db, platformId, externalAccountId, 'customer');
  const customer = account.customer_id === null ? undefined : await findCustomer(db, platformId, account.customer_id);
  if (!customer) throw notFound('REFERENCE_NOT_FOUND', 'External account', externalAccountId);
  // A deleted customer's beneficiary: the customer is not found, as on every SCA operation.
  if (customer.is_deleted === 1) throw missingReference('USER_NOT_FOUND', 'Customer', customer.id, 'externalAccountId', true);
  assertInScope(customer);
  return { customerId: customer.id };
}

/** POST …/trust and …/untrust: a challenge (SMS_OTP, or any enrolled factor) to confirm the change with. */
export async function startTrustChange(store: Store, platformId: string, now: Now, externalAccountId: string, change: 'TRUST' | 'UNTRUST'): Promise<BeneficiaryTrustStart> {
  return store.db.transaction().execute(async (trx) => {
    const { customerId } = await requireBeneficiary(trx, platformId, externalAccountId);
    const trusted = await isTrusted(trx, platformId, externalAccountId);
    if (trusted === (change === 'TRUST')) {
      throw apiError(409, 'CONFLICT', `External account ${externalAccountId} is ${trusted ? 'already' : 'not'} a trusted beneficiary`, { externalAccountId, trusted, reason: trusted ? 'ALREADY_TRUSTED' : 'NOT_TRUSTED' });
    }
    await cancelPendingChallenges(trx, platformId, ['TRUST', 'UNTRUST'], { subjectId: externalAccountId });
    const factors = await listFactors(trx, platformId, customerId);
    const available: ScaFactor[] = ['SMS_OTP', ...(['TOTP', 'PASSKEY'] as const).filter((f) => active(factors, f))];
    const ch = newChallenge(platformId, customerId, change, externalAccountId, 'SMS_OTP', available, [change === 'TRUST' ? 'BENEFICIARY_TRUST' : 'BENEFICIARY_UNTRUST'], now);
    await insertChallenge(trx, ch);
    return { scaChallenge: challengeView(ch, factors) };
  });
}

/** POST …/trust/confirm and …/untrust/confirm: the proof makes the change. */
export async function confirmTrustChange(store: Store, platformId: string, now: Now, externalAccountId: string, change: 'TRUST' | 'UNTRUST', body: BeneficiaryTrustConfirmRequest): Promise<{ trusted: boolean }> {
  const db = store.db;
  const { customerId } = await requireBeneficiary(db, platformId, externalAccountId);
  const ch = await pendingChallenge(db, platformId, [change], { subjectId: externalAccountId });
  const path = change === 'TRUST' ? 'trust' : 'untrust';
  if (!ch) throw invalidInput([{ field: 'challengeId', message: `answers no pending ${path} of this beneficiary: start one with POST /customers/external-accounts/{externalAccountId}/${path}` }]);
  if (body.challengeId !== undefined && body.challengeId !== null && body.challengeId !== ch.id) throw invalidInput([{ field: 'challengeId', message: `is not the challenge of the pending ${path}` }]);
  if (now.ms > Number(ch.expires_at_ms)) throw invalidInput([{ field: 'challengeId', message: `the challenge expired at ${ch.expires_at}: start again` }], 'The SCA challenge expired');
  await assertNotLocked(db, platformId, customerId, now);
  const kind = proofShape(body);
  const factors = await listFactors(db, platformId, customerId);
  if (!proofIsValid(body, kind, JSON.parse(ch.available_factors) as string[], factors)) await wrongProof(store, platformId, customerId, now, kind === 'CODE' ? 'code' : 'passkeyAssertion');
  return db.transaction().execute(async (trx) => {
    if (!(await settleChallenge(trx, ch.id, 'SATISFIED'))) throw invalidInput([{ field: 'challengeId', message: 'was already answered' }]);
    await clearFailures(trx, platformId, customerId, now.at);
    if (change === 'TRUST') await trust(trx, platformId, customerId, externalAccountId, now.at);
    else await untrust(trx, platformId, externalAccountId);
    return { trusted: change === 'TRUST' };
  });
}

/** The external-accounts area's delete guard: a trusted beneficiary cannot be deleted (409 BENEFICIARY_TRUSTED). */
export async function refuseTrustedDelete(db: Db, platformId: string, externalAccountId: string): Promise<void> {
  if (await isTrusted(db, platformId, externalAccountId)) {
    throw apiError(409, 'BENEFICIARY_TRUSTED', `External account ${externalAccountId} is a trusted beneficiary: untrust it first (POST /customers/external-accounts/{externalAccountId}/untrust and its /confirm)`, {
      externalAccountId,
    });
  }
}
