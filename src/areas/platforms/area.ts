import type { Area } from '../../kernel/area.js';
import { adminRoutes } from './routes.js';

/** How the platforms area is mounted (kernel/area.ts; listed in src/areas/index.ts). */
export const platformsArea: Area = {
  name: 'platforms',
  admin: [adminRoutes],
};
