import { randomBytes } from 'node:crypto';
import { base32 } from '@scure/base';
import type { Kysely, Transaction } from 'kysely';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, type FieldError, invalidInput, notFound } from '../../kernel/errors.js';
import { newId } from '../../kernel/ids.js';
import { SCA_ENROLLMENT_TTL_MS, SCA_PASSKEY_ORIGINS, SCA_RELYING_PARTY_ID, SCA_SANDBOX_CODE } from '../../sandbox/rules/sca.js';
import type { ScaFactor, ScaFactorConfirmRequest, ScaFactorConfirmResponse, ScaFactorEnrollStart, ScaFactorView } from './schemas.js';
import { deleteFactor, deleteFactors, type FactorRow, insertFactor, listFactors, updateFactor } from './store.js';
import { type Now, active, requireScaCustomer, sha256 } from './service.js';

// The customer's SCA factors: enrollment (TOTP, SMS_OTP, PASSKEY), listing, deletion.

type Db = Kysely<DB> | Transaction<DB>;

// ---- Factors ----------------------------------------------------------------------------

function factorView(f: FactorRow): ScaFactorView {
  const v: ScaFactorView = { factor: f.factor as ScaFactor };
  if (f.factor === 'PASSKEY' && f.credential_id !== null) v.credentialId = f.credential_id;
  if (f.name !== null) v.name = f.name;
  return v;
}

/** GET /sca/factors: SMS_OTP (always: the phone from customer creation), then TOTP and PASSKEY once enrolled. */
export async function listScaFactors(db: Db, platformId: string, customerId: string): Promise<{ factors: ScaFactorView[] }> {
  await requireScaCustomer(db, platformId, customerId);
  const rows = (await listFactors(db, platformId, customerId)).filter((f) => f.status === 'ACTIVE');
  return { factors: [{ factor: 'SMS_OTP' }, ...rows.map(factorView)] };
}

/** POST /sca/factors: start a TOTP or PASSKEY enrollment (a second passkey: 409 PASSKEY_ALREADY_ENROLLED). */
export async function startEnrollment(store: Store, platformId: string, now: Now, customerId: string, type: 'TOTP' | 'PASSKEY'): Promise<ScaFactorEnrollStart> {
  return store.db.transaction().execute(async (trx) => {
    const customer = await requireScaCustomer(trx, platformId, customerId);
    const factors = await listFactors(trx, platformId, customerId);
    if (type === 'PASSKEY' && active(factors, 'PASSKEY')) {
      throw apiError(409, 'PASSKEY_ALREADY_ENROLLED', `Customer ${customerId} already has a passkey: delete it (DELETE /sca/factors/{credentialId}) before enrolling another`, { customerId });
    }
    if (type === 'TOTP' && active(factors, 'TOTP')) {
      throw apiError(409, 'CONFLICT', `Customer ${customerId} already has a TOTP authenticator: reset it (POST /sca/factors/reset) to enroll another`, { customerId, reason: 'TOTP_ALREADY_ENROLLED' });
    }
    await deleteFactors(trx, platformId, customerId, type, 'PENDING');
    const row: FactorRow = {
      id: newId('ScaFactor'),
      platform_id: platformId,
      customer_id: customerId,
      factor: type,
      status: 'PENDING',
      credential_id: null,
      name: null,
      secret_hash: null,
      expires_at_ms: now.ms + SCA_ENROLLMENT_TTL_MS,
      created_at: now.at,
      confirmed_at: null,
    };
    if (type === 'TOTP') {
      const raw = randomBytes(20);
      const secret = base32.encode(raw).replace(/=+$/, '');
      row.secret_hash = sha256(secret);
      await insertFactor(trx, row);
      const label = encodeURIComponent(`Payments Service:${customer.email ?? customer.id}`);
      return { type, secret, secretBase32Encoded: secret, totpUri: `otpauth://totp/${label}?secret=${secret}&issuer=Payments%20Service&algorithm=SHA1&digits=6&period=30` };
    }
    const challenge = randomBytes(32).toString('base64url');
    row.secret_hash = sha256(challenge);
    await insertFactor(trx, row);
    return {
      type,
      options: {
        challenge,
        rp: { id: SCA_RELYING_PARTY_ID, name: 'Payments Service sandbox' },
        user: { id: Buffer.from(customerId).toString('base64url'), name: customer.email ?? customerId, displayName: customer.email ?? customerId },
        pubKeyCredParams: [
          { type: 'public-key', alg: -7 },
          { type: 'public-key', alg: -257 },
        ],
        timeout: SCA_ENROLLMENT_TTL_MS,
        attestation: 'none',
      },
      allowedOrigins: [...SCA_PASSKEY_ORIGINS],
      relyingPartyId: SCA_RELYING_PARTY_ID,
    };
  });
}

/** POST /sca/factors/confirm: finish the pending enrollment of that type. */
export async function confirmEnrollment(store: Store, platformId: string, now: Now, customerId: string, body: ScaFactorConfirmRequest): Promise<ScaFactorConfirmResponse> {
  return store.db.transaction().execute(async (trx) => {
    await requireScaCustomer(trx, platformId, customerId);
    const missing: FieldError[] = [];
    if (body.type === 'TOTP') {
      if (body.secret === undefined) missing.push({ field: 'secret', message: 'is required for a TOTP confirmation' });
      if (body.code === undefined) missing.push({ field: 'code', message: 'is required for a TOTP confirmation' });
    } else {
      if (body.origin === undefined) missing.push({ field: 'origin', message: 'is required for a PASSKEY confirmation' });
      if (body.credential === undefined) missing.push({ field: 'credential', message: 'is required for a PASSKEY confirmation' });
    }
    if (missing.length > 0) throw invalidInput(missing);
    const factors = await listFactors(trx, platformId, customerId);
    const pending = factors.find((f) => f.factor === body.type && f.status === 'PENDING' && Number(f.expires_at_ms) >= now.ms);
    if (body.type === 'TOTP') {
      if (!pending || pending.secret_hash !== sha256(body.secret!)) {
        throw invalidInput([{ field: 'secret', message: 'is not the secret of a pending TOTP enrollment (start one with POST /sca/factors; it lasts 10 minutes)' }]);
      }
      if (body.code !== SCA_SANDBOX_CODE) throw invalidInput([{ field: 'code', message: 'is not the authenticator’s current code' }], 'Invalid TOTP code');
      await updateFactor(trx, pending.id, { status: 'ACTIVE', confirmed_at: now.at, expires_at_ms: null, name: 'Authenticator app' });
      return { type: 'TOTP', recoveryCodes: Array.from({ length: 8 }, () => randomBytes(5).toString('hex')) };
    }
    if (active(factors, 'PASSKEY')) throw apiError(409, 'PASSKEY_ALREADY_ENROLLED', `Customer ${customerId} already has a passkey`, { customerId });
    if (!pending) throw invalidInput([{ field: 'credential', message: 'answers no pending passkey enrollment (start one with POST /sca/factors; it lasts 10 minutes)' }]);
    const errors: FieldError[] = [];
    if (!SCA_PASSKEY_ORIGINS.includes(body.origin!)) errors.push({ field: 'origin', constraint: { enum: [...SCA_PASSKEY_ORIGINS] }, message: 'is not one of the enrollment’s allowedOrigins' });
    const cred = body.credential as Record<string, unknown>;
    const credentialId = typeof cred.id === 'string' && cred.id.length > 0 ? cred.id : typeof cred.rawId === 'string' && cred.rawId.length > 0 ? cred.rawId : undefined;
    if (credentialId === undefined || credentialId.length > 1024) errors.push({ field: 'credential.id', message: 'is required: the credential id the device produced' });
    if (errors.length > 0) throw invalidInput(errors);
    const name = typeof cred.name === 'string' && cred.name.trim().length > 0 ? cred.name.trim().slice(0, 100) : 'Passkey';
    await updateFactor(trx, pending.id, { status: 'ACTIVE', confirmed_at: now.at, expires_at_ms: null, credential_id: credentialId!, name, secret_hash: null });
    return { type: 'PASSKEY', factor: { factor: 'PASSKEY', credentialId: credentialId!, name } };
  });
}

/** DELETE /sca/factors/{credentialId}: only passkeys carry a credentialId. */
export async function deleteScaFactor(store: Store, platformId: string, customerId: string, credentialId: string): Promise<void> {
  await store.db.transaction().execute(async (trx) => {
    await requireScaCustomer(trx, platformId, customerId);
    const row = (await listFactors(trx, platformId, customerId)).find((f) => f.factor === 'PASSKEY' && f.status === 'ACTIVE' && f.credential_id === credentialId);
    if (!row) throw notFound('REFERENCE_NOT_FOUND', 'SCA factor', credentialId);
    await deleteFactor(trx, row.id);
  });
}
