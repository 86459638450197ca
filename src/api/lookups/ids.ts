import { randomHex } from '../../kernel/ids.js';

// Lookup ids (issue 35). A lookup is not stored on its own: what a quote reads back is its
// answer (lookup_answers, one row per distinct answer, shared by identical lookups) and its
// time. The id carries both, and is still a `Lookup:<uuid v7>` (RFC 9562), unique per lookup:
//
//   tttttttt-tttt-7ccc-8ccc-cckkkkkkkkkk
//
// t: the 48-bit Unix milliseconds of the lookup on the platform's clock (its expiry counts
// from them); 7: the version; c: 32 bits of the answer's counter (each answer's ids are
// minted by the one process that stored it, from a random start, never twice: the counter is
// 32 bits and the answer is dropped before it wraps); 8: the variant; k: the answer's key,
// 40 random bits (10 hex digits), the row's primary key. A key never ends in 000–009 (the
// sandbox's magic suffixes: an id the service makes must not trigger one by chance, as
// kernel/ids.ts) and is never all zeros.

/** Hex digits of an answer key. */
export const ANSWER_KEY_HEX = 10;

/** The counter's range: 32 bits. */
export const COUNTER_LIMIT = 2 ** 32;

/** A fresh answer key: 40 random bits as 10 lowercase hex digits, not ending in 000–009, not all zeros. */
export function newAnswerKey(): string {
  for (;;) {
    const key = randomHex(5);
    if (key === '0000000000') continue;
    if (key.startsWith('00', 7) && key.charCodeAt(9) <= 0x39) continue; // ends in 000–009
    return key;
  }
}

/** Where an answer's counter starts: random, with room for 2^31 lookups before the limit. */
export function counterStart(): number {
  return parseInt(randomHex(4), 16) >>> 1;
}

const hex = (n: number, digits: number): string => n.toString(16).padStart(digits, '0');

/** The id of a lookup at `ms` (platform clock) answered by `key`, the answer's `n`-th (0 ≤ n < 2^32). */
export function lookupIdOf(ms: number, n: number, key: string): string {
  const t = hex(Math.floor(ms), 12);
  return `Lookup:${t.slice(0, 8)}-${t.slice(8)}-7${hex(n >>> 20, 3)}-8${hex((n >>> 8) & 0xfff, 3)}-${hex(n & 0xff, 2)}${key}`;
}

/** What a `Lookup:<uuid>` id says (call after isIdOf): the lookup's time and its answer's key. */
export function lookupIdParts(id: string): { ms: number; key: string } {
  const uuid = id.slice('Lookup:'.length).toLowerCase();
  return { ms: parseInt(uuid.slice(0, 8) + uuid.slice(9, 13), 16), key: uuid.slice(36 - ANSWER_KEY_HEX) };
}
