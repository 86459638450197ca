// The peer of the benchmark (issue 35): Prism 5 (`@stoplight/prism-cli`) mocking the
// reference API (`<shared>/reference/openapi.yaml`) with its static examples, driven with the
// same load generator and settings as the service, on the same four operations. Prism keeps
// no state, so its "payment flow" is the single `POST /quotes` call.
//
// Prism is never a dependency of the service: on first use the bench installs it with npm
// into a cache folder (default `~/.cache/payments-service-bench/prism`, or
// `$XDG_CACHE_HOME/payments-service-bench/prism`; `--prism-dir` or BENCH_PRISM_DIR to
// change it) and reuses it after. Only the bench reads `shared/`; the service never does.
//
// The request builders (`prismTargets`) are pure, so test/bench/prism-requests.test.ts checks
// them against the reference without installing anything.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/** The four operations the bench runs against both the service and Prism. */
export const PRISM_OPERATIONS = ['lookup', 'customer', 'create', 'payment'] as const;
export type PrismOperation = (typeof PRISM_OPERATIONS)[number];

/** Minor units of the payment flow's quote (the same as the service's flows). */
export const PRISM_FLOW_AMOUNT = 1_000;

/**
 * Ids in the reference's own formats (its examples), for the requests to Prism. Prism
 * checks a path parameter only against its schema (a string), so any id answers.
 */
export const PRISM_IDS = {
  customerId: 'Customer:019542f5-b3e7-1d02-0000-000000000001',
  internalAccountId: 'InternalAccount:e85dcbd6-dced-4ec4-b756-3c3a9ea3d965',
  externalAccountId: 'ExternalAccount:a12dcbd6-dced-4ec4-b756-3c3a9ea3d123',
  lookupAccountId: 'ExternalAccount:e85dcbd6-dced-4ec4-b756-3c3a9ea3d965',
};

export interface PeerTarget {
  method: 'GET' | 'POST';
  /** The reference's path (no `/2025-10-13` prefix: Prism serves the paths as the document names them). */
  path: string;
  body?: string;
  /** The reference operation (`operationId`) this request exercises. */
  operationId: string;
  /** The reference path template, for checking the request against the document. */
  template: string;
}

/** The create body: the service's `create` scenario sends the same one. */
export const CREATE_BODY = { customerType: 'INDIVIDUAL', fullName: 'Bench Same Name' } as const;

/** A payment flow's quote: `immediatelyExecute`, USD 10.00 from an internal account to an external one (the service's body, with the reference's example ids). */
export function quoteBody(sourceAccountId: string, destinationAccountId: string): Record<string, unknown> {
  return {
    source: { sourceType: 'ACCOUNT', accountId: sourceAccountId },
    destination: { destinationType: 'ACCOUNT', accountId: destinationAccountId },
    lockedCurrencySide: 'SENDING',
    lockedCurrencyAmount: PRISM_FLOW_AMOUNT,
    immediatelyExecute: true,
  };
}

/** The requests to Prism for each of the four operations. */
export function prismTargets(): Record<PrismOperation, PeerTarget> {
  const id = PRISM_IDS;
  return {
    lookup: {
      method: 'GET',
      path: `/receiver/external-account/${encodeURIComponent(id.lookupAccountId)}?customerId=${encodeURIComponent(id.customerId)}`,
      operationId: 'lookupExternalAccount',
      template: '/receiver/external-account/{accountId}',
    },
    customer: { method: 'GET', path: `/customers/${encodeURIComponent(id.customerId)}`, operationId: 'getCustomerById', template: '/customers/{customerId}' },
    create: { method: 'POST', path: '/customers', body: JSON.stringify(CREATE_BODY), operationId: 'createCustomer', template: '/customers' },
    payment: { method: 'POST', path: '/quotes', body: JSON.stringify(quoteBody(id.internalAccountId, id.externalAccountId)), operationId: 'createQuote', template: '/quotes' },
  };
}

/** The reference's BasicAuth scheme: `Basic base64(<token id>:<client secret>)`. Prism checks the scheme is present, not the credentials. */
export const PRISM_AUTH = `Basic ${Buffer.from('bench-prism-token:bench-prism-secret').toString('base64')}`;

// ---------------------------------------------------------------------------------------
// Where things are

/** The shared folder: `--shared`, else BENCH_SHARED_DIR, else `../shared` of the checkout. */
export function sharedDir(root: string, flag?: string): string {
  return resolve(flag ?? process.env.BENCH_SHARED_DIR ?? join(root, '..', 'shared'));
}

export function referencePath(shared: string): string {
  return join(shared, 'reference', 'openapi.yaml');
}

/** The cache folder Prism is installed into: `--prism-dir`, else BENCH_PRISM_DIR, else the user's cache. */
export function prismCacheDir(flag?: string): string {
  if (flag) return resolve(flag);
  if (process.env.BENCH_PRISM_DIR) return resolve(process.env.BENCH_PRISM_DIR);
  const cache = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(cache, 'payments-service-bench', 'prism');
}

function prismEntry(dir: string): string {
  return join(dir, 'node_modules', '@stoplight', 'prism-cli', 'dist', 'index.js');
}

/** The installed Prism's version, or null when it is not installed in `dir`. */
export function installedPrismVersion(dir: string): string | null {
  const pkg = join(dir, 'node_modules', '@stoplight', 'prism-cli', 'package.json');
  if (!existsSync(pkg) || !existsSync(prismEntry(dir))) return null;
  return (JSON.parse(readFileSync(pkg, 'utf8')) as { version: string }).version;
}

/** Installs `@stoplight/prism-cli@5` into `dir` unless it is there; returns its version. */
export function ensurePrism(dir: string, progress: (m: string) => void): string {
  const have = installedPrismVersion(dir);
  if (have) return have;
  mkdirSync(dir, { recursive: true });
  progress(`installing @stoplight/prism-cli@5 into ${dir} (first use; reused after)`);
  const t0 = performance.now();
  const r = spawnSync('npm', ['install', '--prefix', dir, '--no-save', '--no-audit', '--no-fund', '--no-package-lock', '--loglevel', 'error', '@stoplight/prism-cli@5'], {
    cwd: dir,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, npm_config_update_notifier: 'false' },
  });
  const v = installedPrismVersion(dir);
  if (r.status !== 0 || !v) throw new Error(`npm install @stoplight/prism-cli@5 into ${dir} failed (status ${r.status})`);
  progress(`installed Prism ${v} in ${Math.round((performance.now() - t0) / 1000)} s`);
  return v;
}

export interface PrismProcess {
  child: ChildProcess;
  pid: number;
  port: number;
  stop(): Promise<void>;
}

/** Starts `prism mock <reference> -p <port> -h 127.0.0.1` (static examples) and waits until it answers. */
export async function startPrism(dir: string, reference: string, port: number, log: (chunk: Buffer) => void): Promise<PrismProcess> {
  const entry = prismEntry(dir);
  // Prism runs in this Node, in one process (no --multiprocess), static examples (no -d),
  // logging warnings and errors only (-v warn), as the service runs with LOG_LEVEL=warn.
  const child = spawn(process.execPath, [entry, 'mock', reference, '-p', String(port), '-h', '127.0.0.1', '-v', 'warn'], {
    cwd: dirname(reference),
    env: { ...process.env, NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', log);
  child.stderr!.on('data', log);
  let exited: number | null | undefined;
  child.once('exit', (code) => (exited = code));
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (exited !== undefined) throw new Error(`prism mock exited during start-up (code ${exited})`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('prism mock did not answer within 120 s');
    }
    try {
      // Any HTTP answer means it listens (an unknown path answers 404).
      const res = await fetch(`http://127.0.0.1:${port}/__bench_ready`, { signal: AbortSignal.timeout(1_000) });
      await res.arrayBuffer();
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    child,
    pid: child.pid!,
    port,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const done = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await done;
      clearTimeout(t);
    },
  };
}
