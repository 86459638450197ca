import type { Kysely, Transaction } from 'kysely';
import type { DB } from '../../kernel/db/schema.js';
import { apiError } from '../../kernel/errors.js';
import type { CustomerCreatedEvent } from '../../kernel/hooks.js';
import { newId } from '../../kernel/ids.js';
import type { Sealer } from '../../kernel/sealed.js';
import { fundingReference } from '../../sandbox/rules/funding-instructions.js';
import { platformSettings } from '../config/service.js';
import type { InternalAccount } from '../internal-accounts/schemas.js';
import { insertAccounts, type InternalAccountRow } from '../internal-accounts/store.js';
import { openInternalLedgerAccounts } from '../ledger/service.js';
import { bytesToHex, sha256Hex } from './crypto.js';
import type { AuthMethod } from './schemas.js';
import * as store from './store.js';
import type { CredentialRow } from './store.js';
import { SYNC_FAILURE_EMAIL, WALLET_CURRENCY } from './service.js';

// Provisioning: a customer's embedded wallet and its EMAIL_OTP credential, kept in step with
// the customer (kernel hooks registered by the routes plugin).

type Db = Kysely<DB> | Transaction<DB>;

// ---- Provisioning -----------------------------------------------------------------------------

/**
 * Open the customer's EMBEDDED_WALLET account (customerCreated / customerUpdated hook), once
 * the customer may hold internal accounts, has an email on file and the platform supports the
 * wallet currency, with its EMAIL_OTP credential tied to that email; keep tied EMAIL_OTP
 * credentials in step with the customer's email.
 */
export async function onCustomerChange(sealer: Sealer, e: CustomerCreatedEvent, opts: { created?: boolean } = {}): Promise<void> {
  const { trx, platform } = e;
  // The customer's email comes with the event (the row its transaction just wrote; issue 35:
  // no read of it again).
  const email = e.email;
  // A customer created in this transaction has no wallet yet: no need to look (issue 15).
  const wallets = opts.created ? [] : await store.walletAccountsOf(trx, platform.id, e.customerId);
  if (wallets.length > 0) {
    for (const w of wallets) await syncEmailCredential(trx, platform.id, w.id, email, e.at);
    return;
  }
  // The wallet's first credential is the EMAIL_OTP tied to the customer's email: no email, no wallet yet.
  if (!email) return;
  const holds = await trx.selectFrom('internal_accounts').select('id').where('platform_id', '=', platform.id).where('customer_id', '=', e.customerId).executeTakeFirst();
  if (!holds) return; // not allowed to hold accounts yet (the end-user terms)
  if (!(await platformSettings(trx, platform.id)).supportedCurrencies.includes(WALLET_CURRENCY)) return;
  const id = newId('InternalAccount');
  const row: InternalAccountRow = {
    id,
    platform_id: platform.id,
    customer_id: e.customerId,
    currency: WALLET_CURRENCY,
    type: 'EMBEDDED_WALLET',
    status: 'ACTIVE',
    funding_reference: fundingReference(id),
    private_enabled: 0,
    created_at: e.at,
    updated_at: e.at,
  };
  const inserted = await insertAccounts(trx, [row]);
  await openInternalLedgerAccounts(trx, platform.id, inserted, e.at);
  const seed = bytesToHex(crypto.getRandomValues(new Uint8Array(32)));
  await store.insertWallet(trx, {
    account_id: id,
    platform_id: platform.id,
    organization_id: `org_${sha256Hex(`org:${id}`).slice(0, 24)}`,
    wallet_address: `spark1${sha256Hex(`wallet:${id}`).slice(0, 38)}`,
    mnemonic: sealer.seal(seed, `embedded_wallets.mnemonic:${id}`),
    created_at: e.at,
  });
  await insertOtpCredential(trx, platform.id, id, 'EMAIL_OTP', email, e.at);
}

async function syncEmailCredential(db: Db, platformId: string, accountId: string, email: string | null, at: string): Promise<void> {
  const tied = (await store.activeCredentials(db, platformId, accountId)).filter((c) => c.type === 'EMAIL_OTP');
  for (const c of tied) {
    if (c.nickname === email) continue;
    if (!email || SYNC_FAILURE_EMAIL.test(email)) {
      throw apiError(424, 'EMAIL_OTP_CREDENTIAL_SYNC_FAILED', `The EMAIL_OTP credential ${c.id} of ${accountId} is tied to the customer's email and cannot follow its removal`, {
        credentialId: c.id,
        accountId,
      });
    }
    await store.updateCredential(db, platformId, c.id, { nickname: email, updated_at: at });
  }
}

async function insertOtpCredential(db: Db, platformId: string, accountId: string, type: 'EMAIL_OTP' | 'SMS_OTP', nickname: string, at: string): Promise<CredentialRow> {
  const row: CredentialRow = {
    id: newId('AuthMethod'),
    platform_id: platformId,
    account_id: accountId,
    type,
    nickname,
    status: 'ACTIVE',
    webauthn_id: null,
    webauthn_public_key: null,
    webauthn_counter: null,
    rp_id: null,
    transports: null,
    oauth_iss: null,
    oauth_aud: null,
    oauth_sub: null,
    otp_target_key: null,
    otp_expires_ms: null,
    created_at: at,
    updated_at: at,
  };
  await store.insertCredential(db, row);
  return row;
}
