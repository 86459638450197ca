import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { FastifyBaseLogger } from 'fastify';
import { PollingLoop } from '../../kernel/polling.js';
import { IDLE_POLL_MAX_MS } from '../../kernel/jobs.js';
import type { Kysely } from 'kysely';
import { iso, type Clock } from '../../kernel/clock.js';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { isStoreUnavailable } from '../../kernel/db/unavailable.js';
import { apiError } from '../../kernel/errors.js';
import { onEventsEmitted } from '../../kernel/events.js';
import { newId } from '../../kernel/ids.js';
import { type Page } from '../../kernel/pagination.js';
import { openWebhookKey, sealWebhookKey, SIGNATURE_HEADER, SIGNATURE_HEADER_ALIAS, signWebhookBody } from '../../kernel/webhook-keys.js';
import type { Sealer } from '../../kernel/sealed.js';
import {
  attemptsOf,
  type Claimable,
  type AttemptRow,
  deliveriesPage,
  type DeliveryFilter,
  type DeliveryRow,
  findDelivery,
  findRowlessDelivery,
  insertRowlessDelivery,
  findDue,
  insertAttempt,
  markSending,
  platformOffset,
  releaseLane,
  replaceWebhookKey,
  sendMaterial,
  settleDelivery,
  signingInfo,
  updateDelivery,
  webhookKeysNotSealedWith,
} from './store.js';
import { portOf, TargetRefused, type WebhookTargets } from './targets.js';

// Webhook delivery. Every event gets a delivery row in the event's own transaction
// (src/kernel/events.ts). A worker claims a due delivery in a short transaction, POSTs it
// with no transaction open, and records the attempt in a second short transaction: a slow
// endpoint never holds the database (on SQLite: its single connection). A 2xx acknowledges,
// and so does a 409 (the endpoint already has this webhook id: no retry); anything else (3xx
// included: redirects are not followed) is retried on RETRY_SCHEDULE_MS of the platform's
// sandbox clock (exponential backoff capped at 30 minutes, for 7 days), then the delivery is
// FAILED. TEST webhooks and INCOMING_PAYMENT webhooks of a PENDING payment are never
// retried (retryPolicyOf). Deliveries go out in lanes, one per resource (the transaction of a
// payment event, the account of a balance event): in event order within a lane, up to
// `concurrency` lanes in flight at once, so a slow lane holds no other. State lives in
// the database, so a restart resumes where it stopped. An area may read the answers to one
// event type (onDeliveryAnswered): the payment approval webhook is answered 200 / 202 / 403 /
// 422, and those answers are decisions, not failures.

/** The first retries' waits: doubling from 30 seconds (attempt n failed → RETRY_RAMP_MS[n-1]). */
export const RETRY_RAMP_MS = [30_000, 60_000, 120_000, 240_000, 480_000, 960_000] as const;
/** The longest wait between two attempts: every retry after the ramp waits this long. */
export const MAX_RETRY_INTERVAL_MS = 30 * 60_000;
/** Retries stop 7 days (sandbox clock) after the first attempt: no attempt is scheduled later than this. */
export const RETRY_WINDOW_MS = 7 * 24 * 3_600_000;

function retrySchedule(): readonly number[] {
  const waits: number[] = [...RETRY_RAMP_MS];
  let total = waits.reduce((a, b) => a + b, 0);
  while (total + MAX_RETRY_INTERVAL_MS <= RETRY_WINDOW_MS) {
    waits.push(MAX_RETRY_INTERVAL_MS);
    total += MAX_RETRY_INTERVAL_MS;
  }
  return waits;
}

/**
 * The wait after failed attempt n (index n-1), measured from that attempt's start on the
 * platform's sandbox clock, no jitter: 30 s, 1, 2, 4, 8, 16 min, then 30 min × 334. 340
 * retries, the last 6 d 23 h 31 min 30 s after the first attempt (docs/webhooks.md).
 */
export const RETRY_SCHEDULE_MS: readonly number[] = retrySchedule();
/** Attempts in all: the first plus one per scheduled retry (341). */
export const MAX_ATTEMPTS = RETRY_SCHEDULE_MS.length + 1;
/** The answer meaning "already processed this webhook id": acknowledged, never retried. */
export const DUPLICATE_STATUS = 409;
/** How long an endpoint has to answer (the hosted docs: respond within 30 seconds). */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** Whether a failed attempt of this webhook is retried: `NONE` means one attempt, then FAILED. */
export type RetryPolicy = 'BACKOFF' | 'NONE';

/**
 * The hosted docs' retry policy by webhook type: a `TEST` webhook is sent once; an
 * `INCOMING_PAYMENT.*` webhook whose payment is `PENDING` is not retried either (it is the
 * in-flow approval request: its answer decides, and a late retry could not); everything
 * else backs off. Decided from the type and the payload, so no area has to mark it.
 */
export function retryPolicyOf(type: string, payload: string): RetryPolicy {
  if (type === 'TEST') return 'NONE';
  if (type.startsWith('INCOMING_PAYMENT.')) {
    try {
      const data = (JSON.parse(payload) as { data?: { status?: unknown } }).data;
      if (data?.status === 'PENDING') return 'NONE';
    } catch {
      // Not JSON: the usual rules.
    }
  }
  return 'BACKOFF';
}

/** Response bodies are kept up to this many characters. */
export const RESPONSE_BODY_LIMIT = 1024;
/** An answer handler (below) sees up to this many characters of the response body. */
export const ANSWER_BODY_LIMIT = 64 * 1024;
const USER_AGENT = 'PaymentsService-Webhooks/2025-10-13';

export interface SendOutcome {
  statusCode: number | null;
  error: string | null;
  latencyMs: number;
  responseBody: string | null;
  /** The body as an answer handler reads it (up to ANSWER_BODY_LIMIT characters); never stored. */
  answerBody?: string | null;
  ok: boolean;
}

/**
 * The body of one attempt: the stored event with `timestamp` set to when this attempt is sent
 * (platform clock), as the reference defines the field ("when the webhook was sent"): a
 * receiver may use it against replays, and a retry is sent now. `id`, `type` and `data` stay
 * byte for byte the event's. The stored payload starts `{"id":…,"type":…,"timestamp":"…"`
 * (kernel/events.ts), so the field is replaced in place rather than re-serialising `data`.
 */
export function withTimestamp(payload: string, at: string): string {
  const key = ',"timestamp":"';
  const start = payload.indexOf(key);
  if (start < 0) return payload;
  const from = start + key.length;
  const end = payload.indexOf('"', from);
  return end < 0 ? payload : payload.slice(0, from) + at + payload.slice(end);
}

/**
 * The longest excerpt of a non-2xx answer's body kept and shown (UTF-8 bytes): the attempt
 * log and the test endpoint's 400 echo no more, so a webhook pointed at some internal
 * service cannot read its pages through the sandbox (docs/webhooks.md).
 */
export const ERROR_EXCERPT_BYTES = 256;

/** The first `bytes` UTF-8 bytes of a text, never cutting a character in two. */
export function excerpt(text: string, bytes: number): string {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= bytes) return text;
  return buf.subarray(0, bytes).toString('utf8').replace(/\uFFFD+$/, '');
}

/** The signature under both header names (the service's and the vendor's), the same value. */
function signatureHeaders(signature: string): Record<string, string> {
  return { [SIGNATURE_HEADER]: signature, [SIGNATURE_HEADER_ALIAS]: signature };
}

/**
 * POST a signed body. Never throws: a network error, a timeout or a refused target is an
 * outcome. node:http(s) rather than fetch, so the target rules (targets.ts) check every
 * address a name resolves to, and the connection goes to the checked address.
 */
export async function postSigned(url: string, body: string, privateKeyHex: string, timeoutMs: number, targets?: WebhookTargets): Promise<SendOutcome> {
  const started = performance.now();
  const latency = () => Math.round(performance.now() - started);
  const failed = (error: string): SendOutcome => ({ statusCode: null, error, latencyMs: latency(), responseBody: null, ok: false });
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return failed('invalid URL');
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') return failed(`unsupported protocol ${target.protocol}`);
  const literal = targets?.refusalOfUrl(url);
  if (literal) return failed(`refused: ${literal}`);
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const { status, text } = await new Promise<{ status: number; text: string | null }>((resolve, reject) => {
      const payload = Buffer.from(body, 'utf8');
      const req = (target.protocol === 'https:' ? httpsRequest : httpRequest)(target, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': payload.length,
          'user-agent': USER_AGENT,
          ...signatureHeaders(signWebhookBody(body, privateKeyHex)),
        },
        signal,
        agent: false,
        ...(targets ? { lookup: targets.lookupFor(portOf(target)) } : {}),
      });
      req.on('error', reject);
      req.on('response', (res) => {
        // Read up to ANSWER_BODY_LIMIT bytes; the rest is not waited for.
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
        res.on('data', (c: Buffer) => {
          if (size >= ANSWER_BODY_LIMIT) return;
          chunks.push(c);
          size += c.length;
          if (size >= ANSWER_BODY_LIMIT) {
            done();
            res.destroy();
          }
        });
        res.on('end', done);
        res.on('error', () => resolve({ status: res.statusCode ?? 0, text: null }));
      });
      req.end(payload);
    });
    const answer = text === null ? null : text.slice(0, ANSWER_BODY_LIMIT);
    const ok = status >= 200 && status < 300;
    const kept = answer === null ? null : ok ? answer.slice(0, RESPONSE_BODY_LIMIT) : excerpt(answer, ERROR_EXCERPT_BYTES);
    return { statusCode: status, error: ok ? null : `HTTP ${status}`, latencyMs: latency(), responseBody: kept, answerBody: answer, ok };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (err instanceof TargetRefused) return failed(`refused: ${e.message}`);
    if (signal.aborted) return failed(`timeout after ${timeoutMs} ms`);
    return failed(e.code ? `${e.code}: ${e.message}` : e.message || String(err));
  }
}

/**
 * What an endpoint answered to one attempt, as an answer handler sees it. The handler runs
 * after the POST, with no transaction of the deliverer open (it opens its own), before the
 * attempt is recorded.
 */
export interface DeliveryAnswer {
  delivery: DeliveryRow;
  attempt: number;
  /** The endpoint the attempt went to; null when the platform had none any more. */
  endpoint: string | null;
  outcome: SendOutcome;
}

/**
 * How an answer settles the delivery: `DELIVERED` (the answer is acknowledged, whatever
 * its status) or `FAILED` (for good, no retry); undefined keeps the usual rules. A 2xx is
 * always DELIVERED.
 */
export type AnswerVerdict = 'DELIVERED' | 'FAILED' | undefined;
export type AnswerHandler = (answer: DeliveryAnswer) => Promise<AnswerVerdict>;

export interface DelivererOptions {
  timeoutMs?: number;
  pollMs?: number;
  /** Deliveries in flight at once, each of a different lane (DEFAULT_CONCURRENCY). */
  concurrency?: number;
  /** Which endpoints may be reached (targets.ts); absent: any. */
  targets?: WebhookTargets;
}

/** How many deliveries one process has in flight at once, each of its own lane. */
export const DEFAULT_CONCURRENCY = 8;

interface Claimed {
  row: Claimable;
  attempts: number;
  leaseUntil: number;
  material: Awaited<ReturnType<typeof sendMaterial>>;
}

export class WebhookDeliverer {
  /** Per-request timeout; tests lower it. */
  timeoutMs: number;
  private readonly pollMs: number;
  private readonly worker: PollingLoop;
  private unsubscribe: (() => void) | undefined;
  private readonly answerHandlers = new Map<string, AnswerHandler>();
  /** Deliveries (of distinct lanes) being sent and recorded right now. */
  private readonly inFlight = new Set<Promise<void>>();
  /** Deliveries finished (recorded or failed) so far in this process. */
  private recorded = 0;
  readonly concurrency: number;
  /** Which endpoints may be reached (targets.ts). */
  readonly targets: WebhookTargets | undefined;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private log?: FastifyBaseLogger,
    opts: DelivererOptions = {},
  ) {
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.pollMs = opts.pollMs ?? 500;
    this.concurrency = Math.max(1, opts.concurrency ?? DEFAULT_CONCURRENCY);
    this.targets = opts.targets;
    this.worker = new PollingLoop(() => this.pump(), {
      pollMs: () => this.pollMs,
      // Idle back-off (issue 15): emits of this process kick the loop; a retry's due time or
      // another process's events are found within IDLE_POLL_MAX_MS.
      maxIdleMs: () => Math.max(this.pollMs, IDLE_POLL_MAX_MS),
      maxPerPass: 100,
      // The store unreachable: one warning per outage (the loop backs off and tries again).
      onError: (err, inARow) => {
        if (!isStoreUnavailable(err)) this.log?.error({ err }, 'webhook loop error');
        else if (inARow === 1) this.log?.warn({ err: (err as Error).message }, 'webhook loop: store unavailable; retrying with back-off');
      },
    });
  }

  useLogger(log: FastifyBaseLogger): void {
    this.log = log;
  }

  /**
   * Let an area act on what the endpoint answers to the deliveries of one event type: the
   * incoming-payments area reads the platform's approval decision from the answer to
   * INCOMING_PAYMENT.PENDING (docs/webhooks.md, "Answers that decide"). One handler per type.
   * A handler that throws is logged and the usual rules apply.
   */
  onDeliveryAnswered(type: string, handler: AnswerHandler): void {
    if (this.answerHandlers.has(type)) throw new Error(`an answer handler for ${type} is already registered`);
    this.answerHandlers.set(type, handler);
  }

  /**
   * Claim up to `max` due lane heads (optionally of one platform) in one short transaction,
   * marking each SENDING with a lease.
   */
  private async claim(max: number, platformId?: string): Promise<Claimed[]> {
    if (max <= 0) return [];
    const realNow = this.clock.nowMs();
    const leaseUntil = realNow + this.timeoutMs + 30_000;
    return this.store.db.transaction().execute(async (trx) => {
      const rows = await findDue(trx, realNow, this.store.kind === 'postgres', platformId, max);
      const out: Claimed[] = [];
      for (const row of rows) {
        const attempts = Number(row.attempts) + 1;
        await markSending(trx, row.id, attempts, leaseUntil, iso(realNow + Number(row.clock_offset_ms)));
        out.push({ row, attempts, leaseUntil, material: await sendMaterial(trx, row) });
      }
      return out;
    });
  }

  /** Start sending a claimed delivery; it leaves the in-flight set (and wakes the loop) when recorded. */
  private launch(c: Claimed): void {
    const p: Promise<void> = this.deliver(c)
      .catch((err: unknown) => this.log?.error({ err, deliveryId: c.row.id }, 'webhook delivery error'))
      .finally(() => {
        this.recorded += 1;
        this.inFlight.delete(p);
        this.worker.kick();
      });
    this.inFlight.add(p);
  }

  /**
   * Send one claimed delivery and record the attempt: the POST with no transaction open, then
   * one short transaction.
   *
   * The attempt is dated at its due time on the platform clock (`next_attempt_ms`, never
   * later than now): a first attempt at its event's time (or when its lane let it go), a
   * retry at its scheduled time. So after a clock advance the attempts that fell due inside
   * the advanced window are sent promptly, in order, each carrying the time it was due, and
   * the schedule continues from those times (docs/webhooks.md "The sandbox clock").
   */
  private async deliver({ row, attempts, leaseUntil, material }: Claimed): Promise<void> {
    const platformNow = this.clock.nowMs() + (await platformOffset(this.store.db, row.platform_id));
    const dueMs = row.status === 'PENDING' && row.next_attempt_ms !== null ? Number(row.next_attempt_ms) : platformNow;
    const startedMs = Math.min(platformNow, dueMs);
    const startedAt = iso(startedMs);

    let outcome: SendOutcome;
    let url = material?.endpoint ?? '';
    // The private key is opened only here, to sign this attempt.
    const privateKey = material?.privateKey ? openWebhookKey(row.platform_id, material.privateKey) : undefined;
    if (!material || !material.endpoint || !privateKey) {
      const error = !material
        ? 'event not found'
        : !material.endpoint
          ? 'no webhook endpoint configured'
          : 'the webhook signing key cannot be opened (sealed with another server secret: PAYMENTS_SECRET_KEY changed?)';
      outcome = { statusCode: null, error, latencyMs: 0, responseBody: null, ok: false };
      url = material?.endpoint ?? '';
    } else {
      outcome = await postSigned(material.endpoint, withTimestamp(material.payload, startedAt), privateKey, this.timeoutMs, this.targets);
    }

    // An area that reads answers to this event type decides first, in its own transaction.
    let verdict: AnswerVerdict;
    const handler = material ? this.answerHandlers.get(row.type) : undefined;
    if (handler) {
      try {
        verdict = await handler({ delivery: row, attempt: attempts, endpoint: material?.endpoint ?? null, outcome });
      } catch (err) {
        this.log?.error({ err, deliveryId: row.id, type: row.type }, 'webhook answer handler failed');
      }
    }
    // A 409 says the endpoint already has this webhook id: done, like a 2xx (never retried).
    const acknowledged = outcome.ok || outcome.statusCode === DUPLICATE_STATUS || verdict === 'DELIVERED';
    const retried = material !== undefined && retryPolicyOf(row.type, material.payload) === 'BACKOFF';

    await this.store.db.transaction().execute(async (trx) => {
      const nowMs = this.clock.nowMs() + (await platformOffset(trx, row.platform_id));
      const at = iso(nowMs);
      // When the lane is free again, on the platform clock: the attempt's (possibly past) start plus its latency.
      const settledMs = Math.min(nowMs, startedMs + outcome.latencyMs);
      const attempt: AttemptRow = {
        id: newId('WebhookAttempt'),
        platform_id: row.platform_id,
        delivery_id: row.id,
        attempt: attempts,
        url,
        started_at: startedAt,
        status_code: outcome.statusCode,
        error: acknowledged ? null : outcome.error,
        latency_ms: outcome.latencyMs,
        response_body: outcome.responseBody,
      };
      await insertAttempt(trx, attempt);
      const base = { last_status_code: outcome.statusCode, last_error: acknowledged ? null : outcome.error, updated_at: at };
      let settled: boolean;
      if (acknowledged && material?.endpoint) {
        settled = await settleDelivery(trx, row.id, leaseUntil, { ...base, status: 'DELIVERED', next_attempt_ms: null, delivered_at: at });
      } else if (material && !material.endpoint) {
        // The endpoint was removed meanwhile: kept, like an event emitted with no endpoint.
        settled = await settleDelivery(trx, row.id, leaseUntil, { ...base, status: 'NO_ENDPOINT', next_attempt_ms: null });
      } else if (verdict === 'FAILED' || !retried || attempts >= MAX_ATTEMPTS) {
        settled = await settleDelivery(trx, row.id, leaseUntil, { ...base, status: 'FAILED', next_attempt_ms: null });
        this.log?.warn({ deliveryId: row.id, attempts, err: outcome.error }, 'webhook delivery failed for good');
      } else {
        // The schedule counts from the attempt's start (its due time), so the gap between two
        // attempts is the wait itself, however long the endpoint took to answer, and retries
        // due inside an advanced window follow one another at their scheduled times.
        const delay = RETRY_SCHEDULE_MS[Math.min(attempts - 1, RETRY_SCHEDULE_MS.length - 1)]!;
        await settleDelivery(trx, row.id, leaseUntil, { ...base, status: 'PENDING', next_attempt_ms: startedMs + delay });
        return;
      }
      if (settled) await releaseLane(trx, row.platform_id, row.resource_id, Number(row.event_seq), settledMs);
    });
  }

  /** One step of the background loop: fill the free slots with due lane heads. */
  private async pump(): Promise<boolean> {
    const free = this.concurrency - this.inFlight.size;
    if (free <= 0) return false; // a delivery that finishes wakes the loop
    const claimed = await this.claim(free);
    for (const c of claimed) this.launch(c);
    return claimed.length === free;
  }

  /**
   * Send every delivery that is due now (optionally of one platform), up to `concurrency`
   * lanes at a time, and wait until they (and any other delivery this process has in flight)
   * are recorded, including the retries that come due meanwhile. Returns how many attempts it
   * started. For tests (no worker runs there) and operators' scripts.
   */
  async runDue(platformId?: string, max = 1_000): Promise<number> {
    let n = 0;
    for (;;) {
      // A delivery recorded while the claim ran may have freed its lane after the claim looked.
      const recordedBefore = this.recorded;
      const claimed = await this.claim(Math.min(this.concurrency - this.inFlight.size, max - n), platformId);
      for (const c of claimed) this.launch(c);
      n += claimed.length;
      if (this.inFlight.size === 0) {
        if (n >= max || (claimed.length === 0 && this.recorded === recordedBefore)) return n;
        continue;
      }
      await Promise.race(this.inFlight);
    }
  }

  /** Wait for the deliveries in flight in this process. */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  start(): void {
    if (this.unsubscribe) return;
    this.unsubscribe = onEventsEmitted(() => this.kick());
    this.worker.start();
  }

  /** Look for due deliveries now (in this process). */
  kick(): void {
    this.worker.kick();
  }

  /** Stop polling and wait for the deliveries in flight (at most their timeout). */
  async stop(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    await this.worker.stop();
    await this.idle();
  }
}

// ---- Operator and sandbox operations ----------------------------------------------------

export interface AttemptView {
  attempt: number;
  url: string;
  startedAt: string;
  statusCode: number | null;
  error: string | null;
  latencyMs: number;
  responseBody: string | null;
}

export interface DeliveryView {
  id: string;
  eventId: string;
  type: string;
  resourceId: string;
  status: string;
  attempts: number;
  nextAttemptAt: string | null;
  lastStatusCode: number | null;
  lastError: string | null;
  deliveredAt: string | null;
  createdAt: string;
  updatedAt: string;
  attemptLog: AttemptView[];
}

function deliveryView(row: DeliveryRow, attempts: AttemptRow[]): DeliveryView {
  return {
    id: row.id,
    eventId: row.event_id,
    type: row.type,
    resourceId: row.resource_id,
    status: row.status,
    attempts: Number(row.attempts),
    nextAttemptAt: row.next_attempt_ms === null ? null : iso(Number(row.next_attempt_ms)),
    lastStatusCode: row.last_status_code === null ? null : Number(row.last_status_code),
    lastError: row.last_error,
    deliveredAt: row.delivered_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    attemptLog: attempts.map((a) => ({
      attempt: Number(a.attempt),
      url: a.url,
      startedAt: a.started_at,
      statusCode: a.status_code === null ? null : Number(a.status_code),
      error: a.error,
      latencyMs: Number(a.latency_ms),
      responseBody: a.response_body,
    })),
  };
}

async function requirePlatform(db: Kysely<DB>, platformId: string) {
  const p = await signingInfo(db, platformId);
  if (!p) throw apiError(404, 'REFERENCE_NOT_FOUND', `Platform ${platformId} not found`);
  return p;
}

export async function listDeliveries(
  db: Kysely<DB>,
  platformId: string,
  q: DeliveryFilter & { limit?: number | undefined; cursor?: string | undefined },
): Promise<Page<DeliveryView>> {
  await requirePlatform(db, platformId);
  const page = await deliveriesPage(db, platformId, q, q);
  const attempts = await attemptsOf(db, page.data.map((r) => r.id));
  const by = new Map<string, AttemptRow[]>();
  for (const a of attempts) by.set(a.delivery_id, [...(by.get(a.delivery_id) ?? []), a]);
  return { ...page, data: page.data.map((r) => deliveryView(r, by.get(r.id) ?? [])) };
}

/** Schedule a new attempt now (the log keeps earlier attempts). */
export async function redeliver(store: Store, clock: Clock, deliverer: WebhookDeliverer | undefined, platformId: string, deliveryId: string): Promise<DeliveryView> {
  const db = store.db;
  const platform = await requirePlatform(db, platformId);
  // A delivery row, or an event without one (no endpoint when it happened): its row is written now.
  const stored = await findDelivery(db, platformId, deliveryId);
  const row = stored ?? (await findRowlessDelivery(db, platformId, deliveryId));
  if (!row) throw apiError(404, 'REFERENCE_NOT_FOUND', `Webhook delivery ${deliveryId} not found`);
  if (!platform.webhook_endpoint) throw apiError(400, 'WEBHOOK_ENDPOINT_NOT_SET', 'The platform has no webhookEndpoint; set one with PATCH /config');
  if (row.status === 'SENDING') throw apiError(409, 'CONFLICT', `Webhook delivery ${deliveryId} is being sent right now`);
  const nowMs = clock.nowMs() + Number(platform.clock_offset_ms);
  const pending = { status: 'PENDING', next_attempt_ms: nowMs, lease_until_ms: null, updated_at: iso(nowMs) } as const;
  // Two redeliveries of a row-less event at once: one inserts, the other updates that row.
  if (stored || !(await insertRowlessDelivery(db, { ...row, ...pending }))) await updateDelivery(db, row.id, pending);
  deliverer?.kick();
  const updated = (await findDelivery(db, platformId, deliveryId))!;
  return deliveryView(updated, await attemptsOf(db, [updated.id]));
}

export async function webhookPublicKey(db: Kysely<DB>, platformId: string): Promise<string> {
  const p = await requirePlatform(db, platformId);
  if (!p.webhook_public_key) throw apiError(500, 'INTERNAL_ERROR', 'The platform has no webhook key');
  return p.webhook_public_key;
}

export interface TestWebhookResult {
  url: string;
  response_status: number;
  response_body?: string;
}

/** Send a signed TEST webhook now and report what the endpoint answered (not stored as an event). */
export async function sendTestWebhook(db: Kysely<DB>, clock: Clock, platformId: string, timeoutMs: number, targets?: WebhookTargets): Promise<TestWebhookResult> {
  const p = await requirePlatform(db, platformId);
  if (!p.webhook_endpoint) throw apiError(400, 'WEBHOOK_ENDPOINT_NOT_SET', 'The platform has no webhookEndpoint; set one with PATCH /config');
  const refused = await targets?.refusalOfUrlResolved(p.webhook_endpoint);
  if (refused) throw apiError(400, 'WEBHOOK_DELIVERY_ERROR', `The webhook endpoint ${refused}; set another with PATCH /config`, { url: p.webhook_endpoint });
  const privateKey = p.webhook_private_key ? openWebhookKey(platformId, p.webhook_private_key) : undefined;
  if (!privateKey) throw apiError(500, 'INTERNAL_ERROR', 'The platform\'s webhook signing key cannot be opened');
  const payload = { id: newId('Webhook'), type: 'TEST', timestamp: iso(clock.nowMs() + Number(p.clock_offset_ms)), data: {} };
  const outcome = await postSigned(p.webhook_endpoint, JSON.stringify(payload), privateKey, timeoutMs);
  if (!outcome.ok) {
    const what = outcome.statusCode !== null ? `answered ${outcome.statusCode}` : outcome.error?.startsWith('refused: ') ? `was ${outcome.error}` : `could not be reached (${outcome.error})`;
    throw apiError(400, 'WEBHOOK_DELIVERY_ERROR', `The webhook endpoint ${what}`, {
      url: p.webhook_endpoint,
      ...(outcome.statusCode !== null ? { responseStatus: outcome.statusCode } : {}),
      ...(outcome.responseBody !== null ? { responseBody: outcome.responseBody } : {}),
      ...(outcome.statusCode === null ? { error: outcome.error } : {}),
      latencyMs: outcome.latencyMs,
    });
  }
  return { url: p.webhook_endpoint, response_status: outcome.statusCode!, ...(outcome.responseBody !== null ? { response_body: outcome.responseBody } : {}) };
}

/**
 * Start-up step: seal every platform's webhook private key with the current sealing key:
 * plaintext keys (rows from before sealing) and keys sealed with an older key this process can
 * still open. Keys that cannot be opened are counted (the server warns: their platforms cannot
 * sign until the secret that sealed them is configured again).
 */
export async function resealWebhookKeys(db: Kysely<DB>, sealer: Sealer): Promise<{ resealed: number; unreadable: number }> {
  let resealed = 0;
  let unreadable = 0;
  for (const row of await webhookKeysNotSealedWith(db, sealer.keyId)) {
    const hex = openWebhookKey(row.id, row.webhook_private_key);
    if (hex === undefined) {
      unreadable += 1;
      continue;
    }
    await replaceWebhookKey(db, row.id, row.webhook_private_key, sealWebhookKey(sealer, row.id, hex));
    resealed += 1;
  }
  return { resealed, unreadable };
}
