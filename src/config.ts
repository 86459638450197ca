import { DEFAULT_REQUEST_TIMEOUT_MS } from './kernel/client-errors.js';
import { parseDataKey, parseSecretKey } from './kernel/sealed.js';

// Runtime configuration, from the environment (the runtime contract in DEVELOPERS.md).

export interface Config {
  port: number;
  host: string;
  databaseUrl: string | undefined;
  apiTokenId: string | undefined;
  apiClientSecret: string | undefined;
  adminKey: string | undefined;
  logLevel: string;
  /**
   * PAYMENTS_SECRET_KEY: the server secret the sealing key is derived from (HKDF-SHA256);
   * absent: kept in the data directory, in memory or in the store (kernel/sealed.ts loadSealer).
   */
  secretKey: string | undefined;
  /** PAYMENTS_DATA_KEY: deprecated alias, a raw 32-byte sealing key (PAYMENTS_SECRET_KEY wins when both are set). */
  dataKey: Buffer | undefined;
  /** PAYMENTS_DOCUMENT_QUOTA_BYTES: the bytes of documents each platform may keep (default 256 MiB). */
  documentQuotaBytes: number;
  /** PAYMENTS_REQUEST_TIMEOUT_MS: a request's headers and body must arrive within it (408 otherwise). */
  requestTimeoutMs: number;
  /**
   * PAYMENTS_WEBHOOK_ALLOW_PRIVATE: whether webhook endpoints may be private-network addresses
   * (loopback, RFC 1918, link-local, unique-local, …). Default: on when HOST is a loopback
   * address or `localhost`, off otherwise (api/webhooks/targets.ts).
   */
  webhookAllowPrivate: boolean;
  /**
   * PAYMENTS_DB_CONNECT_TIMEOUT_MS: at start-up, how long to keep trying to reach the database
   * (PostgreSQL) before giving up with a non-zero exit (default 5 minutes).
   */
  dbConnectTimeoutMs: number;
  /**
   * PAYMENTS_DB_STATEMENT_TIMEOUT_MS: PostgreSQL: the longest one statement may run (the
   * server's statement_timeout; a statement unanswered 1 s past it has its connection
   * dropped, a database that vanished mid-statement); 0 turns both off (default 30 s).
   */
  dbStatementTimeoutMs: number;
  /** PAYMENTS_DB_ACQUIRE_TIMEOUT_MS: PostgreSQL: the longest a request waits for a pool connection (default 10 s). */
  dbAcquireTimeoutMs: number;
}

/** Whether HOST names only this machine's loopback interface. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || /^::ffff:127\./.test(h);
}

function parseBoolean(name: string, text: string): boolean {
  const t = text.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(t)) return true;
  if (['0', 'false', 'no', 'off'].includes(t)) return false;
  throw new Error(`${name} must be true or false (also 1/0, yes/no, on/off); got "${text}"`);
}

export const DEFAULT_DOCUMENT_QUOTA_BYTES = 256 * 1024 * 1024;

export const DEFAULT_DB_CONNECT_TIMEOUT_MS = 300_000;
export const DEFAULT_DB_STATEMENT_TIMEOUT_MS = 30_000;
export const DEFAULT_DB_ACQUIRE_TIMEOUT_MS = 10_000;

function wholeMs(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const text = env[name];
  const n = text ? Number(text) : fallback;
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a whole number of milliseconds, got "${text}"`);
  return n;
}

export const API_VERSION = '2025-10-13';

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = env.PORT ? Number(env.PORT) : 8080;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a port number, got "${env.PORT}"`);
  const tokenId = env.PAYMENTS_API_TOKEN_ID || undefined;
  const secret = env.PAYMENTS_API_CLIENT_SECRET || undefined;
  if ((tokenId === undefined) !== (secret === undefined)) {
    throw new Error('Set both PAYMENTS_API_TOKEN_ID and PAYMENTS_API_CLIENT_SECRET, or neither');
  }
  if (tokenId !== undefined && (tokenId.includes(':') || tokenId.startsWith('Token:'))) {
    throw new Error('PAYMENTS_API_TOKEN_ID must not contain ":" (it is the user name of HTTP Basic)');
  }
  const quota = env.PAYMENTS_DOCUMENT_QUOTA_BYTES ? Number(env.PAYMENTS_DOCUMENT_QUOTA_BYTES) : DEFAULT_DOCUMENT_QUOTA_BYTES;
  if (!Number.isSafeInteger(quota) || quota < 0) {
    throw new Error(`PAYMENTS_DOCUMENT_QUOTA_BYTES must be a whole number of bytes, got "${env.PAYMENTS_DOCUMENT_QUOTA_BYTES}"`);
  }
  const timeout = env.PAYMENTS_REQUEST_TIMEOUT_MS ? Number(env.PAYMENTS_REQUEST_TIMEOUT_MS) : DEFAULT_REQUEST_TIMEOUT_MS;
  if (!Number.isSafeInteger(timeout) || timeout < 100) {
    throw new Error(`PAYMENTS_REQUEST_TIMEOUT_MS must be a whole number of milliseconds, at least 100, got "${env.PAYMENTS_REQUEST_TIMEOUT_MS}"`);
  }
  const connectTimeout = env.PAYMENTS_DB_CONNECT_TIMEOUT_MS ? Number(env.PAYMENTS_DB_CONNECT_TIMEOUT_MS) : DEFAULT_DB_CONNECT_TIMEOUT_MS;
  if (!Number.isSafeInteger(connectTimeout) || connectTimeout < 0) {
    throw new Error(`PAYMENTS_DB_CONNECT_TIMEOUT_MS must be a whole number of milliseconds, got "${env.PAYMENTS_DB_CONNECT_TIMEOUT_MS}"`);
  }
  const host = env.HOST || '127.0.0.1';
  return {
    port,
    host,
    databaseUrl: env.DATABASE_URL || undefined,
    apiTokenId: tokenId,
    apiClientSecret: secret,
    adminKey: env.PAYMENTS_ADMIN_KEY || undefined,
    logLevel: env.LOG_LEVEL || 'info',
    secretKey: env.PAYMENTS_SECRET_KEY ? parseSecretKey(env.PAYMENTS_SECRET_KEY) : undefined,
    dataKey: env.PAYMENTS_DATA_KEY ? parseDataKey(env.PAYMENTS_DATA_KEY) : undefined,
    documentQuotaBytes: quota,
    requestTimeoutMs: timeout,
    webhookAllowPrivate: env.PAYMENTS_WEBHOOK_ALLOW_PRIVATE ? parseBoolean('PAYMENTS_WEBHOOK_ALLOW_PRIVATE', env.PAYMENTS_WEBHOOK_ALLOW_PRIVATE) : isLoopbackHost(host),
    dbConnectTimeoutMs: connectTimeout,
    dbStatementTimeoutMs: wholeMs(env, 'PAYMENTS_DB_STATEMENT_TIMEOUT_MS', DEFAULT_DB_STATEMENT_TIMEOUT_MS),
    dbAcquireTimeoutMs: wholeMs(env, 'PAYMENTS_DB_ACQUIRE_TIMEOUT_MS', DEFAULT_DB_ACQUIRE_TIMEOUT_MS),
  };
}
