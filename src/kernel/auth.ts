import type { FastifyRequest } from 'fastify';
import { findCredential as readTokenCredential, type PlatformRow, type TokenRow } from './credentials.js';
import type { Store } from './db/connect.js';
import { TableCache } from './db/table-cache.js';
import type { AuthThrottle } from './auth-throttle.js';
import { apiError, type ApiError, unauthorized } from './errors.js';
import { isVerified, safeEqual, verifyDummy, verifySecret } from './secrets.js';

// The security schemes. BasicAuth: `<api token id>:<client secret>`, where the token id is
// the token's clientId or its `Token:` id. AgentAuth: Bearer with an agent access token.
// Every failure is 401 UNAUTHORIZED with the failed check in details.reason, except that an
// unknown token id and a wrong secret are one failure (same message, same reason, and the
// same time: an unknown id costs a scrypt against a dummy hash), so an answer never tells
// whether a token id exists. Repeated credential failures are throttled (auth-throttle.ts).

/** The one answer to an unknown token id or a wrong secret. */
export const INVALID_CREDENTIALS = 'Unknown API token id or wrong client secret';

export const PERMISSIONS = ['VIEW', 'TRANSACT', 'MANAGE'] as const;
export type Permission = (typeof PERMISSIONS)[number];

export interface AuthContext {
  scheme: 'basic' | 'agent';
  platform: PlatformRow;
  tokenId: string;
  permissions: ReadonlySet<Permission>;
  /** For AgentAuth: the agent's customer, to which every request is bound. */
  customerId?: string;
}

/**
 * Which schemes a route accepts. An agent's Bearer token is accepted only where the route
 * says 'agent' (the /agents/me operations), which accept nothing else: on every other route
 * it is 401, so an agent token carries no platform rights.
 */
export type AuthMode = 'basic' | 'basic-or-agent' | 'agent' | 'none';

/** Resolves an agent access token; the agents area installs one. */
export type AgentResolver = (store: Store, accessToken: string) => Promise<AuthContext | undefined>;

/** 429 RATE_LIMITED with its Retry-After (seconds), which the caller sets as a header. */
export interface Throttled extends ApiError {
  retryAfter: number;
}

function throttled(seconds: number, what: string): Throttled {
  const err = apiError(429, 'RATE_LIMITED', `Too many failed authentication attempts ${what}; retry after ${seconds} s`, { retryAfterSeconds: seconds }) as Throttled;
  err.retryAfter = seconds;
  return err;
}

export async function authenticate(store: Store, req: FastifyRequest, mode: AuthMode, agentResolver?: AgentResolver, throttle?: AuthThrottle): Promise<AuthContext> {
  const header = req.headers.authorization;
  if (!header) throw unauthorized('Missing Authorization header', 'Authentication required: send HTTP Basic credentials <api token id>:<client secret>');
  const space = header.indexOf(' ');
  const scheme = (space < 0 ? header : header.slice(0, space)).toLowerCase();
  const value = space < 0 ? '' : header.slice(space + 1).trim();

  if (mode === 'agent' && scheme !== 'bearer') {
    throw unauthorized('This operation accepts only an agent access token (AgentAuth: Bearer)', 'Agent operations accept only the agent\'s Bearer access token');
  }
  if (scheme === 'bearer') {
    if (mode !== 'agent') throw unauthorized('This operation accepts HTTP Basic credentials only', 'Bearer (agent) credentials are not accepted by this operation');
    if (!value) throw unauthorized('Empty Bearer token');
    const ctx = agentResolver ? await agentResolver(store, value) : undefined;
    if (!ctx) throw unauthorized('Unknown or expired agent access token');
    return ctx;
  }
  if (scheme !== 'basic') throw unauthorized(`Unsupported authorization scheme "${scheme}"`, 'Use HTTP Basic credentials');

  const { username, secret } = parseBasic(value);
  // An IPv4 client seen on an IPv6 socket (::ffff:a.b.c.d) is the same address.
  const address = req.ip.startsWith('::ffff:') ? req.ip.slice(7) : req.ip;
  // A loopback client is the developer's own machine (tests, the CLI, the SDK): past a
  // limit, only its failing attempts are refused (429), so a burst of deliberate 401 checks
  // never locks out the valid requests that follow. Any other address is refused outright.
  const loopback = isLoopback(address);
  if (throttle && !throttle.idle && !loopback) {
    const wait = throttle.addressBlockedFor(address);
    if (wait > 0) throw throttled(wait, 'from this address');
  }
  const found = await findCredential(store, username);
  // A token is counted under its id, whichever of its names was used; an unknown name under itself.
  const tokenKey = found ? found.token.id : `?${username}`;
  if (throttle && !throttle.idle && !loopback) {
    const wait = throttle.tokenBlockedFor(tokenKey);
    if (wait > 0) throw throttled(wait, 'for this API token');
  }
  const ok = found ? await verifySecret(secret, found.token.secret_hash) : await verifyDummy(secret);
  if (!found || !ok) {
    if (throttle && loopback && !throttle.idle) {
      const address_ = throttle.addressBlockedFor(address);
      if (address_ > 0) throw throttled(address_, 'from this address');
      const token_ = throttle.tokenBlockedFor(tokenKey);
      if (token_ > 0) throw throttled(token_, 'for this API token');
    }
    throttle?.recordFailure(tokenKey, address);
    throw unauthorized(INVALID_CREDENTIALS);
  }
  return { scheme: 'basic', platform: found.platform, tokenId: found.token.id, permissions: found.permissions };
}

/** 127.0.0.0/8 and ::1 (IPv4-mapped forms are unwrapped before). */
function isLoopback(address: string): boolean {
  return address === '::1' || address.startsWith('127.');
}

/** The user name and secret of Basic credentials (the header's value after `Basic `). */
function parseBasic(value: string): { username: string; secret: string } {
  let decoded: string;
  try {
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(value)) throw new Error('not base64');
    decoded = Buffer.from(value, 'base64').toString('utf8');
  } catch {
    throw unauthorized('Malformed Basic credentials: not base64');
  }
  // A `Token:<uuid>` user name holds a colon of its own: the separator is the next one.
  const colon = decoded.indexOf(':', decoded.startsWith('Token:') ? 'Token:'.length : 0);
  if (colon <= 0) throw unauthorized('Malformed Basic credentials: expected <api token id>:<client secret>');
  const username = decoded.slice(0, colon);
  const secret = decoded.slice(colon + 1);
  if (!secret) throw unauthorized('Malformed Basic credentials: empty client secret');
  // No token id or secret holds U+0000 (PostgreSQL could not even look one up).
  if (username.includes('\u0000') || secret.includes('\u0000')) throw unauthorized('Malformed Basic credentials: a NUL character (U+0000)');
  return { username, secret };
}

/**
 * `authenticate` without waiting, when its answer is already known: Basic credentials whose
 * token is in the credential cache (its tables unchanged since) and whose secret was
 * verified recently. Anything else (undefined) goes through `authenticate`, which gives the
 * same answer, or the error.
 */
export function authenticateCached(store: Store, req: FastifyRequest, mode: AuthMode, throttle?: AuthThrottle): AuthContext | undefined {
  if (mode === 'none' || mode === 'agent') return undefined;
  // While failures are remembered, every request takes the full path, which checks the throttle.
  if (throttle && !throttle.idle) return undefined;
  const header = req.headers.authorization;
  if (!header || !(header.startsWith('Basic ') || header.startsWith('basic '))) return undefined;
  let creds: { username: string; secret: string };
  try {
    creds = parseBasic(header.slice(6).trim());
  } catch {
    return undefined;
  }
  const found = credentials.peek(store.db, creds.username)?.value;
  if (!found || !isVerified(creds.secret, found.token.secret_hash)) return undefined;
  return { scheme: 'basic', platform: found.platform, tokenId: found.token.id, permissions: found.permissions };
}

/**
 * VIEW reads; TRANSACT sends payments; MANAGE changes configuration, tokens and customers.
 * Any token may read: TRANSACT and MANAGE include VIEW.
 */
export function allows(granted: ReadonlySet<Permission>, needed: Permission): boolean {
  if (granted.has(needed)) return true;
  return needed === 'VIEW' && granted.size > 0;
}

interface Credential {
  token: TokenRow;
  platform: PlatformRow;
  permissions: ReadonlySet<Permission>;
}

/**
 * Credentials read recently, while api_tokens and platforms have not changed (TableCache:
 * SQLite only, where the store sees every change, also another process's). A deleted token
 * or a changed platform (its sandbox clock, its options) counts from the next request, as
 * if the row were read every time; on PostgreSQL it is.
 */
const credentials = new TableCache<string, Credential | undefined>(['api_tokens', 'platforms']);

/** The live token named by a Basic user name, with its platform and permissions. */
function findCredential(store: Store, username: string): Promise<Credential | undefined> {
  return credentials.get(store.db, username, () => readCredential(store, username), (found) => found !== undefined);
}

async function readCredential(store: Store, username: string): Promise<Credential | undefined> {
  const found = await readTokenCredential(store.db, username);
  if (!found) return undefined;
  return { ...found, permissions: new Set(JSON.parse(found.token.permissions) as Permission[]) };
}

/** The operator API's check: Bearer PAYMENTS_ADMIN_KEY (every /admin plugin adds it). */
export function adminAuth(adminKey: string) {
  return async (req: FastifyRequest): Promise<void> => {
    const header = req.headers.authorization ?? '';
    const m = /^Bearer\s+(.+)$/i.exec(header);
    if (!m) throw unauthorized(header ? 'The operator API takes Bearer PAYMENTS_ADMIN_KEY' : 'Missing Authorization header');
    if (!safeEqual(m[1]!.trim(), adminKey)) throw unauthorized('Wrong operator key');
  };
}
