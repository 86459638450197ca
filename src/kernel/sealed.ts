import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { chmodSync, linkSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
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
// The data key comes from ONE server secret (loadSealer, docs/reliability.md "Webhook
// targets and secrets at rest"): PAYMENTS_SECRET_KEY, any high-entropy string, through
// HKDF-SHA256; without it, a secret generated at the first start and kept next to a SQLite
// file (`payments-secret.key`, mode 0600), in memory for `sqlite::memory:`, or a key kept in
// the store's `data_keys` table on PostgreSQL (processes on several machines share it).
// PAYMENTS_DATA_KEY, a raw 32-byte key, is a deprecated alias still honoured.

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

/** The shortest PAYMENTS_SECRET_KEY accepted (characters). */
export const MIN_SECRET_LENGTH = 32;
/** The server secret's file in the data directory (a SQLite file's folder) when PAYMENTS_SECRET_KEY is unset. */
export const SECRET_FILE_NAME = 'payments-secret.key';
const HKDF_SALT = 'payments-service';
const HKDF_INFO = 'payments-service sealing key v1';

/** PAYMENTS_SECRET_KEY's text, trimmed; throws (without echoing it) when it is too short to be a secret. */
export function parseSecretKey(text: string, name = 'PAYMENTS_SECRET_KEY'): string {
  const t = text.trim();
  if (t.length < MIN_SECRET_LENGTH) {
    throw new Error(`${name} must be a high-entropy string of at least ${MIN_SECRET_LENGTH} characters (e.g. \`openssl rand -base64 32\`); it has ${t.length}`);
  }
  return t;
}

/** The sealing key of a server secret: HKDF-SHA256 (node:crypto), 32 bytes. */
export function sealingKeyOf(secret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(secret, 'utf8'), Buffer.from(HKDF_SALT), Buffer.from(HKDF_INFO), DATA_KEY_BYTES));
}

/** Where the server secret came from (the start banner names it). */
export type SecretSource = 'PAYMENTS_SECRET_KEY' | 'PAYMENTS_DATA_KEY' | 'data-directory' | 'memory' | 'store';

export interface LoadedSealer {
  sealer: Sealer;
  source: SecretSource;
  /** The secret file, when the secret is kept in the data directory. */
  secretFile?: string;
  /** Every key id this store's values may open with here: the sealer's first, then older keys kept for opening. */
  keyIds: string[];
}

/**
 * The data directory's secret: read it, or create it (exclusively, mode 0600) with 32 random
 * bytes in base64url; two processes starting together both end up reading the one written.
 */
function dataDirectorySecret(file: string): string {
  // Written whole under another name, then linked to its own: the link appears complete or
  // not at all, and fails if the file exists. (Created in place with `wx`, a process starting
  // at the same moment as the first could read the file between its creation and its write,
  // empty, and stop.)
  const secret = `${randomBytes(32).toString('base64url')}\n`;
  const draft = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    writeFileSync(draft, secret, { flag: 'wx', mode: 0o600 });
    linkSync(draft, file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EEXIST') {
      // A file system without hard links (EPERM, ENOTSUP, …): created in place, as before.
      try {
        writeFileSync(file, secret, { flag: 'wx', mode: 0o600 });
      } catch (err2) {
        if ((err2 as NodeJS.ErrnoException).code !== 'EEXIST') throw err2;
      }
    }
  } finally {
    rmSync(draft, { force: true });
  }
  // Tighten a file an operator copied in with looser permissions (owner read/write only).
  if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  return parseSecretKey(readFileSync(file, 'utf8'), `The secret in ${file}`);
}

/** The store-held key (`data_keys`, one row), or undefined when none was ever written. */
async function storedKey(db: Db): Promise<Buffer | undefined> {
  const row = await db.selectFrom('data_keys').select('data_key').where('id', '=', 1).executeTakeFirst();
  return row ? parseDataKey(row.data_key, 'The stored data key') : undefined;
}

/**
 * The process's sealer for a store, from the one server secret:
 * 1. PAYMENTS_SECRET_KEY → HKDF-SHA256;
 * 2. else PAYMENTS_DATA_KEY (deprecated: a raw 32-byte key, used as it is);
 * 3. else on PostgreSQL the key kept in the store's `data_keys` row, generated at the first
 *    start (processes starting together insert-or-keep the one row, then read the winner);
 * 4. else for a SQLite file a secret kept in `payments-secret.key` beside it → HKDF-SHA256;
 * 5. else (`sqlite::memory:`) a random secret held in memory only.
 * Keys that sealed this store's values before (PAYMENTS_DATA_KEY next to PAYMENTS_SECRET_KEY,
 * the `data_keys` row of a SQLite store from before the secret file) are registered to open
 * them, never to seal.
 */
export async function loadSealer(
  store: { db: Db; kind: 'sqlite' | 'postgres'; file?: string | undefined },
  configured: { secretKey?: string | undefined; dataKey?: Buffer | undefined },
  at: string,
): Promise<LoadedSealer> {
  const { db } = store;
  let loaded: Omit<LoadedSealer, 'keyIds'>;
  const older: Buffer[] = [];
  if (configured.secretKey !== undefined) {
    loaded = { sealer: new Sealer(sealingKeyOf(configured.secretKey)), source: 'PAYMENTS_SECRET_KEY' };
    if (configured.dataKey) older.push(configured.dataKey);
  } else if (configured.dataKey) {
    loaded = { sealer: new Sealer(configured.dataKey), source: 'PAYMENTS_DATA_KEY' };
  } else if (store.kind === 'postgres') {
    await db
      .insertInto('data_keys')
      .values({ id: 1, data_key: randomBytes(DATA_KEY_BYTES).toString('base64'), created_at: at })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    loaded = { sealer: new Sealer((await storedKey(db))!), source: 'store' };
  } else if (store.file !== undefined) {
    const secretFile = join(dirname(store.file), SECRET_FILE_NAME);
    loaded = { sealer: new Sealer(sealingKeyOf(dataDirectorySecret(secretFile))), source: 'data-directory', secretFile };
  } else {
    loaded = { sealer: new Sealer(sealingKeyOf(randomBytes(32).toString('base64url'))), source: 'memory' };
  }
  if (loaded.source !== 'store') {
    const kept = await storedKey(db);
    if (kept) older.push(kept);
  }
  const keyIds = [loaded.sealer.register().keyId];
  for (const k of older) {
    const s = new Sealer(k).register();
    if (!keyIds.includes(s.keyId)) keyIds.push(s.keyId);
  }
  return { ...loaded, keyIds };
}
