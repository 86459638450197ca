import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { authOf, errorResponses } from '../../kernel/http.js';
import { DeliveryListQuery, WebhookDelivery, WebhookDeliveryList } from './shapes.js';
import { listPlatformDeliveries, redeliverPlatformDelivery } from './service.js';

// The platform's own webhook delivery log (the operator's /admin view, scoped to the
// caller): what the dashboard and `payments-service webhooks tail` read. Reuses the
// webhooks area's service (through service.ts).
export const sandboxWebhookLogRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/sandbox/webhook-deliveries',
    {
      config: { auth: 'basic', extension: true },
      schema: {
        tags: ['Sandbox'],
        operationId: 'listSandboxWebhookDeliveries',
        summary: 'The webhook delivery log',
        description: 'Every webhook delivery of the platform, newest first, with each attempt (status code, latency, response excerpt). Permission VIEW.',
        querystring: DeliveryListQuery,
        response: { 200: WebhookDeliveryList, ...errorResponses() },
      },
    },
    async (req) => listPlatformDeliveries(app.deps.store.db, authOf(req).platform.id, req.query),
  );
  app.post(
    '/sandbox/webhook-deliveries/:deliveryId/redeliver',
    {
      config: { auth: 'basic', permission: 'MANAGE', extension: true },
      schema: {
        tags: ['Sandbox'],
        operationId: 'redeliverSandboxWebhook',
        summary: 'Redeliver a webhook',
        description: 'Schedules a new attempt of the delivery now; earlier attempts stay in the log. Permission MANAGE.',
        params: Type.Object({ deliveryId: Type.String() }),
        response: { 200: WebhookDelivery, ...errorResponses(403, 404, 409) },
      },
    },
    async (req) => redeliverPlatformDelivery(app.deps.store, app.deps.clock, app.deps.webhooks, authOf(req).platform.id, req.params.deliveryId),
  );
};
