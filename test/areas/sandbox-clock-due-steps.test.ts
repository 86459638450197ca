import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { iso } from '../../src/kernel/clock.js';
import type { Store } from '../../src/kernel/db/connect.js';
import { freshStore, makeApp, openSameSchema, sleep, STORE, type TestApp, waitFor } from '../helpers.js';
import { fund, newCustomer, quoteRequest, type TxBody, usdExternal } from '../money-helpers.js';

// The clock advance answers only after every step due at the new time has run, wherever it
// runs: in the advance itself, in this process's worker, or in another process that claimed
// it (PostgreSQL: FOR UPDATE SKIP LOCKED, so the advance's own claims skip it). Before, on
// PostgreSQL with the machine loaded, an advance answered while payouts whose steps were due
// were still PROCESSING: the advance saw a due job it could not claim, took it for one no
// handler here runs, and stopped waiting. Webhook deliveries are not steps: they may stay
// behind.

/** Payouts per test: 40 as in the report. */
const PAYOUTS = 40;
/** '005': COMPLETED after 1 s, returned (FAILED) 60 s later, refund COMPLETED 1 s after: a chain of three steps. */
const RETURNED = '000000005';
/** Far enough for every step of the chain. */
const ADVANCE_SECONDS = 120;

type Tx = TxBody & { failureReason?: string; refund?: { status: string } };

/** A webhook endpoint that is slow and fails: every request waits, then gets 500. */
async function slowFailingEndpoint(delayMs: number): Promise<{ url: string; got: () => number; stop: () => Promise<void> }> {
  let got = 0;
  const timers = new Set<NodeJS.Timeout>();
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      got += 1;
      const timer = setTimeout(() => {
        timers.delete(timer);
        res.writeHead(500).end('slow and failing');
      }, delayMs);
      timers.add(timer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    got: () => got,
    async stop() {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** One CPU-burning child process per core, each ending by itself after `ms` at the latest. */
function loadMachine(ms: number): ChildProcess[] {
  return Array.from({ length: availableParallelism() }, () =>
    spawn(process.execPath, ['-e', `const end = Date.now() + ${ms}; while (Date.now() < end) {}`], { stdio: 'ignore' }),
  );
}

async function stopLoad(burners: ChildProcess[]): Promise<void> {
  await Promise.all(
    burners.map(
      (b) =>
        new Promise<void>((resolve) => {
          if (b.exitCode !== null || b.signalCode !== null) return resolve();
          b.once('exit', () => resolve());
          b.kill('SIGKILL');
        }),
    ),
  );
}

/** Payers side by side (the payouts of one payer contend for its balance row). */
const PAYERS = 4;

/**
 * PAYOUTS payouts to '005' accounts, from PAYERS funded payers (made side by side), all
 * started at the same sandbox time (the test clock stands still). Answers their transaction ids.
 */
async function startPayouts(t: TestApp): Promise<string[]> {
  const perPayer = await Promise.all(
    Array.from({ length: PAYERS }, async (_, p) => {
      const c = await newCustomer(t, ['USD']);
      const usd = c.accounts.USD!.id;
      await fund(t, usd, 10_000_000);
      const ext = await usdExternal(t, c.id, RETURNED);
      const ids: string[] = [];
      for (let i = 0; i < PAYOUTS / PAYERS; i++) {
        const r = await t.call('POST', '/quotes', quoteRequest(usd, ext, 1_000 + p * 100 + i, { immediatelyExecute: true }));
        expect(r.statusCode, r.body).toBe(201);
        ids.push((r.json() as { transactionId: string }).transactionId);
      }
      return ids;
    }),
  );
  return perPayer.flat();
}

/** The payouts as GET /transactions shows them, in `ids` order. */
async function statuses(t: TestApp, ids: string[]): Promise<Tx[]> {
  const r = await t.call('GET', '/transactions?limit=100');
  expect(r.statusCode, r.body).toBe(200);
  const byId = new Map((r.json() as { data: Tx[] }).data.map((x) => [x.id, x]));
  return ids.map((id) => byId.get(id)!);
}

/** Every payout at the end of its chain, and no job of the platform due at the new time left. */
async function expectAllFinal(t: TestApp, ids: string[]): Promise<void> {
  const txs = await statuses(t, ids);
  const summary = txs.map((x) => `${x.status}/${x.failureReason ?? '-'}/${x.refund?.status ?? '-'}`);
  expect(summary).toEqual(ids.map(() => 'FAILED/PAYOUT_RETURNED/COMPLETED'));
  const platformId = t.running.bootstrap.platform.id;
  const offset = Number((await t.store.db.selectFrom('platforms').select('clock_offset_ms').where('id', '=', platformId).executeTakeFirstOrThrow()).clock_offset_ms);
  const due = await t.store.db
    .selectFrom('jobs')
    .select(['kind', 'status', 'run_at_ms'])
    .where('platform_id', '=', platformId)
    .where('status', '=', 'pending')
    .where('run_at_ms', '<=', t.clock.nowMs() + offset)
    .execute();
  expect(due).toEqual([]);
}

describe(`the clock advance runs every due step before answering (${STORE})`, () => {
  let burners: ChildProcess[] = [];
  let endpoint: Awaited<ReturnType<typeof slowFailingEndpoint>>;
  const opened: TestApp[] = [];
  const others: Store[] = [];

  beforeAll(async () => {
    endpoint = await slowFailingEndpoint(300);
  });
  afterEach(async () => {
    await stopLoad(burners);
    burners = [];
    for (const s of others.splice(0)) await s.close();
    for (const t of opened.splice(0)) await t.close();
  });
  afterAll(async () => {
    await stopLoad(burners);
    await endpoint.stop();
  });

  it('with the machine loaded, the worker running and a webhook backlog to a slow failing endpoint: every payout is final when the advance answers', async () => {
    // The worker and the deliverer run, as in a server: the worker claims due steps too.
    const t = await makeApp({ worker: true });
    opened.push(t);
    expect((await t.call('PATCH', '/config', { webhookEndpoint: endpoint.url })).statusCode).toBe(200);
    const ids = await startPayouts(t);
    // A webhook backlog: every payout's events wait for the slow endpoint.
    await waitFor(() => endpoint.got() > 0, 10_000);
    // The machine loaded while the advance runs (the payouts are made before, to keep the test short).
    burners = loadMachine(20_000);
    const res = await t.call('POST', '/sandbox/clock/advance', { seconds: ADVANCE_SECONDS });
    expect(res.statusCode, res.body).toBe(200);
    // Read right away (the worker keeps running): a step still held by it would show.
    await expectAllFinal(t, ids);
    await stopLoad(burners);
    // The deliveries are still behind (the endpoint fails slowly), which the advance did not wait for.
    const open = await t.store.db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll<number>().as('n')).where('status', 'in', ['PENDING', 'SENDING']).executeTakeFirstOrThrow();
    expect(Number(open.n)).toBeGreaterThan(0);
  }, 60_000);

  it.runIf(STORE === 'postgres')('waits for a due step another process claimed and is still running, then for the steps that follow it', async () => {
    const ts = await freshStore();
    const t = await makeApp({ testStore: ts });
    opened.push(t);
    const ids = await startPayouts(t);
    // Another server process on the same schema claims one of the due steps the way its
    // worker does (the row locked in its transaction until the step commits) and holds it.
    const other = await openSameSchema(ts.schema!);
    others.push(other);
    const held = await t.store.db.selectFrom('jobs').select(['id', 'payload']).where('kind', '=', 'payment.step').orderBy('id', 'asc').executeTakeFirstOrThrow();
    const heldTx = (JSON.parse(held.payload) as { transactionId: string }).transactionId;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let claimed!: () => void;
    const isClaimed = new Promise<void>((resolve) => (claimed = resolve));
    const claim = other.db.transaction().execute(async (trx) => {
      await trx.selectFrom('jobs').select('id').where('id', '=', held.id).forUpdate().execute();
      claimed();
      await released;
    });
    await isClaimed;

    let answeredAt = Number.POSITIVE_INFINITY;
    const advance = t.call('POST', '/sandbox/clock/advance', { seconds: ADVANCE_SECONDS }).then((res) => {
      answeredAt = performance.now();
      return res;
    });
    // Let the advance run every step it can claim (the others' first steps at least), then
    // some more: an advance that does not wait has answered by then.
    const othersStarted = async () => (await statuses(t, ids.filter((id) => id !== heldTx))).every((x) => x.status !== 'PROCESSING');
    await Promise.race([advance, (async () => (await waitFor(othersStarted, 20_000, 100), await sleep(1_000)))()]);
    const releasedAt = performance.now();
    release();
    await claim;

    const res = await advance;
    expect(res.statusCode, res.body).toBe(200);
    expect(answeredAt).toBeGreaterThan(releasedAt);
    await expectAllFinal(t, ids);
    expect((await t.call('GET', '/sandbox/clock')).json().offsetSeconds).toBe(ADVANCE_SECONDS);
  }, 60_000);

  it('a due job of a kind no handler here runs does not hold the advance (another version’s: it waits for that version)', async () => {
    const t = await makeApp();
    opened.push(t);
    const platformId = t.running.bootstrap.platform.id;
    const start = t.clock.nowMs();
    await t.running.jobs.schedule(t.store.db, { platformId, kind: 'test.newer-version', payload: null, runAtMs: start + 1_000, at: iso(start) });
    const res = await t.call('POST', '/sandbox/clock/advance', { seconds: 10 });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().offsetSeconds).toBe(10);
    expect(await t.store.db.selectFrom('jobs').select(['status']).where('kind', '=', 'test.newer-version').execute()).toEqual([{ status: 'pending' }]);
  });
});
