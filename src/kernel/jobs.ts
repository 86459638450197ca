import { type Kysely, type Transaction, sql } from 'kysely';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from './clock.js';
import { iso } from './clock.js';
import type { Store } from './db/connect.js';
import type { DB } from './db/schema.js';
import { newId } from './ids.js';
import { PollingLoop } from './polling.js';

// Durable jobs. A delayed step (the 30-second sandbox failure, the 6-minute payment,
// a webhook retry) is a row with a due time on its platform's clock. A worker loop in
// each server process claims due rows (FOR UPDATE SKIP LOCKED on PostgreSQL, so two
// processes never take the same row) and runs the handler in the same transaction that
// marks the job done: the handler's writes and the completion commit together, or not at
// all. A handler that throws is rolled back to a savepoint and the job is rescheduled with
// exponential backoff and jitter until it runs out of attempts. Nothing sleeps: a job that
// came due while the server was down runs at the next start. A process only claims kinds it
// has a handler for: a job whose handler is registered later (after the worker started, or
// in another process running a newer version) waits for it instead of failing for good.

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

export class JobQueue {
  private readonly handlers = new Map<string, Registered>();
  private readonly worker: PollingLoop;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private log?: FastifyBaseLogger,
    private readonly pollMs = 200,
  ) {
    this.worker = new PollingLoop(() => this.runOne(), {
      pollMs: () => this.pollMs,
      maxPerPass: 1_000,
      onError: (err) => this.log?.error({ err }, 'job loop error'),
    });
  }

  useLogger(log: FastifyBaseLogger): void {
    this.log = log;
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
    await db
      .insertInto('jobs')
      .values({
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
      })
      .execute();
    this.kick();
    return id;
  }

  /** Run one due job, if any. Returns false when nothing was due. */
  async runOne(platformId?: string): Promise<boolean> {
    const db = this.store.db;
    const kinds = [...this.handlers.keys()];
    if (kinds.length === 0) return false;
    const realNow = this.clock.nowMs();
    return db.transaction().execute(async (trx) => {
      let q = trx
        .selectFrom('jobs as j')
        .leftJoin('platforms as p', 'p.id', 'j.platform_id')
        .select(['j.id', 'j.platform_id', 'j.kind', 'j.payload', 'j.run_at_ms', 'j.attempts', 'j.max_attempts', 'p.clock_offset_ms'])
        .where('j.status', '=', 'pending')
        .where('j.kind', 'in', kinds)
        .where(sql<boolean>`j.run_at_ms <= ${realNow} + coalesce(p.clock_offset_ms, 0)`);
      if (platformId !== undefined) q = q.where('j.platform_id', '=', platformId);
      q = q.orderBy('j.run_at_ms', 'asc').orderBy('j.id', 'asc').limit(1);
      if (this.store.kind === 'postgres') q = q.forUpdate('j').skipLocked();
      const row = await q.executeTakeFirst();
      if (!row) return false;

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
        await sql`savepoint job_run`.execute(trx);
        try {
          await reg.handler({ trx, job, nowMs });
          await sql`release savepoint job_run`.execute(trx);
        } catch (err) {
          await sql`rollback to savepoint job_run`.execute(trx);
          error = err;
        }
      }
      if (error === undefined) {
        await trx.updateTable('jobs').set({ status: 'done', attempts, updated_at: at, last_error: null }).where('id', '=', row.id).execute();
        return true;
      }
      const message = error instanceof Error ? error.message : String(error);
      const max = Number(row.max_attempts);
      if (attempts >= max || !reg) {
        await trx.updateTable('jobs').set({ status: 'failed', attempts, updated_at: at, last_error: message }).where('id', '=', row.id).execute();
        this.log?.error({ jobId: row.id, kind: row.kind, attempts, err: message }, 'job failed for good');
      } else {
        const base = Math.min(reg.backoffBaseMs * 2 ** (attempts - 1), reg.backoffMaxMs);
        const delay = Math.round(base * (1 + Math.random() * 0.2));
        await trx
          .updateTable('jobs')
          .set({ attempts, updated_at: at, last_error: message, run_at_ms: nowMs + delay })
          .where('id', '=', row.id)
          .execute();
        this.log?.warn({ jobId: row.id, kind: row.kind, attempts, retryInMs: delay, err: message }, 'job failed; will retry');
      }
      return true;
    });
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
    await this.worker.stop();
  }
}
