import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { basic, V } from '../helpers.js';

// Crash injection with real server processes (docs/reliability.md, "Exactly once per
// Idempotency-Key"). Parallel money-moving requests, each with its own Idempotency-Key and a
// unique amount, run against `node bin/payments-service.js serve`; the process is killed
// with SIGKILL at a random moment, restarted on the same store, and every request whose
// answer was lost is retried with its key (every answered one too: it must replay the same
// body). The caller then checks the store: each key moved money at most once, the ledger
// invariants hold, every transaction is terminal after the sandbox clock is advanced.
// Used by test/foundation/crash.test.ts (a few kills, for CI) and test/soak/crash.soak.ts
// (npm run soak:crash).

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = join(ROOT, 'bin', 'payments-service.js');
const TOKEN_ID = 'crash-token-id';
const SECRET = 'crash-client-secret';
const AUTH = basic(TOKEN_ID, SECRET);

export type Kind = 'fund' | 'quote' | 'execute' | 'transferOut' | 'umaReceive';
export const KINDS: readonly Kind[] = ['fund', 'quote', 'execute', 'transferOut', 'umaReceive'];

export interface Sent {
  kind: Kind;
  key: string;
  path: string;
  body: unknown;
  /** The unique amount of this request (minor units). */
  amount: number;
  /** The answer once one arrived (before or after a crash). */
  status?: number;
  answer?: string;
  /** The answer the process gave before it was killed, if it gave one. */
  firstAnswer?: string;
  lost: boolean;
}

export interface CrashOptions {
  databaseUrl: string;
  /** Ports to use, one per start, cycled. */
  ports: readonly number[];
  kills: number;
  /** Parallel request streams while the process runs. */
  streams: number;
  /** Random kill moment after the load starts, in ms. */
  killAfterMs: [number, number];
  /** The platform's webhook endpoint, set before the load (the final events are checked there). */
  webhookUrl?: string;
  log?: (line: string) => void;
}

export interface CrashReport {
  sent: Sent[];
  kills: number;
  lostAnswers: number;
  /** Retries answered idempotent-replayed (their effect had committed before the kill). */
  replayedAfterCrash: number;
  starts: number;
  platformUsd: string;
  umaAccount: string;
  /** A running server (the caller stops it). */
  server: Proc;
  base: string;
}

export interface Proc {
  child: ChildProcess;
  base: string;
  exited: Promise<void>;
  done: boolean;
  output(): string;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function startProcess(databaseUrl: string, port: number): Promise<Proc> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of ['PAYMENTS_API_TOKEN_ID', 'PAYMENTS_API_CLIENT_SECRET', 'PAYMENTS_ADMIN_KEY', 'DATABASE_URL', 'PORT', 'HOST', 'TEST_STORE']) delete env[k];
  const child = spawn(process.execPath, [BIN, 'serve'], {
    cwd: ROOT,
    env: { ...env, HOST: '127.0.0.1', PORT: String(port), DATABASE_URL: databaseUrl, PAYMENTS_API_TOKEN_ID: TOKEN_ID, PAYMENTS_API_CLIENT_SECRET: SECRET, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (s: string) => (out += s));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (out += s));
  const proc: Proc = {
    child,
    base: `http://127.0.0.1:${port}`,
    done: false,
    output: () => out,
    exited: new Promise((ok) => child.on('exit', () => ((proc.done = true), ok()))),
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (proc.done) throw new Error(`server exited before it was ready:\n${out}`);
    try {
      if ((await fetch(`${proc.base}/healthz`)).status === 200) return proc;
    } catch {
      /* not yet */
    }
    if (Date.now() > deadline) throw new Error(`server not ready in 30 s:\n${out}`);
    await sleep(50);
  }
}

export async function kill(p: Proc): Promise<void> {
  if (!p.done) p.child.kill('SIGKILL');
  await p.exited;
}

async function call(base: string, method: string, path: string, body?: unknown, key?: string): Promise<{ status: number; text: string; replayed: boolean }> {
  const headers: Record<string, string> = { authorization: AUTH };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (key) headers['idempotency-key'] = key;
  const res = await fetch(`${base}${V}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}), signal: AbortSignal.timeout(30_000) });
  return { status: res.status, text: await res.text(), replayed: res.headers.get('idempotent-replayed') === 'true' };
}

async function ok<T>(base: string, method: string, path: string, body?: unknown): Promise<T> {
  const r = await call(base, method, path, body);
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
  return JSON.parse(r.text) as T;
}

const PERSON = { beneficiaryType: 'INDIVIDUAL', fullName: 'Rita Receiver', countryOfResidence: 'US' };
const TERMS = { acceptedAt: '2025-10-01T00:00:00Z', ipAddress: '203.0.113.9', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' };

export async function runCrashScenario(opts: CrashOptions): Promise<CrashReport> {
  const log = opts.log ?? (() => {});
  let starts = 0;
  const nextPort = () => opts.ports[starts++ % opts.ports.length]!;
  let server = await startProcess(opts.databaseUrl, nextPort());
  // The endpoint first, so every event of the run (the setup's funding too) has somewhere to go.
  if (opts.webhookUrl) await ok(server.base, 'PATCH', '/config', { webhookEndpoint: opts.webhookUrl });

  // The platform's own USD account pays (no customer approval needed) to a platform external
  // account; a customer with the end-user terms receives the sandbox UMA payments.
  const accounts = await ok<{ data: { id: string }[] }>(server.base, 'GET', '/platform/internal-accounts?currency=USD');
  const platformUsd = accounts.data[0]!.id;
  const external = await ok<{ id: string }>(server.base, 'POST', '/platform/external-accounts', {
    currency: 'USD',
    accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: '123456789', routingNumber: '021000021', bankName: 'Sandbox Bank', beneficiary: PERSON },
  });
  const customer = await ok<{ id: string; umaAddress: string }>(server.base, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Cora Crash', currencies: ['USD'], endUserTermsConsent: TERMS });
  const umaAccount = (await ok<{ data: { id: string }[] }>(server.base, 'GET', `/customers/internal-accounts?customerId=${encodeURIComponent(customer.id)}`)).data[0]!.id;
  await ok(server.base, 'POST', `/sandbox/internal-accounts/${platformUsd}/fund`, { amount: 100_000_000 });

  const sent: Sent[] = [];
  let amount = 1_000;
  let seq = 0;
  const run = `${Date.now().toString(36)}`;
  const request = (kind: Kind, quoteId?: string): Sent => {
    const a = (amount += 1);
    const key = `crash-${run}-${kind}-${(seq += 1)}`;
    switch (kind) {
      case 'fund':
        return { kind, key, amount: a, lost: true, path: `/sandbox/internal-accounts/${platformUsd}/fund`, body: { amount: a } };
      case 'quote':
        return {
          kind,
          key,
          amount: a,
          lost: true,
          path: '/quotes',
          body: { source: { sourceType: 'ACCOUNT', accountId: platformUsd }, destination: { destinationType: 'ACCOUNT', accountId: external.id }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: a, immediatelyExecute: true },
        };
      case 'execute':
        return { kind, key, amount: a, lost: true, path: `/quotes/${quoteId}/execute`, body: undefined };
      case 'transferOut':
        return { kind, key, amount: a, lost: true, path: '/transfer-out', body: { source: { accountId: platformUsd }, destination: { accountId: external.id }, amount: a } };
      case 'umaReceive':
        return {
          kind,
          key,
          amount: a,
          lost: true,
          path: '/sandbox/uma/receive',
          body: { senderUmaAddress: '$success.USD@sandbox.uma.money', customerId: customer.id, receivingCurrencyCode: 'USD', receivingCurrencyAmount: a },
        };
    }
  };

  const settle = (s: Sent, r: { status: number; text: string }) => {
    s.status = r.status;
    s.answer = r.text;
    s.lost = r.status >= 500;
  };

  let lostAnswers = 0;
  let replayedAfterCrash = 0;
  for (let round = 0; round < opts.kills; round++) {
    let stop = false;
    const worker = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const kind = KINDS[(w + i) % KINDS.length]!;
        let s: Sent;
        if (kind === 'execute') {
          // The quote is created without a key (a plain read-only price); its execution is the keyed request.
          const a = (amount += 1);
          let quoteId: string;
          try {
            const q = await call(server.base, 'POST', '/quotes', { source: { sourceType: 'ACCOUNT', accountId: platformUsd }, destination: { destinationType: 'ACCOUNT', accountId: external.id }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: a });
            if (q.status !== 201) throw new Error(`quote: ${q.status} ${q.text}`);
            quoteId = (JSON.parse(q.text) as { id: string }).id;
          } catch (err) {
            if (stop) return;
            throw err;
          }
          s = request('execute', quoteId);
          s.amount = a;
        } else {
          s = request(kind);
        }
        sent.push(s);
        try {
          const r = await call(server.base, 'POST', s.path, s.body, s.key);
          settle(s, r);
          if (!s.lost) s.firstAnswer = r.text;
        } catch (err) {
          if (!stop) throw err;
        }
      }
    };
    const load = Array.from({ length: opts.streams }, (_, w) => worker(w));
    const [lo, hi] = opts.killAfterMs;
    await sleep(lo + Math.random() * (hi - lo));
    stop = true;
    server.child.kill('SIGKILL');
    await Promise.all(load);
    await server.exited;
    const lost = sent.filter((s) => s.lost);
    lostAnswers += lost.length;
    log(`round ${round + 1}: killed after ${sent.length} requests in all, ${lost.length} answers lost`);

    server = await startProcess(opts.databaseUrl, nextPort());
    // Time passes on the sandbox clock (past any rule that counts a claim as abandoned by its
    // age), then every lost answer is retried with its key (a claim of the killed process
    // waits out its lease, in real time).
    await ok(server.base, 'POST', '/sandbox/clock/advance', { seconds: 180 });
    // Retry every lost answer with its key (a claim of the killed process waits out its lease).
    await Promise.all(
      lost.map(async (s) => {
        const deadline = Date.now() + 60_000;
        for (;;) {
          const r = await call(server.base, 'POST', s.path, s.body, s.key);
          if (r.status === 409 && r.text.includes('still in progress') && Date.now() < deadline) continue;
          settle(s, r);
          if (r.replayed) replayedAfterCrash += 1;
          return;
        }
      }),
    );
  }

  // Every request replays its answer byte for byte: the one given before the kill, or the
  // one its retry got.
  const mismatches: string[] = [];
  await Promise.all(
    sent
      .filter((s) => !s.lost)
      .map(async (s) => {
        const r = await call(server.base, 'POST', s.path, s.body, s.key);
        if (!r.replayed || r.text !== s.answer) mismatches.push(`${s.key}: ${r.status} ${r.text} ≠ ${s.answer}`);
        if (s.firstAnswer !== undefined && s.firstAnswer !== s.answer) mismatches.push(`${s.key}: answered ${s.firstAnswer}, then ${s.answer}`);
      }),
  );
  if (mismatches.length > 0) throw new Error(`answers not replayed as given:\n${mismatches.slice(0, 5).join('\n')}`);

  // The sandbox outcomes come due: every payment ends.
  await ok(server.base, 'POST', '/sandbox/clock/advance', { seconds: 3 * 24 * 3600 });
  return { sent, kills: opts.kills, lostAnswers, replayedAfterCrash, starts, platformUsd, umaAccount, server, base: server.base };
}
