import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { KeyObject } from 'node:crypto';
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
import { openWebhookKey, sealWebhookKey, SIGNATURE_HEADER, SIGNATURE_HEADER_ALIAS, signWebhookBody, webhookSigningKey } from '../../kernel/webhook-keys.js';
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
  claimDue,
  claimables,
  insertAttempts,
  platformOffsets,
  releaseLane,
  replaceWebhookKey,
  type SendMaterial,
  sendMaterials,
  settleDelivery,
  signingInfo,
  updateDelivery,
  webhookKeysNotSealedWith,
} from './store.js';
import { portOf, TargetRefused, type WebhookTargets } from './targets.js';

// Webhook delivery. Every event gets a delivery row in the event's own transaction
// (src/kernel/events.ts). A worker claims due deliveries in a short transaction, POSTs them
// with no transaction open (kept-alive connections per endpoint), and records the attempts
// that finished meanwhile in a second short transaction: a slow endpoint never holds the
// database (on SQLite: its single connection). A 2xx acknowledges,
// and so does a 409 (the endpoint already has this webhook id: no retry); anything else (3xx
// included: redirects are not followed) is retried on RETRY_SCHEDULE_MS of the platform's
// sandbox clock (exponential backoff capped at 30 minutes, for 7 days), then the delivery is
// FAILED. TEST webhooks and INCOMING_PAYMENT webhooks of a PENDING payment are never
// retried (retryPolicyOf). Deliveries go out in lanes, one per resource (the transaction of a
// payment event, the account of a balance event): in event order within a lane, up to
// `concurrency` lanes in flight at once, so a slow lane holds no other; one platform holds
// at most `platformCap` of them (half), and one while its endpoint gives no answer, so a
// hanging endpoint holds no other platform (docs/reliability.md, issue 33). State lives in
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
  /** No HTTP answer at all: the attempt timed out or the connection failed (not a refused target). */
  noAnswer?: boolean;
}

/** How long a kept-alive connection to an endpoint may stay idle (less when the endpoint's Keep-Alive header says less). */
export const KEEP_ALIVE_IDLE_MS = 4_000;

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
 * address a name resolves to, and the connection goes to the checked address. With
 * `agents` (the deliverer's), connections are kept alive per endpoint and reused; each new
 * connection resolves the name again through the same check. A request that fails on a
 * reused connection before any answer (the endpoint closed it while idle) is sent again on
 * a new one, once.
 */
export async function postSigned(
  url: string,
  body: string,
  privateKeyHex: string | KeyObject,
  timeoutMs: number,
  targets?: WebhookTargets,
  agents?: { http: HttpAgent; https: HttpsAgent },
): Promise<SendOutcome> {
  const started = performance.now();
  const latency = () => Math.round(performance.now() - started);
  const failed = (error: string, noAnswer = false): SendOutcome => ({ statusCode: null, error, latencyMs: latency(), responseBody: null, ok: false, ...(noAnswer ? { noAnswer } : {}) });
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
  const payload = Buffer.from(body, 'utf8');
  const headers = {
    'content-type': 'application/json',
    'content-length': payload.length,
    'user-agent': USER_AGENT,
    ...signatureHeaders(signWebhookBody(body, privateKeyHex)),
  };
  const https = target.protocol === 'https:';
  const agent = agents ? (https ? agents.https : agents.http) : false;
  const send = (retryOnStale: boolean) =>
    new Promise<{ status: number; text: string | null }>((resolve, reject) => {
      const req = (https ? httpsRequest : httpRequest)(target, {
        method: 'POST',
        headers,
        signal,
        agent,
        ...(targets ? { lookup: targets.lookupFor(portOf(target)) } : {}),
      });
      let answered = false;
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (retryOnStale && !answered && req.reusedSocket && !signal.aborted && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) {
          send(false).then(resolve, reject);
        } else reject(err);
      });
      req.on('response', (res) => {
        answered = true;
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
  try {
    const { status, text } = await send(agent !== false);
    const answer = text === null ? null : text.slice(0, ANSWER_BODY_LIMIT);
    const ok = status >= 200 && status < 300;
    const kept = answer === null ? null : ok ? answer.slice(0, RESPONSE_BODY_LIMIT) : excerpt(answer, ERROR_EXCERPT_BYTES);
    return { statusCode: status, error: ok ? null : `HTTP ${status}`, latencyMs: latency(), responseBody: kept, answerBody: answer, ok };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (err instanceof TargetRefused) return failed(`refused: ${e.message}`);
    if (signal.aborted) return failed(`timeout after ${timeoutMs} ms`, true);
    return failed(e.code ? `${e.code}: ${e.message}` : e.message || String(err), true);
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
  /** Deliveries of one platform in flight at once at most (default: half the slots). */
  platformCap?: number;
  /** Which endpoints may be reached (targets.ts); absent: any. */
  targets?: WebhookTargets;
}

/** How many deliveries one process has in flight at once, each of its own lane. */
export const DEFAULT_CONCURRENCY = 16;
/** The slots one platform may hold by default: half of them, so another platform always has the rest. */
export function defaultPlatformCap(concurrency: number): number {
  return Math.max(1, Math.floor(concurrency / 2));
}
/**
 * The slots of a platform whose endpoint gives no HTTP answer (its latest attempt timed out
 * or could not connect), until one of its attempts is answered again (whatever the status).
 */
export const UNRESPONSIVE_CAP = 1;
/** Due lane heads looked up at once; they are claimed a few at a time as slots free up. */
export const PREFETCH = 256;
/** The shortest interval between two look-ups while work is coming in; without new work it doubles up to the longest. */
const MIN_LOOKUP_MS = 20;
const MAX_LOOKUP_MS = 1_000;
/** Look-ups wait at least this many times as long as the last one took. */
const LOOKUP_COST_FACTOR = 4;
/** Recorded attempts written in one transaction at most. */
const RECORD_BATCH = 200;
/** Back-off of recording attempts while the store is unavailable: 250 ms doubling up to 2 s. */
const RECORD_RETRY_MS = 250;
const RECORD_RETRY_MAX_MS = 2_000;

interface Claimed {
  row: Claimable;
  /** Whether it was PENDING when claimed (else a SENDING row whose lease had expired). */
  wasPending: boolean;
  attempts: number;
  leaseUntil: number;
  material: SendMaterial | undefined;
}

/** A sent attempt waiting to be recorded (written in a batch with the others that finished meanwhile). */
interface Finished {
  claimed: Claimed;
  url: string;
  outcome: SendOutcome;
  verdict: AnswerVerdict;
  startedMs: number;
  startedAt: string;
  resolve: () => void;
  reject: (err: unknown) => void;
}

const laneKey = (platformId: string, resourceId: string) => `${platformId}\n${resourceId}`;

export class WebhookDeliverer {
  /** Per-request timeout; tests lower it. */
  timeoutMs: number;
  private readonly pollMs: number;
  private readonly worker: PollingLoop;
  private unsubscribe: (() => void) | undefined;
  private readonly answerHandlers = new Map<string, AnswerHandler>();
  /** Deliveries (of distinct lanes) being sent and recorded right now. */
  private readonly inFlight = new Set<Promise<void>>();
  /** The lanes of those deliveries, and how many each platform has. */
  private readonly lanesInFlight = new Set<string>();
  private readonly platformInFlight = new Map<string, number>();
  /** Platforms whose latest attempt got no HTTP answer (timeout, connection error). */
  private readonly unresponsive = new Set<string>();
  /** Due lane heads found by the last look-up (and heads that settled deliveries let go), not claimed yet. */
  private candidates: Claimable[] = [];
  /** The platform the candidates were looked up for (undefined: all). */
  private candidateScope: string | undefined;
  private lastLookupAt = -Infinity;
  private lookupEveryMs = MIN_LOOKUP_MS;
  /** How long the last look-up took. */
  private lastLookupMs = 0;
  /** New events since the last look-up. */
  private fresh = true;
  /** Attempts sent and waiting to be recorded, and the batch being written. */
  private readonly toRecord: Finished[] = [];
  private recording: Promise<void> | undefined;
  /** Failed attempts in a row to record while the store is unavailable (0: it answers). */
  private recordOutage = 0;
  /** Set by stop(): records that cannot be written are then given up (their leases lapse). */
  private stopping = false;
  /** Deliveries finished (recorded or failed) so far in this process. */
  private recorded = 0;
  /** Keep-alive connections per endpoint (each new connection goes through the targets' check). */
  private readonly agents = {
    http: new HttpAgent({ keepAlive: true, timeout: KEEP_ALIVE_IDLE_MS, maxFreeSockets: 64, scheduling: 'lifo' }),
    https: new HttpsAgent({ keepAlive: true, timeout: KEEP_ALIVE_IDLE_MS, maxFreeSockets: 64, scheduling: 'lifo' }),
  };
  /** Opened signing keys by platform, with the sealed value they were opened from. */
  private readonly signingKeys = new Map<string, { sealed: string; key: KeyObject }>();
  readonly concurrency: number;
  readonly platformCap: number;
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
    this.platformCap = Math.max(1, Math.min(this.concurrency, opts.platformCap ?? defaultPlatformCap(this.concurrency)));
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

  /** A platform's signing key, opened from its sealed value (again only when that changes). */
  private signingKeyOf(platformId: string, sealed: string): KeyObject | undefined {
    const cached = this.signingKeys.get(platformId);
    if (cached?.sealed === sealed) return cached.key;
    const hex = openWebhookKey(platformId, sealed);
    if (hex === undefined) return undefined;
    const key = webhookSigningKey(hex);
    if (this.signingKeys.size >= 10_000) this.signingKeys.clear();
    this.signingKeys.set(platformId, { sealed, key });
    return key;
  }

  /** How many slots a platform may hold now: its share, or one while its endpoint does not answer. */
  private capOf(platformId: string): number {
    return this.unresponsive.has(platformId) ? UNRESPONSIVE_CAP : this.platformCap;
  }

  /** Platforms holding all the slots they may hold. */
  private cappedPlatforms(): string[] {
    const out: string[] = [];
    for (const [p, n] of this.platformInFlight) if (n >= this.capOf(p)) out.push(p);
    return out;
  }

  /**
   * Take up to `max` candidates this process may send now (a lane not in flight, a platform
   * under its cap), leaving the others; `picked` counts per platform what is taken.
   */
  private pick(max: number, picked: Map<string, number>): Claimable[] {
    const out: Claimable[] = [];
    const lanes = new Set<string>();
    const keep: Claimable[] = [];
    for (const c of this.candidates) {
      const lane = laneKey(c.platform_id, c.resource_id);
      if (this.lanesInFlight.has(lane) || lanes.has(lane)) continue; // its lane is busy: a later look-up finds it again
      const n = (this.platformInFlight.get(c.platform_id) ?? 0) + (picked.get(c.platform_id) ?? 0);
      if (out.length >= max || n >= this.capOf(c.platform_id)) {
        keep.push(c);
        continue;
      }
      out.push(c);
      lanes.add(lane);
      picked.set(c.platform_id, (picked.get(c.platform_id) ?? 0) + 1);
    }
    this.candidates = keep;
    return out;
  }

  /**
   * Claim up to `max` due lane heads (optionally of one platform) in one short transaction,
   * marking each SENDING with a lease. Due heads are looked up PREFETCH at a time
   * (findDue), no more often than every MIN_LOOKUP_MS while events come in (less often while
   * look-ups find nothing new), unless `force`; a platform at its cap is left out of the
   * look-up, so its rows never fill the batch.
   */
  private async claim(max: number, platformId?: string, force = false): Promise<Claimed[]> {
    if (max <= 0) return [];
    if (this.candidateScope !== platformId) {
      this.candidates = [];
      this.candidateScope = platformId;
      force = true;
    }
    const realNow = this.clock.nowMs();
    const leaseUntil = realNow + this.timeoutMs + 30_000;
    const postgres = this.store.kind === 'postgres';
    return this.store.db.transaction().execute(async (trx) => {
      const picked = new Map<string, number>();
      let rows = this.pick(max, picked);
      const since = performance.now() - this.lastLookupAt;
      // A look-up reads every due row (a long backlog makes it slow): at most a fifth of the time goes to them.
      const interval = Math.max(LOOKUP_COST_FACTOR * this.lastLookupMs, this.fresh ? MIN_LOOKUP_MS : this.lookupEveryMs);
      if (rows.length < max && (force || since >= interval)) {
        const exclude = [...new Set([...this.cappedPlatforms(), ...[...picked.keys()].filter((p) => (this.platformInFlight.get(p) ?? 0) + picked.get(p)! >= this.capOf(p))])];
        this.fresh = false;
        this.lastLookupAt = performance.now();
        const taken = new Set(rows.map((r) => r.id));
        this.candidates = (await findDue(trx, realNow, postgres, platformId, PREFETCH, exclude)).filter((r) => !taken.has(r.id));
        this.lastLookupMs = performance.now() - this.lastLookupAt;
        const more = this.pick(max - rows.length, picked);
        this.lookupEveryMs = more.length > 0 ? MIN_LOOKUP_MS : Math.min(MAX_LOOKUP_MS, this.lookupEveryMs * 2);
        rows = [...rows, ...more];
      } else if (rows.length < max && this.inFlight.size === 0) {
        // Nothing in flight to wake the loop: look again when a look-up is allowed.
        this.worker.wakeIn(Math.max(0, interval - since));
      }
      if (rows.length === 0) return [];
      const byPlatform = new Map<string, string[]>();
      for (const r of rows) byPlatform.set(r.platform_id, [...(byPlatform.get(r.platform_id) ?? []), r.id]);
      const offsets = await platformOffsets(trx, [...byPlatform.keys()]);
      const claimed: Claimable[] = [];
      for (const [p, ids] of byPlatform) {
        const offset = offsets.get(p) ?? 0;
        for (const row of await claimDue(trx, p, ids, realNow, offset, leaseUntil, iso(realNow + offset))) claimed.push({ ...row, clock_offset_ms: offset });
      }
      // In the order they were due.
      const order = new Map(rows.map((r, i) => [r.id, i]));
      claimed.sort((a, b) => order.get(a.id)! - order.get(b.id)!);
      const materials = await sendMaterials(trx, claimed);
      const pending = new Set(rows.filter((r) => r.status === 'PENDING').map((r) => r.id));
      return claimed.map((row) => ({ row, wasPending: pending.has(row.id), attempts: Number(row.attempts), leaseUntil, material: materials.get(row.event_id) }));
    });
  }

  /** Start sending a claimed delivery; it leaves the in-flight set (and wakes the loop) when recorded. */
  private launch(c: Claimed): void {
    const lane = laneKey(c.row.platform_id, c.row.resource_id);
    const platform = c.row.platform_id;
    this.lanesInFlight.add(lane);
    this.platformInFlight.set(platform, (this.platformInFlight.get(platform) ?? 0) + 1);
    const p: Promise<void> = this.deliver(c)
      .catch((err: unknown) => {
        if (isStoreUnavailable(err)) this.log?.warn({ err: (err as Error).message, deliveryId: c.row.id }, 'webhook delivery: store unavailable; its lease will lapse');
        else this.log?.error({ err, deliveryId: c.row.id }, 'webhook delivery error');
      })
      .finally(() => {
        this.recorded += 1;
        this.inFlight.delete(p);
        this.lanesInFlight.delete(lane);
        const n = (this.platformInFlight.get(platform) ?? 1) - 1;
        if (n <= 0) this.platformInFlight.delete(platform);
        else this.platformInFlight.set(platform, n);
        this.worker.kick();
      });
    this.inFlight.add(p);
  }

  /**
   * Send one claimed delivery and record the attempt: the POST with no transaction open, then
   * the attempt is written with the others that finished meanwhile, in one short transaction.
   *
   * The attempt is dated at its due time on the platform clock (`next_attempt_ms`, never
   * later than now): a first attempt at its event's time (or when its lane let it go), a
   * retry at its scheduled time. So after a clock advance the attempts that fell due inside
   * the advanced window are sent promptly, in order, each carrying the time it was due, and
   * the schedule continues from those times (docs/webhooks.md "The sandbox clock").
   */
  private async deliver(claimed: Claimed): Promise<void> {
    const { row, attempts, material } = claimed;
    // The offset was read when the delivery was claimed, a moment ago.
    const platformNow = this.clock.nowMs() + Number(row.clock_offset_ms);
    const dueMs = claimed.wasPending && row.next_attempt_ms !== null ? Number(row.next_attempt_ms) : platformNow;
    const startedMs = Math.min(platformNow, dueMs);
    const startedAt = iso(startedMs);

    let outcome: SendOutcome;
    let url = material?.endpoint ?? '';
    // The private key is opened only here, to sign (kept opened while its sealed value is the same).
    const privateKey = material?.privateKey ? this.signingKeyOf(row.platform_id, material.privateKey) : undefined;
    if (!material || !material.endpoint || !privateKey) {
      const error = !material
        ? 'event not found'
        : !material.endpoint
          ? 'no webhook endpoint configured'
          : 'the webhook signing key cannot be opened (sealed with another server secret: PAYMENTS_SECRET_KEY changed?)';
      outcome = { statusCode: null, error, latencyMs: 0, responseBody: null, ok: false };
      url = material?.endpoint ?? '';
    } else {
      outcome = await postSigned(material.endpoint, withTimestamp(material.payload, startedAt), privateKey, this.timeoutMs, this.targets, this.agents);
      // An endpoint that gives no answer holds one slot until it answers again.
      if (outcome.statusCode !== null) this.unresponsive.delete(row.platform_id);
      else if (outcome.noAnswer) this.unresponsive.add(row.platform_id);
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
    await new Promise<void>((resolve, reject) => {
      this.toRecord.push({ claimed, url, outcome, verdict, startedMs, startedAt, resolve, reject });
      this.recordSoon();
    });
  }

  /** Write the attempts waiting to be recorded, a batch per transaction, until none waits. */
  private recordSoon(): void {
    if (this.recording) return;
    this.recording = (async () => {
      while (this.toRecord.length > 0) {
        const batch = this.toRecord.splice(0, RECORD_BATCH);
        try {
          await this.writeRecords(batch);
          this.recordOutage = 0;
          for (const f of batch) f.resolve();
        } catch (err) {
          if (isStoreUnavailable(err) && !this.stopping) {
            // The attempts were made; only their records wait for the store (issue 33). They
            // are written once it answers again, so their lanes go on within moments of its
            // return instead of waiting for the claims' leases (timeout + 30 s) to lapse.
            this.toRecord.unshift(...batch);
            this.recordOutage += 1;
            if (this.recordOutage === 1) this.log?.warn({ err: (err as Error).message }, 'webhook attempts: store unavailable; recording them once it answers');
            await new Promise<void>((r) => setTimeout(r, Math.min(RECORD_RETRY_MAX_MS, RECORD_RETRY_MS * 2 ** (this.recordOutage - 1))));
            continue;
          }
          if (batch.length === 1) {
            batch[0]!.reject(err);
            continue;
          }
          // One at a time, so one bad record fails only itself.
          for (const f of batch) {
            try {
              await this.writeRecords([f]);
              f.resolve();
            } catch (e) {
              f.reject(e);
            }
          }
        }
      }
    })().finally(() => {
      this.recording = undefined;
      if (this.toRecord.length > 0) this.recordSoon();
    });
  }

  /** Record attempts in one transaction: each attempt's row, its delivery settled, its lane let go. */
  private async writeRecords(batch: readonly Finished[]): Promise<void> {
    const released: string[] = [];
    await this.store.db.transaction().execute(async (trx) => {
      const offsets = await platformOffsets(trx, [...new Set(batch.map((f) => f.claimed.row.platform_id))]);
      const attemptRows: AttemptRow[] = [];
      for (const { claimed, url, outcome, verdict, startedMs, startedAt } of batch) {
        const { row, attempts, leaseUntil, material } = claimed;
        // A 409 says the endpoint already has this webhook id: done, like a 2xx (never retried).
        const acknowledged = outcome.ok || outcome.statusCode === DUPLICATE_STATUS || verdict === 'DELIVERED';
        const retried = material !== undefined && retryPolicyOf(row.type, material.payload) === 'BACKOFF';
        const nowMs = this.clock.nowMs() + (offsets.get(row.platform_id) ?? 0);
        const at = iso(nowMs);
        // When the lane is free again, on the platform clock: the attempt's (possibly past) start plus its latency.
        const settledMs = Math.min(nowMs, startedMs + outcome.latencyMs);
        attemptRows.push({
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
        });
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
          continue;
        }
        if (settled) {
          const next = await releaseLane(trx, row.platform_id, row.resource_id, Number(row.event_seq), settledMs);
          if (next !== undefined) released.push(next);
        }
      }
      await insertAttempts(trx, attemptRows);
    });
    // The lanes' next deliveries are their heads now: candidates at once, without a look-up.
    if (released.length > 0) {
      const realNow = this.clock.nowMs();
      const heads = (await claimables(this.store.db, released)).filter(
        (r) =>
          r.status === 'PENDING' &&
          r.next_attempt_ms !== null &&
          Number(r.next_attempt_ms) <= realNow + Number(r.clock_offset_ms) &&
          (this.candidateScope === undefined || this.candidateScope === r.platform_id),
      );
      if (heads.length > 0) {
        const ids = new Set(heads.map((h) => h.id));
        this.candidates = [...heads, ...this.candidates.filter((c) => !ids.has(c.id))];
      }
    }
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
      const claimed = await this.claim(Math.min(this.concurrency - this.inFlight.size, max - n), platformId, this.inFlight.size === 0);
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
    this.fresh = true;
    this.worker.kick();
  }

  /** Stop polling and wait for the deliveries in flight (at most their timeout). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    await this.worker.stop();
    await this.idle();
    this.agents.http.destroy();
    this.agents.https.destroy();
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
