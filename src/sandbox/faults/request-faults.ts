import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppDeps } from '../../kernel/deps.js';
import type { FaultRow } from './store.js';
import { isRequestRule, live, names, type Operation, operationsOf, rulesOf, takes, templateOf, VERSION_PREFIX } from './service.js';

// The request faults (docs/sandbox/faults.md): one preValidation hook on the whole app, after
// authentication (the scope's onRequest) and before validation, the Idempotency-Key claim and
// the handler. A platform without rules costs a map look-up (rulesOf answers from memory).
// INTERNAL_ERROR, SERVICE_UNAVAILABLE and RATE_LIMITED answer here, so nothing is written and
// no key is claimed; DELAY waits (a timer, real time) and lets the request go on;
// COMMIT_THEN_DROP lets it run, commit and store its Idempotency-Key answer, and destroys the
// connection instead of writing the answer.

/** The header a faulted answer carries: the rule's kind and id. */
export const FAULT_HEADER = 'x-sandbox-fault';
/** The dashboard's requests (X-Payments-Dashboard: 1) are never faulted: faults test the platform's client. */
const DASHBOARD_HEADER = 'x-payments-dashboard';

const FAILURES: Record<string, { status: 500 | 503 | 429; code: string; message: string }> = {
  INTERNAL_ERROR: { status: 500, code: 'INTERNAL_ERROR', message: 'Internal error (injected by a sandbox fault rule)' },
  SERVICE_UNAVAILABLE: { status: 503, code: 'SERVICE_UNAVAILABLE', message: 'Service unavailable; retry after the Retry-After delay (injected by a sandbox fault rule)' },
  RATE_LIMITED: { status: 429, code: 'RATE_LIMITED', message: 'Too many requests; retry after the Retry-After delay (injected by a sandbox fault rule)' },
};

export function installRequestFaults(app: FastifyInstance, deps: Pick<AppDeps, 'store'>): void {
  const db = deps.store.db;
  const operations = operationsOf(deps.store);
  /** `METHOD /2025-10-13/path/:param` (Fastify's route) → the operation. */
  const byRoute = new Map<string, Operation>();
  app.addHook('onRoute', (r) => {
    if (!r.url.startsWith(VERSION_PREFIX + '/')) return;
    const schema = r.schema as { operationId?: string; hide?: boolean } | undefined;
    if (schema?.hide) return;
    for (const method of Array.isArray(r.method) ? r.method : [r.method]) {
      if (method === 'HEAD' || method === 'OPTIONS') continue;
      const op: Operation = {
        method,
        path: templateOf(r.url.slice(VERSION_PREFIX.length)),
        operationId: schema?.operationId,
        extension: (r.config as { extension?: boolean } | undefined)?.extension === true,
      };
      operations.push(op);
      byRoute.set(`${method} ${r.url}`, op);
    }
  });

  app.addHook('preValidation', (req, reply, done) => {
    const platformId = req.auth?.platform.id;
    if (!platformId) return done();
    const rules = rulesOf(db, platformId);
    if (Array.isArray(rules) && rules.length === 0) return done();
    return applyFaults(req, reply, rules) as unknown as void;
  });

  async function applyFaults(req: FastifyRequest, reply: FastifyReply, pending: FaultRow[] | Promise<FaultRow[]>): Promise<void> {
    const rules = (await pending).filter(isRequestRule);
    if (rules.length === 0 || req.headers[DASHBOARD_HEADER] === '1') return;
    const op = byRoute.get(`${req.method} ${req.routeOptions.url ?? ''}`);
    if (!op || op.path === '/sandbox/faults' || op.path.startsWith('/sandbox/faults/')) return;
    const now = Date.now();
    for (const rule of rules) {
      if (!live(rule, now) || rule.operation === null || !names(rule.operation, op)) continue;
      if (!(await takes(db, rule))) continue;
      req.sandboxFault = { ruleId: rule.id, kind: rule.kind };
      reply.header(FAULT_HEADER, `${rule.kind} ${rule.id}`);
      const failure = FAILURES[rule.kind];
      if (failure) {
        if (failure.status !== 500) reply.header('retry-after', String(rule.retry_after_seconds ?? 1));
        reply
          .code(failure.status)
          .type('application/json; charset=utf-8')
          .send({ status: failure.status, code: failure.code, message: failure.message, details: { sandboxFault: { ruleId: rule.id, kind: rule.kind } } });
        return;
      }
      if (rule.kind === 'DELAY') await sleep(rule.delay_ms ?? 0);
      else if (rule.kind === 'COMMIT_THEN_DROP') dropInsteadOfAnswer(reply);
      return;
    }
  }
}

/**
 * The request runs to its end (its effect committed, its Idempotency-Key answer stored by the
 * onSend hooks), and then, where the answer would be written, the connection is destroyed: the
 * client sees the connection close with no answer. The request log still gets its entry (the
 * 'finish' Fastify's onResponse hooks wait for is emitted by hand).
 */
function dropInsteadOfAnswer(reply: FastifyReply): void {
  const res = reply.raw;
  let dropped = false;
  const drop = () => {
    if (!dropped) {
      dropped = true;
      // A real connection is cut; under app.inject (no socket) the injected call fails with LIGHT_ECONNRESET.
      const socket = res.socket as { destroy?: () => void } | null;
      if (typeof socket?.destroy === 'function') socket.destroy();
      res.destroy();
      process.nextTick(() => res.emit('finish'));
    }
    return res;
  };
  res.writeHead = drop as unknown as typeof res.writeHead;
  res.write = (() => true) as unknown as typeof res.write;
  res.end = drop as unknown as typeof res.end;
}
