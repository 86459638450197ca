import { CompiledQuery, type Kysely, type Transaction } from 'kysely';
import { literalLimit } from './db/limit.js';
import type { DB, WebhookDeliveriesTable } from './db/schema.js';
import { prepared, preparedByShape, preparedInsert } from './db/prepared.js';
import { TableCache } from './db/table-cache.js';
import { heldStatement } from './db/connect.js';
import { LATE_EXPRESSIONS, LATE_VALUES, type LateMove, lateMoveResource, LateMoveRetry, takeLateMove } from './db/late-move.js';
import { lateTemplate, packPayload, payloadText, textBody } from './event-bodies.js';
import { newId } from './ids.js';

// The outbox. A state change and the event it causes are written in the same database
// transaction, so an event exists exactly when its change committed. The webhooks area
// turns events into signed deliveries; areas only emit.

export interface DomainEvent {
  /** `OBJECT.EVENT`, e.g. `OUTGOING_PAYMENT.COMPLETED`. */
  type: string;
  /** The resource the event is about; deliveries of one resource keep event order. */
  resourceId: string;
  /** The full resource as the API shows it. */
  data: unknown;
  /**
   * false: the payload is stored as text (event-bodies.ts `textBody`, version 3), not packed
   * with zlib: about 40 µs less on the request for about 200 more bytes. For events off the
   * payment flow (whose bytes have a target) on a path whose CPU counts (a customer's status).
   */
  packed?: boolean;
}

export interface StoredEvent {
  seq: number;
  id: string;
  platformId: string;
  type: string;
  resourceId: string;
  createdAt: string;
  payload: { id: string; type: string; timestamp: string; data: unknown };
}

type Listener = (platformId: string) => void;
const listeners = new Set<Listener>();

/** Be told (in this process) that events with a delivery due now were emitted, e.g. to wake a delivery loop. */
export function onEventsEmitted(fn: Listener): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

/** The id of an event's delivery: derived from the event's, so an event without a delivery row still has one to name. */
export function deliveryIdOf(eventId: string): string {
  return `WebhookDelivery:${eventId.slice(eventId.indexOf(':') + 1)}`;
}

/** The event id a delivery id derived by `deliveryIdOf` names, or undefined for any other id. */
export function eventIdOfDelivery(deliveryId: string): string | undefined {
  return deliveryId.startsWith('WebhookDelivery:') ? `Webhook:${deliveryId.slice('WebhookDelivery:'.length)}` : undefined;
}

/** An event row made and not yet inserted (emitEventsTogether). */
interface NewEvent {
  id: string;
  platform_id: string;
  type: string;
  resource_id: string;
  body: Buffer;
  created_at: string;
  /** Its body is version 5's template: the late move's figures are appended as the row is written (db/late-move.ts). */
  late?: boolean;
}

/** The events emitted inside emitEventsTogether, per transaction, waiting for its one insert. */
const together = new WeakMap<object, NewEvent[]>();

/** Whether `trx` is inside emitEventsTogether: its events are written when that ends. */
export function collectingEvents(trx: Transaction<DB>): boolean {
  return together.has(trx);
}

/**
 * Run `fn`, whose emitEvent calls on `trx` are written together when it returns: one
 * multi-row insert of the events (in the order emitted, so their `seq`s keep that order) and,
 * with a webhook endpoint, one of their deliveries (issue 35: a settlement batch's two events
 * per payment). Nothing inside `fn` may read the events it emits; if `fn` throws, none is written.
 */
export async function emitEventsTogether<T>(trx: Transaction<DB>, fn: () => Promise<T>): Promise<T> {
  if (together.has(trx)) return fn();
  const rows: NewEvent[] = [];
  together.set(trx, rows);
  let out: T;
  try {
    out = await fn();
  } finally {
    together.delete(trx);
  }
  const move = takeLateMove(trx);
  if (rows.length === 0 && move === undefined) return out;
  const platforms = [...new Set(rows.map((r) => r.platform_id))];
  // The platforms with a webhook endpoint, whose deliveries need the events' seqs. Without
  // one, the insert asks for nothing back, so on PostgreSQL it can wait for the commit and
  // go with it in one round trip (connect.ts, DEFERRED_INSERTS).
  const delivering: string[] = [];
  for (const platformId of platforms) if (await platformHasEndpoint(trx, platformId)) delivering.push(platformId);
  const seqs = new Map<string, number>();
  // A balance move waiting for the commit (db/late-move.ts): written with the events, in one
  // statement that fills in the figures of the events that show them.
  const late = move !== undefined && rows.length <= EVENTS_PER_INSERT ? move : undefined;
  // More events than one insert takes (never a payment's): the transaction runs again with the move sent at once.
  if (move !== undefined && late === undefined) throw new LateMoveRetry();
  if (late !== undefined) {
    const text = lateInsertText(late, rows.length, delivering.length > 0);
    const values: unknown[] = [...late.parameters];
    rows.forEach((r, j) => values.push(j, r.id, r.platform_id, r.type, r.resource_id, r.body, r.created_at, r.late === true));
    const result = await trx.executeQuery(CompiledQuery.raw(text, values) as CompiledQuery<{ id: string; seq: number }>);
    for (const r of result.rows) seqs.set(r.id, Number(r.seq));
  }
  for (let i = late !== undefined ? rows.length : 0; i < rows.length; ) {
    const n = Math.min(EVENTS_PER_INSERT, rows.length - i);
    const chunk = rows.slice(i, i + n);
    i += n;
    const params: Record<string, unknown> = {};
    chunk.forEach((r, j) => {
      for (const k of EVENT_COLUMNS) params[`${j}:${k}`] = r[k];
    });
    if (delivering.length === 0) await insertEventsQuietly(n)!.execute(trx, params);
    else for (const r of await insertEvents(n)!.all(trx, params)) seqs.set(r.id, Number(r.seq));
  }
  if (delivering.length > 0 && seqs.size !== rows.length) throw new Error('insert into events returned no seq');
  let delivered = false;
  for (const platformId of delivering) {
    delivered = true;
    const mine = rows.filter((r) => r.platform_id === platformId);
    for (let i = 0; i < mine.length; ) {
      const n = Math.min(EVENTS_PER_INSERT, mine.length - i);
      await insertDeliveries(trx, mine.slice(i, i + n).map((r) => deliveryRow(r, seqs.get(r.id)!)));
      i += n;
    }
  }
  if (delivered) {
    queueMicrotask(() => {
      for (const platformId of platforms) for (const l of listeners) l(platformId);
    });
  }
  return out;
}

/** The whole delivery row of an event (as insertDelivery writes it), for the multi-row insert. */
function deliveryRow(r: NewEvent, seq: number): Record<string, unknown> {
  return {
    id: deliveryIdOf(r.id),
    platform_id: r.platform_id,
    event_id: r.id,
    event_seq: seq,
    type: r.type,
    resource_id: r.resource_id,
    status: 'PENDING',
    attempts: 0,
    next_attempt_ms: Date.parse(r.created_at),
    lease_until_ms: null,
    last_status_code: null,
    last_error: null,
    delivered_at: null,
    created_at: r.created_at,
    updated_at: r.created_at,
  };
}

const insertDeliveries = preparedInsert('webhook_deliveries');

/**
 * PostgreSQL: the late move and the insert of `n` events, in their order (`ord`), as one
 * statement (db/late-move.ts). The move's returned row fills in the figures of the events
 * marked late; `payments_one_row` (migration 0041) fails the statement, and so the commit
 * written after it, when the move changed no row. Without `returning` it is held for the
 * commit (connect.ts heldStatement); with it (a webhook endpoint's deliveries need the seqs)
 * it runs at once. Kept per shape: the texts are few.
 */
function lateInsertText(move: LateMove, n: number, returning: boolean): string {
  const key = `${n}:${returning}:${move.sql}`;
  let text = lateTexts.get(key);
  if (text !== undefined) return text;
  if (n === 0) {
    // No event shows it: the move and its check alone.
    text = heldStatement(['ledger_balances'], `with u as (${move.sql}) select payments_one_row(count(*)) as one from u`);
    lateTexts.set(key, text);
    return text;
  }
  const at = move.parameters.length;
  const rows = Array.from({ length: n }, (_, j) => {
    const p = (k: number) => `$${at + j * 8 + k}`;
    return `(${p(1)}::int, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}::bytea, ${p(7)}, ${p(8)}::boolean)`;
  });
  const figures = LATE_EXPRESSIONS.map((e) => `(${e})::text`).join(` || ',' || `);
  text =
    `with u as (${move.sql}), g as (select payments_one_row(count(*)) as one from u) ` +
    `insert into "events" ("id", "platform_id", "type", "resource_id", "payload", "body", "created_at") ` +
    `select v.id, v.platform_id, v.type, v.resource_id, '', case when v.late then v.body || convert_to((select ${figures} from u), 'UTF8') else v.body end, v.created_at ` +
    `from (values ${rows.join(', ')}) as v (ord, id, platform_id, type, resource_id, body, created_at, late) cross join g order by v.ord` +
    (returning ? ' returning "id", "seq"' : '');
  if (!returning) text = heldStatement(['ledger_balances', 'events'], text);
  if (lateTexts.size < 256) lateTexts.set(key, text);
  return text;
}
const lateTexts = new Map<string, string>();

/** Record an event inside the caller's transaction. Returns its webhook id. */
export async function emitEvent(trx: Transaction<DB> | Kysely<DB>, platformId: string, at: string, event: DomainEvent): Promise<string> {
  const id = newId('Webhook');
  const payload = { id, type: event.type, timestamp: at, data: event.data };
  // The payload once, in the event's row, packed unless the emitter asks for text
  // (event-bodies.ts); `payload` stays empty.
  const json = JSON.stringify(payload);
  const keys = { id, resource_id: event.resourceId, created_at: at };
  const waiting = together.get(trx);
  // A balance move waiting for the commit: an event about its account (its balance event)
  // stores a template; any other text that happened to hold a stand-in's digits is kept as is.
  const template = waiting && lateMoveResource(trx as Transaction<DB>) === event.resourceId ? lateTemplate(json, keys, LATE_VALUES) : undefined;
  const body = template ?? (event.packed === false ? textBody(json, keys) : packPayload(json, keys));
  const row: NewEvent = { id, platform_id: platformId, type: event.type, resource_id: event.resourceId, body, created_at: at };
  if (template) row.late = true;
  if (waiting) {
    waiting.push(row);
    return id;
  }
  const inserted = await insertEvent.first(trx, row);
  if (!inserted) throw new Error('insert into events returned no seq');
  // Its delivery, in the same transaction, only when the platform has a webhook endpoint:
  // then it is due now. Without one no row is written; the event's delivery is shown as
  // NO_ENDPOINT (webhooks area), and redelivering it creates the row (docs/webhooks.md).
  if (!(await platformHasEndpoint(trx, platformId))) return id;
  await insertDelivery.execute(trx, {
    id: deliveryIdOf(id),
    platform_id: platformId,
    event_id: id,
    event_seq: Number(inserted.seq),
    type: event.type,
    resource_id: event.resourceId,
    status: 'PENDING',
    next_attempt_ms: Date.parse(at),
    created_at: at,
  });
  // Listeners run after the current tick; they only poll, so an uncommitted event is harmless.
  queueMicrotask(() => {
    for (const l of listeners) l(platformId);
  });
  return id;
}

// The two inserts of every event, built and compiled once (db/prepared.ts).
const insertEvent = prepared<{ id: string; platform_id: string; type: string; resource_id: string; body: Buffer; created_at: string }, { seq: number }>((db, p) =>
  db
    .insertInto('events')
    .values({ id: p('id'), platform_id: p('platform_id'), type: p('type'), resource_id: p('resource_id'), payload: '', body: p('body'), created_at: p('created_at') })
    .returning('seq'),
);

const EVENT_COLUMNS = ['id', 'platform_id', 'type', 'resource_id', 'body', 'created_at'] as const;
/** Rows per multi-row insert of events at most (one prepared statement per number of rows up to it). */
const EVENTS_PER_INSERT = 32;
const eventRows = (p: (name: string) => unknown, n: number) =>
  Array.from({ length: n }, (_, j) => ({
    id: p(`${j}:id`) as string,
    platform_id: p(`${j}:platform_id`) as string,
    type: p(`${j}:type`) as string,
    resource_id: p(`${j}:resource_id`) as string,
    payload: '',
    body: p(`${j}:body`) as Buffer,
    created_at: p(`${j}:created_at`) as string,
  }));
const insertEvents = preparedByShape<number, Record<string, unknown>, { id: string; seq: number }>(
  (n) => String(n),
  (db, p, n) => db.insertInto('events').values(eventRows(p, n)).returning(['id', 'seq']),
  EVENTS_PER_INSERT,
);
/** The same insert answering only its row count (no endpoint to deliver to). */
const insertEventsQuietly = preparedByShape<number, Record<string, unknown>>((n) => String(n), (db, p, n) => db.insertInto('events').values(eventRows(p, n)), EVENTS_PER_INSERT);

type NewDelivery = Pick<WebhookDeliveriesTable, 'id' | 'platform_id' | 'event_id' | 'event_seq' | 'type' | 'resource_id' | 'status' | 'next_attempt_ms' | 'created_at'>;

const insertDelivery = prepared<NewDelivery>((db, p) =>
  db.insertInto('webhook_deliveries').values({
    id: p('id'),
    platform_id: p('platform_id'),
    event_id: p('event_id'),
    event_seq: p('event_seq'),
    type: p('type'),
    resource_id: p('resource_id'),
    status: p('status'),
    attempts: 0,
    next_attempt_ms: p('next_attempt_ms'),
    lease_until_ms: null,
    last_status_code: null,
    last_error: null,
    delivered_at: null,
    created_at: p('created_at'),
    updated_at: p('created_at'),
  }),
);

const endpointOf = prepared<{ platformId: string }, { webhook_endpoint: string | null }>((db, p) =>
  db.selectFrom('platform_configs').select('webhook_endpoint').where('platform_id', '=', p('platformId')),
);

/** Whether the platform has a webhook endpoint now (kept while platform_configs does not change: db/table-cache.ts). */
const endpoints = new TableCache<string, boolean>(['platform_configs']);

function platformHasEndpoint(db: Transaction<DB> | Kysely<DB>, platformId: string): Promise<boolean> {
  return endpoints.get(db, platformId, async () => Boolean((await endpointOf.first(db, { platformId }))?.webhook_endpoint));
}

export async function listEvents(db: Kysely<DB>, platformId: string, opts: { type?: string; resourceId?: string; afterSeq?: number; limit?: number } = {}): Promise<StoredEvent[]> {
  let q = db.selectFrom('events').selectAll().where('platform_id', '=', platformId);
  if (opts.type) q = q.where('type', '=', opts.type);
  if (opts.resourceId) q = q.where('resource_id', '=', opts.resourceId);
  if (opts.afterSeq !== undefined) q = q.where('seq', '>', opts.afterSeq);
  const rows = await q.orderBy('seq', 'asc').limit(literalLimit(opts.limit ?? 1000)).execute();
  return rows.map((r) => ({
    seq: Number(r.seq),
    id: r.id,
    platformId: r.platform_id,
    type: r.type,
    resourceId: r.resource_id,
    createdAt: r.created_at,
    payload: JSON.parse(payloadText(r)) as StoredEvent['payload'],
  }));
}
