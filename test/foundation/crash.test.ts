import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { type Store, openStore } from '../../src/kernel/db/connect.js';
import { STORE } from '../helpers.js';
import { checkCrashRun } from '../soak/crash-checks.js';
import { type CrashReport, kill, runCrashScenario } from '../soak/crash-run.js';

// Exactly once per Idempotency-Key under crashes, with real processes (docs/reliability.md):
// parallel money-moving requests with keys (quote with immediatelyExecute, execute,
// transfer-out, sandbox fund, sandbox UMA receive), SIGKILL at a random moment, restart on
// the same store (a SQLite file; a fresh PostgreSQL database), retry every lost answer with
// its key, advance the sandbox clock, check. Small for CI (a few kills); the longer run is
// `npm run soak:crash`. Ports 18200-18249 (this suite's range).

const PORTS = STORE === 'postgres' ? [18225, 18226, 18227, 18228, 18229] : [18200, 18201, 18202, 18203, 18204];
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
  await store?.close();
  if (database) await pgAdmin(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
  rmSync(tmp, { recursive: true, force: true });
});

describe(`Idempotency-Key under SIGKILL (${STORE})`, () => {
  it('replays or runs every lost request once: each key moves money at most once, invariants hold, every transaction ends', async () => {
    let databaseUrl: string;
    if (STORE === 'postgres') {
      database = `crash_${randomBytes(6).toString('hex')}`;
      await pgAdmin(`CREATE DATABASE "${database}"`);
      const u = new URL(PG_URL!);
      u.pathname = `/${database}`;
      databaseUrl = u.toString();
    } else {
      databaseUrl = `sqlite:${join(tmp, 'crash.sqlite')}`;
    }
    report = await runCrashScenario({ databaseUrl, ports: PORTS, kills: Number(process.env.CRASH_KILLS ?? 2), streams: 6, killAfterMs: [150, 600], log: (l) => console.log(`${new Date().toISOString()} ${l}`) });
    console.log(`${new Date().toISOString()} ${report.sent.length} requests, ${report.lostAnswers} answers lost, ${report.replayedAfterCrash} replayed after a crash`);
    expect(report.lostAnswers, 'the kills landed while requests ran').toBeGreaterThan(0);
    store = STORE === 'postgres' ? await openStore({ kind: 'postgres', location: databaseUrl }) : await openStore({ kind: 'sqlite', location: join(tmp, 'crash.sqlite') });
    const base = report.base;
    await checkCrashRun(store, report, async () => {
      await fetch(`${base}/2025-10-13/sandbox/clock/advance`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from('crash-token-id:crash-client-secret').toString('base64')}`, 'content-type': 'application/json' },
        body: JSON.stringify({ seconds: 3600 }),
      });
    });
  }, 120_000);
});
