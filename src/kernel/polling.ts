// The in-process worker loop the job queue and the webhook deliverer share: run passes of
// work until one finds nothing, then sleep `pollMs`, or less when kicked; stop() waits for
// the pass in progress, which stops between items.

export interface PollingLoopOptions {
  /** Sleep between passes that found nothing. */
  pollMs: () => number;
  /** Items per pass at most, so a long backlog yields to the timer now and then. */
  maxPerPass: number;
  onError: (err: unknown) => void;
}

export class PollingLoop {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;
  private kicked = false;

  /** `next` handles one item and answers whether there was one. */
  constructor(
    private readonly next: () => Promise<boolean>,
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
    if (this.timer && !this.running) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.loop();
    }
  }

  /** Stop, and wait for the item in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private loop(): void {
    if (this.stopped) return;
    this.kicked = false;
    this.running = this.pass()
      .catch((err: unknown) => this.opts.onError(err))
      .finally(() => {
        this.running = undefined;
        if (this.stopped) return;
        this.timer = setTimeout(() => {
          this.timer = undefined;
          this.loop();
        }, this.kicked ? 0 : this.opts.pollMs());
      });
  }

  private async pass(): Promise<void> {
    for (let n = 0; n < this.opts.maxPerPass && !this.stopped; n += 1) {
      if (!(await this.next())) return;
    }
  }
}
