import { CompiledQuery, type Kysely, sql, type Transaction } from 'kysely';
import { literalLimit } from './db/limit.js';
import { isStoreUnavailable } from './db/unavailable.js';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from './clock.js';
import { iso } from './clock.js';
import type { Store } from './db/connect.js';
import type { DB } from './db/schema.js';
import { newId } from './ids.js';
import { PollingLoop } from './polling.js';
import { prepared, preparedByShape, preparedInsert, preparedUpdate } from './db/prepared.js';

// Durable jobs. A delayed step (the 30-second sandbox failure, the 6-minute payment,
// a webhook retry) is a row with a due time on its platform's clock. A worker loop in
// each server process claims due rows (FOR UPDATE SKIP LOCKED on PostgreSQL, so two
// processes never take the same row) and runs the handler in the same transaction that
// deletes the job's row: the handler's writes and the completion commit together, or not at
// all. A handler that throws is rolled back to a savepoint and the job is rescheduled with
// exponential backoff and jitter until it runs out of attempts. Nothing sleeps: a job that
// came due while the server was down runs at the next start. A process only claims kinds it
// has a handler for: a job whose handler is registered later (after the worker started, or
// in another process running a newer version) waits for it instead of failing for good.

/** Jobs the worker claims at once (one transaction, one commit). */
const BATCH_SIZE = 32;
/** A batch takes no further job after this long, so requests are not kept waiting for the store (SQLite: one connection). */
const BATCH_BUDGET_MS = 10;
/**
 * PostgreSQL: jobs claimed side by side per pass of the worker, one job per transaction each
 * (issue 15: one at a time, settlement fell behind the payments two processes started).
 */
const PG_CLAIMERS = 4;
/** PostgreSQL: jobs per pass of the worker at most (all its claimers together). */
const PG_JOBS_PER_PASS = 256;
/**
 * PostgreSQL: jobs a claim hands a kind's batch handler at most (issue 35). The claim takes
 * one job; when its kind has a batch handler, it also takes up to this many due jobs of that
 * kind and platform, and the transaction runs the batch handler on them and nothing else.
 * 64, not 16: a settlement batch costs about the same dozen round trips whatever its size,
 * and holds the payers' balance rows once for all its payments, so under the payment load
 * fewer, larger batches leave the rows to the payments more often (decisions/performance.md).
 */
const PG_BATCH_SIZE = 64;
/**
 * The grain the worker's wake-ups for scheduled jobs are rounded up to (polling.ts): a
 * payment's settlement is due a second after its request, so at a hundred payments a second a
 * 20 ms grain woke the worker fifty times a second for two settlements each, and every claim
 * and batch has a fixed cost (the claim, savepoints, a dozen set-based statements; on
 * PostgreSQL the round trips of each). At 100 ms a wake-up finds about five times as many
 * due, and a job runs at most 100 ms after its due time (issue 35).
 */
const JOB_WAKE_GRAIN_MS = 100;

/** What one claim did: jobs it ran, and whether more may be due (its claim was not the last word). */
interface Claimed {
  ran: number;
  /** False only when the claim knows nothing more was due when it looked (it ran every row it found, fewer than it asked for). */
  more: boolean;
}

// The worker's queries, built and compiled once (db/prepared.ts).
const insertJob = preparedInsert('jobs');
const updateJob = preparedUpdate('jobs', ['id']);
/** A job that ran is deleted in the transaction of its handler's writes (issue 15: bytes per flow). */
const deleteJob = prepared<{ id: string }>((db, p) => db.deleteFrom('jobs').where('id', '=', p('id')));
/** The jobs a batch handler completed, in one statement (per number of jobs: up to BATCH_SIZE shapes). */
const deleteJobs = preparedByShape<number, Record<string, string>>(
  (n) => String(n),
  (db, p, n) => db.deleteFrom('jobs').where('id', 'in', Array.from({ length: n }, (_, i) => p(`j${i}`) as string)),
  BATCH_SIZE,
);

interface ClaimRow {
  id: string;
  platform_id: string | null;
  kind: string;
  payload: string;
  run_at_ms: number;
  attempts: number;
  max_attempts: number;
  clock_offset_ms: number | null;
}

/**
 * The due jobs of the given kinds (optionally of one platform), earliest first: due on
 * their platform's clock, `run_at_ms <= now + clock_offset_ms`; locked and skipped when
 * locked (another worker has them) on PostgreSQL.
 */
const claimQuery = preparedByShape<{ kinds: number; platform: boolean; postgres: boolean; max: number }, Record<string, unknown>, ClaimRow>(
  (s) => `${s.kinds}|${s.platform}|${s.postgres}|${s.max}`,
  (db, p, s) => {
    let q = db
      .selectFrom('jobs as j')
      .leftJoin('platforms as p', 'p.id', 'j.platform_id')
      .select(['j.id', 'j.platform_id', 'j.kind', 'j.payload', 'j.run_at_ms', 'j.attempts', 'j.max_attempts', 'p.clock_offset_ms'])
      .where('j.status', '=', 'pending')
      .where(
        'j.kind',
        'in',
        Array.from({ length: s.kinds }, (_, i) => p(`k${i}`) as string),
      )
      // The same test with a bound the index on (status, run_at_ms) can use: no job is due
      // later than now on the clock furthest ahead, so pending jobs not due yet are not read.
      .where('j.run_at_ms', '<=', sql<number>`${p('now')} + (select case when max(clock_offset_ms) > 0 then max(clock_offset_ms) else 0 end from platforms)`)
      .where(sql<boolean>`j.run_at_ms <= ${p('now')} + coalesce(p.clock_offset_ms, 0)`);
    if (s.platform) q = q.where('j.platform_id', '=', p('platformId'));
    q = q.orderBy('j.run_at_ms', 'asc').orderBy('j.id', 'asc').limit(literalLimit(s.max));
    if (s.postgres) q = q.forUpdate('j').skipLocked();
    return q;
  },
  Infinity, // a handful of shapes: the number of registered kinds, with or without a platform, and the batch size (1 or BATCH_SIZE)
);

// A job's savepoint statements, compiled once (each handler runs inside one).
const SAVEPOINT_JOB = CompiledQuery.raw('savepoint job_run');
const RELEASE_JOB = CompiledQuery.raw('release savepoint job_run');
const ROLLBACK_JOB = CompiledQuery.raw('rollback to savepoint job_run');
const SAVEPOINT_BATCH = CompiledQuery.raw('savepoint job_batch');
const RELEASE_BATCH = CompiledQuery.raw('release savepoint job_batch');
const ROLLBACK_BATCH = CompiledQuery.raw('rollback to savepoint job_batch');

export interface JobRecord {
  id: string;
  platformId: string | null;
  kind: string;
  payload: unknown;
  runAtMs: number;
  attempts: number;
}

export interface JobContext {
  trx: Transaction<DB>;
  job: JobRecord;
  /** Now on the job's platform clock. */
  nowMs: number;
}

export type JobHandler = (ctx: JobContext) => Promise<void>;

export interface BatchJobContext {
  trx: Transaction<DB>;
  /** Claimed jobs of the kind, all of one platform, in due order. */
  jobs: JobRecord[];
  /** Now on that platform's clock. */
  nowMs: number;
}

/**
 * Runs many claimed jobs of a kind at once (set-based statements), in their order: it
 * completes the leading jobs it can do exactly as the kind's handler would, one after the
 * other, and answers how many. The worker then runs the next job through the handler and
 * hands the jobs after it to the batch handler again, so every job runs in claim order. If
 * it throws, everything it wrote is rolled back and its jobs run through the handler.
 */
export type BatchJobHandler = (ctx: BatchJobContext) => Promise<number>;

export interface JobKindOptions {
  /** Optional: run the claimed jobs of this kind together (see BatchJobHandler). */
  batch?: BatchJobHandler;
  maxAttempts?: number;
  /** First retry delay; doubles each attempt. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
}

interface Registered extends Required<Omit<JobKindOptions, 'batch'>> {
  handler: JobHandler;
  batch: BatchJobHandler | undefined;
}

export interface ScheduleInput {
  platformId: string | null;
  kind: string;
  payload: unknown;
  /** Due time on the platform's clock (epoch ms). */
  runAtMs: number;
  maxAttempts?: number;
  /** Creation timestamp to record (platform time, ISO). */
  at: string;
}

/** The longest sleep between polls that found nothing (the idle back-off; polling.ts). */
export const IDLE_POLL_MAX_MS = 2_000;

export class JobQueue {
  private readonly handlers = new Map<string, Registered>();
  private readonly worker: PollingLoop;
  /** Set while stop() waits: a batch in progress ends after the job it is running. */
  private stopping = false;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private log?: FastifyBaseLogger,
    private readonly pollMs = 200,
  ) {
    // SQLite: batches (one commit for many jobs; the batch holds the store's one connection
    // for at most BATCH_BUDGET_MS), one at a time on its one connection. PostgreSQL:
    // PG_CLAIMERS claims side by side on their own connections, each transaction running one
    // job or one batch handler's run of jobs (runPgClaim: its row locks in a fixed order, a job
    // it leaves to a transaction of its own); SKIP LOCKED gives each claimer (and each process)
    // different jobs (decisions/performance.md).
    // A pump answers 'last' when its own claims found nothing more due: the loop's pass then
    // ends without one more claim that would find nothing (issue 35: an empty claim per
    // wake-up, and on PostgreSQL one per claimer).
    const pump =
      store.kind === 'postgres'
        ? async (): Promise<boolean | 'last'> => {
            // One claim first: an idle pass costs one (issue 15: idle statements), a busy one
            // then runs PG_CLAIMERS side by side.
            const first = await this.claim(PG_BATCH_SIZE);
            if (first.ran === 0) return false;
            let ran = first.ran;
            if (!first.more) {
              // Its kind and platform had nothing more due: one look for anything else first,
              // instead of PG_CLAIMERS looks side by side that would all find nothing.
              const second = await this.claim(PG_BATCH_SIZE);
              if (second.ran === 0) return 'last';
              ran += second.ran;
            }
            // Then PG_CLAIMERS claimers side by side, each taking the next job (or batch) as
            // soon as its last one committed, until none is due (or PG_JOBS_PER_PASS ran: the
            // loop then looks at its timers and comes back at once).
            const claimer = async () => {
              while (!this.stopping && ran < PG_JOBS_PER_PASS) {
                const n = await this.runBatch(PG_BATCH_SIZE);
                if (n === 0) return;
                ran += n;
              }
            };
            await Promise.all(Array.from({ length: PG_CLAIMERS }, claimer));
            return ran < PG_JOBS_PER_PASS && !this.stopping ? 'last' : true;
          }
        : async (): Promise<boolean | 'last'> => {
            const { ran, more } = await this.claim(BATCH_SIZE);
            return ran === 0 ? false : more ? true : 'last';
          };
    this.worker = new PollingLoop(pump, {
      pollMs: () => this.pollMs,
      // Idle: 200 ms, 400, 800, … up to 2 s between empty polls (issue 15). This process's own
      // jobs kick or wake the loop, so only another process's (or a restart's) wait that long.
      maxIdleMs: () => Math.max(this.pollMs, IDLE_POLL_MAX_MS),
      maxPerPass: 100,
      wakeGrainMs: JOB_WAKE_GRAIN_MS,
      // The store unreachable: one warning per outage (the loop backs off and tries again).
      onError: (err, inARow) => {
        if (!isStoreUnavailable(err)) this.log?.error({ err }, 'job loop error');
        else if (inARow === 1) this.log?.warn({ err: (err as Error).message }, 'job loop: store unavailable; retrying with back-off');
      },
    });
  }

  useLogger(log: FastifyBaseLogger): void {
    this.log = log;
  }

  /**
   * Register a kind unless this queue has it already: an area's plugin runs once per app, and
   * a second app built on the same dependencies (tests, the bench) shares the queue.
   */
  registerOnce(kind: string, handler: JobHandler, opts: JobKindOptions = {}): void {
    if (!this.handlers.has(kind)) this.register(kind, handler, opts);
  }

  register(kind: string, handler: JobHandler, opts: JobKindOptions = {}): void {
    if (this.handlers.has(kind)) throw new Error(`job kind ${kind} registered twice`);
    this.handlers.set(kind, {
      handler,
      batch: opts.batch,
      maxAttempts: opts.maxAttempts ?? 10,
      backoffBaseMs: opts.backoffBaseMs ?? 1_000,
      backoffMaxMs: opts.backoffMaxMs ?? 60 * 60_000,
    });
    // Jobs of this kind may already be due (scheduled before a restart, or by another process).
    this.kick();
  }

  /** Schedule a job inside the caller's transaction (so it exists iff the change committed). */
  async schedule(db: Kysely<DB> | Transaction<DB>, input: ScheduleInput): Promise<string> {
    const reg = this.handlers.get(input.kind);
    const id = newId('Job');
    await insertJob(db, {
        id,
        platform_id: input.platformId,
        kind: input.kind,
        payload: JSON.stringify(input.payload ?? null),
        run_at_ms: input.runAtMs,
        status: 'pending',
        attempts: 0,
        max_attempts: input.maxAttempts ?? reg?.maxAttempts ?? 10,
        last_error: null,
        created_at: input.at,
        updated_at: input.at,
      });
    // Wake the worker when the job is due: now, or after its delay (in real time, which the
    // platform clock follows). Until then its polls would find nothing.
    const delay = input.runAtMs - Date.parse(input.at);
    if (Number.isFinite(delay) && delay > 0) this.worker.wakeIn(delay);
    else this.kick();
    return id;
  }

  /** Run one due job, if any. Returns false when nothing was due. */
  async runOne(platformId?: string): Promise<boolean> {
    return (await this.runBatch(1, { platformId })) > 0;
  }

  /**
   * Claim up to `max` due jobs (optionally of one platform) in due order and run them in one
   * transaction, each handler in a savepoint of its own: a handler's writes and its job's
   * completion still commit together, and one commit serves the whole batch. Stops early
   * (the jobs not reached stay pending) after `budgetMs` (by default BATCH_BUDGET_MS: SQLite's
   * one connection is held meanwhile), and when the loop is stopping. On PostgreSQL the
   * transaction runs one job or one batch handler's run of up to `max` (runPgClaim). Returns
   * how many jobs ran.
   */
  async runBatch(max: number, opts: { platformId?: string | undefined; budgetMs?: number } = {}): Promise<number> {
    return (await this.claim(max, opts)).ran;
  }

  /** runBatch, answering also whether more jobs may be due (Claimed). */
  private async claim(max: number, opts: { platformId?: string | undefined; budgetMs?: number } = {}): Promise<Claimed> {
    const { platformId } = opts;
    // The batch's connection before any waiting request's: the store's priority handle
    // (PostgreSQL: db/priority-pool.ts; SQLite's one connection has no queue of its own).
    const db = this.store.priorityDb ?? this.store.db;
    const kinds = [...this.handlers.keys()];
    if (kinds.length === 0) return { ran: 0, more: false };
    const realNow = this.clock.nowMs();
    const postgres = this.store.kind === 'postgres';
    const budgetMs = opts.budgetMs ?? BATCH_BUDGET_MS;
    if (postgres) return db.transaction().execute((trx) => this.runPgClaim(trx, kinds, max, realNow, platformId));
    return db.transaction().execute(async (trx) => {
      const params: Record<string, unknown> = { now: realNow, platformId };
      kinds.forEach((k, i) => (params[`k${i}`] = k));
      const rows = await claimQuery({ kinds: kinds.length, platform: platformId !== undefined, postgres, max })!.all(trx, params);
      const started = performance.now();
      let ran = 0;
      let i = 0;
      while (i < rows.length) {
        if (ran > 0 && (this.stopping || performance.now() - started > budgetMs)) break;
        const row = rows[i]!;
        // A kind with a batch handler: the run of jobs of its kind and platform that starts
        // here goes to it; the leading jobs it completes are done, the next runs alone.
        const batch = this.handlers.get(row.kind)?.batch;
        if (batch && row.platform_id !== null) {
          let end = i + 1;
          while (end < rows.length && rows[end]!.kind === row.kind && rows[end]!.platform_id === row.platform_id) end += 1;
          const n = await this.runBatched(trx, batch, rows.slice(i, end), realNow);
          if (n > 0) {
            ran += n;
            i += n;
            continue;
          }
        }
        i += 1;
        await this.runClaimed(trx, row, realNow);
        ran += 1;
      }
      // Every row the claim found ran, and it found fewer than it asked for: nothing else was due.
      return { ran, more: !(i === rows.length && rows.length < max) };
    });
  }

  /**
   * PostgreSQL: one claim, in the caller's transaction: the earliest due job; when its kind has
   * a batch handler (and `max` > 1), the due jobs of its kind and platform after it too, up to
   * `max`, for the batch handler. The transaction then runs either the batch handler's leading
   * jobs or, when it completes none, that first job alone, and nothing else: every row lock a
   * job takes is held only as long as its own batch, the batch takes its rows in one ordered
   * statement per table (transactions by id, balance rows by account id), and a job the batch
   * does not complete runs in a later transaction of its own, after this one committed (the
   * other claimed jobs go back to the queue at the commit). So two claimers never wait on each
   * other's rows in opposite orders (decisions/performance.md "Issue 35: settlement in batches").
   */
  private async runPgClaim(trx: Transaction<DB>, kinds: string[], max: number, realNow: number, platformId: string | undefined): Promise<Claimed> {
    const params: Record<string, unknown> = { now: realNow, platformId };
    kinds.forEach((k, i) => (params[`k${i}`] = k));
    const [row] = await claimQuery({ kinds: kinds.length, platform: platformId !== undefined, postgres: true, max: 1 })!.all(trx, params);
    if (!row) return { ran: 0, more: false };
    const batch = this.handlers.get(row.kind)?.batch;
    if (batch && row.platform_id !== null && max > 1) {
      // The rows this transaction locked already are not skipped: the first one comes back.
      const more = await claimQuery({ kinds: 1, platform: true, postgres: true, max })!.all(trx, { now: realNow, platformId: row.platform_id, k0: row.kind });
      const rows = [row, ...more.filter((r) => r.id !== row.id).slice(0, max - 1)];
      const n = await this.runBatched(trx, batch, rows, realNow);
      // All of its kind and platform that were due (and not another worker's) ran: other
      // kinds or platforms may still be due, so `more` says only that this run was not cut short.
      if (n > 0) return { ran: n, more: n < rows.length || more.length >= max };
    }
    await this.runClaimed(trx, row, realNow);
    return { ran: 1, more: true };
  }

  /**
   * Hand a run of claimed jobs (same kind, same platform: one platform clock) to the kind's
   * batch handler inside a savepoint; the leading jobs it completed are deleted in one
   * statement. Answers how many it completed. A handler that throws is rolled back and
   * completes none (they then run one by one, with the usual failure handling).
   */
  private async runBatched(trx: Transaction<DB>, batch: BatchJobHandler, rows: ClaimRow[], realNow: number): Promise<number> {
    const nowMs = realNow + Number(rows[0]!.clock_offset_ms ?? 0);
    const jobs: JobRecord[] = rows.map((row) => ({
      id: row.id,
      platformId: row.platform_id,
      kind: row.kind,
      payload: JSON.parse(row.payload),
      runAtMs: Number(row.run_at_ms),
      attempts: Number(row.attempts) + 1,
    }));
    await trx.executeQuery(SAVEPOINT_BATCH);
    try {
      const n = Math.max(0, Math.min(jobs.length, await batch({ trx, jobs, nowMs })));
      if (n > 0) {
        const ids = jobs.slice(0, n).map((j) => j.id);
        const q = deleteJobs(n);
        if (q) await q.execute(trx, Object.fromEntries(ids.map((id, i) => [`j${i}`, id])));
        else await trx.deleteFrom('jobs').where('id', 'in', ids).execute();
      }
      await trx.executeQuery(RELEASE_BATCH);
      return n;
    } catch (err) {
      await trx.executeQuery(ROLLBACK_BATCH);
      await trx.executeQuery(RELEASE_BATCH);
      this.log?.debug({ err: err instanceof Error ? err.message : String(err), jobs: jobs.length }, 'job batch fell back to one at a time');
      return 0;
    }
  }

  private async runClaimed(trx: Transaction<DB>, row: ClaimRow, realNow: number): Promise<void> {
    const nowMs = realNow + Number(row.clock_offset_ms ?? 0);
    const at = iso(nowMs);
    const attempts = Number(row.attempts) + 1;
    const reg = this.handlers.get(row.kind);
    const job: JobRecord = {
      id: row.id,
      platformId: row.platform_id,
      kind: row.kind,
      payload: JSON.parse(row.payload),
      runAtMs: Number(row.run_at_ms),
      attempts,
    };
    let error: unknown;
    if (!reg) {
      error = new Error(`no handler for job kind ${row.kind}`);
    } else {
      await trx.executeQuery(SAVEPOINT_JOB);
      try {
        await reg.handler({ trx, job, nowMs });
        await trx.executeQuery(RELEASE_JOB);
      } catch (err) {
        await trx.executeQuery(ROLLBACK_JOB);
        await trx.executeQuery(RELEASE_JOB);
        error = err;
      }
    }
    if (error === undefined) {
      // Done: the row goes with the commit of what the handler wrote (nothing reads a done
      // job; a job that failed for good stays, 'failed', with its last error).
      await deleteJob.execute(trx, { id: row.id });
      return;
    }
    const message = error instanceof Error ? error.message : String(error);
    const max = Number(row.max_attempts);
    if (attempts >= max || !reg) {
      await updateJob(trx, { status: 'failed', attempts, updated_at: at, last_error: message }, [row.id]);
      this.log?.error({ jobId: row.id, kind: row.kind, attempts, err: message }, 'job failed for good');
    } else {
      const base = Math.min(reg.backoffBaseMs * 2 ** (attempts - 1), reg.backoffMaxMs);
      const delay = Math.round(base * (1 + Math.random() * 0.2));
      await updateJob(trx, { attempts, updated_at: at, last_error: message, run_at_ms: nowMs + delay }, [row.id]);
      this.log?.warn({ jobId: row.id, kind: row.kind, attempts, retryInMs: delay, err: message }, 'job failed; will retry');
    }
  }

  /**
   * The earliest due time (on the platform's clock) of the platform's jobs still to run up to
   * `untilMs`, if any: pending jobs of the kinds this process runs, whether or not a worker
   * (this process's or another process's) has claimed one and is running it, since a claimed
   * job's row stays pending until the transaction that runs it commits (and goes then, or
   * comes back with a later due time). A job of a kind no handler here runs is left to the
   * process that has one (another version's), and a job that failed for good is not pending.
   */
  async nextDueAt(platformId: string, untilMs: number): Promise<number | undefined> {
    const kinds = [...this.handlers.keys()];
    if (kinds.length === 0) return undefined;
    const row = await this.store.db
      .selectFrom('jobs')
      .select((eb) => eb.fn.min('run_at_ms').as('next'))
      .where('platform_id', '=', platformId)
      .where('status', '=', 'pending')
      .where('run_at_ms', '<=', untilMs)
      .where('kind', 'in', kinds)
      .executeTakeFirst();
    return row?.next === null || row?.next === undefined ? undefined : Number(row.next);
  }

  /**
   * Run every job that is due now (optionally of one platform), in due order: on SQLite in
   * batches (as the worker claims them), on PostgreSQL one job or one batch handler's run of
   * jobs per transaction (runPgClaim).
   */
  async runDue(platformId?: string, max = 10_000): Promise<number> {
    const size = this.store.kind === 'postgres' ? PG_BATCH_SIZE : BATCH_SIZE;
    let n = 0;
    for (;;) {
      if (n >= max) return n;
      const ran = await this.runBatch(Math.min(size, max - n), { platformId });
      if (ran === 0) return n;
      n += ran;
    }
  }

  /** Start the worker loop. It runs due jobs at once, then polls. */
  start(): void {
    this.worker.start();
  }

  /** Ask the loop to look for due jobs now (in this process). */
  kick(): void {
    this.worker.kick();
  }

  /** Stop polling and wait for the job in progress. */
  async stop(): Promise<void> {
    this.stopping = true;
    try {
      await this.worker.stop();
    } finally {
      this.stopping = false;
    }
  }
}
