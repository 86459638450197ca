import type { FastifyRequest } from 'fastify';
import type { PlatformRow } from '../areas/platforms/store.js';
import { findCredential } from '../areas/tokens/store.js';
import type { Store } from './db/connect.js';
import { unauthorized } from './errors.js';
import { verifySecret } from './secrets.js';

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

  const found = await findCredential(store.db, username);
  if (!found) throw unauthorized('Unknown API token id');
  if (!(await verifySecret(secret, found.token.secret_hash))) throw unauthorized('Client secret does not match the API token');
  return {
    scheme: 'basic',
    platform: found.platform,
    tokenId: found.token.id,
    permissions: new Set(JSON.parse(found.token.permissions) as Permission[]),
  };
}

/**
 * VIEW reads; TRANSACT sends payments; MANAGE changes configuration, tokens and customers.
 * Any token may read: TRANSACT and MANAGE include VIEW.
 */
export function allows(granted: ReadonlySet<Permission>, needed: Permission): boolean {
  if (granted.has(needed)) return true;
  return needed === 'VIEW' && granted.size > 0;
}
