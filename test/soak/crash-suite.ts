import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { type Store, openStore } from '../../src/kernel/db/connect.js';
import { basic, STORE, V } from '../helpers.js';
import { createServer, type Server } from 'node:http';
import { checkCrashRun, checkFinalWebhooks } from './crash-checks.js';
import { type CrashReport, kill, runCrashScenario } from './crash-run.js';

/**
 * The crash-injection suite (docs/reliability.md): `kills` SIGKILLs of a real server process
 * under parallel keyed money requests, on this project's store (a SQLite file, or a fresh
 * PostgreSQL database). Ports 18200-18249 (this suite's range): 18200+ on SQLite, 18225+ on
 * PostgreSQL.
 */
export function crashSuite(opts: { kills: number; streams: number; timeoutMs: number }): void {
  const PORTS = STORE === 'postgres' ? [18225, 18226, 18227, 18228, 18229] : [18200, 18201, 18202, 18203, 18204];
  const RECEIVER_PORT = STORE === 'postgres' ? 18230 : 18205;
  // The platform's webhook endpoint: answers 200 to everything (approving incoming payments)
  // and remembers each event's type and resource.
  const got = new Set<string>();
  let receiver: Server | undefined;
  const PG_URL = process.env.TEST_DATABASE_URL;
  const tmp = mkdtempSync(join(tmpdir(), 'payments-crash-'));
  let database: string | undefined;
  let report: CrashReport | undefined;
  let store: Store | undefined;

  async function pgAdmin(sql: string): Promise<void> {
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  }

  afterAll(async () => {
    if (report) await kill(report.server);
    await new Promise<void>((r) => (receiver ? receiver.close(() => r()) : r()));
    await store?.close();
    if (database) await pgAdmin(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    rmSync(tmp, { recursive: true, force: true });
  });

  describe(`Idempotency-Key under SIGKILL (${STORE}, ${opts.kills} kills)`, () => {
    it(
      'replays or runs every lost request once: each key moves money at most once, invariants hold, every transaction ends',
      async () => {
        let databaseUrl: string;
        const file = join(tmp, 'crash.sqlite');
        if (STORE === 'postgres') {
          database = `crash_${randomBytes(6).toString('hex')}`;
          await pgAdmin(`CREATE DATABASE "${database}"`);
          const u = new URL(PG_URL!);
          u.pathname = `/${database}`;
          databaseUrl = u.toString();
        } else {
          databaseUrl = `sqlite:${file}`;
        }
        receiver = createServer((req, res) => {
          let body = '';
          req.setEncoding('utf8').on('data', (c: string) => (body += c));
          req.on('end', () => {
            try {
              const e = JSON.parse(body) as { type?: string; data?: { id?: string } };
              if (e.type && e.data?.id) got.add(`${e.type} ${e.data.id}`);
            } catch {
              /* not an event */
            }
            res.writeHead(200).end();
          });
        });
        await new Promise<void>((r) => receiver!.listen(RECEIVER_PORT, '127.0.0.1', () => r()));
        const started = Date.now();
        report = await runCrashScenario({
          databaseUrl,
          ports: PORTS,
          kills: opts.kills,
          streams: opts.streams,
          killAfterMs: [150, 600],
          webhookUrl: `http://127.0.0.1:${RECEIVER_PORT}/webhooks`,
        });
        expect(report.lostAnswers, 'the kills landed while requests ran').toBeGreaterThan(0);
        store = STORE === 'postgres' ? await openStore({ kind: 'postgres', location: databaseUrl }) : await openStore({ kind: 'sqlite', location: file });
        const base = report.base;
        const advance = async () => {
          await fetch(`${base}${V}/sandbox/clock/advance`, {
            method: 'POST',
            headers: { authorization: basic('crash-token-id', 'crash-client-secret'), 'content-type': 'application/json' },
            body: JSON.stringify({ seconds: 3600 }),
          });
        };
        await checkCrashRun(store, report, advance);
        await checkFinalWebhooks(store, { has: (type, id) => got.has(`${type} ${id}`) }, advance);
        const counts = new Map<string, number>();
        for (const s of report.sent) counts.set(s.kind, (counts.get(s.kind) ?? 0) + 1);
        const byKind = [...counts].map(([k, n]) => `${k} ${n}`);
        console.log(
          `crash run (${STORE}): ${report.kills} kills, ${report.sent.length} keyed requests (${byKind.join(', ')}), ${report.lostAnswers} answers lost, ` +
            `${report.replayedAfterCrash} replayed after a restart (effect committed before the kill), ${report.lostAnswers - report.replayedAfterCrash} run on a clean slate; ` +
            `every key moved money once, every final webhook delivered; ${Math.round((Date.now() - started) / 1000)} s`,
        );
      },
      opts.timeoutMs,
    );
  });
}
