import type { Area } from '../../kernel/area.js';
import { internalAccountsRoutes } from './routes.js';
import { registerAccountHooks } from './service.js';

/** How the internal-accounts area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const internalAccountsArea: Area = {
  name: 'api/internal-accounts',
  wire: (deps) => registerAccountHooks(deps.hooks),
  api: [internalAccountsRoutes],
};
