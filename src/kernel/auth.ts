import type { FastifyRequest } from 'fastify';
import type { PlatformRow } from '../areas/platforms/store.js';
import { findCredential as readTokenCredential, type TokenRow } from '../areas/tokens/store.js';
import type { Store } from './db/connect.js';
import { TableCache } from './db/table-cache.js';
import { unauthorized } from './errors.js';
import { isVerified, verifySecret } from './secrets.js';

// The security schemes. BasicAuth: `<api token id>:<client secret>`, where the token id is
// the token's clientId or its `Token:` id. AgentAuth: Bearer with an agent access token.
// Every failure is 401 UNAUTHORIZED with the failed check in details.reason.

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

/** Which schemes a route accepts. */
export type AuthMode = 'basic' | 'basic-or-agent' | 'none';

/** Resolves an agent access token; the agents area installs one. */
export type AgentResolver = (store: Store, accessToken: string) => Promise<AuthContext | undefined>;

export async function authenticate(store: Store, req: FastifyRequest, mode: AuthMode, agentResolver?: AgentResolver): Promise<AuthContext> {
  const header = req.headers.authorization;
  if (!header) throw unauthorized('Missing Authorization header', 'Authentication required: send HTTP Basic credentials <api token id>:<client secret>');
  const space = header.indexOf(' ');
  const scheme = (space < 0 ? header : header.slice(0, space)).toLowerCase();
  const value = space < 0 ? '' : header.slice(space + 1).trim();

  if (scheme === 'bearer') {
    if (mode === 'basic') throw unauthorized('This operation accepts HTTP Basic credentials only', 'Bearer (agent) credentials are not accepted by this operation');
    if (!value) throw unauthorized('Empty Bearer token');
    const ctx = agentResolver ? await agentResolver(store, value) : undefined;
    if (!ctx) throw unauthorized('Unknown or expired agent access token');
    return ctx;
  }
  if (scheme !== 'basic') throw unauthorized(`Unsupported authorization scheme "${scheme}"`, 'Use HTTP Basic credentials');

  const { username, secret } = parseBasic(value);
  const found = await findCredential(store, username);
  if (!found) throw unauthorized('Unknown API token id');
  if (!(await verifySecret(secret, found.token.secret_hash))) throw unauthorized('Client secret does not match the API token');
  return { scheme: 'basic', platform: found.platform, tokenId: found.token.id, permissions: found.permissions };
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
export function authenticateCached(store: Store, req: FastifyRequest, mode: AuthMode): AuthContext | undefined {
  if (mode === 'none') return undefined;
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
