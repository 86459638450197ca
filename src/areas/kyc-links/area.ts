import type { Area } from '../../kernel/area.js';
import { hostedKycPages } from './pages.js';
import { kycLinkRoutes } from './routes.js';

/** How the kyc-links area is mounted (kernel/area.ts; listed in src/areas/index.ts). */
export const kycLinksArea: Area = {
  name: 'kyc-links',
  api: [kycLinkRoutes],
  pages: [hostedKycPages],
};
