// PostgreSQL: the pool's connections handed out in two queues. The job worker's claims
// (settlements and other state changes that requests have already promised) take their
// connections through `PriorityPool.first` and get the next free connection before any
// request that waits for one. Without it, each job's transaction queued behind every waiting
// request: under a steady load of 32 connections the job worker's few claims got about 5
// turns in 37, and settlement fell behind the payments it settles (issue 15). The job worker
// never runs more than a handful of claims at once (jobs.ts PG_CLAIMERS), so requests always
// keep most of the pool.
//
// Who asks first is chosen by the caller's handle, not by an async context: the store opens a
// second Kysely instance over `first` (`Store.priorityDb`, db/connect.ts) and the job worker
// opens its transactions there. Until issue 35 it was an AsyncLocalStorage around the job's
// work: one run of any AsyncLocalStorage makes Node track the context of every promise of the
// process from then on (async hooks: about 4-5 % of a payment flow's CPU on PostgreSQL). A
// handle cannot leak the way a context did: a background loop a job starts or kicks (a webhook
// delivery for an event the job emitted) uses the store's own handle and waits its turn.

/** No pool connection came free within the acquire timeout (db/unavailable.ts: 503). */
export class PoolWaitTimeout extends Error {
  constructor(ms: number) {
    super(`timed out after ${ms} ms waiting for a database connection`);
    this.name = 'PoolWaitTimeout';
  }
}

/** The part of pg.Pool and its clients that Kysely's PostgresDialect uses. */
interface Releasable {
  release: (err?: unknown) => void;
}
interface PoolLike<C extends Releasable> {
  connect(): Promise<C>;
  end(): Promise<void>;
}

/**
 * A pool in front of `pool` that lends at most `max` connections (the size of `pool`), taking
 * the waiters of `first` first, then those of `connect`, each queue in arrival order.
 */
export class PriorityPool<C extends Releasable> implements PoolLike<C> {
  private lent = 0;
  private readonly firstWaiters: Array<() => void> = [];
  private readonly rest: Array<() => void> = [];

  constructor(
    private readonly pool: PoolLike<C>,
    private readonly max: number,
    /** The longest a caller waits for a slot, in ms (0: no limit): then PoolWaitTimeout (503). */
    private readonly acquireTimeoutMs = 0,
  ) {}

  /**
   * The same pool, asked with priority: its waiters are served before every waiter of
   * `connect`. Ending it ends nothing (the pool is ended once, through this object).
   */
  readonly first: PoolLike<C> = {
    connect: () => this.acquire(this.firstWaiters),
    end: async () => {},
  };

  /** Connections lent now, and waiters of each queue (tests). */
  get state(): { lent: number; priorityWaiting: number; waiting: number } {
    return { lent: this.lent, priorityWaiting: this.firstWaiters.length, waiting: this.rest.length };
  }

  /** A connection, after every waiter (of either queue) already waiting. */
  connect(): Promise<C> {
    return this.acquire(this.rest);
  }

  private async acquire(queue: Array<() => void>): Promise<C> {
    if (this.lent >= this.max) {
      await new Promise<void>((resolve, reject) => {
        let timer: NodeJS.Timeout | undefined;
        const waiter = () => {
          if (timer !== undefined) clearTimeout(timer);
          resolve();
        };
        queue.push(waiter);
        if (this.acquireTimeoutMs > 0) {
          // Still queued when it fires (a handed-over slot clears the timer first): leave the queue.
          timer = setTimeout(() => {
            const i = queue.indexOf(waiter);
            if (i >= 0) queue.splice(i, 1);
            reject(new PoolWaitTimeout(this.acquireTimeoutMs));
          }, this.acquireTimeoutMs);
        }
      });
    } else {
      this.lent += 1;
    }
    // The slot is ours (taken above, or handed over by a release): a connection of `pool`.
    let client: C;
    try {
      client = await this.pool.connect();
    } catch (err) {
      this.handOver();
      throw err;
    }
    // pg's pool gives each checkout a release function of its own: wrap this one.
    const release = client.release;
    client.release = (err?: unknown) => {
      client.release = release; // a second call is pg's own (it throws)
      release.call(client, err);
      this.handOver();
    };
    return client;
  }

  /** A slot came free: to the first priority waiter, else the first other waiter, else back. */
  private handOver(): void {
    const next = this.firstWaiters.shift() ?? this.rest.shift();
    if (next) next();
    else this.lent -= 1;
  }

  end(): Promise<void> {
    return this.pool.end();
  }
}
