// The in-process worker loop the job queue and the webhook deliverer share: run passes of
// work until one finds nothing, then sleep `pollMs`, or less when kicked (at once) or asked
// to wake at a time (wakeIn); stop() waits for the pass in progress, which stops between
// items.

import { outsideClaim } from './idempotency.js';

/** Wake-ups are rounded up to this grain, so work due close together is found by one pass. */
export const WAKE_GRAIN_MS = 20;
const MAX_WAKES = 10_000;

export interface PollingLoopOptions {
  /** Sleep after a pass that found nothing. */
  pollMs: () => number;
  /**
   * Idle back-off: each further pass in a row that finds nothing doubles the sleep, up to
   * this (default: pollMs, no back-off). Work this process creates kicks or wakes the loop
   * at once, so only work another process creates (or a retry's due time) waits up to it.
   */
  maxIdleMs?: () => number;
  /** Items per pass at most, so a long backlog yields to the timer now and then. */
  maxPerPass: number;
  /** The grain wake-ups are rounded up to (default WAKE_GRAIN_MS). */
  wakeGrainMs?: number;
  /**
   * A pass failed (`inARow`: passes failed in a row, this one included). The loop goes on:
   * it sleeps as after an empty pass (so it backs off while the failures last) and tries again.
   */
  onError: (err: unknown, inARow: number) => void;
}

export class PollingLoop {
  private timer: NodeJS.Timeout | undefined;
  /** When the sleeping timer fires (epoch ms of the real clock). */
  private timerAt = 0;
  private running: Promise<void> | undefined;
  private stopped = true;
  private kicked = false;
  /** Wake-ups asked for (epoch ms, ascending, on wake-grain boundaries). */
  private readonly wakes: number[] = [];
  /** Passes in a row that found nothing (the idle back-off). */
  private idlePasses = 0;
  /** Passes that failed in a row. */
  private failures = 0;

  /**
   * `next` handles one item (or a batch) and answers whether there was one; `'last'`: there
   * was, and it knows nothing else is waiting (its own look found no more), so the pass ends
   * without the look that would find nothing (issue 35: an empty claim per wake-up).
   */
  constructor(
    private readonly next: () => Promise<boolean | 'last'>,
    private readonly opts: PollingLoopOptions,
  ) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.loop();
  }

  /** Look for work now instead of at the end of the current sleep. */
  kick(): void {
    if (this.stopped) return;
    this.kicked = true;
    this.idlePasses = 0;
    if (this.timer && !this.running) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.loop();
    }
  }

  /**
   * Look for work in `delayMs` (work that comes due then), rounded up to the next
   * WAKE_GRAIN_MS boundary: what comes due close together is found by one pass.
   */
  wakeIn(delayMs: number): void {
    if (this.stopped) return;
    const grain = this.opts.wakeGrainMs ?? WAKE_GRAIN_MS;
    const at = Math.ceil((Date.now() + delayMs) / grain) * grain;
    const w = this.wakes;
    // Mostly later than every wake already asked for (delays are alike): append.
    let i = w.length;
    while (i > 0 && w[i - 1]! > at) i -= 1;
    if (i > 0 && w[i - 1] === at) return;
    if (w.length >= MAX_WAKES) return; // the polls still find it
    w.splice(i, 0, at);
    // Sleeping past it: sleep until then instead. (A pass in progress picks it up when it ends.)
    if (i === 0 && this.timer && !this.running && this.timerAt > at) {
      clearTimeout(this.timer);
      this.sleep();
    }
  }

  /** Stop, and wait for the item in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.wakes.length = 0;
    await this.running;
  }

  private loop(): void {
    if (this.stopped) return;
    this.kicked = false;
    const now = Date.now();
    let passed = 0;
    while (passed < this.wakes.length && this.wakes[passed]! <= now) passed += 1;
    if (passed > 0) this.wakes.splice(0, passed);
    // A kick comes from inside a request: its passes run outside that request's
    // Idempotency-Key claim, so no job or delivery is ever taken for its answer. (The job
    // worker's turn at the pool is not a context and cannot be inherited: the job queue's
    // passes ask for it through the store's priority handle, db/priority-pool.ts.)
    this.running = outsideClaim(() => this.pass())
      .then((found) => {
        this.idlePasses = found ? 0 : this.idlePasses + 1;
        this.failures = 0;
      })
      .catch((err: unknown) => {
        this.failures += 1;
        this.idlePasses += 1;
        this.opts.onError(err, this.failures);
      })
      .finally(() => {
        this.running = undefined;
        if (this.stopped) return;
        this.sleep();
      });
  }

  private sleep(): void {
    const now = Date.now();
    const next = this.wakes.length > 0 ? this.wakes[0]! - now : Infinity;
    const ms = this.kicked ? 0 : Math.max(0, Math.min(this.idleMs(), next));
    this.timerAt = now + ms;
    this.arm(ms);
  }

  /** The sleep after this many empty passes: pollMs, doubling per further empty pass, up to maxIdleMs. */
  private idleMs(): number {
    const poll = this.opts.pollMs();
    const max = Math.max(poll, this.opts.maxIdleMs?.() ?? poll);
    if (this.idlePasses <= 1) return poll;
    return Math.min(max, poll * 2 ** Math.min(this.idlePasses - 1, 20));
  }

  private arm(ms: number): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      // Timers may fire a little before Date.now() reaches their time: wait for it.
      const early = this.kicked ? 0 : this.timerAt - Date.now();
      if (early > 0) this.arm(early);
      else this.loop();
    }, ms);
  }

  /** Whether it found any work. */
  private async pass(): Promise<boolean> {
    let found = false;
    for (let n = 0; n < this.opts.maxPerPass && !this.stopped; n += 1) {
      const got = await this.next();
      if (!got) return found;
      found = true;
      if (got === 'last') return found;
    }
    return found;
  }
}
