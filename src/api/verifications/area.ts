import type { Area } from '../../kernel/area.js';
import { verificationsRoutes } from './routes.js';

/** How the verifications area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const verificationsArea: Area = {
  name: 'api/verifications',
  api: [verificationsRoutes],
};
