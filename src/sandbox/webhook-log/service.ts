import { listDeliveries, redeliver } from '../../api/webhooks/service.js';

// The platform's own webhook delivery log: the webhooks area's deliveries, scoped to the
// caller's platform (the operator's /admin view sees every platform's).

/** GET /sandbox/webhook-deliveries: the platform's deliveries, newest first, with their attempts. */
export function listPlatformDeliveries(...args: Parameters<typeof listDeliveries>): ReturnType<typeof listDeliveries> {
  return listDeliveries(...args);
}

/** POST /sandbox/webhook-deliveries/{deliveryId}/redeliver: a new attempt now. */
export function redeliverPlatformDelivery(...args: Parameters<typeof redeliver>): ReturnType<typeof redeliver> {
  return redeliver(...args);
}
