import { type Caller, seed, type SeedResult } from './data-set.js';
import { ApiError } from '../../kernel/errors.js';

// POST /sandbox/seed: the demo data set of `payments-service seed` (data-set.ts, one seed
// for both), made in-process through the server's own public API with the caller's
// credentials, so it goes through the same auth, permissions, validation, idempotency and
// request log as the command's requests over HTTP.

/** What the caller needs of the app: one request, answered as the API answers it. */
export type Inject = (req: { method: string; url: string; headers: Record<string, string>; payload?: string }) => Promise<{ statusCode: number; body: string }>;

export const API_PREFIX = '/2025-10-13';

/** A Caller that sends each request through `inject` with `authorization`; a non-2xx answer is thrown as its own envelope. */
export function injectCaller(inject: Inject, authorization: string): Caller {
  return async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const headers: Record<string, string> = { authorization };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await inject({ method, url: `${API_PREFIX}${path}`, headers, ...(body !== undefined ? { payload: JSON.stringify(body) } : {}) });
    const json = res.body ? (JSON.parse(res.body) as unknown) : undefined;
    if (res.statusCode >= 300) {
      const env = (json ?? {}) as { code?: string; message?: string; details?: Record<string, unknown> };
      throw new ApiError(res.statusCode, env.code ?? 'INTERNAL_ERROR', `Seed stopped at ${method} ${path}: ${env.message ?? `HTTP ${res.statusCode}`}`, env.details);
    }
    return json as T;
  };
}

export async function seedSandbox(inject: Inject, authorization: string): Promise<SeedResult> {
  return seed(injectCaller(inject, authorization));
}
