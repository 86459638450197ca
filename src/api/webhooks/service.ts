import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { KeyObject } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { PollingLoop } from '../../kernel/polling.js';
import { IDLE_POLL_MAX_MS } from '../../kernel/jobs.js';
import type { Kysely, Transaction } from 'kysely';
import { iso, type Clock } from '../../kernel/clock.js';
import type { Store } from '../../kernel/db/connect.js';
import type { DB } from '../../kernel/db/schema.js';
import { isStoreUnavailable } from '../../kernel/db/unavailable.js';
import { apiError } from '../../kernel/errors.js';
import { onEventsEmitted } from '../../kernel/events.js';
import { type DeliveryOutcome, type DeliveryToSend, sendDelivery } from '../../kernel/webhook-send.js';
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
  claimFollowers,
  type Follower,
  type Restore,
  restoreDeliveries,
  RUN_LENGTH,
  type RunLane,
  classifyLanes,
  CLASSIFY_BATCH,
  insertAttempts,
  lockLaneHeads,
  platformOffsets,
  type ReleasedLane,
  releaseLanes,
  replaceWebhookKey,
  type SendMaterial,
  sendMaterials,
  type Settlement,
  settleDeliveries,
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

/** What one attempt's POST came to (the kernel's DeliveryOutcome, which a send hook also answers). */
export type SendOutcome = DeliveryOutcome;

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

/**
 * How many deliveries one process has in flight at once, each of its own lane. 64 (was 16):
 * a record batch is at most the slots its platform holds, and larger batches cost less per
 * delivery (docs/decisions/webhooks.md, issue 33).
 */
export const DEFAULT_CONCURRENCY = 64;
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
  /** Set when its slot (lane, platform share) is given back: once, by whichever comes first. */
  freed?: boolean;
  /**
   * A lane run (claimFollowers): the lane's next deliveries, claimed with this head under the
   * same lease, sent one after another in this slot as long as each is acknowledged.
   */
  run: Claimed[];
  /** A follower's state before its claim (what it goes back to if it is not sent). */
  prior?: Follower['prior'];
}

/** A run's follower must start before its lease has less than this left beyond the attempt's timeout. */
const RUN_LEASE_MARGIN_MS = 5_000;
/** A run still going hands its attempts' records over at the latest this long after the first of them (real time). */
const RUN_RECORD_EVERY_MS = 250;

/** Slots about to be given back (a batch of records being written): counted as free when picking. */
interface Freeing {
  lanes: Set<string>;
  platforms: Map<string, number>;
}

/** A sent attempt waiting to be recorded (written in a batch with the others that finished meanwhile). */
interface Finished {
  claimed: Claimed;
  /** The run's last attempt: its record gives the run's slot back (the head's). */
  slot: Claimed | undefined;
  /** The run's unsent deliveries, given back in this record's transaction. */
  restore: Claimed[];
  /** False for the entry of an attempt that threw: nothing to record but its `restore` (the run's rest after it). */
  attempted: boolean;
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
  /** Slots held: deliveries launched whose slot is not given back yet (freeSlot). */
  private busy = 0;
  /** Deliveries launched so far in this process. */
  private launched = 0;
  /** While runDue runs: the platform it is for and the launch count it stops at (records claim the next ones within it). */
  private runLimit: { platformId: string | undefined; untilLaunched: number } | undefined;
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

  /** The slots a platform holds, not counting those being given back. */
  private heldBy(platformId: string, freeing: Freeing | undefined): number {
    return (this.platformInFlight.get(platformId) ?? 0) - (freeing?.platforms.get(platformId) ?? 0);
  }

  /** Platforms holding all the slots they may hold. */
  private cappedPlatforms(freeing: Freeing | undefined): string[] {
    const out: string[] = [];
    for (const p of this.platformInFlight.keys()) if (this.heldBy(p, freeing) >= this.capOf(p)) out.push(p);
    return out;
  }

  /**
   * Take up to `max` candidates this process may send now (a lane not in flight, a platform
   * under its cap), leaving the others; `picked` counts per platform what is taken.
   */
  private pick(max: number, picked: Map<string, number>, freeing: Freeing | undefined): Claimable[] {
    const out: Claimable[] = [];
    const lanes = new Set<string>();
    const keep: Claimable[] = [];
    for (const c of this.candidates) {
      const lane = laneKey(c.platform_id, c.resource_id);
      // Its lane is busy: a later look-up (or the release of the lane) finds it again.
      if ((this.lanesInFlight.has(lane) && !freeing?.lanes.has(lane)) || lanes.has(lane)) continue;
      const n = this.heldBy(c.platform_id, freeing) + (picked.get(c.platform_id) ?? 0);
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
    if (!force && this.lookupWait() > 0 && !this.anyPickable()) {
      // Nothing to claim and no look-up allowed yet: no transaction.
      if (this.busy === 0) this.worker.wakeIn(this.lookupWait());
      return [];
    }
    return this.store.db.transaction().execute((trx) => this.claimIn(trx, max, platformId, force, undefined, false));
  }

  /** How long until the next look-up is allowed (≤ 0: now). */
  private lookupWait(): number {
    // A look-up costs about as much as it reads: at most a fifth of the time goes to them.
    const interval = Math.max(LOOKUP_COST_FACTOR * this.lastLookupMs, this.fresh ? MIN_LOOKUP_MS : this.lookupEveryMs);
    return interval - (performance.now() - this.lastLookupAt);
  }

  /** Whether a candidate could be picked now (its lane free, its platform under its cap). */
  private anyPickable(): boolean {
    for (const c of this.candidates) {
      if (!this.lanesInFlight.has(laneKey(c.platform_id, c.resource_id)) && this.heldBy(c.platform_id, undefined) < this.capOf(c.platform_id)) return true;
    }
    return false;
  }

  /**
   * The claim's statements, in the caller's transaction: the claim's own, or the record
   * transaction's (writeRecords), which claims the next deliveries for the slots its batch
   * gives back. `freeing`: those slots; `locked`: the lane-head lock is held already.
   */
  private async claimIn(trx: Transaction<DB>, max: number, platformId: string | undefined, force: boolean, freeing: Freeing | undefined, locked: boolean): Promise<Claimed[]> {
    const realNow = this.clock.nowMs();
    const leaseUntil = realNow + this.timeoutMs + 30_000;
    const postgres = this.store.kind === 'postgres';
    const picked = new Map<string, number>();
    let rows = this.pick(max, picked, freeing);
    const wait = this.lookupWait();
    if (rows.length < max && (force || wait <= 0)) {
      const exclude = [...new Set([...this.cappedPlatforms(freeing), ...[...picked.keys()].filter((p) => this.heldBy(p, freeing) + picked.get(p)! >= this.capOf(p))])];
      this.fresh = false;
      this.lastLookupAt = performance.now();
      const taken = new Set(rows.map((r) => r.id));
      // New deliveries first learn whether they head their lane (a batch of them at most).
      if (!locked) await lockLaneHeads(trx, postgres);
      if ((await classifyLanes(trx)) >= CLASSIFY_BATCH) this.fresh = true;
      this.candidates = (await findDue(trx, realNow, postgres, platformId, PREFETCH, exclude)).filter((r) => !taken.has(r.id));
      this.lastLookupMs = performance.now() - this.lastLookupAt;
      const more = this.pick(max - rows.length, picked, freeing);
      this.lookupEveryMs = more.length > 0 ? MIN_LOOKUP_MS : Math.min(MAX_LOOKUP_MS, this.lookupEveryMs * 2);
      rows = [...rows, ...more];
    } else if (rows.length < max && this.busy === 0) {
      // Nothing in flight to wake the loop: look again when a look-up is allowed.
      this.worker.wakeIn(Math.max(0, wait));
    }
    if (rows.length === 0) return [];
    const byPlatform = new Map<string, string[]>();
    for (const r of rows) {
      const ids = byPlatform.get(r.platform_id);
      if (ids) ids.push(r.id);
      else byPlatform.set(r.platform_id, [r.id]);
    }
    const offsets = await platformOffsets(trx, [...byPlatform.keys()]);
    const claimed: Claimable[] = [];
    for (const [p, ids] of byPlatform) {
      const offset = offsets.get(p) ?? 0;
      for (const row of await claimDue(trx, p, ids, realNow, offset, leaseUntil, iso(realNow + offset))) claimed.push({ ...row, clock_offset_ms: offset });
    }
    // In the order they were due.
    const order = new Map(rows.map((r, i) => [r.id, i]));
    claimed.sort((a, b) => order.get(a.id)! - order.get(b.id)!);
    // Lane runs: each head takes its lane's next due deliveries along, within the attempts
    // runDue may still start (its limit), RUN_LENGTH in all at most.
    let budget = (this.runLimit ? this.runLimit.untilLaunched - this.launched : Infinity) - claimed.length;
    const runLanes: RunLane[] = [];
    const runHeads = new Set<string>();
    const laneSeen = new Set<string>();
    for (const h of claimed) {
      const max = Math.max(0, Math.min(RUN_LENGTH - 1, budget));
      if (max === 0) break;
      // One run per lane (a lane with two marked heads, after a redelivery, runs from the first).
      const lane = laneKey(h.platform_id, h.resource_id);
      if (laneSeen.has(lane)) continue;
      laneSeen.add(lane);
      runHeads.add(h.id);
      budget -= max;
      const offset = Number(h.clock_offset_ms);
      runLanes.push({ platformId: h.platform_id, resourceId: h.resource_id, afterSeq: Number(h.event_seq), dueBy: realNow + offset, at: iso(realNow + offset), max });
    }
    const runs = await claimFollowers(trx, runLanes, realNow, leaseUntil);
    const followers: Follower[] = [];
    for (const f of runs.values()) followers.push(...f);
    const materials = await sendMaterials(trx, [...claimed, ...followers.map((f) => f.row)]);
    const pending = new Set(rows.filter((r) => r.status === 'PENDING').map((r) => r.id));
    return claimed.map((row) => ({
      row,
      wasPending: pending.has(row.id),
      attempts: Number(row.attempts),
      leaseUntil,
      material: materials.get(row.event_id),
      run: (runHeads.has(row.id) ? (runs.get(laneKey(row.platform_id, row.resource_id)) ?? []) : []).map((f) => ({
        row: { ...f.row, clock_offset_ms: row.clock_offset_ms },
        wasPending: f.prior.status === 'PENDING',
        attempts: Number(f.row.attempts),
        leaseUntil,
        material: materials.get(f.row.event_id),
        run: [],
        prior: f.prior,
      })),
    }));
  }

  /** Start sending a claimed delivery; it leaves the in-flight set (and wakes the loop) when recorded. */
  private launch(c: Claimed): void {
    const lane = laneKey(c.row.platform_id, c.row.resource_id);
    const platform = c.row.platform_id;
    this.lanesInFlight.add(lane);
    this.platformInFlight.set(platform, (this.platformInFlight.get(platform) ?? 0) + 1);
    this.busy += 1;
    // The run's attempts count as started now; those it does not send are taken off again.
    this.launched += 1 + c.run.length;
    const p: Promise<void> = this.deliver(c)
      .catch((err: unknown) => {
        if (isStoreUnavailable(err)) this.log?.warn({ err: (err as Error).message, deliveryId: c.row.id }, 'webhook delivery: store unavailable; its lease will lapse');
        else this.log?.error({ err, deliveryId: c.row.id }, 'webhook delivery error');
      })
      .finally(() => {
        this.recorded += 1;
        this.inFlight.delete(p);
        this.freeSlot(c);
        this.worker.kick();
      });
    this.inFlight.add(p);
  }

  /** Give back a delivery's slot (its lane, its platform's share), once. */
  private freeSlot(c: Claimed): void {
    if (c.freed) return;
    c.freed = true;
    this.busy -= 1;
    const lane = laneKey(c.row.platform_id, c.row.resource_id);
    this.lanesInFlight.delete(lane);
    const platform = c.row.platform_id;
    const n = (this.platformInFlight.get(platform) ?? 1) - 1;
    if (n <= 0) this.platformInFlight.delete(platform);
    else this.platformInFlight.set(platform, n);
  }

  /**
   * Whether a record transaction claims the next deliveries for the slots its batch gives
   * back, and within what: with the worker running, any platform; while runDue runs, its
   * platform up to its count. Never while stopping.
   */
  private chainScope(): { platformId: string | undefined; max: number } | undefined {
    if (this.stopping) return undefined;
    if (this.runLimit) return { platformId: this.runLimit.platformId, max: this.runLimit.untilLaunched - this.launched };
    return this.unsubscribe ? { platformId: this.candidateScope, max: Infinity } : undefined;
  }

  /**
   * Send one claimed delivery, and the lane run claimed with it, and record the attempts: each
   * POST with no transaction open, each attempt then written with the others that finished
   * meanwhile, in one short transaction. A run's next delivery is POSTed as soon as the
   * previous one is acknowledged (2xx, 409, or an answer handler's DELIVERED), without waiting
   * for its record: the receiver has acknowledged it, so the order per resource holds. At the
   * first attempt that is not acknowledged (or when stopping, or when the lease could not cover
   * another attempt) the run stops there: its unsent deliveries go back as they were before the
   * claim, in that attempt's record transaction, and the lane's head is then the delivery that
   * failed (its retry) or the first unsent one. The run's last record gives its slot back.
   *
   * The attempt is dated at its due time on the platform clock (`next_attempt_ms`, never
   * later than now): a first attempt at its event's time (or when its lane let it go), a
   * retry at its scheduled time; a run's follower when its lane let it go (the previous
   * attempt's start plus its latency, or its own due time if later). So after a clock advance
   * the attempts that fell due inside the advanced window are sent promptly, in order, each
   * carrying the time it was due, and the schedule continues from those times
   * (docs/webhooks.md "The sandbox clock").
   */
  private async deliver(head: Claimed): Promise<void> {
    const members = [head, ...head.run];
    const records: Array<Promise<void>> = [];
    /** The run's attempts not handed to the record path yet (RUN_RECORD_EVERY_MS after the first at the latest). */
    let held: Finished[] = [];
    let timer: NodeJS.Timeout | undefined;
    const hand = () => {
      clearTimeout(timer);
      timer = undefined;
      if (held.length === 0) return;
      this.toRecord.push(...held);
      held = [];
      this.recordSoon();
    };
    /** When the lane was free again after the previous attempt (platform clock), for a follower. */
    let laneFreeMs: number | undefined;
    // An attempt that throws (the store gone while the send seam reads its rules) ends the run:
    // the records made so far are still written; the rest lapse with the lease and come back.
    let error: unknown;
    let threw = false;
    try {
      for (let i = 0; i < members.length; i++) {
        const claimed = members[i]!;
        const { url, outcome, verdict, startedMs, startedAt } = await this.attempt(claimed, laneFreeMs);
        const acknowledged = claimed.material?.endpoint && (outcome.ok || outcome.statusCode === DUPLICATE_STATUS || verdict === 'DELIVERED');
        const next = members[i + 1];
        const goOn = next !== undefined && acknowledged && !this.stopping && this.clock.nowMs() + this.timeoutMs + RUN_LEASE_MARGIN_MS < next.leaseUntil;
        const restore = goOn ? [] : members.slice(i + 1);
        this.launched -= restore.length;
        records.push(
          new Promise<void>((resolve, reject) => {
            if (held.length === 0) timer = setTimeout(hand, RUN_RECORD_EVERY_MS);
            held.push({ claimed, slot: goOn ? undefined : head, restore, attempted: true, url, outcome, verdict, startedMs, startedAt, resolve, reject });
          }),
        );
        // A run's records go to the record path together, when it ends (one transaction for the
        // run rather than one per step), or RUN_RECORD_EVERY_MS after the first while it goes on.
        if (!goOn) {
          hand();
          break;
        }
        laneFreeMs = startedMs + outcome.latencyMs;
      }
    } catch (err) {
      threw = true;
      error = err;
      // An attempt that threw: the send seam waits for the store itself (sendThroughSeam), so
      // this is an error once its POST had started, a bug, or the store gone while stopping.
      // Whether it reached the receiver is unknown: it is left to its lease (sent again when
      // that lapses, at least once, as before runs), never sent again at once. The run's
      // deliveries after it were not sent: they go back as they were, behind it, through the
      // record path (which waits for the store).
      const rest = members.slice(records.length);
      const back = rest.slice(1);
      this.launched -= back.length;
      if (back.length > 0) {
        records.push(
          new Promise<void>((resolve, reject) => {
            held.push({ claimed: rest[0]!, slot: head, restore: back, attempted: false, url: '', outcome: { statusCode: null, error: null, latencyMs: 0, responseBody: null, ok: false }, verdict: undefined, startedMs: 0, startedAt: '', resolve, reject });
          }),
        );
        this.log?.warn({ err: (err as Error).message, deliveryId: rest[0]!.row.id, givenBack: back.length }, 'webhook delivery: attempt failed; the rest of its run given back');
      }
    } finally {
      hand();
    }
    const results = await Promise.allSettled(records);
    if (threw && !results.every((r) => r.status === 'fulfilled')) throw error;
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /** One attempt's POST (through the send seam) and its answer handler; not recorded yet. */
  private async attempt(claimed: Claimed, laneFreeMs: number | undefined): Promise<{ url: string; outcome: SendOutcome; verdict: AnswerVerdict; startedMs: number; startedAt: string }> {
    const { row, attempts, material } = claimed;
    // The offset was read when the delivery was claimed, a moment ago.
    const platformNow = this.clock.nowMs() + Number(row.clock_offset_ms);
    let dueMs = claimed.wasPending && row.next_attempt_ms !== null ? Number(row.next_attempt_ms) : platformNow;
    if (laneFreeMs !== undefined) dueMs = Math.max(dueMs, laneFreeMs);
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
      const endpoint = material.endpoint;
      const body = withTimestamp(material.payload, startedAt);
      // Through the send seam (kernel/webhook-send.ts): the sandbox's faults on demand may delay,
      // duplicate or reorder it when the platform asked for that; otherwise it just sends.
      outcome = await this.sendThroughSeam(
        { platformId: row.platform_id, deliveryId: row.id, eventId: row.event_id, eventSeq: Number(row.event_seq), type: row.type, resourceId: row.resource_id },
        () => postSigned(endpoint, body, privateKey, this.timeoutMs, this.targets, this.agents),
      );
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
    return { url, outcome, verdict, startedMs, startedAt };
  }

  /**
   * One attempt through the send seam (kernel/webhook-send.ts). The seam may read the store
   * before it sends (the sandbox's faults on demand read the platform's rules, which are not
   * answered from memory while the change watch is cut). When the store cannot answer then,
   * nothing was sent yet: the seam is tried again with the records' back-off until it answers,
   * so a delivery claimed just before an outage goes out moments after the store returns
   * instead of holding its lane until its claim's lease lapses (timeout + 30 s). Once the POST
   * has started, any error is the attempt's own.
   */
  private async sendThroughSeam(d: DeliveryToSend, post: () => Promise<SendOutcome>): Promise<SendOutcome> {
    for (let failures = 1; ; failures += 1) {
      let posted = false;
      try {
        return await sendDelivery(this.store, d, () => ((posted = true), post()));
      } catch (err) {
        if (posted || this.stopping || !isStoreUnavailable(err)) throw err;
        if (failures === 1) this.log?.warn({ err: (err as Error).message, deliveryId: d.deliveryId }, 'webhook delivery: store unavailable before sending; trying again once it answers');
        await new Promise<void>((r) => setTimeout(r, Math.min(RECORD_RETRY_MAX_MS, RECORD_RETRY_MS * 2 ** (failures - 1))));
      }
    }
  }

  /** Write the attempts waiting to be recorded, a batch per transaction, until none waits. */
  private recordSoon(): void {
    if (this.recording) return;
    this.recording = (async () => {
      // The other answers that arrived with this one are read first (the poll phase runs all
      // ready I/O before setImmediate): they join the batch rather than each taking a transaction.
      await new Promise<void>((r) => setImmediate(r));
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

  /**
   * Record attempts in one transaction, a few statements for the whole batch: the attempts'
   * rows in one insert, the deliveries settled one statement per outcome (settleDeliveries),
   * the lanes whose delivery settled for good let go together (releaseLanes).
   */
  private async writeRecords(batch: readonly Finished[]): Promise<void> {
    let next: Claimed[] = [];
    await this.store.db.transaction().execute(async (trx) => {
      next = [];
      await lockLaneHeads(trx, this.store.kind === 'postgres');
      const offsets = await platformOffsets(trx, [...new Set(batch.map((f) => f.claimed.row.platform_id))]);
      const attemptRows: AttemptRow[] = [];
      const settlements: Settlement[] = [];
      /** The lanes to let go when their delivery is settled for good. */
      const lanes = new Map<string, ReleasedLane>();
      for (const { claimed, url, outcome, verdict, startedMs, startedAt, attempted } of batch) {
        if (!attempted) continue;
        const { row, attempts, leaseUntil, material } = claimed;
        // A 409 says the endpoint already has this webhook id: done, like a 2xx (never retried).
        const acknowledged = outcome.ok || outcome.statusCode === DUPLICATE_STATUS || verdict === 'DELIVERED';
        const retried = material !== undefined && retryPolicyOf(row.type, material.payload) === 'BACKOFF';
        const nowMs = this.clock.nowMs() + (offsets.get(row.platform_id) ?? 0);
        const at = iso(nowMs);
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
        const settle = (patch: Settlement['patch']) => settlements.push({ id: row.id, leaseUntilMs: leaseUntil, patch: { ...base, ...patch } });
        if (acknowledged && material?.endpoint) {
          settle({ status: 'DELIVERED', next_attempt_ms: null, delivered_at: at });
        } else if (material && !material.endpoint) {
          // The endpoint was removed meanwhile: kept, like an event emitted with no endpoint.
          settle({ status: 'NO_ENDPOINT', next_attempt_ms: null });
        } else if (verdict === 'FAILED' || !retried || attempts >= MAX_ATTEMPTS) {
          settle({ status: 'FAILED', next_attempt_ms: null });
          this.log?.warn({ deliveryId: row.id, attempts, err: outcome.error }, 'webhook delivery failed for good');
        } else {
          // The schedule counts from the attempt's start (its due time), so the gap between two
          // attempts is the wait itself, however long the endpoint took to answer, and retries
          // due inside an advanced window follow one another at their scheduled times.
          const delay = RETRY_SCHEDULE_MS[Math.min(attempts - 1, RETRY_SCHEDULE_MS.length - 1)]!;
          settle({ status: 'PENDING', next_attempt_ms: startedMs + delay });
          continue;
        }
        // When the lane is free again, on the platform clock: the attempt's (possibly past) start plus its latency.
        lanes.set(row.id, { platformId: row.platform_id, resourceId: row.resource_id, afterSeq: Number(row.event_seq), readyMs: Math.min(nowMs, startedMs + outcome.latencyMs) });
      }
      const settled = await settleDeliveries(trx, settlements);
      // A stopped run's unsent deliveries go back as they were before its claim (not heads),
      // before the lanes are let go: a lane's next open delivery is then its retry or the first of them.
      const restores: Restore[] = batch.flatMap((f) =>
        // Followers only (a run's head is never given back): each has what it was before its claim.
        f.restore.map((c) => ({ id: c.row.id, leaseUntilMs: c.leaseUntil, prior: c.prior! })),
      );
      if (restores.length > 0) await restoreDeliveries(trx, restores);
      // One release per lane (a run's records come together): from its earliest settled
      // delivery, all of them settled by now, and when the last of them let the lane go.
      const perLane = new Map<string, ReleasedLane>();
      for (const [id, lane] of lanes) {
        if (!settled.has(id)) continue;
        const key = laneKey(lane.platformId, lane.resourceId);
        const had = perLane.get(key);
        perLane.set(key, had ? { ...had, afterSeq: Math.min(had.afterSeq, lane.afterSeq), readyMs: Math.max(had.readyMs, lane.readyMs) } : lane);
      }
      const released = await releaseLanes(trx, [...perLane.values()]);
      await insertAttempts(trx, attemptRows);
      // The lanes' next deliveries are their heads now: candidates at once, without a look-up.
      if (released.length > 0) {
        const realNow = this.clock.nowMs();
        const heads = released.filter(
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
      // The slots this batch gives back are filled in the same transaction (issue 33): a busy
      // lane's next delivery is claimed where its previous one is settled, one transaction per
      // step instead of two, and a batch of records claims as many as it frees.
      // Only a run's last record gives its slot back.
      const scope = this.chainScope();
      if (scope && scope.platformId === this.candidateScope) {
        const freeing: Freeing = { lanes: new Set(), platforms: new Map() };
        for (const { slot } of batch) {
          if (!slot || slot.freed) continue;
          freeing.lanes.add(laneKey(slot.row.platform_id, slot.row.resource_id));
          freeing.platforms.set(slot.row.platform_id, (freeing.platforms.get(slot.row.platform_id) ?? 0) + 1);
        }
        const frees = [...freeing.platforms.values()].reduce((a, b) => a + b, 0);
        const max = Math.min(this.concurrency - this.busy + frees, scope.max);
        if (max > 0) next = await this.claimIn(trx, max, scope.platformId, false, freeing, true);
      }
    });
    // Committed: the batch's slots go back and the deliveries claimed for them start.
    for (const { slot } of batch) if (slot) this.freeSlot(slot);
    for (const c of next) this.launch(c);
  }

  /** One step of the background loop: fill the free slots with due lane heads. */
  private async pump(): Promise<boolean> {
    const free = this.concurrency - this.busy;
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
    const launchedBefore = this.launched;
    const started = () => this.launched - launchedBefore;
    // The records written meanwhile claim the next deliveries within the same bounds.
    this.runLimit = { platformId, untilLaunched: launchedBefore + max };
    try {
      for (;;) {
        // A delivery recorded while the claim ran may have freed its lane after the claim looked.
        const recordedBefore = this.recorded;
        const claimed = await this.claim(Math.min(this.concurrency - this.busy, max - started()), platformId, this.inFlight.size === 0);
        for (const c of claimed) this.launch(c);
        if (this.inFlight.size === 0) {
          if (started() >= max || (claimed.length === 0 && this.recorded === recordedBefore)) return started();
          continue;
        }
        await Promise.race(this.inFlight);
      }
    } finally {
      this.runLimit = undefined;
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
  // Not classified (lane_head null): the deliverer's next look-up decides whether it heads its lane.
  const pending = { status: 'PENDING', next_attempt_ms: nowMs, lease_until_ms: null, lane_head: null, updated_at: iso(nowMs) } as const;
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
