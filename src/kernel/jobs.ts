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
import { withPoolPriority } from './db/priority-pool.js';

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
/** The same on PostgreSQL (where each claim takes one job; runBatch can take more). */
const PG_BATCH_BUDGET_MS = 100;

// The worker's queries, built and compiled once (db/prepared.ts).
const insertJob = preparedInsert('jobs');
const updateJob = preparedUpdate('jobs', ['id']);
/** A job that ran is deleted in the transaction of its handler's writes (issue 15: bytes per flow). */
const deleteJob = prepared<{ id: string }>((db, p) => db.deleteFrom('jobs').where('id', '=', p('id')));

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

export interface JobKindOptions {
  maxAttempts?: number;
  /** First retry delay; doubles each attempt. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
}

interface Registered extends Required<JobKindOptions> {
  handler: JobHandler;
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
    // for at most BATCH_BUDGET_MS). PostgreSQL: one job per transaction, as a batch would hold
    // the row locks its jobs take (a payer's balance row, say) until its last job is done.
    // SQLite: one batch at a time on its one connection. PostgreSQL: PG_CLAIMERS claims of one
    // job each, side by side on their own connections; SKIP LOCKED gives each (and each
    // process) a different job, and no lock is held longer than one job (decisions.md).
    const pump =
      store.kind === 'postgres'
        ? async () => {
            // One claim first: an idle pass costs one (issue 15: idle statements), a busy one
            // then runs PG_CLAIMERS side by side.
            if ((await this.runBatch(1)) === 0) return false;
            // Then PG_CLAIMERS claimers side by side, each taking the next job as soon as its
            // last one committed, until none is due (or PG_JOBS_PER_PASS ran: the loop then
            // looks at its timers and comes back at once).
            let ran = 1;
            const claimer = async () => {
              while (!this.stopping && ran < PG_JOBS_PER_PASS) {
                if ((await this.runBatch(1)) === 0) return;
                ran += 1;
              }
            };
            await Promise.all(Array.from({ length: PG_CLAIMERS }, claimer));
            return true;
          }
        : async () => (await this.runBatch(BATCH_SIZE)) > 0;
    this.worker = new PollingLoop(pump, {
      pollMs: () => this.pollMs,
      // Idle: 200 ms, 400, 800, … up to 2 s between empty polls (issue 15). This process's own
      // jobs kick or wake the loop, so only another process's (or a restart's) wait that long.
      maxIdleMs: () => Math.max(this.pollMs, IDLE_POLL_MAX_MS),
      maxPerPass: 100,
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
   * (the jobs not reached stay pending) after `budgetMs` (by default BATCH_BUDGET_MS on
   * SQLite, whose one connection the batch holds meanwhile, and PG_BATCH_BUDGET_MS on
   * PostgreSQL), and when the loop is stopping. Returns how many jobs ran.
   */
  async runBatch(max: number, opts: { platformId?: string | undefined; budgetMs?: number } = {}): Promise<number> {
    const { platformId } = opts;
    const db = this.store.db;
    const kinds = [...this.handlers.keys()];
    if (kinds.length === 0) return 0;
    const realNow = this.clock.nowMs();
    const postgres = this.store.kind === 'postgres';
    const budgetMs = opts.budgetMs ?? (postgres ? PG_BATCH_BUDGET_MS : BATCH_BUDGET_MS);
    // The batch's connection before any waiting request's (PostgreSQL: priority-pool.ts;
    // SQLite's one connection has no queue of its own).
    return withPoolPriority(() =>
      db.transaction().execute(async (trx) => {
        const params: Record<string, unknown> = { now: realNow, platformId };
        kinds.forEach((k, i) => (params[`k${i}`] = k));
        const rows = await claimQuery({ kinds: kinds.length, platform: platformId !== undefined, postgres, max })!.all(trx, params);
        const started = performance.now();
        let ran = 0;
        for (const row of rows) {
          if (ran > 0 && (this.stopping || performance.now() - started > budgetMs)) break;
          await this.runClaimed(trx, row, realNow);
          ran += 1;
        }
        return ran;
      }),
    );
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

  /** Run every job that is due now (optionally of one platform), in due order. */
  async runDue(platformId?: string, max = 10_000): Promise<number> {
    let n = 0;
    while (n < max && (await this.runOne(platformId))) n += 1;
    return n;
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
