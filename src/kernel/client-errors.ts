import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { apiError, type ApiError } from './errors.js';

// What the HTTP layer refuses before Fastify sees a request (Node's 'clientError'): headers
// too large, a request not received within the request timeout, bytes that are not HTTP.
// Each is answered with the error envelope and `Connection: close`, and the connection is
// closed gently (FIN after the answer, the client's remaining bytes read and dropped), so the
// client reads the answer instead of a reset.

/** Default of PAYMENTS_REQUEST_TIMEOUT_MS: the whole request (headers and body) must arrive within it. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
/** Node's default for the headers alone (never more than the request timeout). */
const HEADERS_TIMEOUT_MS = 60_000;
/** How long a refused connection may keep sending before it is cut. */
const LINGER_MS = 2_000;

/**
 * The http.Server options for a request timeout: Node checks pending requests every
 * `connectionsCheckingInterval` (30 s by default, which would let a 1 s limit run for 30 s),
 * so the check runs at a tenth of the limit, between 50 ms and 1 s.
 */
export function requestTimeoutOptions(requestTimeoutMs: number): { requestTimeout: number; headersTimeout: number; connectionsCheckingInterval: number } {
  return {
    requestTimeout: requestTimeoutMs,
    headersTimeout: Math.min(HEADERS_TIMEOUT_MS, requestTimeoutMs),
    connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(requestTimeoutMs / 10))),
  };
}

function errorFor(err: NodeJS.ErrnoException, requestTimeoutMs: number): ApiError {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return apiError(431, 'REQUEST_HEADER_FIELDS_TOO_LARGE', 'The request headers are larger than the server accepts (16 KiB in all)');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return apiError(408, 'REQUEST_TIMEOUT', `The request was not received in full within ${requestTimeoutMs} ms; send it again`, { timeoutMs: requestTimeoutMs });
    default:
      return apiError(400, 'INVALID_REQUEST_FORMAT', 'Malformed HTTP request', { reason: err.code ?? 'HPE_INVALID' });
  }
}

const answered = new WeakSet<Socket>();

/**
 * Fastify's `clientErrorHandler`. When a request on the connection is in flight and has not
 * answered yet (a body that trickles past the timeout), the answer goes through its response;
 * otherwise it is written on the socket. Nothing is written when an answer has started.
 */
export function makeClientErrorHandler(requestTimeoutMs: number) {
  // Fastify calls it with the instance as `this`.
  return function clientErrorHandler(this: { log: FastifyBaseLogger }, err: NodeJS.ErrnoException, socket: Socket): void {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    // The parser reports every later chunk of a refused connection again: answer once.
    if (answered.has(socket)) return;
    answered.add(socket);
    const e = errorFor(err, requestTimeoutMs);
    this.log.info({ code: err.code, status: e.status }, 'client error');
    const body = JSON.stringify(e.toEnvelope());
    const cut = setTimeout(() => socket.destroy(), LINGER_MS);
    cut.unref();
    socket.once('close', () => clearTimeout(cut));
    // Read and drop what the client still sends, so closing does not reset the connection.
    socket.on('error', () => {});
    const res = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (res && !res.headersSent && !res.writableEnded) {
      res.writeHead(e.status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' });
      res.end(body);
      return;
    }
    if (res && res.headersSent) {
      socket.destroy();
      return;
    }
    if (socket.writable) {
      socket.end(
        `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status] ?? 'Error'}\r\nContent-Type: application/json; charset=utf-8\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    } else {
      socket.destroy();
    }
  };
}
