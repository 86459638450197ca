// The command line's commands that talk to a running server over HTTP, as a developer's
// terminal would: seed, reset, clock advance, webhooks tail, requests tail. They use the
// platform's API token pair (PAYMENTS_API_TOKEN_ID / PAYMENTS_API_CLIENT_SECRET, or
// --token-id / --client-secret) and the server's URL (--url, PAYMENTS_URL, else
// http://127.0.0.1:$PORT with PORT 8080); `reset --all` uses PAYMENTS_ADMIN_KEY.

import type { Caller } from '../sandbox/seed/data-set.js';

export const API_VERSION_PATH = '/2025-10-13';

export interface Remote {
  url: string;
  authorization?: string;
  adminKey?: string;
}

export class RemoteError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

export function remoteOf(values: { url?: string | undefined; 'token-id'?: string | undefined; 'client-secret'?: string | undefined }, env: NodeJS.ProcessEnv = process.env): Remote {
  const url = (values.url ?? env.PAYMENTS_URL ?? `http://127.0.0.1:${env.PORT ?? '8080'}`).replace(/\/+$/, '').replace(new RegExp(`${API_VERSION_PATH}$`), '');
  const id = values['token-id'] ?? env.PAYMENTS_API_TOKEN_ID;
  const secret = values['client-secret'] ?? env.PAYMENTS_API_CLIENT_SECRET;
  const r: Remote = { url };
  if (id && secret) r.authorization = `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
  if (env.PAYMENTS_ADMIN_KEY) r.adminKey = env.PAYMENTS_ADMIN_KEY;
  return r;
}

/** One API call; throws RemoteError with the envelope's message on a non-2xx answer. */
export async function call<T = unknown>(r: Remote, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const admin = path.startsWith('/admin');
  const authorization = admin ? (r.adminKey ? `Bearer ${r.adminKey}` : undefined) : r.authorization;
  if (!authorization) {
    throw new RemoteError(admin ? 'set PAYMENTS_ADMIN_KEY for operator commands' : 'set PAYMENTS_API_TOKEN_ID and PAYMENTS_API_CLIENT_SECRET (or --token-id and --client-secret)');
  }
  let res: Response;
  try {
    res = await fetch(`${r.url}${admin ? '' : API_VERSION_PATH}${path}`, {
      method,
      headers: { authorization, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  } catch (err) {
    throw new RemoteError(`cannot reach the server at ${r.url} (${err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err)}); start it with \`payments-service serve\` or pass --url`);
  }
  const text = await res.text();
  const json = text ? (JSON.parse(text) as unknown) : undefined;
  if (!res.ok) {
    const env = json as { code?: string; message?: string } | undefined;
    throw new RemoteError(`${method} ${path}: ${res.status} ${env?.code ?? ''} ${env?.message ?? text}`.trim(), res.status);
  }
  return json as T;
}

/** "90", "90s", "15m", "2h", "1d" → seconds. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d+)([smhd]?)$/.exec(text.trim());
  if (!m) return undefined;
  const n = Number(m[1]) * { '': 1, s: 1, m: 60, h: 3600, d: 86_400 }[m[2] as '' | 's' | 'm' | 'h' | 'd'];
  return n > 0 ? n : undefined;
}

const sleep = (ms: number) => new Promise<void>((res) => setTimeout(res, ms));

interface Delivery {
  id: string;
  type: string;
  resourceId: string;
  status: string;
  attempts: number;
  lastStatusCode: number | null;
  updatedAt: string;
}

interface Logged {
  id: number;
  at: string;
  method: string;
  path: string;
  status: number;
  latencyMs: number;
  idempotencyKey: string | null;
  replayed: boolean;
}

export interface TailOptions {
  /** Stop after this many polls (tests); forever when absent. */
  polls?: number;
  intervalMs?: number;
  json?: boolean;
  write?: (line: string) => void;
  signal?: AbortSignal;
}

/** Follow the platform's request log: one line per request (or JSON with --json), oldest first. */
export async function tailRequests(r: Remote, opts: TailOptions = {}): Promise<void> {
  const write = opts.write ?? ((l: string) => process.stdout.write(`${l}\n`));
  let after = 0;
  let first = true;
  for (let i = 0; opts.polls === undefined || i < opts.polls; i++) {
    if (opts.signal?.aborted) return;
    const page = await call<{ data: Logged[] }>(r, 'GET', `/sandbox/requests?after=${after}${first ? '&limit=20' : ''}`);
    first = false;
    for (const e of [...page.data].reverse()) {
      after = Math.max(after, e.id);
      write(
        opts.json
          ? JSON.stringify(e)
          : `${e.at}  ${e.method.padEnd(6)} ${String(e.status)} ${e.latencyMs.toFixed(1).padStart(7)}ms  ${e.path}${e.idempotencyKey ? `  key=${e.idempotencyKey}` : ''}${e.replayed ? ' (replayed)' : ''}`,
      );
    }
    await sleep(opts.intervalMs ?? 1000);
  }
}

/** Follow the platform's webhook deliveries: a line each time a delivery is new or changes. */
export async function tailWebhooks(r: Remote, opts: TailOptions = {}): Promise<void> {
  const write = opts.write ?? ((l: string) => process.stdout.write(`${l}\n`));
  const seen = new Map<string, string>();
  for (let i = 0; opts.polls === undefined || i < opts.polls; i++) {
    if (opts.signal?.aborted) return;
    const page = await call<{ data: Delivery[] }>(r, 'GET', '/sandbox/webhook-deliveries?limit=50');
    for (const d of [...page.data].reverse()) {
      const state = `${d.status}/${d.attempts}/${d.lastStatusCode ?? ''}`;
      if (seen.get(d.id) === state) continue;
      seen.set(d.id, state);
      write(opts.json ? JSON.stringify(d) : `${d.updatedAt}  ${d.status.padEnd(11)} ${d.type.padEnd(28)} ${d.resourceId}  attempts=${d.attempts}${d.lastStatusCode !== null ? ` http=${d.lastStatusCode}` : ''}  ${d.id}`);
    }
    await sleep(opts.intervalMs ?? 1000);
  }
}

/** The seed's Caller over HTTP, with the remote's credentials (`payments-service seed`). */
export function remoteCaller(r: Remote): Caller {
  return (method, path, body) => call(r, method, path, body);
}
