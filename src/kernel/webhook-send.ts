import type { Store } from './db/connect.js';

// A seam on the webhook deliverer's send (src/api/webhooks/service.ts): the one call through
// which each delivery attempt's POST goes. By default it just sends; the sandbox's faults on
// demand (src/sandbox/faults, issue 36) fill it, per store, to delay, duplicate or reorder a
// platform's deliveries when the platform asked for it. The webhooks area knows nothing of
// the faults, and the faults nothing of the deliverer.

/** The delivery an attempt is for. */
export interface DeliveryToSend {
  platformId: string;
  deliveryId: string;
  eventId: string;
  /** The event's place in the global order (events.seq). */
  eventSeq: number;
  type: string;
  resourceId: string;
}

/** What one attempt's POST came to (the deliverer's SendOutcome). */
export interface DeliveryOutcome {
  statusCode: number | null;
  error: string | null;
  latencyMs: number;
  responseBody: string | null;
  /** The body as an answer handler reads it (up to the deliverer's answer limit); never stored. */
  answerBody?: string | null;
  ok: boolean;
  /** No HTTP answer at all: the attempt timed out or the connection failed (not a refused target). */
  noAnswer?: boolean;
}

/** Sends (or not) through `send`; answers the outcome the deliverer records. */
export type DeliverySendHook = (delivery: DeliveryToSend, send: () => Promise<DeliveryOutcome>) => Promise<DeliveryOutcome>;

const hooks = new WeakMap<Store, DeliverySendHook>();

/** Install the hook for the deliverer of `store` (one per store: the last one set wins). */
export function setDeliverySendHook(store: Store, hook: DeliverySendHook): void {
  hooks.set(store, hook);
}

/** Send one attempt of `delivery` through the store's hook, or directly when none is set. */
export function sendDelivery(store: Store, delivery: DeliveryToSend, send: () => Promise<DeliveryOutcome>): Promise<DeliveryOutcome> {
  const hook = hooks.get(store);
  return hook ? hook(delivery, send) : send();
}
