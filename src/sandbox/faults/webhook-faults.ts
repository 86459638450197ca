import { setTimeout as sleep } from 'node:timers/promises';
import type { Store } from '../../kernel/db/connect.js';
import type { DeliveryOutcome, DeliverySendHook, DeliveryToSend } from '../../kernel/webhook-send.js';
import { isWebhookRule, live, rulesOf, takes } from './service.js';

// The webhook faults (docs/sandbox/faults.md), through the deliverer's send seam
// (kernel/webhook-send.ts), for the deliveries of a platform that asked for them:
// - WEBHOOK_DELAY: the POST waits delayMs (real time) first; its lane waits with it.
// - WEBHOOK_DUPLICATE: the event is POSTed twice, one after the other, same id and body; the
//   first answer is the one recorded.
// - WEBHOOK_OUT_OF_ORDER: the delivery is handed to the fault and recorded at once as
//   delivered (its attempt log says so), which lets its lane go on; the held deliveries are
//   POSTed together, latest event first, when the rule's count is used up or HOLD_MS after the
//   first was held. This is the one fault that breaks the per-resource order, on request; the
//   held POSTs' answers are logged by nobody and not retried.
// TEST webhooks and INCOMING_PAYMENT.* (the in-flow approval, whose answer decides) are never faulted.

/** How long out-of-order deliveries are held before the batch goes, at most (real time). */
export const HOLD_MS = 1_000;

interface Held {
  seq: number;
  send: () => Promise<DeliveryOutcome>;
}

interface Batch {
  items: Held[];
  timer: NodeJS.Timeout;
}

const exempt = (type: string) => type === 'TEST' || type.startsWith('INCOMING_PAYMENT.');

export function webhookFaultHook(store: Store): DeliverySendHook {
  const batches = new Map<string, Batch>();

  const flush = (key: string) => {
    const batch = batches.get(key);
    if (!batch) return;
    batches.delete(key);
    clearTimeout(batch.timer);
    const items = [...batch.items].sort((a, b) => b.seq - a.seq);
    void (async () => {
      for (const h of items) await h.send().catch(() => undefined);
    })();
  };

  return async (d: DeliveryToSend, send) => {
    const pending = rulesOf(store.db, d.platformId);
    const rules = Array.isArray(pending) ? pending : await pending;
    if (rules.length === 0 || exempt(d.type)) return send();
    const now = Date.now();
    for (const rule of rules) {
      if (!isWebhookRule(rule) || !live(rule, now)) continue;
      const took = await takes(store.db, rule);
      if (!took) continue;
      if (rule.kind === 'WEBHOOK_DELAY') {
        await sleep(rule.delay_ms ?? 0);
        return send();
      }
      if (rule.kind === 'WEBHOOK_DUPLICATE') {
        const first = await send();
        await send().catch(() => undefined);
        return first;
      }
      // WEBHOOK_OUT_OF_ORDER
      const key = `${d.platformId}\n${rule.id}`;
      let batch = batches.get(key);
      if (!batch) {
        const timer = setTimeout(() => flush(key), HOLD_MS);
        batches.set(key, (batch = { items: [], timer }));
      }
      batch.items.push({ seq: d.eventSeq, send });
      if (took.remaining === 0) flush(key);
      return {
        statusCode: null,
        error: null,
        latencyMs: 0,
        responseBody: `held by sandbox fault ${rule.id} (WEBHOOK_OUT_OF_ORDER): sent out of order with the other held deliveries`,
        ok: true,
      };
    }
    return send();
  };
}
