import type { Kysely, Transaction } from 'kysely';
import type { DB, WebhookDeliveriesTable } from './db/schema.js';
import { prepared } from './db/prepared.js';
import { TableCache } from './db/table-cache.js';
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

/** Record an event inside the caller's transaction. Returns its webhook id. */
export async function emitEvent(trx: Transaction<DB> | Kysely<DB>, platformId: string, at: string, event: DomainEvent): Promise<string> {
  const id = newId('Webhook');
  const payload = { id, type: event.type, timestamp: at, data: event.data };
  const inserted = await insertEvent.first(trx, { id, platform_id: platformId, type: event.type, resource_id: event.resourceId, payload: JSON.stringify(payload), created_at: at });
  if (!inserted) throw new Error('insert into events returned no seq');
  // Its delivery, in the same transaction: due now when the platform has a webhook endpoint,
  // otherwise kept as NO_ENDPOINT (see docs/webhooks.md). The webhooks area sends it.
  const hasEndpoint = await platformHasEndpoint(trx, platformId);
  await insertDelivery.execute(trx, {
    id: newId('WebhookDelivery'),
    platform_id: platformId,
    event_id: id,
    event_seq: Number(inserted.seq),
    type: event.type,
    resource_id: event.resourceId,
    status: hasEndpoint ? 'PENDING' : 'NO_ENDPOINT',
    next_attempt_ms: hasEndpoint ? Date.parse(at) : null,
    created_at: at,
  });
  // Listeners run after the current tick; they only poll, so an uncommitted event is harmless.
  // A NO_ENDPOINT delivery has nothing to send: nobody is woken for it.
  if (hasEndpoint) {
    queueMicrotask(() => {
      for (const l of listeners) l(platformId);
    });
  }
  return id;
}

// The two inserts of every event, built and compiled once (db/prepared.ts).
const insertEvent = prepared<{ id: string; platform_id: string; type: string; resource_id: string; payload: string; created_at: string }, { seq: number }>((db, p) =>
  db
    .insertInto('events')
    .values({ id: p('id'), platform_id: p('platform_id'), type: p('type'), resource_id: p('resource_id'), payload: p('payload'), created_at: p('created_at') })
    .returning('seq'),
);

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
  const rows = await q.orderBy('seq', 'asc').limit(opts.limit ?? 1000).execute();
  return rows.map((r) => ({
    seq: Number(r.seq),
    id: r.id,
    platformId: r.platform_id,
    type: r.type,
    resourceId: r.resource_id,
    createdAt: r.created_at,
    payload: JSON.parse(r.payload) as StoredEvent['payload'],
  }));
}
