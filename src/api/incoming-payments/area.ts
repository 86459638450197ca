import type { Area } from '../../kernel/area.js';
import { incomingPaymentsRoutes } from './routes.js';
import { registerIncomingPayments } from './service.js';

/** How the incoming-payments area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const incomingPaymentsArea: Area = {
  name: 'api/incoming-payments',
  wire: (deps) => registerIncomingPayments(deps),
  api: [incomingPaymentsRoutes],
};
