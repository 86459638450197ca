import type { Area } from '../../kernel/area.js';
import { sandboxWebhookLogRoutes } from './routes.js';

/** How the sandbox-webhook-log area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const sandboxWebhookLogArea: Area = {
  name: 'sandbox/webhook-log',
  api: [sandboxWebhookLogRoutes],
};
