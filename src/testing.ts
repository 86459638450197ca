// The testing entry, `payments-service/testing`: start the sandbox inside a Node test run
// (vitest, jest, node:test) and drive it the way a platform does. `startSandbox()` starts
// the server in this process on a free port with an in-memory store (or a given database),
// and answers its base URL, the default platform's credentials and the helpers a test needs.
// Every helper is one HTTP call to the public API, the sandbox extensions or the operator
// API (no private shortcut), so it behaves exactly as the same call from another language
// (docs/testing-from-any-language.md). A failed call throws a SandboxError carrying the
// error envelope.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { API_VERSION, loadConfig } from './config.js';
import { SIGNATURE_HEADER, verifyWebhookSignature } from './kernel/webhook-keys.js';
import { startServer } from './server.js';

export interface StartSandboxOptions {
  /** The store: `sqlite::memory:` (default), a SQLite file, or a `postgres://` URL. */
  databaseUrl?: string;
  /** The port to listen on (default 0: a free port). Always on 127.0.0.1. */
  port?: number;
  /** The default platform's credentials (default: random ones). */
  tokenId?: string;
  clientSecret?: string;
  /** The server's log level (default `silent`; `warn`, `info`, … print JSON lines to stdout). */
  logLevel?: string;
}

export interface SandboxCredentials {
  /** The API token's id. */
  tokenId: string;
  /** The HTTP Basic user name (the same as tokenId for the default platform). */
  clientId: string;
  clientSecret: string;
  /** The `Authorization` header value (HTTP Basic clientId:clientSecret). */
  authorization: string;
}

/** The error envelope every error answer carries. */
export interface ErrorEnvelope {
  status: number;
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

/** A call the server answered with an error: the envelope, the method and the path. */
export class SandboxError extends Error {
  readonly status: number;
  readonly envelope: ErrorEnvelope;
  constructor(method: string, path: string, envelope: ErrorEnvelope) {
    super(`${method} ${path} answered ${envelope.status} ${envelope.code}: ${envelope.message}`);
    this.name = 'SandboxError';
    this.status = envelope.status;
    this.envelope = envelope;
  }
}

/** A webhook the built-in receiver got, its signature verified. */
export interface ReceivedWebhook {
  id: string;
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
  /** The raw body, as signed. */
  body: string;
  headers: IncomingHttpHeaders;
}

export interface WaitForWebhookOptions {
  /** How long to wait (default 10,000 ms). */
  timeoutMs?: number;
  /** Only a webhook this accepts ends the wait. */
  where?: (webhook: ReceivedWebhook) => boolean;
}

/** One platform of the sandbox, with its credentials and helpers. */
export interface SandboxPlatform {
  /** The platform's id (`Platform:…`). */
  id: string;
  credentials: SandboxCredentials;
  /**
   * A call to the versioned API as this platform: `path` is relative to `/2025-10-13`
   * (`/customers`). Answers the parsed JSON body; an error answer throws a SandboxError.
   */
  request<T = unknown>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<T>;
  /** Move this platform's sandbox clock forward (`POST /sandbox/clock/advance`): seconds, or `'90s'`, `'15m'`, `'2h'`, `'1d'`. Due jobs have run when it answers. */
  advanceClock(duration: number | string): Promise<void>;
  /** Credit an internal account (`POST /sandbox/internal-accounts/{id}/fund`), amount in minor units. Answers the account. */
  fund(accountId: string, amount: number): Promise<Record<string, unknown>>;
  /**
   * The first webhook of `type` delivered to this platform since it was called (or received
   * earlier and not yet taken by a wait). On first use a local receiver starts and becomes the
   * platform's webhook endpoint (`PATCH /config`). Every delivery's signature is verified with
   * the platform's public key; a bad one fails the wait.
   */
  waitForWebhook(type: string, options?: WaitForWebhookOptions): Promise<ReceivedWebhook>;
  /** The webhooks received so far (TEST ones included), in order. */
  readonly webhooks: readonly ReceivedWebhook[];
  /** Empty this platform (`POST /sandbox/reset`): tokens and config kept. Received webhooks (and a bad signature seen) are forgotten. */
  reset(): Promise<void>;
  /**
   * Save this platform's sandbox under `name` (`POST /sandbox/snapshots`; `replace`: over a
   * snapshot of the same name, else a taken name fails with 409). Answers the snapshot.
   */
  snapshot(name: string, options?: { replace?: boolean }): Promise<SandboxSnapshot>;
  /**
   * Put this platform back as the snapshot `name` saved it (`POST /sandbox/snapshots/{name}/restore`):
   * data, configuration, sandbox settings and clock. Received webhooks are forgotten; a
   * started receiver stays this platform's webhook endpoint.
   */
  restore(name: string): Promise<SandboxSnapshotRestore>;
}

/** A saved snapshot (`GET /sandbox/snapshots/{name}`). */
export interface SandboxSnapshot {
  name: string;
  /** When it was saved (server clock). */
  createdAt: string;
  /** The platform's sandbox clock when it was saved: a restore puts the clock back to it. */
  sandboxTime: string;
  rows: number;
  tables: Record<string, number>;
  sizeBytes: number;
}

/** What a restore answers. */
export interface SandboxSnapshotRestore {
  name: string;
  sandboxTime: string;
  rows: number;
  tables: Record<string, number>;
  deleted: number;
  durationMs: number;
}

export interface Sandbox extends SandboxPlatform {
  /** `http://127.0.0.1:<port>/2025-10-13`: the base URL an SDK or client is given. */
  baseUrl: string;
  /** `http://127.0.0.1:<port>`: the server's origin (`/healthz`, `/admin`, `/dashboard`). */
  origin: string;
  /** The operator key of this server (`Authorization: Bearer <adminKey>` on `/admin`). */
  adminKey: string;
  /** Another platform, isolated from the others (`POST /admin/platforms`). */
  createPlatform(name?: string, options?: { regulated?: boolean; skipVerificationPaperwork?: boolean }): Promise<SandboxPlatform>;
  /** Stop the receivers and the server; the port is closed when it answers. */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** Seconds from a number of seconds or `<n>s|m|h|d`. */
export function durationSeconds(duration: number | string): number {
  if (typeof duration === 'number') return duration;
  const m = /^\s*(\d+)\s*([smhd])?\s*$/.exec(duration);
  if (!m) throw new Error(`a duration is a number of seconds or "<n>s|m|h|d", got "${duration}"`);
  return Number(m[1]) * UNITS[m[2] ?? 's']!;
}

function basic(tokenId: string, clientSecret: string): string {
  return `Basic ${Buffer.from(`${tokenId}:${clientSecret}`).toString('base64')}`;
}

async function call<T>(url: string, method: string, authorization: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const h: Record<string, string> = { authorization, ...headers };
  if (body !== undefined) h['content-type'] ??= 'application/json';
  const res = await fetch(url, { method, headers: h, ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}) });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = text;
  }
  if (!res.ok) {
    const env = parsed && typeof parsed === 'object' && 'code' in parsed ? (parsed as ErrorEnvelope) : { status: res.status, code: 'HTTP_ERROR', message: text };
    throw new SandboxError(method, new URL(url).pathname, env);
  }
  return parsed as T;
}

/** The local receiver of one platform's webhooks. */
class WebhookInbox {
  readonly got: ReceivedWebhook[] = [];
  private taken = new Set<ReceivedWebhook>();
  private waiters = new Set<() => void>();
  private failure: Error | undefined;
  private server: Server | undefined;
  private starting: Promise<void> | undefined;
  private url: string | undefined;

  constructor(private readonly platform: { request: SandboxPlatform['request'] }) {}

  /** Start the receiver and make it the platform's webhook endpoint (once). */
  ensure(): Promise<void> {
    this.starting ??= this.start();
    return this.starting;
  }

  private async start(): Promise<void> {
    const { publicKey } = await this.platform.request<{ publicKey: string }>('GET', '/sandbox/webhooks/public-key');
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const signature = req.headers[SIGNATURE_HEADER.toLowerCase()];
        if (typeof signature !== 'string' || !verifyWebhookSignature(body, signature, publicKey)) {
          this.failure = new Error(`a webhook arrived with ${typeof signature === 'string' ? 'a bad' : 'no'} ${SIGNATURE_HEADER} signature: ${body.slice(0, 200)}`);
          res.writeHead(400).end();
        } else {
          try {
            const json = JSON.parse(body) as { id: string; type: string; timestamp: string; data: Record<string, unknown> };
            this.got.push({ id: json.id, type: json.type, timestamp: json.timestamp, data: json.data, body, headers: req.headers });
            res.writeHead(200).end();
          } catch {
            this.failure = new Error(`a webhook arrived whose body is not JSON: ${body.slice(0, 200)}`);
            res.writeHead(400).end();
          }
        }
        for (const w of this.waiters) w();
      });
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(0, '127.0.0.1', () => resolve());
    });
    const url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/webhooks`;
    this.url = url;
    await this.platform.request('PATCH', '/config', { webhookEndpoint: url });
  }

  async wait(type: string, opts: WaitForWebhookOptions = {}): Promise<ReceivedWebhook> {
    await this.ensure();
    const timeoutMs = opts.timeoutMs ?? 10_000;
    const find = () => this.got.find((w) => !this.taken.has(w) && w.type === type && (opts.where ? opts.where(w) : true));
    return new Promise<ReceivedWebhook>((resolve, reject) => {
      const check = () => {
        if (this.failure) return done(() => reject(this.failure));
        const w = find();
        if (w) {
          this.taken.add(w);
          return done(() => resolve(w));
        }
      };
      const timer = setTimeout(() => done(() => reject(new Error(`no ${type} webhook within ${timeoutMs} ms (received: ${this.got.map((w) => w.type).join(', ') || 'none'})`))), timeoutMs);
      const done = (settle: () => void) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        settle();
      };
      this.waiters.add(check);
      check();
    });
  }

  /** After a restore: forget what was received; a started receiver is made the endpoint again if the restored configuration names another. */
  async restored(): Promise<void> {
    this.clear();
    if (!this.server || !this.url) return;
    const config = await this.platform.request<{ webhookEndpoint?: string | null }>('GET', '/config');
    if (config.webhookEndpoint !== this.url) await this.platform.request('PATCH', '/config', { webhookEndpoint: this.url });
  }

  clear(): void {
    this.failure = undefined;
    this.got.length = 0;
    this.taken.clear();
  }

  async stop(): Promise<void> {
    if (this.starting) await this.starting.catch(() => {});
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

function platformHandle(baseUrl: string, id: string, credentials: SandboxCredentials, inboxes: WebhookInbox[]): SandboxPlatform {
  const request = <T>(method: string, path: string, body?: unknown, headers?: Record<string, string>) => call<T>(`${baseUrl}${path}`, method, credentials.authorization, body, headers);
  const inbox = new WebhookInbox({ request });
  inboxes.push(inbox);
  return {
    id,
    credentials,
    request,
    async advanceClock(duration) {
      await request('POST', '/sandbox/clock/advance', { seconds: durationSeconds(duration) });
    },
    fund: (accountId, amount) => request('POST', `/sandbox/internal-accounts/${encodeURIComponent(accountId)}/fund`, { amount }),
    waitForWebhook: (type, options) => inbox.wait(type, options),
    get webhooks() {
      return inbox.got;
    },
    async reset() {
      await request('POST', '/sandbox/reset');
      inbox.clear();
    },
    snapshot: (name, options = {}) => request<SandboxSnapshot>('POST', `/sandbox/snapshots${options.replace ? '?replace=true' : ''}`, { name }),
    async restore(name) {
      const restored = await request<SandboxSnapshotRestore>('POST', `/sandbox/snapshots/${encodeURIComponent(name)}/restore`);
      await inbox.restored();
      return restored;
    },
  };
}

/** Start the sandbox server in this process (see the module comment and README "Start it from a test"). */
export async function startSandbox(options: StartSandboxOptions = {}): Promise<Sandbox> {
  const tokenId = options.tokenId ?? `test-${randomBytes(6).toString('hex')}`;
  const clientSecret = options.clientSecret ?? randomBytes(24).toString('hex');
  const adminKey = randomBytes(24).toString('hex');
  const config = loadConfig({
    DATABASE_URL: options.databaseUrl ?? 'sqlite::memory:',
    HOST: '127.0.0.1',
    PORT: String(options.port ?? 0),
    PAYMENTS_API_TOKEN_ID: tokenId,
    PAYMENTS_API_CLIENT_SECRET: clientSecret,
    PAYMENTS_ADMIN_KEY: adminKey,
    PAYMENTS_WEBHOOK_ALLOW_PRIVATE: 'true',
    LOG_LEVEL: options.logLevel ?? 'silent',
  });
  const running = await startServer(config, { logger: { level: config.logLevel } });
  const port = (running.app.server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  const baseUrl = `${origin}/${API_VERSION}`;
  const credentials = { tokenId, clientId: tokenId, clientSecret, authorization: basic(tokenId, clientSecret) };
  const inboxes: WebhookInbox[] = [];
  const main = platformHandle(baseUrl, running.bootstrap.platform.id, credentials, inboxes);
  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      await Promise.all(inboxes.map((i) => i.stop()));
      await running.close();
    })();
    return stopped;
  };
  return {
    ...main,
    get webhooks() {
      return main.webhooks;
    },
    baseUrl,
    origin,
    adminKey,
    async createPlatform(name = `Test platform ${randomBytes(3).toString('hex')}`, opts = {}) {
      const created = await call<{ platform: { id: string }; credentials: { tokenId: string; clientId: string; clientSecret: string } }>(`${origin}/admin/platforms`, 'POST', `Bearer ${adminKey}`, { name, ...opts });
      const c = created.credentials;
      return platformHandle(baseUrl, created.platform.id, { tokenId: c.tokenId, clientId: c.clientId, clientSecret: c.clientSecret, authorization: basic(c.clientId, c.clientSecret) }, inboxes);
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
