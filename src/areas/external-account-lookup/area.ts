import type { Area } from '../../kernel/area.js';
import { externalAccountLookupRoutes } from './routes.js';

/** How the external-account-lookup area is mounted (kernel/area.ts; listed in src/areas/index.ts). */
export const externalAccountLookupArea: Area = {
  name: 'external-account-lookup',
  api: [externalAccountLookupRoutes],
};
