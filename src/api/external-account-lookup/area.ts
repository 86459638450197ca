import type { Area } from '../../kernel/area.js';
import { externalAccountLookupRoutes } from './routes.js';

/** How the external-account-lookup area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const externalAccountLookupArea: Area = {
  name: 'api/external-account-lookup',
  api: [externalAccountLookupRoutes],
};
