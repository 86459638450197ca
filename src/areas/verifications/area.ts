import type { Area } from '../../kernel/area.js';
import { verificationsRoutes } from './routes.js';

/** How the verifications area is mounted (kernel/area.ts; listed in src/areas/index.ts). */
export const verificationsArea: Area = {
  name: 'verifications',
  api: [verificationsRoutes],
};
