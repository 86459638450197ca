import type { Area } from '../../kernel/area.js';
import { registerPaymentJobs } from './payments.js';
import { transactionsRoutes } from './routes.js';

/** How the transactions area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const transactionsArea: Area = {
  name: 'api/transactions',
  wire: (deps) => registerPaymentJobs(deps.jobs, deps.store),
  api: [transactionsRoutes],
};
