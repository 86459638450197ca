import { Type } from 'typebox';
import { ListOf, PageQuery } from '../../kernel/pagination.js';

export const DeliveryStatus = Type.String({
  enum: ['PENDING', 'SENDING', 'DELIVERED', 'FAILED', 'NO_ENDPOINT'],
  description: 'PENDING (waiting for its next attempt), SENDING (in flight), DELIVERED (2xx, or 409: the endpoint already had it), FAILED (retries exhausted, or a webhook that is never retried failed once), NO_ENDPOINT (no webhookEndpoint when the event happened)',
});

export const WebhookAttempt = Type.Object({
  attempt: Type.Integer({ description: 'Attempt number of the delivery, from 1' }),
  url: Type.String(),
  startedAt: Type.String({ format: 'date-time', description: 'Platform sandbox time' }),
  statusCode: Type.Union([Type.Integer(), Type.Null()], { description: 'HTTP status the endpoint answered; null on a network error or timeout' }),
  error: Type.Union([Type.String(), Type.Null()]),
  latencyMs: Type.Integer(),
  responseBody: Type.Union([Type.String(), Type.Null()], { description: 'First 1024 characters of the answer' }),
});

export const WebhookDelivery = Type.Object({
  id: Type.String({ description: 'WebhookDelivery:<uuid>' }),
  eventId: Type.String({ description: 'The webhook id (Webhook:<uuid>) the payload carries' }),
  type: Type.String(),
  resourceId: Type.String(),
  status: DeliveryStatus,
  attempts: Type.Integer(),
  nextAttemptAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  lastStatusCode: Type.Union([Type.Integer(), Type.Null()]),
  lastError: Type.Union([Type.String(), Type.Null()]),
  deliveredAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
  attemptLog: Type.Array(WebhookAttempt),
});

export const WebhookDeliveryList = ListOf(WebhookDelivery, 'webhook deliveries');

export const DeliveryListQuery = Type.Object({
  type: Type.Optional(Type.String({ minLength: 1 })),
  status: Type.Optional(DeliveryStatus),
  resourceId: Type.Optional(Type.String({ minLength: 1 })),
  ...PageQuery,
});

export const DeliveryParams = Type.Object({ id: Type.String(), deliveryId: Type.String() });
export const PlatformParams = Type.Object({ id: Type.String() });

export const TestWebhookResponse = Type.Object({
  url: Type.String({ format: 'uri', description: 'URL where the webhook was sent' }),
  response_status: Type.Integer({ description: 'The HTTP status code returned by the webhook endpoint' }),
  response_body: Type.Optional(Type.String({ description: 'The body the endpoint answered (first 1024 characters)' })),
});

export const WebhookPublicKey = Type.Object({
  publicKey: Type.String({ description: 'PEM (SPKI) of the P-256 key that signs X-Service-Signature' }),
  algorithm: Type.Literal('ECDSA_P256_SHA256'),
  signatureHeader: Type.Literal('X-Service-Signature'),
  signatureEncoding: Type.Literal('base64(DER)'),
});
