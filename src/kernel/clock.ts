// Time comes only from here. The real clock can be replaced in tests; each platform
// sees real time plus its own sandbox offset (advanced by the sandbox clock endpoints),
// so every sandbox delay is measured on the platform's clock.

export interface Clock {
  /** Real time, milliseconds since the epoch. */
  nowMs(): number;
}

export const systemClock: Clock = { nowMs: () => Date.now() };

/** A clock tests can move by hand. */
export class ManualClock implements Clock {
  constructor(private ms: number = Date.UTC(2025, 9, 13, 12, 0, 0)) {}
  nowMs(): number {
    return this.ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
  set(ms: number): void {
    this.ms = ms;
  }
}

/** A platform's sandbox time in milliseconds: real time plus its offset. */
export function platformNowMs(clock: Clock, offsetMs: number): number {
  return clock.nowMs() + offsetMs;
}

let isoMs = NaN;
let isoText = '';

/**
 * ISO 8601 UTC with milliseconds (fixed width, so strings sort like times). A request formats
 * the same instant many times (its rows' and events' times): the last one is kept (issue 35).
 */
export function iso(ms: number): string {
  if (ms !== isoMs) {
    isoText = new Date(ms).toISOString();
    isoMs = ms;
  }
  return isoText;
}
