import type { Kysely } from 'kysely';
import { randomBytes } from 'node:crypto';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import type { Store } from './db/connect.js';
import { loadSealer, openSealed, parseSecretKey, Sealer, sealedKeyId, sealingKeyOf, type SecretSource, DATA_KEY_BYTES } from './sealed.js';
import { openWebhookKey, sealWebhookKey } from './webhook-keys.js';

// `payments-service rotate-secret` (docs/reliability.md, "Rotating the server secret"):
// re-seal every value sealed at rest under a new server secret, in ONE transaction of the
// store, so either every value is sealed with the new key or none is. Sealed values:
// - platforms.webhook_private_key (context platforms.webhook_private_key:<platform id>),
//   plaintext keys from before sealing included;
// - beneficial_owners.identifier_sealed (context beneficial_owners.identifier:<owner id>);
// - idempotency_keys.response_body of routes that store their answer sealed
//   (context idempotency_keys.response_body:<platform id>:<key>).
// Older keys kept only to open (the `data_keys` row of a SQLite store from before the secret
// file, PAYMENTS_DATA_KEY next to PAYMENTS_SECRET_KEY) are gone afterwards: every value they
// opened is sealed with the new key, and the `data_keys` row is deleted (or, when the store
// itself keeps the secret, replaced by the new key).
//
// The SQL touches tables of several areas on purpose: this is one operator step over every
// sealed column, and it must be one transaction.

export interface RotateOptions {
  /** The new secret (32+ characters). Absent: one is generated (32 random bytes, base64url). */
  newSecret?: string | undefined;
  /** Leave values that no key at hand opens as they are (they stay unreadable) instead of refusing. */
  allowUnreadable?: boolean;
}

export interface RotateResult {
  /** Where the current secret came from. */
  source: SecretSource;
  /** Where the new secret is kept: 'data-directory' (written to the file), 'store' (the data_keys row), or 'environment' (set it yourself). */
  keptIn: 'data-directory' | 'store' | 'environment';
  secretFile?: string;
  /** The new secret when it was generated here and must be set in the environment (shown once). */
  generatedSecret?: string;
  newKeyId: string;
  resealed: { webhookKeys: number; identifiers: number; storedAnswers: number; areaValues: number };
  /** Values no key at hand opened, left as they were (only with allowUnreadable). */
  unreadable: number;
}

export class RotationRefused extends Error {}

/**
 * Re-seal everything under a new secret. `configured` is the current configuration
 * (PAYMENTS_SECRET_KEY / PAYMENTS_DATA_KEY); without either, the data directory's file or the
 * store's key is the current secret, as at a server start. Run it with the servers of this
 * store stopped: a server still running with the old secret cannot open the new values.
 */
export async function rotateSecret(
  store: Store,
  configured: { secretKey?: string | undefined; dataKey?: Buffer | undefined },
  options: RotateOptions = {},
): Promise<RotateResult> {
  const at = new Date().toISOString();
  // Registers the current key and every older one this store's values may be sealed with.
  const current = await loadSealer(store, configured, at);
  if (current.source === 'memory') throw new RotationRefused('An in-memory store (sqlite::memory:) has nothing to rotate: its secret lives and dies with its process');

  let next: Sealer;
  let newSecret: string | undefined;
  let storeKey: string | undefined;
  let keptIn: RotateResult['keptIn'];
  if (options.newSecret !== undefined) {
    newSecret = parseSecretKey(options.newSecret, 'The new secret');
    next = new Sealer(sealingKeyOf(newSecret));
    keptIn = current.source === 'data-directory' ? 'data-directory' : 'environment';
  } else if (current.source === 'store') {
    // The store keeps the key: a new random key replaces it in the same transaction.
    const key = randomBytes(DATA_KEY_BYTES);
    storeKey = key.toString('base64');
    next = new Sealer(key);
    keptIn = 'store';
  } else {
    newSecret = randomBytes(32).toString('base64url');
    next = new Sealer(sealingKeyOf(newSecret));
    keptIn = current.source === 'data-directory' ? 'data-directory' : 'environment';
  }
  if (current.keyIds.includes(next.keyId)) throw new RotationRefused('The new secret is the current one (or one it still opens with): nothing would change');

  // The new file is written first (beside the old one) and moved into place only once the
  // transaction committed, so a failure on either side leaves the old secret and old values.
  const pendingFile = keptIn === 'data-directory' && current.secretFile ? `${current.secretFile}.new` : undefined;
  if (pendingFile) writeFileSync(pendingFile, `${newSecret}\n`, { mode: 0o600 });

  const resealed = { webhookKeys: 0, identifiers: 0, storedAnswers: 0, areaValues: 0 };
  let unreadable = 0;
  const unopened = (what: string) => {
    if (!options.allowUnreadable) {
      throw new RotationRefused(`${what} does not open with any key at hand (sealed under another secret); rotating would leave it unreadable for good. Configure the secret that sealed it, or pass --allow-unreadable to leave such values as they are`);
    }
    unreadable += 1;
  };
  try {
    await store.db.transaction().execute(async (trx) => {
      for (const row of await trx.selectFrom('platforms').select(['id', 'webhook_private_key']).where('webhook_private_key', 'is not', null).execute()) {
        const hex = openWebhookKey(row.id, row.webhook_private_key!);
        if (hex === undefined) {
          unopened(`The webhook signing key of platform ${row.id}`);
          continue;
        }
        await trx.updateTable('platforms').set({ webhook_private_key: sealWebhookKey(next, row.id, hex) }).where('id', '=', row.id).where('webhook_private_key', '=', row.webhook_private_key).execute();
        resealed.webhookKeys += 1;
      }
      for (const row of await trx.selectFrom('beneficial_owners').select(['id', 'identifier_sealed']).where('identifier_sealed', 'is not', null).execute()) {
        const context = `beneficial_owners.identifier:${row.id}`;
        const plain = openSealed(row.identifier_sealed!, context);
        if (plain === undefined) {
          unopened(`The identifier of beneficial owner ${row.id}`);
          continue;
        }
        await trx.updateTable('beneficial_owners').set({ identifier_sealed: next.seal(plain, context) }).where('id', '=', row.id).execute();
        resealed.identifiers += 1;
      }
      // The areas' other sealed columns: each value sealed under a context naming its row.
      for (const c of SEALED_COLUMNS) {
        const loose = trx as unknown as Kysely<Record<string, Record<string, string | null>>>;
        for (const row of await loose.selectFrom(c.table).select([c.key, c.column]).where(c.column, 'is not', null).execute()) {
          const key = row[c.key]!;
          const context = `${c.context}:${key}`;
          const plain = openSealed(row[c.column]!, context);
          if (plain === undefined) {
            unopened(`${c.what} ${key}`);
            continue;
          }
          await loose.updateTable(c.table).set({ [c.column]: next.seal(plain, context) }).where(c.key, '=', key).execute();
          resealed.areaValues += 1;
        }
      }
      for (const row of await trx.selectFrom('idempotency_keys').select(['platform_id', 'key', 'response_body']).where('response_body', 'like', 'v1.%').execute()) {
        if (sealedKeyId(row.response_body!) === undefined) continue;
        const context = `idempotency_keys.response_body:${row.platform_id}:${row.key}`;
        const plain = openSealed(row.response_body!, context);
        if (plain === undefined) {
          // A stored answer that no longer opens is already answered 409 (never executed
          // again); it is not worth refusing the rotation for.
          unreadable += 1;
          continue;
        }
        await trx.updateTable('idempotency_keys').set({ response_body: next.seal(plain, context) }).where('platform_id', '=', row.platform_id).where('key', '=', row.key).execute();
        resealed.storedAnswers += 1;
      }
      // Older keys are no longer needed to open anything: the store keeps none but the new one.
      await trx.deleteFrom('data_keys').execute();
      if (storeKey !== undefined) await trx.insertInto('data_keys').values({ id: 1, data_key: storeKey, created_at: at }).execute();
    });
  } catch (err) {
    if (pendingFile) rmSync(pendingFile, { force: true });
    throw err;
  }
  if (pendingFile) renameSync(pendingFile, current.secretFile!);
  next.register();
  return {
    source: current.source,
    keptIn,
    ...(keptIn === 'data-directory' && current.secretFile ? { secretFile: current.secretFile } : {}),
    ...(keptIn === 'environment' && options.newSecret === undefined && newSecret ? { generatedSecret: newSecret } : {}),
    newKeyId: next.keyId,
    resealed,
    unreadable,
  };
}

/**
 * Sealed columns of the areas (besides the webhook keys, owners' identifiers and stored
 * answers above): table, its key column, the sealed column, and the context prefix the area
 * seals under (`<prefix>:<key>`). An area that seals a new column adds it here.
 */
const SEALED_COLUMNS: readonly { table: string; key: string; column: string; context: string; what: string }[] = [
  { table: 'cards', key: 'id', column: 'pan_sealed', context: 'cards.pan', what: 'The PAN of card' },
  { table: 'cards', key: 'id', column: 'cvv_sealed', context: 'cards.cvv', what: 'The CVV of card' },
  { table: 'embedded_wallets', key: 'account_id', column: 'mnemonic', context: 'embedded_wallets.mnemonic', what: 'The seed of embedded wallet' },
  { table: 'wallet_credentials', key: 'id', column: 'otp_target_key', context: 'wallet_credentials.otp_target_key', what: 'The OTP target key of credential' },
  { table: 'delegated_keys', key: 'public_key', column: 'private_key', context: 'delegated_keys.private_key', what: 'The private key of delegated key' },
];
