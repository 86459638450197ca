import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDLE_POLL_MAX_MS } from '../../src/kernel/jobs.js';
import { PollingLoop } from '../../src/kernel/polling.js';
import { makeApp, sleep, STORE, type TestApp } from '../helpers.js';

// Issue 15: an idle server's pollers (the job loop, the webhook deliverer) back off, so an
// idle process runs a few statements a second instead of about 20, and work this process
// creates is still picked up at once.

describe(`idle pollers (${STORE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeApp({ worker: true });
  });
  afterAll(async () => t.close());

  it('an idle server runs at most a few statements a second once its pollers backed off', async () => {
    await sleep(IDLE_POLL_MAX_MS + 1_500); // the back-off reaches its ceiling
    const before = t.store.statements();
    await sleep(4_000);
    const perSecond = (t.store.statements() - before) / 4;
    // Two loops, each polling every IDLE_POLL_MAX_MS, a few statements per poll.
    expect(perSecond).toBeLessThanOrEqual(4);
  }, 20_000);
});

describe('PollingLoop back-off', () => {
  it('doubles the sleep after each empty pass up to maxIdleMs, and a kick or found work resets it', async () => {
    const passes: number[] = [];
    let work = 0;
    const loop = new PollingLoop(
      async () => {
        passes.push(Date.now());
        if (work > 0) {
          work -= 1;
          return true;
        }
        return false;
      },
      { pollMs: () => 20, maxIdleMs: () => 160, maxPerPass: 10, onError: () => {} },
    );
    loop.start();
    await sleep(1_000);
    const gaps = passes.slice(1).map((p, i) => p - passes[i]!);
    // 20, 40, 80, 160, 160, …: never more than 160 (+ timer slack), and it grew past 20.
    expect(Math.max(...gaps)).toBeLessThan(160 + 240); // timer slack on a busy machine
    expect(gaps.slice(-2).every((g) => g >= 150)).toBe(true);
    expect(passes.length).toBeLessThan(15); // without back-off: 50 passes
    // A kick finds new work at once.
    work = 1;
    const kickedAt = Date.now();
    const seen = passes.length;
    loop.kick();
    await sleep(30);
    expect(passes.length).toBeGreaterThan(seen);
    expect(passes[seen]! - kickedAt).toBeLessThan(25);
    await loop.stop();
  });
});
