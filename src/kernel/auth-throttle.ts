import type { Clock } from './clock.js';

// Throttling of failed Basic credentials (unknown token id or wrong secret), per token and
// per client address: after `limit` failures within `windowMs`, the key is refused with
// 429 RATE_LIMITED and Retry-After until its oldest failure leaves the window. Failures
// only expire: a success resets nothing, so valid credentials interleaved with guesses do
// not buy more guesses. Kept in memory, per process (several processes each allow the
// limit); time is the injectable clock's (the real clock in production), never a platform's
// sandbox clock, which a caller could move.

export interface AuthThrottleLimits {
  /** Failures of one token (its id, or the unknown user name) per window. */
  perToken: number;
  /** Failures from one client address per window, whatever the token. */
  perAddress: number;
  windowMs: number;
  /** Keys remembered per kind at most (oldest dropped first). */
  maxKeys: number;
}

export const DEFAULT_AUTH_THROTTLE: AuthThrottleLimits = { perToken: 20, perAddress: 100, windowMs: 60_000, maxKeys: 10_000 };

class FailureWindow {
  private readonly failures = new Map<string, number[]>();
  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly maxKeys: number,
  ) {}

  get size(): number {
    return this.failures.size;
  }

  private live(key: string, now: number): number[] | undefined {
    const list = this.failures.get(key);
    if (!list) return undefined;
    while (list.length > 0 && list[0]! <= now - this.windowMs) list.shift();
    if (list.length === 0) {
      this.failures.delete(key);
      return undefined;
    }
    return list;
  }

  /** Milliseconds until `key` may try again (0: not blocked). */
  blockedForMs(key: string, now: number): number {
    const list = this.live(key, now);
    if (!list || list.length < this.limit) return 0;
    return list[list.length - this.limit]! + this.windowMs - now;
  }

  record(key: string, now: number): void {
    const list = this.live(key, now);
    if (list) {
      list.push(now);
      if (list.length > this.limit) list.shift();
      return;
    }
    // Full: forget the key remembered first (Map order is insertion order).
    if (this.failures.size >= this.maxKeys) this.failures.delete(this.failures.keys().next().value!);
    this.failures.set(key, [now]);
  }
}

export class AuthThrottle {
  private readonly tokens: FailureWindow;
  private readonly addresses: FailureWindow;

  constructor(
    private readonly clock: Clock,
    readonly limits: AuthThrottleLimits = DEFAULT_AUTH_THROTTLE,
  ) {
    this.tokens = new FailureWindow(limits.perToken, limits.windowMs, limits.maxKeys);
    this.addresses = new FailureWindow(limits.perAddress, limits.windowMs, limits.maxKeys);
  }

  /** True when no failure is remembered (the hot path skips every check). */
  get idle(): boolean {
    return this.tokens.size === 0 && this.addresses.size === 0;
  }

  /** Whole seconds until this address may try again (0: not blocked). */
  addressBlockedFor(address: string): number {
    return Math.ceil(this.addresses.blockedForMs(address, this.clock.nowMs()) / 1000);
  }

  /** Whole seconds until this token may be tried again (0: not blocked). */
  tokenBlockedFor(tokenKey: string): number {
    return Math.ceil(this.tokens.blockedForMs(tokenKey, this.clock.nowMs()) / 1000);
  }

  recordFailure(tokenKey: string, address: string): void {
    const now = this.clock.nowMs();
    this.tokens.record(tokenKey, now);
    this.addresses.record(address, now);
  }
}
