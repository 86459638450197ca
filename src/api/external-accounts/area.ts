import type { Area } from '../../kernel/area.js';
import { ownershipVerificationPages } from './pages.js';
import { externalAccountsRoutes } from './routes.js';

/** How the external-accounts area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const externalAccountsArea: Area = {
  name: 'api/external-accounts',
  api: [externalAccountsRoutes],
  pages: [ownershipVerificationPages],
};
