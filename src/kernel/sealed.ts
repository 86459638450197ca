import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { DB } from './db/schema.js';

// Sealing of short sensitive strings kept at rest (a beneficial owner's identification
// number): AES-256-GCM from node:crypto, a random 96-bit nonce per value, and a context
// (table.column:row id) as additional authenticated data, so a sealed value copied to
// another row or column no longer opens.
//
// Text format: `v1.<key id>.<nonce>.<ciphertext and 16-byte tag>`, each part base64url.
// The key id is a fingerprint of the data key (HMAC-SHA256 of a fixed label, 6 bytes): it
// names the key a value was sealed with without revealing it.
//
// The data key is PAYMENTS_DATA_KEY (config.ts) or, without it, a random key generated at
// the first start and kept in the store's `data_keys` table (migration 0017).

type Db = Kysely<DB> | Transaction<DB>;

export const DATA_KEY_BYTES = 32;
const VERSION = 'v1';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const KEY_ID_LABEL = 'payments-service data key id v1';

/**
 * PAYMENTS_DATA_KEY's text as a key: 32 bytes written in hex (64 digits) or in base64
 * (standard or url-safe, padding optional). Anything else throws, without echoing the value.
 */
export function parseDataKey(text: string, name = 'PAYMENTS_DATA_KEY'): Buffer {
  const t = text.trim();
  let key: Buffer | undefined;
  // Hex when every character is a hex digit and there is an even number of them (a 32-byte
  // key in base64 has 43 or 44 characters, so it is never taken for hex).
  if (/^(?:[0-9a-fA-F]{2})+$/.test(t)) key = Buffer.from(t, 'hex');
  else if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(t)) key = Buffer.from(t.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (key === undefined) throw new Error(`${name} must be ${DATA_KEY_BYTES} bytes written as 64 hex digits or as base64`);
  if (key.length !== DATA_KEY_BYTES) {
    throw new Error(`${name} must be ${DATA_KEY_BYTES} bytes (64 hex digits or 44 base64 characters); it decodes to ${key.length} bytes`);
  }
  return key;
}

/**
 * Keys that can open values, by key id: every data key this process has loaded (one in a
 * server; tests run several stores in one process).
 */
const keyring = new Map<string, Buffer>();

function keyIdOf(key: Buffer): string {
  return createHmac('sha256', key).update(KEY_ID_LABEL).digest().subarray(0, 6).toString('base64url');
}

/**
 * Seals with one data key. Opening goes through the keyring (`openSealed`), so the views that
 * open values need no key: `loadSealer` puts the process's data key there.
 */
export class Sealer {
  readonly keyId: string;
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== DATA_KEY_BYTES) throw new Error(`A data key is ${DATA_KEY_BYTES} bytes, got ${key.length}`);
    this.#key = Buffer.from(key);
    this.keyId = keyIdOf(this.#key);
  }

  /** Let `openSealed` open what this key sealed. */
  register(): this {
    keyring.set(this.keyId, this.#key);
    return this;
  }

  /** Seal `plaintext` for `context` (e.g. `beneficial_owners.identifier:<id>`). */
  seal(plaintext: string, context: string): string {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return [VERSION, this.keyId, nonce.toString('base64url'), body.toString('base64url')].join('.');
  }
}

/** The key id a sealed value names, or undefined when it is not a sealed value. */
export function sealedKeyId(sealed: string): string | undefined {
  const parts = sealed.split('.');
  return parts.length === 4 && parts[0] === VERSION ? parts[1] : undefined;
}

/**
 * Open a sealed value for its context. Undefined when it cannot be opened: not a sealed
 * value, sealed with a key this process does not have, or altered (the tag fails).
 */
export function openSealed(sealed: string, context: string): string | undefined {
  const parts = sealed.split('.');
  if (parts.length !== 4 || parts[0] !== VERSION) return undefined;
  const key = keyring.get(parts[1]!);
  if (!key) return undefined;
  const nonce = Buffer.from(parts[2]!, 'base64url');
  const body = Buffer.from(parts[3]!, 'base64url');
  if (nonce.length !== NONCE_BYTES || body.length < TAG_BYTES) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
    return Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}

/**
 * The process's sealer for a store: the configured key when there is one, else the key kept
 * in the store's one-row `data_keys` table, generated at the first start (two processes
 * starting together insert-or-keep the same row, then both read the one that won).
 */
export async function loadSealer(db: Db, configured: Buffer | undefined, at: string): Promise<{ sealer: Sealer; source: 'environment' | 'store' }> {
  if (configured) return { sealer: new Sealer(configured).register(), source: 'environment' };
  await db
    .insertInto('data_keys')
    .values({ id: 1, data_key: randomBytes(DATA_KEY_BYTES).toString('base64'), created_at: at })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
  const row = await db.selectFrom('data_keys').select('data_key').where('id', '=', 1).executeTakeFirstOrThrow();
  return { sealer: new Sealer(parseDataKey(row.data_key, 'The stored data key')).register(), source: 'store' };
}
