import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { authOf, errorResponses } from '../../kernel/http.js';
import { REQUEST_LOG_SIZE, requestLogOf } from './service.js';

export const LoggedRequest = Type.Object(
  {
    id: Type.Integer({ description: 'Sequence number of the entry (later requests have larger ones)' }),
    at: Type.String({ format: 'date-time', description: 'When the answer was sent, on the platform\'s sandbox clock' }),
    source: Type.Enum(['api', 'dashboard'], { description: 'Who made it: "dashboard" when it carried X-Payments-Dashboard: 1 (the dashboard\'s requests), else "api"' }),
    method: Type.String(),
    path: Type.String({ description: 'The path and query string as requested' }),
    route: Type.Union([Type.String(), Type.Null()], { description: 'The route pattern that served it' }),
    status: Type.Integer(),
    latencyMs: Type.Number({ description: 'Time to answer, in milliseconds' }),
    idempotencyKey: Type.Union([Type.String(), Type.Null()]),
    replayed: Type.Boolean({ description: 'Answered with the answer stored under its Idempotency-Key' }),
    requestBody: Type.Unknown({ description: 'The JSON body, secret fields replaced by "[REDACTED]"' }),
    responseBody: Type.Unknown({ description: 'The JSON answer, secret fields replaced by "[REDACTED]"' }),
    truncated: Type.Boolean({ description: 'A body was cut to its first 16 KiB' }),
    fault: Type.Union([Type.Object({ ruleId: Type.String(), kind: Type.String() }), Type.Null()], {
      description: 'The sandbox fault injected into this request (POST /sandbox/faults), or null: a 500/503/429 answered by the fault, a DELAY, or COMMIT_THEN_DROP (status and body are what would have been sent; the connection was dropped)',
    }),
  },
  { title: 'SandboxRequestLogEntry' },
);

export const RequestLogQuery = Type.Object({
  after: Type.Optional(Type.Integer({ minimum: 0, description: 'Only entries with a larger id (to follow the log)' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: REQUEST_LOG_SIZE, description: `At most this many, newest first (default and maximum ${REQUEST_LOG_SIZE})` })),
  includeDashboardReads: Type.Optional(
    Type.Boolean({ description: 'Also list the dashboard\'s own reads (GETs sent with X-Payments-Dashboard: 1), hidden by default; they are kept apart, the last ' + REQUEST_LOG_SIZE + ' of them' }),
  ),
});

export const requestLogRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/sandbox/requests',
    {
      config: { auth: 'basic', extension: true },
      schema: {
        tags: ['Sandbox'],
        operationId: 'listSandboxRequests',
        summary: 'The request log',
        description:
          `The platform's last ${REQUEST_LOG_SIZE} API requests, newest first, with their bodies (secret fields redacted), status, latency, Idempotency-Key and replay flag. ` +
          'Kept in the server\'s memory: a restart or a reset empties it. Requests to this path are not logged. ' +
          'The dashboard\'s requests (X-Payments-Dashboard: 1) are marked `source: "dashboard"`; its reads are kept apart and listed only with `includeDashboardReads=true`. Permission VIEW.',
        querystring: RequestLogQuery,
        response: { 200: Type.Object({ data: Type.Array(LoggedRequest) }), ...errorResponses() },
      },
    },
    async (req) => ({ data: requestLogOf(app.deps.store).list(authOf(req).platform.id, req.query) }),
  );
};
