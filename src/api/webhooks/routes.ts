import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { adminAuth } from '../../kernel/auth.js';
import { authOf, errorResponses } from '../../kernel/http.js';
import { DeliveryListQuery, DeliveryParams, PlatformParams, TestWebhookResponse, WebhookDelivery, WebhookDeliveryList, WebhookPublicKey } from './schemas.js';
import { listDeliveries, redeliver, sendTestWebhook, webhookPublicKey } from './service.js';

const tags = ['Sandbox'];

/** Versioned sandbox routes: the signing key and the test webhook. */
export const webhookRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock } = app.deps;

  app.get(
    '/sandbox/webhooks/public-key',
    {
      config: { auth: 'basic', extension: true },
      schema: {
        tags,
        operationId: 'getWebhookPublicKey',
        summary: 'Get the webhook signing key',
        description: 'The P-256 public key (PEM) that verifies this platform\'s X-Service-Signature headers: base64 of a DER ECDSA signature over SHA-256 of the body.',
        response: { 200: WebhookPublicKey, ...errorResponses() },
      },
    },
    async (req) => ({
      publicKey: await webhookPublicKey(store.db, authOf(req).platform.id),
      algorithm: 'ECDSA_P256_SHA256' as const,
      signatureHeader: 'X-Service-Signature' as const,
      signatureEncoding: 'base64(DER)' as const,
    }),
  );

  app.post(
    '/sandbox/webhooks/test',
    {
      config: { auth: 'basic' },
      schema: {
        tags,
        operationId: 'sendTestWebhook',
        summary: 'Send a test webhook',
        description:
          'Sends a signed TEST webhook to the configured endpoint now and reports its answer. 400 WEBHOOK_ENDPOINT_NOT_SET without an endpoint; ' +
          '400 WEBHOOK_DELIVERY_ERROR when it answers non-2xx (redirects are not followed; the body is echoed up to 256 bytes), cannot be reached, ' +
          "or is refused (this server's own listening address; a private-network address unless PAYMENTS_WEBHOOK_ALLOW_PRIVATE).",
        response: { 200: TestWebhookResponse, ...errorResponses() },
      },
    },
    async (req) => sendTestWebhook(store.db, clock, authOf(req).platform.id, app.deps.webhooks.timeoutMs, app.deps.webhooks.targets),
  );

  // The path the official SDK's `webhooks.sendTest()` and the hosted docs call: the same
  // operation, not in the 2025-10-13 reference (hence an extension).
  app.post(
    '/webhooks/test',
    {
      config: { auth: 'basic', extension: true },
      schema: {
        tags,
        operationId: 'sendWebhookTest',
        summary: 'Send a test webhook (alias of POST /sandbox/webhooks/test)',
        description:
          'The same operation as POST /sandbox/webhooks/test under the path the SDKs call: sends a signed TEST webhook to the configured endpoint now and ' +
          'reports its answer. 400 WEBHOOK_ENDPOINT_NOT_SET without an endpoint; 400 WEBHOOK_DELIVERY_ERROR when it answers non-2xx, cannot be reached or is refused.',
        response: { 200: TestWebhookResponse, ...errorResponses(403) },
      },
    },
    async (req) => sendTestWebhook(store.db, clock, authOf(req).platform.id, app.deps.webhooks.timeoutMs, app.deps.webhooks.targets),
  );
};

/** Operator routes (under /admin): the delivery log and redelivery. */
export const webhookAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store, clock, config } = app.deps;
  app.addHook('onRequest', adminAuth(config.adminKey!));
  const schema = { hide: true };

  app.get(
    '/platforms/:id/webhook-deliveries',
    { schema: { ...schema, params: PlatformParams, querystring: DeliveryListQuery, response: { 200: WebhookDeliveryList, ...errorResponses(404) } } },
    async (req) => listDeliveries(store.db, req.params.id, req.query),
  );

  app.post(
    '/platforms/:id/webhook-deliveries/:deliveryId/redeliver',
    { schema: { ...schema, params: DeliveryParams, response: { 200: WebhookDelivery, ...errorResponses(404, 409) } } },
    async (req) => redeliver(store, clock, app.deps.webhooks, req.params.id, req.params.deliveryId),
  );
};
