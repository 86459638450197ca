import type { Area } from '../../kernel/area.js';
import { hostedKycPages } from './pages.js';
import { kycLinkRoutes } from './routes.js';

/** How the kyc-links area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const kycLinksArea: Area = {
  name: 'api/kyc-links',
  api: [kycLinkRoutes],
  pages: [hostedKycPages],
};
