// Webhook delivery throughput (issue 33): how fast the deliverer drains a backlog, and whether
// it keeps up with the event rate of the payment load.
//
//   npx tsx bench/webhook-drain.ts [--store sqlite|postgres] [--payments 4000] [--accounts 1]
//                                  [--rate 400] [--seconds 10] [--concurrency 16] [--port 9150] [--limit 600]
//
// In one process: the service (startServer, not listening, its delivery loop running) on a
// fresh store (a SQLite file in a temp dir, or a new schema in DATABASE_URL), and a local
// receiver on 127.0.0.1:<port> that answers 200 at once. Events are written the way the
// areas write them (emitEvent in a transaction), five per payment as a payment flow emits
// them: its transaction's PENDING, PROCESSING and COMPLETED (one lane per payment) and two
// INTERNAL_ACCOUNT.BALANCE_UPDATED of the paying account (one lane per account: --accounts
// of them, payments taking turns), each with a payload of about 1.5 KB.
//
// 1. Backlog: --payments payments' worth of events written with the loop stopped; then the
//    loop starts: deliveries/s and the time until none is open.
// 2. Load: the loop running, --rate payments/s written for --seconds (a transaction of
//    events every 20 ms); the open deliveries sampled every second, then the time the
//    backlog left when the load stops takes to drain.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { iso } from '../src/kernel/clock.js';
import { openStore, type Store } from '../src/kernel/db/connect.js';
import { emitEvent } from '../src/kernel/events.js';
import { startServer } from '../src/server.js';
import { defaultPlatformCap } from '../src/api/webhooks/service.js';

const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    payments: { type: 'string', default: '4000' },
    accounts: { type: 'string', default: '1' },
    rate: { type: 'string', default: '400' },
    seconds: { type: 'string', default: '10' },
    concurrency: { type: 'string' },
    port: { type: 'string', default: '9150' },
    limit: { type: 'string', default: '600' },
  },
});
const PAYMENTS = Number(args.payments);
const ACCOUNTS = Math.max(1, Number(args.accounts));
const RATE = Number(args.rate);
const SECONDS = Number(args.seconds);
const PORT = Number(args.port);
const EVENTS_PER_PAYMENT = 5;
/** How long a drain is waited for at most (s). */
const LIMIT_S = Number(args.limit);

const FILLER = 'x'.repeat(1_200);

async function main(): Promise<void> {
  // The receiver: 200 at once.
  let received = 0;
  const rx = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received += 1;
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((ok) => rx.listen(PORT, '127.0.0.1', ok));

  let store: Store;
  let cleanup: () => Promise<void>;
  if (args.store === 'postgres') {
    const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
    const schema = `bench_wh_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
    store = await openStore({ kind: 'postgres', location: url }, { schema, poolSize: 10 });
    cleanup = async () => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await c.end();
    };
  } else {
    const dir = mkdtempSync(join(tmpdir(), 'webhook-drain-'));
    store = await openStore({ kind: 'sqlite', location: join(dir, 'payments.sqlite') }, { backgroundCheckpoints: true });
    cleanup = async () => rmSync(dir, { recursive: true, force: true });
  }
  const config = loadConfig({ PAYMENTS_ADMIN_KEY: 'bench-admin', PAYMENTS_API_TOKEN_ID: 'bench-token', PAYMENTS_API_CLIENT_SECRET: 'bench-secret', LOG_LEVEL: 'silent', PAYMENTS_WEBHOOK_ALLOW_PRIVATE: 'true' });
  const running = await startServer(config, { store, listen: false, worker: false, logger: false });
  const deliverer = running.webhooks;
  if (args.concurrency !== undefined) {
    // The slots, and one platform's share of them as the deliverer would set it.
    const slots = Number(args.concurrency);
    Object.assign(deliverer as unknown as { concurrency: number; platformCap: number }, { concurrency: slots, platformCap: defaultPlatformCap(slots) });
  }
  const platformId = running.bootstrap.platform.id;
  const patched = await running.app.inject({
    method: 'PATCH',
    url: '/2025-10-13/config',
    headers: { authorization: `Basic ${Buffer.from('bench-token:bench-secret').toString('base64')}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ webhookEndpoint: `http://127.0.0.1:${PORT}/hooks` }),
  });
  if (patched.statusCode !== 200) throw new Error(`PATCH /config: ${patched.statusCode} ${patched.body}`);
  await deliverer.runDue(); // the new endpoint's TEST webhook

  let seq = 0;
  /** One transaction with `n` payments' worth of events. */
  const writePayments = async (n: number): Promise<void> => {
    const at = iso(Date.now());
    await store.db.transaction().execute(async (trx) => {
      for (let i = 0; i < n; i++) {
        const p = seq++;
        const tx = `Transaction:bench-${p}`;
        const account = `InternalAccount:bench-${p % ACCOUNTS}`;
        const data = (id: string, status: string) => ({ id, status, amount: 1000, filler: FILLER });
        await emitEvent(trx, platformId, at, { type: 'OUTGOING_PAYMENT.PENDING', resourceId: tx, data: data(tx, 'PENDING') });
        await emitEvent(trx, platformId, at, { type: 'INTERNAL_ACCOUNT.BALANCE_UPDATED', resourceId: account, data: data(account, 'ACTIVE') });
        await emitEvent(trx, platformId, at, { type: 'OUTGOING_PAYMENT.PROCESSING', resourceId: tx, data: data(tx, 'PROCESSING') });
        await emitEvent(trx, platformId, at, { type: 'OUTGOING_PAYMENT.COMPLETED', resourceId: tx, data: data(tx, 'COMPLETED') });
        await emitEvent(trx, platformId, at, { type: 'INTERNAL_ACCOUNT.BALANCE_UPDATED', resourceId: account, data: data(account, 'ACTIVE') });
      }
    });
  };
  /** CPU (µs) this process spent counting open deliveries: the bench's own, left out of the CPU per delivery. */
  let pollCpu = 0;
  const open = async (): Promise<number> => {
    const c0 = process.cpuUsage();
    const q = store.db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll<number>().as('n')).where('status', 'in', ['PENDING', 'SENDING']).executeTakeFirstOrThrow();
    const c1 = process.cpuUsage(c0);
    pollCpu += c1.user + c1.system; // the statement itself runs synchronously on SQLite
    return Number((await q).n);
  };
  const failed = async (): Promise<number> =>
    Number((await store.db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll<number>().as('n')).where('status', 'not in', ['PENDING', 'SENDING', 'DELIVERED']).executeTakeFirstOrThrow()).n);
  const waitDrained = async (limitMs: number): Promise<number | null> => {
    const started = performance.now();
    while (performance.now() - started < limitMs) {
      if ((await open()) === 0) return performance.now() - started;
      await new Promise((r) => setTimeout(r, 50));
    }
    return null;
  };
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

  console.log(`webhook delivery: ${args.store}, ${deliverer.concurrency} slots (${deliverer.platformCap} per platform), ${ACCOUNTS} paying account${ACCOUNTS > 1 ? 's' : ''}, receiver answering 200 at once`);

  // 1. Backlog.
  const t0 = performance.now();
  for (let done = 0; done < PAYMENTS; done += 200) await writePayments(Math.min(200, PAYMENTS - done));
  const backlog = await open();
  console.log(`backlog: ${fmt(backlog)} deliveries (${fmt(PAYMENTS)} payments) written in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const before = received;
  const cpu0 = process.cpuUsage();
  const poll0 = pollCpu;
  deliverer.start();
  const drainedMs = await waitDrained(LIMIT_S * 1000);
  const sent = received - before;
  const cpu = process.cpuUsage(cpu0);
  const cpuPer = sent > 0 ? (cpu.user + cpu.system - (pollCpu - poll0)) / sent : 0;
  if (drainedMs === null) console.log(`backlog: NOT drained within ${LIMIT_S} s (${fmt(sent)} sent, ${fmt((sent / (LIMIT_S * 1000)) * 1000)}/s, ${fmt(cpuPer)} µs CPU per delivery)`);
  else console.log(`backlog: drained in ${(drainedMs / 1000).toFixed(2)} s: ${fmt((sent / drainedMs) * 1000)} deliveries/s, ${fmt(cpuPer)} µs CPU per delivery (this process: service and receiver; the bench's polling, ${fmt((pollCpu - poll0) / Math.max(1, sent))} µs per delivery, left out)`);

  // 2. Load.
  if (SECONDS > 0 && RATE > 0) {
    const perTick = RATE / 50;
    let owed = 0;
    const loadStart = performance.now();
    const samples: number[] = [];
    const receivedAtStart = received;
    let nextSample = loadStart + 1_000;
    let written = 0;
    while (performance.now() - loadStart < SECONDS * 1_000) {
      const tick = performance.now();
      owed += perTick;
      const n = Math.floor(owed);
      owed -= n;
      if (n > 0) await writePayments(n);
      written += n;
      if (performance.now() >= nextSample) {
        samples.push(await open());
        nextSample += 1_000;
      }
      const wait = 20 - (performance.now() - tick);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    const loadMs = performance.now() - loadStart;
    const left = await open();
    const deliveredDuring = received - receivedAtStart;
    const receivedAtStop = received;
    const stopCpu = process.cpuUsage();
    const stopPoll = pollCpu;
    const drain = await waitDrained(LIMIT_S * 1000);
    const drainCpu = process.cpuUsage(stopCpu);
    const drainSent = received - receivedAtStop;
    const drainCpuPer = drainSent > 0 ? (drainCpu.user + drainCpu.system - (pollCpu - stopPoll)) / drainSent : 0;
    console.log(
      `load: ${fmt((written / loadMs) * 1000)} payments/s = ${fmt(((written * EVENTS_PER_PAYMENT) / loadMs) * 1000)} events/s for ${(loadMs / 1000).toFixed(1)} s; ` +
        `delivered meanwhile ${fmt((deliveredDuring / loadMs) * 1000)}/s; open deliveries each second: ${samples.map(fmt).join(', ')}`,
    );
    console.log(
      `load: ${fmt(left)} open when the load stopped, ${drain === null ? `NOT drained within ${LIMIT_S} s` : `drained ${(drain / 1000).toFixed(2)} s later`} (${fmt(drainSent)} sent meanwhile, ${fmt(drainCpuPer)} µs CPU per delivery)`,
    );
  }
  const bad = await failed();
  if (bad > 0) console.log(`WARNING: ${bad} deliveries neither delivered nor open`);

  await running.close();
  await cleanup();
  await new Promise<void>((ok) => rx.close(() => ok()));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
