import { createHash, hash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

// Secrets (API client secrets) are stored as scrypt hashes and compared in constant
// time. scrypt is deliberately slow, so a verified (stored hash, secret) pair is kept in
// memory for a short while: the next request with the same credential skips the hash.
// The token row is still read on every request, so a deleted token stops at once.

const N = 16384;
const R = 8;
const P = 1;
const KEYLEN = 32;

function scryptAsync(secret: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(secret, salt, KEYLEN, { N: n, r, p, maxmem: 64 * 1024 * 1024 }, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

export async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(secret, salt, N, R, P);
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

const CACHE_TTL_MS = 5 * 60_000;
const CACHE_MAX = 10_000;
const verified = new Map<string, number>();

function sha256(s: string): string {
  return hash('sha256', s, 'base64url');
}

/** True when this (stored hash, secret) pair was verified within the last CACHE_TTL_MS (no hashing). */
export function isVerified(secret: string, stored: string): boolean {
  const until = verified.get(`${stored}\u0000${sha256(secret)}`);
  return until !== undefined && until > Date.now();
}

export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  const cacheKey = `${stored}\u0000${sha256(secret)}`;
  const until = verified.get(cacheKey);
  if (until !== undefined && until > Date.now()) return true;
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [n, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  const salt = Buffer.from(parts[4]!, 'base64url');
  const expected = Buffer.from(parts[5]!, 'base64url');
  const actual = await scryptAsync(secret, salt, n, r, p);
  const ok = actual.length === expected.length && timingSafeEqual(actual, expected);
  if (ok) {
    if (verified.size >= CACHE_MAX) verified.clear();
    verified.set(cacheKey, Date.now() + CACHE_TTL_MS);
  }
  return ok;
}

// A token id that names no token still costs one scrypt, against a hash of a random secret
// with the same parameters, so an unknown id and a wrong secret take the same time.
let dummyHash: Promise<string> | undefined;
let dummyRuns = 0;

/** Spend the time of a real verification for a token id that names no token; always false. */
export async function verifyDummy(secret: string): Promise<false> {
  dummyHash ??= hashSecret(randomBytes(32).toString('hex'));
  dummyRuns++;
  await verifySecret(secret, await dummyHash);
  return false;
}

/** How many times verifyDummy ran in this process (tests check the path is taken). */
export function dummyVerifications(): number {
  return dummyRuns;
}

/** Constant-time equality of two strings of any length (hashes first). */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}

/** A random secret: `bytes` random bytes as lowercase hex. */
export function randomHex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}
