import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import { isUniqueViolation } from './db/connect.js';
import type { DB } from './db/schema.js';

// Idempotency-Key on POST. The first request with a key claims it (a row in
// 'in_progress'); its response is stored when it finishes. A later request with the same
// key and the same method, path and body gets the stored response; with anything else it
// gets 400 INVALID_INPUT naming the key. A duplicate that arrives while the first is still
// running waits for it, so the two never both execute. Keys are honoured for 24 hours of
// the platform's clock. A 5xx is not stored: retrying such a request executes it again.

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60_000;
/** A claim still in progress after this long belongs to a request that died. */
export const ABANDONED_AFTER_MS = 2 * 60_000;

export type Claim =
  | { kind: 'new' }
  | { kind: 'replay'; status: number; body: string; contentType: string | null }
  | { kind: 'mismatch' }
  | { kind: 'busy' };

function stable(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'undefined';
  if (Array.isArray(value)) return `[${value.map(stable).join(',')}]`;
  const keys = Object.keys(value as Record<string, unknown>).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${stable((value as Record<string, unknown>)[k])}`).join(',')}}`;
}

export function requestHash(method: string, url: string, body: unknown): string {
  return createHash('sha256').update(`${method} ${url}\n${stable(body)}`).digest('hex');
}

async function readKey(db: Kysely<DB>, platformId: string, key: string) {
  return db.selectFrom('idempotency_keys').selectAll().where('platform_id', '=', platformId).where('key', '=', key).executeTakeFirst();
}

/** Try to claim a key; tells the caller what to do. */
export async function claimKey(db: Kysely<DB>, platformId: string, key: string, hash: string, nowMs: number): Promise<Claim> {
  await db
    .deleteFrom('idempotency_keys')
    .where('platform_id', '=', platformId)
    .where('key', '=', key)
    .where('created_ms', '<', nowMs - IDEMPOTENCY_TTL_MS)
    .execute();
  try {
    await db
      .insertInto('idempotency_keys')
      .values({ platform_id: platformId, key, request_hash: hash, state: 'in_progress', response_status: null, response_body: null, response_content_type: null, created_ms: nowMs })
      .execute();
    return { kind: 'new' };
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
  }
  const row = await readKey(db, platformId, key);
  if (!row) return { kind: 'busy' }; // released between our insert and read: let the caller retry
  if (row.request_hash !== hash) return { kind: 'mismatch' };
  if (row.state === 'done') return { kind: 'replay', status: Number(row.response_status), body: row.response_body ?? '', contentType: row.response_content_type };
  if (Number(row.created_ms) < nowMs - ABANDONED_AFTER_MS) {
    // The first request died without an answer (client gone, process killed): start over.
    await releaseKey(db, platformId, key);
    return claimKey(db, platformId, key, hash, nowMs);
  }
  return { kind: 'busy' };
}

export async function completeKey(db: Kysely<DB>, platformId: string, key: string, status: number, body: string, contentType: string | null): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ state: 'done', response_status: status, response_body: body, response_content_type: contentType })
    .where('platform_id', '=', platformId)
    .where('key', '=', key)
    .execute();
}

export async function releaseKey(db: Kysely<DB>, platformId: string, key: string): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('platform_id', '=', platformId).where('key', '=', key).where('state', '=', 'in_progress').execute();
}
