import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { metricsText, readiness } from './service.js';

// Operations endpoints, public like /healthz: GET /metrics (Prometheus text) and GET /readyz.
export const opsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) =>
    reply.type('text/plain; version=0.0.4; charset=utf-8').send(await metricsText(app.deps)),
  );
  app.get('/readyz', { schema: { hide: true } }, async () => readiness(app.deps));
};
