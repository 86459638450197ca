import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// A real server process (bin/payments-service.js serve) for the fault tests
// (test/foundation/pg-outage.test.ts, sqlite-disk-full.test.ts): its own port, its own
// store, its output kept to show when something goes wrong.

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'bin', 'payments-service.js');

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A port nothing listens on now (the OS's choice). */
export async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => ok(port));
    });
  });
}

export interface Proc {
  child: ChildProcess;
  base: string;
  exited: Promise<number | null>;
  done: boolean;
  output(): string;
}

export interface ServerSpec {
  databaseUrl: string;
  port: number;
  tokenId: string;
  secret: string;
  /** More environment variables (limits, timeouts). */
  extra?: Record<string, string>;
}

/** Start `payments-service serve` on 127.0.0.1:<port> with only the given settings of ours. */
export function spawnServer(spec: ServerSpec): Proc {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of ['PAYMENTS_API_TOKEN_ID', 'PAYMENTS_API_CLIENT_SECRET', 'PAYMENTS_ADMIN_KEY', 'DATABASE_URL', 'PORT', 'HOST', 'TEST_STORE', 'TEST_DATABASE_URL']) delete env[k];
  const child = spawn(process.execPath, [BIN, 'serve'], {
    cwd: ROOT,
    env: { ...env, HOST: '127.0.0.1', PORT: String(spec.port), DATABASE_URL: spec.databaseUrl, PAYMENTS_API_TOKEN_ID: spec.tokenId, PAYMENTS_API_CLIENT_SECRET: spec.secret, LOG_LEVEL: 'warn', ...spec.extra },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (s: string) => (out += s));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (out += s));
  const proc: Proc = {
    child,
    base: `http://127.0.0.1:${spec.port}`,
    done: false,
    output: () => out,
    exited: new Promise((ok) => child.on('exit', (code) => ((proc.done = true), ok(code)))),
  };
  return proc;
}
