import { type ExpressionBuilder, type Kysely, type Selectable, type Transaction, sql } from 'kysely';
import { literalLimit } from '../../kernel/db/limit.js';
import { preparedByShape, preparedInsert } from '../../kernel/db/prepared.js';
import { LANE_HEAD, LANE_UNCLASSIFIED } from '../../kernel/db/migrations.js';
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
 * How many new deliveries one look-up classifies at most (the rest wait for the next one).
 */
export const CLASSIFY_BATCH = 4_096;

/**
 * Serialise the writers of `lane_head` on PostgreSQL (a no-op on SQLite, where write
 * transactions are serial already): the classification of new deliveries and the release of a
 * lane when its delivery settles. Without it, a classification that still saw the earlier
 * delivery open and a release that did not see the new one yet, both committing, would leave
 * a lane with no head. Taken first in the transaction, before any row lock.
 */
export async function lockLaneHeads(trx: Transaction<DB>, postgres: boolean): Promise<void> {
  if (postgres) await sql`select pg_advisory_xact_lock(7245033)`.execute(trx);
}

/**
 * Classify new deliveries (lane_head null, migration 0035), the earliest first, up to `limit`:
 * 1 when it is open and no earlier delivery of its lane is open (it heads its lane), else 0.
 * Returns how many were classified. Rows the deliverer settles get 0; the lane's next open
 * delivery then gets 1 (releaseLanes), so a lane keeps exactly one marked head while open.
 */
export async function classifyLanes(trx: Transaction<DB>, limit = CLASSIFY_BATCH): Promise<number> {
  const r = await trx
    .updateTable('webhook_deliveries as d')
    .set({
      lane_head: sql<number>`case when d.status in ('PENDING', 'SENDING') and not exists (select 1 from webhook_deliveries e where e.platform_id = d.platform_id and e.resource_id = d.resource_id and e.status in ('PENDING', 'SENDING') and e.event_seq < d.event_seq) then 1 else 0 end`,
    })
    .where('d.id', 'in', (eb) => eb.selectFrom('webhook_deliveries as u').select('u.id').where(sql.raw<boolean>(`u.${LANE_UNCLASSIFIED}`)).orderBy('u.event_seq').limit(literalLimit(limit)))
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/**
 * Up to `limit` due deliveries (optionally of one platform), earliest due first: PENDING and
 * due on its platform's clock, or SENDING with an expired lease (its worker died). Only the
 * head of each lane: a delivery whose ordering key (its `resource_id`: the transaction of a
 * payment event, the internal account of a balance event, the customer of a KYC event) has an
 * earlier delivery still open is not due, so one lane's events go out in order, one at a
 * time, while the heads of other lanes are claimed beside it (docs/webhooks.md "Order per
 * resource"). The rows read are the marked heads (`lane_head = 1`, classifyLanes first) in
 * due order from their partial index, so a look-up reads about as many rows as it returns,
 * however long the backlog; the "no earlier open delivery" check (index
 * `webhook_deliveries_lane_open`, 0018) still guards each one.
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
    .where(sql.raw<boolean>(`d.${LANE_HEAD}`))
    // Due, written as one expression rather than an OR of two statuses: no other index than the
    // heads' (scanned in due order, stopping at the limit) fits it.
    .where(sql<boolean>`(case d.status when 'PENDING' then d.next_attempt_ms <= ${realNowMs} + p.clock_offset_ms when 'SENDING' then d.lease_until_ms < ${realNowMs} else false end)`)
    .where(firstInLane(realNowMs));
  // `|| ''`: the platform is a filter on the heads read, not a way into the platform's indexes.
  if (platformId !== undefined) q = q.where(sql<boolean>`d.platform_id || '' = ${platformId}`);
  // Platforms at their share of the delivery slots (service.ts): their due rows never fill the batch.
  if (excludePlatforms.length > 0) q = q.where('d.platform_id', 'not in', [...excludePlatforms]);
  q = q.orderBy('d.next_attempt_ms', 'asc').orderBy('d.event_seq', 'asc').limit(literalLimit(limit));
  if (postgres) q = q.forUpdate('d').skipLocked();
  return (await q.execute()) as Claimable[];
}

/** A lane whose delivery settled for good, and when (platform time) it was free again. */
export interface ReleasedLane {
  platformId: string;
  resourceId: string;
  /** The settled delivery's event seq: the lane's next delivery comes after it. */
  afterSeq: number;
  readyMs: number;
}

/**
 * Lanes whose delivery settled for good (in this transaction): each lane's next open
 * delivery becomes its head (lane_head 1) and, when PENDING, its due time moves up to when
 * the lane was free again (never back): its attempt is then dated when its lane let it go,
 * not when its event happened, and its retries count from there. Two statements for the
 * whole batch (each lane's next one is an index seek: `webhook_deliveries_resource`). An
 * open delivery of the lane before the settled one (a redelivery, or on PostgreSQL an event
 * committed late) is not classified yet, so the next look-up marks it. Returns the new heads
 * with their platform's clock offset.
 */
export async function releaseLanes(trx: Transaction<DB>, lanes: readonly ReleasedLane[]): Promise<Claimable[]> {
  if (lanes.length === 0) return [];
  const nextOf = lanes.map(
    (l) =>
      sql`(select e.id from webhook_deliveries e where e.platform_id = ${l.platformId} and e.resource_id = ${l.resourceId} and e.status in ('PENDING', 'SENDING') and e.event_seq > ${l.afterSeq} order by e.event_seq limit 1)`,
  );
  const heads = (await trx
    .selectFrom('webhook_deliveries as d')
    .innerJoin('platforms as p', 'p.id', 'd.platform_id')
    .selectAll('d')
    .select('p.clock_offset_ms')
    .where(sql<boolean>`d.id in (${sql.join(nextOf)})`)
    .execute()) as Claimable[];
  if (heads.length === 0) return [];
  const ready = new Map<string, number>();
  for (const l of lanes) {
    const key = `${l.platformId}\n${l.resourceId}`;
    ready.set(key, Math.max(ready.get(key) ?? -Infinity, l.readyMs));
  }
  const moved: Array<[string, number]> = [];
  for (const h of heads) {
    const readyMs = ready.get(`${h.platform_id}\n${h.resource_id}`)!;
    if (h.status === 'PENDING' && h.next_attempt_ms !== null && Number(h.next_attempt_ms) < readyMs) {
      moved.push([h.id, readyMs]);
      h.next_attempt_ms = readyMs;
    }
    h.lane_head = 1;
  }
  await trx
    .updateTable('webhook_deliveries')
    .set(
      moved.length === 0
        ? { lane_head: 1 }
        : { lane_head: 1, next_attempt_ms: sql<number>`case id ${sql.join(moved.map(([id, ms]) => sql`when ${id} then cast(${ms} as bigint)`), sql` `)} else next_attempt_ms end` },
    )
    .where('id', 'in', heads.map((h) => h.id))
    .execute();
  return heads;
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
  const params: Record<string, unknown> = { platformId, dueBy: realNowMs + offsetMs, realNowMs, leaseUntilMs, at };
  ids.forEach((id, i) => (params[`id${i}`] = id));
  const q = claimDueOf(ids.length);
  if (q) return q.all(trx, params);
  return claimDueQuery(trx, (name) => params[name], ids.length).execute();
}

/**
 * The claim's `UPDATE … RETURNING`, built once per number of ids (db/prepared.ts): its
 * values come from `v` (placeholders when prepared, the values themselves otherwise).
 */
function claimDueQuery(db: Kysely<DB> | Transaction<DB>, v: (name: string) => unknown, n: number) {
  return (
    db
      .updateTable('webhook_deliveries as d')
      .set({ status: 'SENDING', attempts: sql<number>`d.attempts + 1`, lease_until_ms: v('leaseUntilMs') as number, updated_at: v('at') as string })
      .where(
        'd.id',
        'in',
        Array.from({ length: n }, (_, i) => v(`id${i}`) as string),
      )
      // `|| ''`: a filter on the rows the ids find, not a way in. As a plain comparison, SQLite
      // chose the platform's index for a list of several ids and read every delivery the
      // platform ever had (7–10 ms per claim at 5,000 rows, growing with the table).
      .where(sql<boolean>`d.platform_id || '' = ${v('platformId')}`)
      // Still due, as one expression (findDue's): as an OR of the two statuses, SQLite answered
      // it from the status index, reading every due row of the backlog for each claim.
      .where(sql<boolean>`(case d.status when 'PENDING' then d.next_attempt_ms <= ${v('dueBy')} when 'SENDING' then d.lease_until_ms < ${v('realNowMs')} else false end)`)
      .where(firstInLane(v('realNowMs')))
      .returningAll()
  );
}

/**
 * How many deliveries one lane run holds at most: the claimed head and up to RUN_LENGTH - 1
 * of its lane's next deliveries (docs/webhooks.md "Lane runs"). A constant: 32 keeps a busy
 * lane's deliveries at about one record transaction per run instead of one per step, while a
 * run's POSTs (sent one after another) stay well inside one lease.
 */
export const RUN_LENGTH = 32;

/** A lane whose claimed head may take its next deliveries along (claimFollowers). */
export interface RunLane {
  platformId: string;
  resourceId: string;
  /** The head's event seq: the followers come after it. */
  afterSeq: number;
  /** PENDING followers due by this time (platform clock) are taken. */
  dueBy: number;
  /** updated_at of the claimed rows (platform clock). */
  at: string;
  /** Followers to take at most. */
  max: number;
}

/** What a follower was before its claim: a run's unsent deliveries go back to it (restoreDeliveries). */
export type Prior = Pick<DeliveryRow, 'status' | 'lease_until_ms' | 'updated_at'>;

export interface Follower {
  row: DeliveryRow;
  prior: Prior;
}

/** A claimed delivery to give back as it was before its claim, only while it is still that claim's. */
export interface Restore {
  id: string;
  leaseUntilMs: number;
  prior: Prior;
  /** Leave its lane_head as it is (else 0, when the caller holds the lane-head lock). */
  keepHead?: boolean;
}

/**
 * Lane runs: for each lane whose head was just claimed (same transaction), claim up to `max`
 * of the lane's next deliveries after the head, in event_seq order and contiguous: PENDING
 * and due, or SENDING with an expired lease (a lapsed run), stopping at the first open one
 * that is neither. They become SENDING with the same lease and one more attempt; lane_head is
 * not touched (they do not head their lane: no other worker claims them, and their lease
 * keeps them from findDue). Two statements for all the lanes: one read (each lane an index
 * seek on `webhook_deliveries_resource`, reading about as many rows as it takes) and one
 * update per platform; a row another worker changed meanwhile ends its lane's run there (any
 * later row of that lane claimed with it is given back at once). Returns the followers by
 * lane (laneKey), in order.
 */
export async function claimFollowers(trx: Transaction<DB>, lanes: readonly RunLane[], realNowMs: number, leaseUntilMs: number): Promise<Map<string, Follower[]>> {
  const out = new Map<string, Follower[]>();
  const wanted = lanes.filter((l) => l.max > 0);
  if (wanted.length === 0) return out;
  // Each lane's next rows after its head, whatever their status (rows settled out of order are
  // skipped below): in event order from the resource index, as many as the run may take.
  const parts = wanted.map(
    (l, i) =>
      sql`select * from (select e.id, e.platform_id, e.resource_id, e.event_seq, e.status, e.next_attempt_ms, e.lease_until_ms, e.updated_at from webhook_deliveries e where e.platform_id = ${l.platformId} and e.resource_id = ${l.resourceId} and e.event_seq > ${l.afterSeq} order by e.event_seq limit ${literalLimit(l.max)}) ${sql.raw(`r${i}`)}`,
  );
  const { rows } = await sql<{ id: string; platform_id: string; resource_id: string; event_seq: number; status: string; next_attempt_ms: number | null; lease_until_ms: number | null; updated_at: string }>`${sql.join(parts, sql` union all `)}`.execute(trx);
  const byLane = new Map<string, typeof rows>();
  for (const r of rows) {
    const k = runLaneKey(r.platform_id, r.resource_id);
    const list = byLane.get(k);
    if (list) list.push(r);
    else byLane.set(k, [r]);
  }
  /** The rows each lane's run takes, in order, with what they were. */
  const intended = new Map<string, Array<{ id: string; prior: Prior }>>();
  const byPlatform = new Map<string, { dueBy: number; at: string; ids: string[] }>();
  for (const l of wanted) {
    const k = runLaneKey(l.platformId, l.resourceId);
    const take: Array<{ id: string; prior: Prior }> = [];
    for (const r of (byLane.get(k) ?? []).sort((a, b) => Number(a.event_seq) - Number(b.event_seq))) {
      if (r.status !== 'PENDING' && r.status !== 'SENDING') continue; // settled (out of order): not in the way
      const due = r.status === 'PENDING' ? r.next_attempt_ms !== null && Number(r.next_attempt_ms) <= l.dueBy : r.lease_until_ms !== null && Number(r.lease_until_ms) < realNowMs;
      if (!due || take.length >= l.max) break;
      take.push({ id: r.id, prior: { status: r.status, lease_until_ms: r.lease_until_ms === null ? null : Number(r.lease_until_ms), updated_at: r.updated_at } });
    }
    if (take.length === 0) continue;
    intended.set(k, take);
    const g = byPlatform.get(l.platformId);
    if (g) g.ids.push(...take.map((t) => t.id));
    else byPlatform.set(l.platformId, { dueBy: l.dueBy, at: l.at, ids: take.map((t) => t.id) });
  }
  if (intended.size === 0) return out;
  const claimed = new Map<string, DeliveryRow>();
  for (const g of byPlatform.values()) {
    const got = await trx
      .updateTable('webhook_deliveries as d')
      .set({ status: 'SENDING', attempts: sql<number>`d.attempts + 1`, lease_until_ms: leaseUntilMs, updated_at: g.at })
      .where('d.id', 'in', g.ids)
      .where(sql<boolean>`(case d.status when 'PENDING' then d.next_attempt_ms <= ${g.dueBy} when 'SENDING' then d.lease_until_ms < ${realNowMs} else false end)`)
      .returningAll()
      .execute();
    for (const r of got) claimed.set(r.id, r);
  }
  const giveBack: Restore[] = [];
  for (const [k, take] of intended) {
    const run: Follower[] = [];
    let broken = false;
    for (const t of take) {
      const row = claimed.get(t.id);
      if (!broken && row) run.push({ row, prior: t.prior });
      else {
        // Changed by another worker since it was read: the run ends before it.
        broken = true;
        if (row) giveBack.push({ id: t.id, leaseUntilMs, prior: t.prior });
      }
    }
    if (run.length > 0) out.set(k, run);
  }
  if (giveBack.length > 0) await restoreDeliveries(trx, giveBack.map((g) => ({ ...g, keepHead: true })));
  return out;
}

const runLaneKey = (platformId: string, resourceId: string) => `${platformId}\n${resourceId}`;

/**
 * Give claimed deliveries back as they were before their claim (a run's unsent ones): the
 * status, lease and updated_at they had, one attempt less, next_attempt_ms untouched; only
 * while still SENDING with the claim's lease. Unless `keepHead`, lane_head 0 too (the caller
 * then holds the lane-head lock; releaseLanes then marks the lane's next open delivery).
 */
export async function restoreDeliveries(trx: Transaction<DB>, items: readonly Restore[]): Promise<void> {
  const groups = new Map<string, { lease: number; clearHead: boolean; list: Restore[] }>();
  for (const it of items) {
    const key = `${it.leaseUntilMs}/${it.keepHead === true}`;
    const g = groups.get(key);
    if (g) g.list.push(it);
    else groups.set(key, { lease: it.leaseUntilMs, clearHead: it.keepHead !== true, list: [it] });
  }
  for (const { lease, clearHead, list } of groups.values()) {
    const caseOf = (f: (r: Restore) => unknown, cast: string) => sql`case id ${sql.join(list.map((r) => sql`when ${r.id} then cast(${f(r)} as ${sql.raw(cast)})`), sql` `)} end`;
    await trx
      .updateTable('webhook_deliveries')
      .set({
        status: caseOf((r) => r.prior.status, 'text') as unknown as string,
        lease_until_ms: caseOf((r) => r.prior.lease_until_ms, 'bigint') as unknown as number,
        updated_at: caseOf((r) => r.prior.updated_at, 'text') as unknown as string,
        attempts: sql<number>`attempts - 1`,
        ...(clearHead ? { lane_head: 0 } : {}),
      })
      .where('id', 'in', list.map((r) => r.id))
      .where('status', '=', 'SENDING')
      .where('lease_until_ms', '=', lease)
      .execute();
  }
}

/**
 * `d` may go out now in its lane (the per-resource order, one at a time): no earlier open
 * delivery of its platform and resource, and no later one in flight (SENDING under a live
 * lease). The second case is a redelivery of an earlier event while the lane's next one is
 * being sent: this process knows its own lanes in flight (service.ts `lanesInFlight`), but
 * another process's deliverer would have sent it beside the one in flight. A later delivery
 * whose lease lapsed (its process died) is not in flight: it waits behind `d`.
 */
function firstInLane(realNowMs: unknown) {
  return (eb: ExpressionBuilder<DB & { d: WebhookDeliveriesTable }, 'd'>) => {
    // The other deliveries of d's lane (each case its own index seek on webhook_deliveries_lane_open).
    const lane = () => eb.selectFrom('webhook_deliveries as e').select('e.id').whereRef('e.platform_id', '=', 'd.platform_id').whereRef('e.resource_id', '=', 'd.resource_id');
    return eb.and([
      eb.not(eb.exists(lane().where('e.status', 'in', [...OPEN_STATUSES]).whereRef('e.event_seq', '<', 'd.event_seq'))),
      eb.not(eb.exists(lane().where('e.status', '=', 'SENDING').whereRef('e.event_seq', '>', 'd.event_seq').where('e.lease_until_ms', '>=', realNowMs as number))),
    ]);
  };
}

const claimDueOf = preparedByShape<number, Record<string, unknown>, DeliveryRow>(
  (n) => String(n),
  (db, p, n) => claimDueQuery(db, p, n),
  256,
);

/** The clock offsets of these platforms. */
export async function platformOffsets(db: Db, platformIds: readonly string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (platformIds.length === 0) return out;
  const params: Record<string, string> = {};
  platformIds.forEach((id, i) => (params[`id${i}`] = id));
  const q = offsetsOf(platformIds.length);
  const rows = q ? await q.all(db, params) : await db.selectFrom('platforms').select(['id', 'clock_offset_ms']).where('id', 'in', [...platformIds]).execute();
  for (const r of rows) out.set(r.id, Number(r.clock_offset_ms));
  return out;
}

const offsetsOf = preparedByShape<number, Record<string, string>, { id: string; clock_offset_ms: number }>(
  (n) => String(n),
  (db, p, n) =>
    db
      .selectFrom('platforms')
      .select(['id', 'clock_offset_ms'])
      .where(
        'id',
        'in',
        Array.from({ length: n }, (_, i) => p(`id${i}`)),
      ),
);

export interface SendMaterial {
  payload: string;
  endpoint: string | null;
  privateKey: string | null;
}

/** The material of several deliveries in one query, by event id. */
export async function sendMaterials(db: Db, deliveries: readonly DeliveryRow[]): Promise<Map<string, SendMaterial>> {
  const out = new Map<string, SendMaterial>();
  if (deliveries.length === 0) return out;
  const params: Record<string, string> = {};
  deliveries.forEach((d, i) => (params[`id${i}`] = d.event_id));
  const q = materialsOf(deliveries.length);
  const rows = q ? await q.all(db, params) : await materialsQuery(db, (name) => params[name], deliveries.length).execute();
  const platformOf = new Map(deliveries.map((d) => [d.event_id, d.platform_id]));
  for (const row of rows) {
    if (platformOf.get(row.id) !== row.platform_id) continue;
    out.set(row.id, { payload: payloadText(row), endpoint: row.webhook_endpoint ?? null, privateKey: row.webhook_private_key });
  }
  return out;
}

function materialsQuery(db: Db, v: (name: string) => unknown, n: number) {
  return db
    .selectFrom('events as ev')
    .innerJoin('platforms as p', 'p.id', 'ev.platform_id')
    .leftJoin('platform_configs as c', 'c.platform_id', 'ev.platform_id')
    .select(['ev.id', 'ev.platform_id', 'ev.resource_id', 'ev.created_at', 'ev.payload', 'ev.body', 'c.webhook_endpoint', 'p.webhook_private_key'])
    .where(
      'ev.id',
      'in',
      Array.from({ length: n }, (_, i) => v(`id${i}`) as string),
    );
}

type MaterialRow = Awaited<ReturnType<ReturnType<typeof materialsQuery>['execute']>>[number];

const materialsOf = preparedByShape<number, Record<string, string>, MaterialRow>(
  (n) => String(n),
  (db, p, n) => materialsQuery(db, p, n),
  256,
);

const insertAttemptRows = preparedInsert('webhook_attempts');

/** Several attempts' rows, a few statements at most (prepared per number of rows). */
export async function insertAttempts(db: Db, rows: readonly AttemptRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 100) await insertAttemptRows(db, rows.slice(i, i + 100) as unknown as Array<Record<string, unknown>>);
}

export type SettlePatch = Partial<Pick<DeliveryRow, 'status' | 'next_attempt_ms' | 'last_status_code' | 'last_error' | 'delivered_at' | 'updated_at'>>;

/** One claimed delivery to settle: only while it is still this claim's (same lease). */
export interface Settlement {
  id: string;
  leaseUntilMs: number;
  patch: SettlePatch;
}

/**
 * Settle claimed deliveries, one statement per distinct patch and lease (a batch of
 * deliveries answered 200 is one): each only while it is still its claim's. A delivery
 * settled for good (any status but PENDING) heads its lane no more. Returns the ids settled.
 */
export async function settleDeliveries(trx: Transaction<DB>, items: readonly Settlement[]): Promise<Set<string>> {
  const groups = new Map<string, { patch: SettlePatch; leaseUntilMs: number; ids: string[] }>();
  for (const it of items) {
    const key = JSON.stringify([it.leaseUntilMs, it.patch]);
    const g = groups.get(key);
    if (g) g.ids.push(it.id);
    else groups.set(key, { patch: it.patch, leaseUntilMs: it.leaseUntilMs, ids: [it.id] });
  }
  const applied = new Set<string>();
  for (const g of groups.values()) {
    const rows = await trx
      .updateTable('webhook_deliveries')
      .set({ ...g.patch, lease_until_ms: null, ...(g.patch.status !== 'PENDING' ? { lane_head: 0 } : {}) })
      .where('id', 'in', g.ids)
      .where('status', '=', 'SENDING')
      .where('lease_until_ms', '=', g.leaseUntilMs)
      .returning('id')
      .execute();
    for (const r of rows) applied.add(r.id);
  }
  return applied;
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
    lane_head: 0,
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
          lane_head: null,
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
