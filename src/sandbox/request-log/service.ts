import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppDeps } from '../../kernel/deps.js';
import { iso } from '../../kernel/clock.js';
import type { Store } from '../../kernel/db/connect.js';

// The request log: the last N requests of each platform, in memory (never on the API's
// write path to the store), with their bodies, secrets redacted. The dashboard, `GET
// /sandbox/requests` and `payments-service requests tail` read it. Also the per-route request
// counters and latency histograms `GET /metrics` reports.

export const REQUEST_LOG_SIZE = 200;
/** Bodies longer than this (characters of JSON) are kept cut, marked `truncated`. */
export const BODY_EXCERPT_CHARS = 16_384;
export const REDACTED = '[REDACTED]';

/**
 * The header the dashboard's script sends on every request it makes (`X-Payments-Dashboard:
 * 1`): the log marks those entries `source: "dashboard"`. The dashboard's reads (it reads the
 * open page again every 3 seconds) are kept apart and hidden unless asked for, so they never
 * push the platform's own calls out of the log (docs/dashboard.md, "Request log").
 */
export const DASHBOARD_HEADER = 'x-payments-dashboard';

/** Who made a logged request: the platform's own client, or the dashboard (DASHBOARD_HEADER). */
export type RequestSource = 'api' | 'dashboard';

/** Field names whose values never enter the log. */
const SECRET_KEY = /secret|password|passcode|passphrase|^pin$|cvv|cvc|private|apikey|api_key|accesstoken|refreshtoken|authorization|signature|^otp$|cardnumber|^pan$|embedurl|seed|mnemonic/i;

export interface LoggedRequest {
  id: number;
  at: string;
  platformId: string;
  source: RequestSource;
  method: string;
  path: string;
  route: string | null;
  status: number;
  latencyMs: number;
  idempotencyKey: string | null;
  replayed: boolean;
  requestBody: unknown;
  responseBody: unknown;
  truncated: boolean;
  /** The sandbox fault injected into it (src/sandbox/faults), or null. */
  fault: { ruleId: string; kind: string } | null;
}

/** A copy of a JSON value with every secret-named field's value replaced. */
export function redact(value: unknown, depth = 0): unknown {
  if (depth > 32) return REDACTED;
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) out[k] = SECRET_KEY.test(k) && v !== null && v !== undefined ? REDACTED : redact(v, depth + 1);
    return out;
  }
  return value;
}

/**
 * What `add` takes: the answer's body as the JSON text sent, and the time as a number (the
 * platform's clock, ms), both made a LoggedRequest when read. `add` keeps the object itself.
 */
export type NewLoggedRequest = Omit<LoggedRequest, 'id' | 'at' | 'responseBody' | 'truncated'> & { atMs: number; responseText: string | undefined };

interface Stored extends Omit<LoggedRequest, 'at' | 'responseBody' | 'truncated'> {
  atMs: number;
  responseText: string | undefined;
  /** The redacted body, made when first read. */
  view?: { responseBody: unknown; truncated: boolean };
}

/** Texts longer than this are redacted when logged, not kept whole until read. */
const KEEP_TEXT_CHARS = 262_144;

/** The dashboard's reads: kept in rings of their own, so they never take a platform call's place. */
const isDashboardRead = (e: { source: RequestSource; method: string }): boolean => e.source === 'dashboard' && (e.method === 'GET' || e.method === 'HEAD');

export interface RequestLogQuery {
  after?: number | undefined;
  limit?: number | undefined;
  /** Also list the dashboard's reads (hidden by default). */
  includeDashboardReads?: boolean | undefined;
}

/**
 * The last `size` entries, oldest overwritten: O(1) per entry (issue 35: the array's
 * splice moved all 200 entries on every request once it was full). The order of `items`
 * is not the entries' order; `list` sorts by id.
 */
class Ring {
  readonly items: Stored[] = [];
  /** Where the next entry goes once full: the oldest one. */
  private next = 0;
  constructor(private readonly size: number) {}

  push(e: Stored): void {
    if (this.items.length < this.size) {
      this.items.push(e);
      return;
    }
    this.items[this.next] = e;
    this.next = this.next + 1 === this.size ? 0 : this.next + 1;
  }
}

export class RequestLog {
  private seq = 0;
  private readonly byPlatform = new Map<string, Ring>();
  /** The dashboard's reads, per platform, in rings of the same size. */
  private readonly dashboardReads = new Map<string, Ring>();
  constructor(readonly size = REQUEST_LOG_SIZE) {}

  /**
   * Log a request. Its answer is kept as the text sent and redacted when the log is read
   * (issue 15: parsing, redacting and serialising every answer again cost a list of 20
   * transactions about a third of its time; most entries are never read).
   */
  add(entry: NewLoggedRequest): void {
    // The entry itself, numbered (no copy: the hook made it for the log).
    const e = entry as NewLoggedRequest & { id: number } as Stored;
    e.id = ++this.seq;
    if (entry.responseText !== undefined && entry.responseText.length > KEEP_TEXT_CHARS) {
      e.view = responseView(entry.responseText);
      e.responseText = undefined;
    }
    const rings = isDashboardRead(entry) ? this.dashboardReads : this.byPlatform;
    let ring = rings.get(entry.platformId);
    if (!ring) rings.set(entry.platformId, (ring = new Ring(this.size)));
    ring.push(e);
  }

  /** Newest first; `after` (an id) keeps only later entries, for tails; the dashboard's reads only when asked for. */
  list(platformId: string | null, opts: RequestLogQuery = {}): LoggedRequest[] {
    const of = (rings: Map<string, Ring>) => (platformId === null ? [...rings.values()].flatMap((r) => r.items) : (rings.get(platformId)?.items ?? []));
    const all = opts.includeDashboardReads ? [...of(this.byPlatform), ...of(this.dashboardReads)] : of(this.byPlatform);
    const after = opts.after ?? 0;
    return all
      .filter((e) => e.id > after)
      .sort((a, b) => b.id - a.id)
      .slice(0, opts.limit ?? this.size)
      .map(viewOf);
  }

  clear(platformId: string): void {
    this.byPlatform.delete(platformId);
    this.dashboardReads.delete(platformId);
  }

  clearAll(): void {
    this.byPlatform.clear();
    this.dashboardReads.clear();
  }
}

const logs = new WeakMap<Store, RequestLog>();

/** The request log of the app that serves this store. */
export function requestLogOf(store: Store): RequestLog {
  let log = logs.get(store);
  if (!log) logs.set(store, (log = new RequestLog()));
  return log;
}

// ---- Metrics -------------------------------------------------------------------------------

export const LATENCY_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

interface RouteStats {
  counts: Map<number, number>;
  buckets: number[];
  sum: number;
  count: number;
}

export class Metrics {
  readonly routes = new Map<string, RouteStats>();
  observe(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${route}`;
    let s = this.routes.get(key);
    if (!s) this.routes.set(key, (s = { counts: new Map(), buckets: LATENCY_BUCKETS_S.map(() => 0), sum: 0, count: 0 }));
    s.counts.set(status, (s.counts.get(status) ?? 0) + 1);
    for (let i = 0; i < LATENCY_BUCKETS_S.length; i++) if (seconds <= LATENCY_BUCKETS_S[i]!) s.buckets[i]!++;
    s.sum += seconds;
    s.count++;
  }
}

const metrics = new WeakMap<Store, Metrics>();
export function metricsOf(store: Store): Metrics {
  let m = metrics.get(store);
  if (!m) metrics.set(store, (m = new Metrics()));
  return m;
}

declare module 'fastify' {
  interface FastifyRequest {
    loggedResponse?: string;
    /** Set by the sandbox's faults on demand (src/sandbox/faults) when a rule took this request. */
    sandboxFault?: { ruleId: string; kind: string };
  }
}

function parseJson(text: string | undefined): { value: unknown; truncated: boolean } {
  if (text === undefined || text === '') return { value: null, truncated: false };
  try {
    return { value: JSON.parse(text) as unknown, truncated: false };
  } catch {
    return { value: text.length > BODY_EXCERPT_CHARS ? text.slice(0, BODY_EXCERPT_CHARS) : text, truncated: text.length > BODY_EXCERPT_CHARS };
  }
}

/** An answer's text as the log shows it: parsed, secrets redacted, cut past BODY_EXCERPT_CHARS. */
function responseView(text: string | undefined): { responseBody: unknown; truncated: boolean } {
  const response = parseJson(text);
  let truncated = response.truncated;
  let responseBody = redact(response.value);
  const redactedText = JSON.stringify(responseBody) ?? '';
  if (redactedText.length > BODY_EXCERPT_CHARS) {
    responseBody = redactedText.slice(0, BODY_EXCERPT_CHARS);
    truncated = true;
  }
  return { responseBody, truncated };
}

function viewOf(e: Stored): LoggedRequest {
  e.view ??= responseView(e.responseText);
  if (e.responseText !== undefined) e.responseText = undefined;
  const { view, responseText, atMs, ...rest } = e;
  void responseText;
  return { ...rest, at: iso(atMs), ...view };
}

/**
 * The hooks that feed the request log and the metrics, on the whole app. They only copy
 * references and push to memory; nothing is awaited on the request's path.
 */
export function installRequestLog(app: FastifyInstance, deps: Pick<AppDeps, 'store' | 'clock'>): void {
  const log = requestLogOf(deps.store);
  const m = metricsOf(deps.store);
  app.addHook('onSend', (req, reply, payload, done) => {
    if (req.auth && typeof payload === 'string' && (reply.getHeader('content-type') ?? '').toString().includes('json')) req.loggedResponse = payload;
    done(null, payload);
  });
  app.addHook('onResponse', (req: FastifyRequest, reply: FastifyReply, done) => {
    const route = req.routeOptions.url ?? null;
    m.observe(req.method, route ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    const platformId = req.auth?.platform.id;
    // The logs' own readers (the dashboard, the tails poll them) are not logged.
    if (platformId && route !== null && !(req.method === 'GET' && (route.endsWith('/sandbox/requests') || route.endsWith('/sandbox/webhook-deliveries')))) {
      let requestBody: unknown = req.body ?? null;
      if (requestBody !== null && typeof requestBody === 'object') requestBody = redact(requestBody);
      const key = req.headers['idempotency-key'];
      log.add({
        // On the platform's sandbox clock, like every time it sees.
        atMs: deps.clock.nowMs() + Number(req.auth!.platform.clock_offset_ms),
        platformId,
        source: req.headers[DASHBOARD_HEADER] === '1' ? 'dashboard' : 'api',
        method: req.method,
        path: req.url,
        route,
        status: reply.statusCode,
        latencyMs: Math.round(reply.elapsedTime * 100) / 100,
        idempotencyKey: typeof key === 'string' ? key : null,
        replayed: reply.getHeader('idempotent-replayed') === 'true',
        requestBody,
        responseText: req.loggedResponse,
        fault: req.sandboxFault ?? null,
      });
    }
    done();
  });
}
