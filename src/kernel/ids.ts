import { randomFillSync } from 'node:crypto';

// UUID v7 (RFC 9562): 48-bit Unix milliseconds, version 7, 12 bits of sequence that
// keep ids minted in the same millisecond increasing, variant 10, 62 random bits.
// Ids therefore sort by creation time, which the cursor pagination relies on.
let lastMs = 0;
let seq = 0;

// Random bytes come from a pool refilled 4 KiB at a time (one call into the CSPRNG per 256
// ids instead of two per id).
const pool = Buffer.alloc(4096);
let poolAt = pool.length;

function random(n: number): Buffer {
  const at = reserve(n);
  return pool.subarray(at, at + n);
}

/** Where n random bytes of the pool start (taken: the caller reads them before the next call). */
function reserve(n: number): number {
  if (poolAt + n > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  poolAt += n;
  return poolAt - n;
}

/** n random bytes as hex, from the same pool (ids' and generated values' suffixes). */
export function randomHex(n: number): string {
  return random(n).toString('hex');
}

/** Each byte's two hex digits. */
const HEX: readonly string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

export function uuidv7(nowMs: number = Date.now()): string {
  let ms = nowMs;
  if (ms <= lastMs) {
    ms = lastMs;
    seq += 1;
    if (seq > 0xfff) {
      // Sequence exhausted within one millisecond: borrow the next millisecond.
      ms = lastMs + 1;
      seq = 0;
    }
  } else {
    const at = reserve(2);
    seq = ((pool[at]! << 8) | pool[at + 1]!) & 0x3ff; // random start, room to grow
  }
  lastMs = ms;
  // A minted id never ends in `000`–`009`: those are the sandbox's magic suffixes (a cardholder
  // or funding-source id ending in 002 or 003 is refused), and an id the service makes must not
  // trigger one by chance (1 in 410 ids would). Such an ending becomes `010`–`019`.
  const r = reserve(8);
  if ((pool[r + 6]! & 0x0f) === 0 && pool[r + 7]! < 0x0a) pool[r + 7] = pool[r + 7]! | 0x10;
  // Formatted straight from the number and the pool's bytes (no Buffer, no hex string to cut:
  // issue 35). The 48-bit time as two parts that fit in 32-bit arithmetic.
  const hi = Math.floor(ms / 0x10000); // the top 32 bits
  const lo = ms % 0x10000;
  return (
    HEX[(hi >>> 24) & 0xff]! + HEX[(hi >>> 16) & 0xff]! + HEX[(hi >>> 8) & 0xff]! + HEX[hi & 0xff]! + '-' +
    HEX[(lo >>> 8) & 0xff]! + HEX[lo & 0xff]! + '-' +
    HEX[0x70 | ((seq >> 8) & 0x0f)]! + HEX[seq & 0xff]! + '-' +
    HEX[0x80 | (pool[r]! & 0x3f)]! + HEX[pool[r + 1]!]! + '-' +
    HEX[pool[r + 2]!]! + HEX[pool[r + 3]!]! + HEX[pool[r + 4]!]! + HEX[pool[r + 5]!]! + HEX[pool[r + 6]!]! + HEX[pool[r + 7]!]!
  );
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A resource id: `<Type>:<uuid v7>`. */
export function newId(type: string): string {
  return `${type}:${uuidv7()}`;
}

/** True when `id` has the shape `<type>:<uuid>`. */
export function isIdOf(type: string, id: string): boolean {
  const prefix = `${type}:`;
  return id.startsWith(prefix) && UUID_RE.test(id.slice(prefix.length));
}

/** JSON-schema pattern for `<Type>:<uuid>` ids, for path parameters and body fields. */
export function idPattern(type: string): string {
  return `^${type}:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`;
}
