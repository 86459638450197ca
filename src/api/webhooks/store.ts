import { type Kysely, type Selectable, type Transaction, sql } from 'kysely';
import { literalLimit } from '../../kernel/db/limit.js';
import type { DB, WebhookAttemptsTable, WebhookDeliveriesTable } from '../../kernel/db/schema.js';
import { payloadText } from '../../kernel/event-bodies.js';
import { deliveryIdOf, eventIdOfDelivery } from '../../kernel/events.js';
import { DEFAULT_LIMIT, type Page, decodeCursor, encodeCursor } from '../../kernel/pagination.js';

export type DeliveryRow = Selectable<WebhookDeliveriesTable>;
export type AttemptRow = Selectable<WebhookAttemptsTable>;
type Db = Kysely<DB> | Transaction<DB>;

/** Statuses that still have to go out; a later delivery of the same resource waits for them. */
export const OPEN_STATUSES = ['PENDING', 'SENDING'] as const;

export interface Claimable extends DeliveryRow {
  clock_offset_ms: number;
}

/**
 * Up to `limit` due deliveries (optionally of one platform), earliest due first: PENDING and
 * due on its platform's clock, or SENDING with an expired lease (its worker died). Only the
 * head of each lane: a delivery whose ordering key (its `resource_id`: the transaction of a
 * payment event, the internal account of a balance event, the customer of a KYC event) has an
 * earlier delivery still open is not due, so one lane's events go out in order, one at a
 * time, while the heads of other lanes are claimed beside it (docs/webhooks.md "Order per
 * resource"). Two heads of one lane are never returned together: the second has the first,
 * still open, before it. Index `webhook_deliveries_lane_open` (0018) answers the check.
 * `excludePlatforms`: platforms whose rows are left out (they hold their share of the slots).
 * Nothing is marked here: `claimDue` claims the rows the deliverer picks among these.
 */
export async function findDue(
  trx: Transaction<DB>,
  realNowMs: number,
  postgres: boolean,
  platformId?: string,
  limit = 1,
  excludePlatforms: readonly string[] = [],
): Promise<Claimable[]> {
  let q = trx
    .selectFrom('webhook_deliveries as d')
    .innerJoin('platforms as p', 'p.id', 'd.platform_id')
    .selectAll('d')
    .select('p.clock_offset_ms')
    .where((eb) =>
      eb.or([
        eb.and([eb('d.status', '=', 'PENDING'), eb(sql<number>`d.next_attempt_ms`, '<=', sql<number>`${realNowMs} + p.clock_offset_ms`)]),
        eb.and([eb('d.status', '=', 'SENDING'), eb('d.lease_until_ms', '<', realNowMs)]),
      ]),
    )
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('webhook_deliveries as e')
            .select('e.id')
            .whereRef('e.platform_id', '=', 'd.platform_id')
            .whereRef('e.resource_id', '=', 'd.resource_id')
            .where('e.status', 'in', [...OPEN_STATUSES])
            .whereRef('e.event_seq', '<', 'd.event_seq'),
        ),
      ),
    );
  if (platformId !== undefined) q = q.where('d.platform_id', '=', platformId);
  // Platforms at their share of the delivery slots (service.ts): their due rows never fill the batch.
  if (excludePlatforms.length > 0) q = q.where('d.platform_id', 'not in', [...excludePlatforms]);
  q = q.orderBy('d.next_attempt_ms', 'asc').orderBy('d.event_seq', 'asc').limit(literalLimit(limit));
  if (postgres) q = q.forUpdate('d').skipLocked();
  return (await q.execute()) as Claimable[];
}

/**
 * A delivery of the lane settled for good at `readyMs` (platform time): the next open one of
 * the lane cannot have been attempted before that, so its due time moves up to it (never
 * back). Its attempt is then dated when its lane let it go, not when its event happened, and
 * its retries count from there.
 */
export async function releaseLane(db: Db, platformId: string, resourceId: string, afterSeq: number, readyMs: number): Promise<string | undefined> {
  const next = await db
    .selectFrom('webhook_deliveries')
    .select(['id', 'status', 'next_attempt_ms'])
    .where('platform_id', '=', platformId)
    .where('resource_id', '=', resourceId)
    .where('status', 'in', [...OPEN_STATUSES])
    .where('event_seq', '>', afterSeq)
    .orderBy('event_seq', 'asc')
    .limit(literalLimit(1))
    .executeTakeFirst();
  if (!next || next.status !== 'PENDING' || next.next_attempt_ms === null) return undefined;
  if (Number(next.next_attempt_ms) < readyMs) {
    await db.updateTable('webhook_deliveries').set({ next_attempt_ms: readyMs }).where('id', '=', next.id).where('status', '=', 'PENDING').execute();
  }
  return next.id;
}

/**
 * Claim, among `ids` (due lane heads of one platform, as findDue found them), those still
 * due and still at the head of their lane, in one statement: SENDING with the lease, one
 * more attempt. Returns the claimed rows as they are now. A row another worker claimed or
 * settled meanwhile is not returned.
 */
export async function claimDue(
  trx: Transaction<DB>,
  platformId: string,
  ids: readonly string[],
  realNowMs: number,
  offsetMs: number,
  leaseUntilMs: number,
  at: string,
): Promise<DeliveryRow[]> {
  if (ids.length === 0) return [];
  return trx
    .updateTable('webhook_deliveries as d')
    .set({ status: 'SENDING', attempts: sql<number>`d.attempts + 1`, lease_until_ms: leaseUntilMs, updated_at: at })
    .where('d.id', 'in', [...ids])
    .where('d.platform_id', '=', platformId)
    .where((eb) =>
      eb.or([
        eb.and([eb('d.status', '=', 'PENDING'), eb('d.next_attempt_ms', '<=', realNowMs + offsetMs)]),
        eb.and([eb('d.status', '=', 'SENDING'), eb('d.lease_until_ms', '<', realNowMs)]),
      ]),
    )
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('webhook_deliveries as e')
            .select('e.id')
            .whereRef('e.platform_id', '=', 'd.platform_id')
            .whereRef('e.resource_id', '=', 'd.resource_id')
            .where('e.status', 'in', [...OPEN_STATUSES])
            .whereRef('e.event_seq', '<', 'd.event_seq'),
        ),
      ),
    )
    .returningAll()
    .execute();
}

/** Rows with their platform's clock offset (the lane heads a settled delivery let go). */
export async function claimables(db: Db, ids: readonly string[]): Promise<Claimable[]> {
  if (ids.length === 0) return [];
  return (await db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('platforms as p', 'p.id', 'd.platform_id')
    .selectAll('d')
    .select('p.clock_offset_ms')
    .where('d.id', 'in', [...ids])
    .execute()) as Claimable[];
}

/** The clock offsets of these platforms. */
export async function platformOffsets(db: Db, platformIds: readonly string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (platformIds.length === 0) return out;
  const rows = await db.selectFrom('platforms').select(['id', 'clock_offset_ms']).where('id', 'in', [...platformIds]).execute();
  for (const r of rows) out.set(r.id, Number(r.clock_offset_ms));
  return out;
}

export interface SendMaterial {
  payload: string;
  endpoint: string | null;
  privateKey: string | null;
}

/** The material of several deliveries in one query, by event id. */
export async function sendMaterials(db: Db, deliveries: readonly DeliveryRow[]): Promise<Map<string, SendMaterial>> {
  const out = new Map<string, SendMaterial>();
  if (deliveries.length === 0) return out;
  const rows = await db
    .selectFrom('events as ev')
    .innerJoin('platforms as p', 'p.id', 'ev.platform_id')
    .leftJoin('platform_configs as c', 'c.platform_id', 'ev.platform_id')
    .select(['ev.id', 'ev.platform_id', 'ev.resource_id', 'ev.created_at', 'ev.payload', 'ev.body', 'c.webhook_endpoint', 'p.webhook_private_key'])
    .where('ev.id', 'in', deliveries.map((d) => d.event_id))
    .execute();
  const platformOf = new Map(deliveries.map((d) => [d.event_id, d.platform_id]));
  for (const row of rows) {
    if (platformOf.get(row.id) !== row.platform_id) continue;
    out.set(row.id, { payload: payloadText(row), endpoint: row.webhook_endpoint ?? null, privateKey: row.webhook_private_key });
  }
  return out;
}

/** Several attempts' rows, a few statements at most. */
export async function insertAttempts(db: Db, rows: readonly AttemptRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 100) await db.insertInto('webhook_attempts').values(rows.slice(i, i + 100)).execute();
}

/** Settle a claimed delivery; only while it is still this claim's (same lease). Returns whether it applied. */
export async function settleDelivery(
  db: Db,
  id: string,
  leaseUntilMs: number,
  patch: Partial<Pick<DeliveryRow, 'status' | 'next_attempt_ms' | 'last_status_code' | 'last_error' | 'delivered_at' | 'updated_at'>>,
): Promise<boolean> {
  const r = await db
    .updateTable('webhook_deliveries')
    .set({ ...patch, lease_until_ms: null })
    .where('id', '=', id)
    .where('status', '=', 'SENDING')
    .where('lease_until_ms', '=', leaseUntilMs)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export async function findDelivery(db: Db, platformId: string, id: string): Promise<DeliveryRow | undefined> {
  return db.selectFrom('webhook_deliveries').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}

/**
 * An event of the platform that has no delivery row (none is written while the platform has
 * no webhook endpoint), as the NO_ENDPOINT delivery it stands for, or undefined.
 */
export async function findRowlessDelivery(db: Db, platformId: string, deliveryId: string): Promise<DeliveryRow | undefined> {
  const eventId = eventIdOfDelivery(deliveryId);
  if (eventId === undefined) return undefined;
  const ev = await db
    .selectFrom('events as ev')
    .leftJoin('webhook_deliveries as d', 'd.event_id', 'ev.id')
    .select(['ev.id', 'ev.seq', 'ev.type', 'ev.resource_id', 'ev.created_at', 'd.id as delivery_id'])
    .where('ev.platform_id', '=', platformId)
    .where('ev.id', '=', eventId)
    .executeTakeFirst();
  if (!ev || ev.delivery_id !== null) return undefined;
  return rowlessDelivery(platformId, { event_id: ev.id, event_seq: Number(ev.seq), type: ev.type, resource_id: ev.resource_id, created_at: ev.created_at });
}

function rowlessDelivery(platformId: string, ev: { event_id: string; event_seq: number; type: string; resource_id: string; created_at: string }): DeliveryRow {
  return {
    id: deliveryIdOf(ev.event_id),
    platform_id: platformId,
    event_id: ev.event_id,
    event_seq: ev.event_seq,
    type: ev.type,
    resource_id: ev.resource_id,
    status: 'NO_ENDPOINT',
    attempts: 0,
    next_attempt_ms: null,
    lease_until_ms: null,
    last_status_code: null,
    last_error: null,
    delivered_at: null,
    created_at: ev.created_at,
    updated_at: ev.created_at,
  };
}

/** Write the row of a delivery that had none (redelivery of a NO_ENDPOINT event): returns whether it was written. */
export async function insertRowlessDelivery(db: Db, row: DeliveryRow): Promise<boolean> {
  const r = await db.insertInto('webhook_deliveries').values(row).onConflict((oc) => oc.doNothing()).executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0n) > 0;
}

export async function updateDelivery(db: Db, id: string, patch: Partial<Omit<DeliveryRow, 'id' | 'platform_id'>>): Promise<void> {
  await db.updateTable('webhook_deliveries').set(patch).where('id', '=', id).execute();
}

export interface DeliveryFilter {
  type?: string | undefined;
  status?: string | undefined;
  resourceId?: string | undefined;
}

/**
 * One page of a platform's deliveries, newest event first: every event with its delivery
 * row, and the events that have none (no endpoint when they happened) as NO_ENDPOINT. The
 * cursor is the event's id.
 */
export async function deliveriesPage(db: Db, platformId: string, f: DeliveryFilter, opts: { limit?: number | undefined; cursor?: string | undefined }): Promise<Page<DeliveryRow>> {
  const base = db
    .selectFrom('events as ev')
    .leftJoin('webhook_deliveries as d', 'd.event_id', 'ev.id')
    .select([
      'ev.id as event_id',
      'ev.seq as event_seq',
      'ev.type',
      'ev.resource_id',
      'ev.created_at as event_created_at',
      'd.id',
      'd.status',
      'd.attempts',
      'd.next_attempt_ms',
      'd.lease_until_ms',
      'd.last_status_code',
      'd.last_error',
      'd.delivered_at',
      'd.created_at',
      'd.updated_at',
    ])
    .where('ev.platform_id', '=', platformId);
  let q = base;
  if (f.type !== undefined) q = q.where('ev.type', '=', f.type);
  if (f.resourceId !== undefined) q = q.where('ev.resource_id', '=', f.resourceId);
  if (f.status === 'NO_ENDPOINT') q = q.where((eb) => eb.or([eb('d.id', 'is', null), eb('d.status', '=', 'NO_ENDPOINT')]));
  else if (f.status !== undefined) q = q.where('d.status', '=', f.status);
  type Joined = Awaited<ReturnType<typeof q.execute>>[number];
  const toRow = (r: Joined): DeliveryRow =>
    r.id === null
      ? rowlessDelivery(platformId, { event_id: r.event_id, event_seq: Number(r.event_seq), type: r.type, resource_id: r.resource_id, created_at: r.event_created_at })
      : {
          id: r.id,
          platform_id: platformId,
          event_id: r.event_id,
          event_seq: Number(r.event_seq),
          type: r.type,
          resource_id: r.resource_id,
          status: r.status!,
          attempts: r.attempts!,
          next_attempt_ms: r.next_attempt_ms,
          lease_until_ms: r.lease_until_ms,
          last_status_code: r.last_status_code,
          last_error: r.last_error,
          delivered_at: r.delivered_at,
          created_at: r.created_at!,
          updated_at: r.updated_at!,
        };
  const limit = opts.limit ?? DEFAULT_LIMIT;
  const counted = await q.clearSelect().select(sql<number>`count(*)`.as('n')).executeTakeFirst();
  let pq = q;
  if (opts.cursor !== undefined) pq = pq.where('ev.id', '<', decodeCursor(opts.cursor));
  const rows = await pq.orderBy('ev.id', 'desc').limit(literalLimit(limit + 1)).execute();
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  const page: Page<DeliveryRow> = { data: pageRows.map(toRow), hasMore, totalCount: Number(counted?.n ?? 0) };
  if (hasMore) page.nextCursor = encodeCursor(pageRows[pageRows.length - 1]!.event_id);
  return page;
}

export async function attemptsOf(db: Db, deliveryIds: string[]): Promise<AttemptRow[]> {
  if (deliveryIds.length === 0) return [];
  return db.selectFrom('webhook_attempts').selectAll().where('delivery_id', 'in', deliveryIds).orderBy('delivery_id').orderBy('attempt', 'asc').execute();
}

export interface SigningRow {
  webhook_endpoint: string | null;
  webhook_private_key: string | null;
  webhook_public_key: string | null;
  clock_offset_ms: number;
}

export async function signingInfo(db: Db, platformId: string): Promise<SigningRow | undefined> {
  return db
    .selectFrom('platforms as p')
    .leftJoin('platform_configs as c', 'c.platform_id', 'p.id')
    .select(['c.webhook_endpoint', 'p.webhook_private_key', 'p.webhook_public_key', 'p.clock_offset_ms'])
    .where('p.id', '=', platformId)
    .executeTakeFirst();
}

/** Platforms whose webhook private key is not sealed with the key `keyId` (plaintext, or another key). */
export async function webhookKeysNotSealedWith(db: Db, keyId: string): Promise<{ id: string; webhook_private_key: string }[]> {
  const rows = await db
    .selectFrom('platforms')
    .select(['id', 'webhook_private_key'])
    .where('webhook_private_key', 'is not', null)
    .where('webhook_private_key', 'not like', `v1.${keyId}.%`)
    .execute();
  return rows as { id: string; webhook_private_key: string }[];
}

/** Replace a platform's stored private key, only if it still holds `from` (another process may have re-sealed it). */
export async function replaceWebhookKey(db: Db, platformId: string, from: string, to: string): Promise<void> {
  await db.updateTable('platforms').set({ webhook_private_key: to }).where('id', '=', platformId).where('webhook_private_key', '=', from).execute();
}
