import type { Area } from '../../kernel/area.js';
import { setDeliverySendHook } from '../../kernel/webhook-send.js';
import { installRequestFaults } from './request-faults.js';
import { sandboxFaultsRoutes } from './routes.js';
import { webhookFaultHook } from './webhook-faults.js';

/** How the faults area is mounted (kernel/area.ts; listed in src/areas.ts): its routes, the request hook, the deliverer's send hook. */
export const sandboxFaultsArea: Area = {
  name: 'sandbox/faults',
  wire: (deps) => setDeliverySendHook(deps.store, webhookFaultHook(deps.store)),
  install: (app, deps) => installRequestFaults(app, deps),
  api: [sandboxFaultsRoutes],
};
