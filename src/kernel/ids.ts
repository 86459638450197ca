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
  if (poolAt + n > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const out = pool.subarray(poolAt, poolAt + n);
  poolAt += n;
  return out;
}

/** n random bytes as hex, from the same pool (ids' and generated values' suffixes). */
export function randomHex(n: number): string {
  return random(n).toString('hex');
}

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
    seq = random(2).readUInt16BE(0) & 0x3ff; // random start, room to grow
  }
  lastMs = ms;
  const b = random(16); // consumed here, before the pool is refilled
  b.writeUIntBE(ms, 0, 6);
  b[6] = 0x70 | ((seq >> 8) & 0x0f);
  b[7] = seq & 0xff;
  b[8] = 0x80 | (b[8]! & 0x3f);
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
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
