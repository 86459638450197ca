import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Permission } from '../../kernel/auth.js';
import { iso, type Clock } from '../../kernel/clock.js';
import type { Store } from '../../kernel/db/connect.js';
import { inOneTransaction } from '../../kernel/db/in-one-transaction.js';
import type { DB } from '../../kernel/db/schema.js';
import { apiError, type FieldError } from '../../kernel/errors.js';
import { checkSchema } from '../../kernel/validation.js';
import { newId } from '../../kernel/ids.js';
import type { Sealer } from '../../kernel/sealed.js';
import { newWebhookKeyPair, sealWebhookKey } from '../../kernel/webhook-keys.js';
import { hashSecret, verifySecret } from '../../kernel/secrets.js';
import { DEFAULT_PLATFORM_OPTIONS, type PlatformOptions } from '../../sandbox/rules/platform-defaults.js';
import { insertDefaultConfig } from '../../api/config/service.js';
import type { PlatformLimits, PlatformLimitsPatch } from '../../api/limits/schemas.js';
import { PlatformPatchRequest } from './schemas.js';
import { limitOverridesOf, limitsPatchErrors, mergeLimitOverrides } from '../../api/limits/service.js';
import { openPlatformAccounts } from '../../api/internal-accounts/service.js';
import { createToken } from '../../api/tokens/service.js';
import { findTokenByClientId, hasBootstrapToken, updateTokenSecret } from '../../api/tokens/store.js';
import { findDefaultPlatform, findPlatform, insertPlatform, listPlatforms, type PlatformRow, updatePlatform } from './store.js';

export const ALL_PERMISSIONS: Permission[] = ['VIEW', 'TRANSACT', 'MANAGE'];

export interface PlatformView {
  id: string;
  name: string;
  regulated: boolean;
  isDefault: boolean;
  skipVerificationPaperwork: boolean;
  invitationsConfigured: boolean;
  sandboxClockOffsetMs: number;
  /** PEM of the key that signs this platform's webhooks (X-Service-Signature). */
  webhookPublicKey: string | null;
  /** Transaction-limit overrides (src/api/limits); absent while it has none. */
  limits?: PlatformLimits;
  createdAt: string;
  updatedAt: string;
}

export function platformOptions(row: PlatformRow): PlatformOptions {
  return { ...DEFAULT_PLATFORM_OPTIONS, ...(JSON.parse(row.options) as Partial<PlatformOptions>) };
}

export function platformView(row: PlatformRow): PlatformView {
  const o = platformOptions(row);
  const limits = limitOverridesOf(o as unknown as Record<string, unknown>);
  return {
    id: row.id,
    name: row.name,
    regulated: row.regulated === 1,
    isDefault: row.is_default === 1,
    skipVerificationPaperwork: o.skipVerificationPaperwork,
    invitationsConfigured: o.invitationsConfigured,
    sandboxClockOffsetMs: Number(row.clock_offset_ms),
    webhookPublicKey: row.webhook_public_key,
    ...(limits ? { limits } : {}),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** A new key pair's columns: the private key sealed for its platform (kernel/webhook-keys.ts). */
function webhookKeyColumns(sealer: Sealer, platformId: string): Pick<PlatformRow, 'webhook_private_key' | 'webhook_public_key'> {
  const k = newWebhookKeyPair();
  return { webhook_private_key: sealWebhookKey(sealer, platformId, k.privateKeyHex), webhook_public_key: k.publicKeyPem };
}

export interface NewPlatformInput {
  name: string;
  regulated?: boolean | undefined;
  skipVerificationPaperwork?: boolean | undefined;
  invitationsConfigured?: boolean | undefined;
  isDefault?: boolean;
  /** Credentials for the first token; generated when absent. */
  clientId?: string | undefined;
  clientSecret?: string | undefined;
}

export interface CreatedPlatform {
  platform: PlatformView;
  credentials: { tokenId: string; clientId: string; clientSecret: string };
}

/** Create a platform with its configuration and a first token holding every permission. */
export async function createPlatform(db: Kysely<DB>, clock: Clock, sealer: Sealer, input: NewPlatformInput): Promise<CreatedPlatform> {
  const at = iso(clock.nowMs());
  const id = newId('Platform');
  // In the caller's transaction when there is one (the default platform's bootstrap on SQLite).
  return inOneTransaction(db, async (trx) => {
    const row: PlatformRow = {
      id,
      name: input.name,
      regulated: input.regulated ? 1 : 0,
      is_default: input.isDefault ? 1 : 0,
      options: JSON.stringify({ ...DEFAULT_PLATFORM_OPTIONS, skipVerificationPaperwork: input.skipVerificationPaperwork ?? false, invitationsConfigured: input.invitationsConfigured ?? true }),
      clock_offset_ms: 0,
      created_at: at,
      updated_at: at,
      ...webhookKeyColumns(sealer, id),
    };
    await insertPlatform(trx, row);
    await insertDefaultConfig(trx, row, at);
    await openPlatformAccounts(trx, row, at);
    const token = await createToken(trx, row.id, at, {
      name: input.isDefault ? 'Default sandbox token' : 'Initial token',
      permissions: ALL_PERMISSIONS,
      clientId: input.clientId,
      clientSecret: input.clientSecret,
      bootstrap: true,
    });
    return { platform: platformView(row), credentials: { tokenId: token.id, clientId: token.clientId, clientSecret: token.clientSecret } };
  });
}

export async function getPlatform(db: Kysely<DB>, id: string): Promise<PlatformView> {
  const row = await findPlatform(db, id);
  if (!row) throw apiError(404, 'REFERENCE_NOT_FOUND', `Platform ${id} not found`);
  return platformView(row);
}

export async function getPlatforms(db: Kysely<DB>): Promise<PlatformView[]> {
  return (await listPlatforms(db)).map(platformView);
}

export interface PlatformPatch {
  name?: string | undefined;
  skipVerificationPaperwork?: boolean | undefined;
  invitationsConfigured?: boolean | undefined;
  /** Merged into the transaction-limit overrides (null clears them all); validated by the route. */
  limits?: PlatformLimitsPatch | null | undefined;
}

/** Change a platform's name or sandbox options (its limit overrides among them). `regulated` is fixed at creation. */
export async function patchPlatform(db: Kysely<DB>, clock: Clock, id: string, patch: PlatformPatch): Promise<PlatformView> {
  const row = await findPlatform(db, id);
  if (!row) throw apiError(404, 'REFERENCE_NOT_FOUND', `Platform ${id} not found`);
  const options = platformOptions(row);
  if (patch.skipVerificationPaperwork !== undefined) options.skipVerificationPaperwork = patch.skipVerificationPaperwork;
  if (patch.invitationsConfigured !== undefined) options.invitationsConfigured = patch.invitationsConfigured;
  if (patch.limits !== undefined) {
    const stored = options as PlatformOptions & { limits?: PlatformLimits };
    const next = mergeLimitOverrides(limitOverridesOf(stored as unknown as Record<string, unknown>), patch.limits);
    if (next) stored.limits = next;
    else delete stored.limits;
  }
  const at = iso(clock.nowMs() + Number(row.clock_offset_ms));
  await updatePlatform(db, id, { ...(patch.name !== undefined ? { name: patch.name } : {}), options: JSON.stringify(options), updated_at: at });
  return getPlatform(db, id);
}

export interface BootstrapResult {
  platform: PlatformView;
  /** Present only when the credentials were generated now: print them once. */
  generated?: { clientId: string; clientSecret: string };
}

/**
 * Make sure the default sandbox platform exists and accepts the configured credentials.
 * With PAYMENTS_API_TOKEN_ID + PAYMENTS_API_CLIENT_SECRET, that pair is (re)stored;
 * without them, a pair is generated on first start only.
 */
export async function ensureDefaultPlatform(store: Store, clock: Clock, sealer: Sealer, env: { tokenId?: string | undefined; clientSecret?: string | undefined }): Promise<BootstrapResult> {
  // Serialise the bootstrap across processes starting together on one database: on
  // PostgreSQL an advisory lock; on SQLite one transaction, which takes the file's write lock
  // (`begin immediate`) before it reads, so a second process finds what the first made.
  const lock = async <T>(fn: (db: Kysely<DB>) => Promise<T>): Promise<T> => {
    if (store.kind !== 'postgres') return store.db.transaction().execute((trx) => fn(trx));
    return store.db.connection().execute(async (conn) => {
      await sql`select pg_advisory_lock(7245001)`.execute(conn);
      try {
        return await fn(store.db);
      } finally {
        await sql`select pg_advisory_unlock(7245001)`.execute(conn);
      }
    });
  };
  return lock(async (db) => {
    const at = iso(clock.nowMs());
    const existing = await findDefaultPlatform(db);
    const wanted = env.tokenId && env.clientSecret ? { clientId: env.tokenId, clientSecret: env.clientSecret } : undefined;
    if (!existing) {
      const created = await createPlatform(db, clock, sealer, { name: 'Default sandbox platform', isDefault: true, clientId: wanted?.clientId, clientSecret: wanted?.clientSecret });
      return wanted ? { platform: created.platform } : { platform: created.platform, generated: { clientId: created.credentials.clientId, clientSecret: created.credentials.clientSecret } };
    }
    if (wanted) {
      const token = await findTokenByClientId(db, wanted.clientId);
      if (token && token.platform_id !== existing.id) {
        throw new Error(`PAYMENTS_API_TOKEN_ID ${wanted.clientId} already names a token of another platform`);
      }
      if (!token) {
        await createToken(db, existing.id, at, { name: 'Default sandbox token', permissions: ALL_PERMISSIONS, clientId: wanted.clientId, clientSecret: wanted.clientSecret, bootstrap: true });
      } else if (token.deleted_at !== null || !(await verifySecret(wanted.clientSecret, token.secret_hash))) {
        await updateTokenSecret(db, token.id, await hashSecret(wanted.clientSecret), at);
      }
      return { platform: platformView(existing) };
    }
    if (!(await hasBootstrapToken(db, existing.id))) {
      const token = await createToken(db, existing.id, at, { name: 'Default sandbox token', permissions: ALL_PERMISSIONS, bootstrap: true });
      return { platform: platformView(existing), generated: { clientId: token.clientId, clientSecret: token.clientSecret } };
    }
    return { platform: platformView(existing) };
  });
}

/** Every problem of a PATCH /admin/platforms/{id} body, for one 400: the schema's, `regulated`, and those of `limits`. */
export function patchBodyErrors(body: unknown): FieldError[] {
  const errors: FieldError[] = [...checkSchema(PlatformPatchRequest, body)];
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
    const b = body as Record<string, unknown>;
    if (b.regulated !== undefined) errors.push({ field: 'regulated', message: 'is fixed when the platform is created' });
    errors.push(...limitsPatchErrors(b.limits));
  }
  return errors;
}
