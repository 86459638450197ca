import type { Area } from '../../kernel/area.js';
import { webhookAdminRoutes, webhookRoutes } from './routes.js';
import type { WebhookDeliverer } from './service.js';

declare module '../../kernel/deps.js' {
  interface AppDeps {
    /** Webhook delivery (its worker runs only when the server starts it). */
    webhooks: WebhookDeliverer;
  }
}

/** How the webhooks area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const webhooksArea: Area = {
  name: 'api/webhooks',
  api: [webhookRoutes],
  admin: [webhookAdminRoutes],
};
