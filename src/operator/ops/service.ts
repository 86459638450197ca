import type { AppDeps } from '../../kernel/deps.js';
import { apiError } from '../../kernel/errors.js';
import { migrations } from '../../kernel/db/migrations.js';
import { LATENCY_BUCKETS_S, metricsOf } from '../../sandbox/request-log/service.js';
import { appliedMigrations, deliveryCounts, pendingJobCounts, platformCount } from './store.js';

type Deps = Pick<AppDeps, 'store'>;

function label(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** The Prometheus text exposition (version 0.0.4) of the service's counters and gauges. */
export async function metricsText(deps: Deps): Promise<string> {
  const m = metricsOf(deps.store);
  const out: string[] = [];
  out.push('# HELP payments_http_requests_total HTTP requests answered, by method, route and status.');
  out.push('# TYPE payments_http_requests_total counter');
  for (const [key, s] of m.routes) {
    const [method, route] = [key.slice(0, key.indexOf(' ')), key.slice(key.indexOf(' ') + 1)];
    for (const [status, n] of s.counts) out.push(`payments_http_requests_total{method="${label(method)}",route="${label(route)}",status="${status}"} ${n}`);
  }
  out.push('# HELP payments_http_request_duration_seconds Time to answer, by method and route.');
  out.push('# TYPE payments_http_request_duration_seconds histogram');
  for (const [key, s] of m.routes) {
    const l = `method="${label(key.slice(0, key.indexOf(' ')))}",route="${label(key.slice(key.indexOf(' ') + 1))}"`;
    LATENCY_BUCKETS_S.forEach((b, i) => out.push(`payments_http_request_duration_seconds_bucket{${l},le="${b}"} ${s.buckets[i]}`));
    out.push(`payments_http_request_duration_seconds_bucket{${l},le="+Inf"} ${s.count}`);
    out.push(`payments_http_request_duration_seconds_sum{${l}} ${s.sum}`);
    out.push(`payments_http_request_duration_seconds_count{${l}} ${s.count}`);
  }
  const jobs = await pendingJobCounts(deps.store.db);
  out.push('# HELP payments_job_queue_depth Durable jobs waiting to run (due or scheduled), by kind.');
  out.push('# TYPE payments_job_queue_depth gauge');
  out.push(`payments_job_queue_depth ${jobs.reduce((a, j) => a + j.n, 0)}`);
  for (const j of jobs) out.push(`payments_job_queue_depth{kind="${label(j.kind)}"} ${j.n}`);
  const deliveries = await deliveryCounts(deps.store.db);
  out.push('# HELP payments_webhook_backlog Webhook deliveries not yet delivered nor given up (PENDING or SENDING), by status.');
  out.push('# TYPE payments_webhook_backlog gauge');
  out.push(`payments_webhook_backlog ${deliveries.reduce((a, d) => a + d.n, 0)}`);
  for (const d of deliveries) out.push(`payments_webhook_backlog{status="${d.status}"} ${d.n}`);
  out.push('# HELP payments_platforms Platforms in the store.');
  out.push('# TYPE payments_platforms gauge');
  out.push(`payments_platforms ${await platformCount(deps.store.db)}`);
  return out.join('\n') + '\n';
}

export interface Readiness {
  status: 'ready';
  checks: { store: 'ok'; migrations: 'ok'; platforms: 'ok' };
}

/**
 * Ready to serve traffic: the store answers, every migration this build knows is applied,
 * and a platform exists. (`/healthz` only says the process and its store are alive.)
 */
export async function readiness(deps: Deps): Promise<Readiness> {
  let applied: string[];
  let platforms: number;
  try {
    applied = await appliedMigrations(deps.store.db);
    platforms = await platformCount(deps.store.db);
  } catch {
    throw apiError(503, 'SERVICE_UNAVAILABLE', 'Not ready: the store does not answer');
  }
  const missing = Object.keys(migrations()).filter((n) => !applied.includes(n));
  if (missing.length > 0) throw apiError(503, 'SERVICE_UNAVAILABLE', `Not ready: ${missing.length} migration(s) not applied`, { missing });
  if (platforms === 0) throw apiError(503, 'SERVICE_UNAVAILABLE', 'Not ready: no platform exists yet');
  return { status: 'ready', checks: { store: 'ok', migrations: 'ok', platforms: 'ok' } };
}
