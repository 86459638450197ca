// Whether a store error means the database cannot be reached now (a fault of the
// surroundings, answered 503 SERVICE_UNAVAILABLE with Retry-After), as opposed to a bug
// (500 INTERNAL_ERROR). PostgreSQL only: the errors of node-postgres and of the sockets under
// it while the server is stopped, restarting, crashed, or has terminated the backend.

/** Socket errors of a connection that could not be made or was cut. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND']);

/**
 * SQLSTATEs of a server that is going away or not yet accepting: admin_shutdown (57P01),
 * crash_shutdown (57P02), cannot_connect_now (57P03, starting up or recovering),
 * database_dropped excluded; any connection exception (class 08).
 */
const SERVER_CODES = new Set(['57P01', '57P02', '57P03']);

const MESSAGES = [
  /connection terminated/i,
  /timeout exceeded when trying to connect/i,
  /not queryable/i,
  /cannot use a pool after calling end/i,
  /the database system is (starting up|shutting down|in recovery mode)/i,
  // Bounded waits (PostgreSQL): no pool connection in time (priority-pool.ts), a statement
  // cancelled by statement_timeout (57014 with this message; a cancel of another kind stays a bug).
  /waiting for a database connection/i,
  /canceling statement due to statement timeout/i,
];

export function isStoreUnavailable(err: unknown, depth = 0): boolean {
  if (err === null || typeof err !== 'object' || depth > 3) return false;
  const e = err as { code?: unknown; message?: unknown; errors?: unknown; cause?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  if (SOCKET_CODES.has(code) || SERVER_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return true;
  const message = typeof e.message === 'string' ? e.message : '';
  if (MESSAGES.some((m) => m.test(message))) return true;
  // Node answers a refused connection to a name with several addresses with an AggregateError.
  if (Array.isArray(e.errors) && e.errors.some((x) => isStoreUnavailable(x, depth + 1))) return true;
  return e.cause !== undefined && isStoreUnavailable(e.cause, depth + 1);
}

/** Seconds a client is asked to wait before retrying while the store is unreachable. */
export const STORE_RETRY_AFTER_S = 1;
