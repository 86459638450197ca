import type { Area } from '../../kernel/area.js';
import { adminRoutes } from './routes.js';

/** How the platforms area is mounted (kernel/area.ts; listed in src/areas.ts). */
export const platformsArea: Area = {
  name: 'operator/platforms',
  admin: [adminRoutes],
};
