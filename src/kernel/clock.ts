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
    isoText = formatIso(ms);
    isoMs = ms;
  }
  return isoText;
}

/** Two and three digits, zero-padded. */
const D2: readonly string[] = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'));
const D3: readonly string[] = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));
const DAY_MS = 86_400_000;
/** The end of year 9999: after it (and before 1970) toISOString's form changes (±YYYYYY). */
const LAST_MS = 253_402_300_799_999;

let dayNumber = NaN;
let dayText = '';

/**
 * `new Date(ms).toISOString()`, formatted from the number (issue 35: a request formats half a
 * dozen different instants, its time, its quote's expiry, the day of its limit; about 0.1 µs
 * instead of 0.7 µs each). The date part is kept for the last day formatted; the civil date
 * from the day number is Howard Hinnant's `civil_from_days`. Outside 1970–9999: toISOString.
 */
function formatIso(ms: number): string {
  if (!(ms >= 0 && ms <= LAST_MS) || !Number.isInteger(ms)) return new Date(ms).toISOString();
  const day = Math.floor(ms / DAY_MS);
  if (day !== dayNumber) {
    const z = day + 719_468;
    const era = Math.floor(z / 146_097);
    const doe = z - era * 146_097;
    const yoe = Math.floor((doe - Math.floor(doe / 1_460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
    const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
    const mp = Math.floor((5 * doy + 2) / 153);
    const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
    const m = mp < 10 ? mp + 3 : mp - 9;
    const y = yoe + era * 400 + (m <= 2 ? 1 : 0);
    dayText = `${String(y).padStart(4, '0')}-${D2[m]}-${D2[d]}T`;
    dayNumber = day;
  }
  let rest = ms - day * DAY_MS;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const min = Math.floor(rest / 60_000);
  rest -= min * 60_000;
  const sec = Math.floor(rest / 1_000);
  return `${dayText}${D2[h]}:${D2[min]}:${D2[sec]}.${D3[rest - sec * 1_000]}Z`;
}
