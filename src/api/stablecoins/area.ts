import type { Area } from '../../kernel/area.js';
import { stablecoinsRoutes } from './routes.js';

/** How the stablecoins area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const stablecoinsArea: Area = {
  name: 'api/stablecoins',
  api: [stablecoinsRoutes],
};
