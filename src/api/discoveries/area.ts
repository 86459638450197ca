import type { Area } from '../../kernel/area.js';
import { discoveriesRoutes } from './routes.js';

/** How the discoveries area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const discoveriesArea: Area = {
  name: 'api/discoveries',
  api: [discoveriesRoutes],
};
